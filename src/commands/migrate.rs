//! `polisd migrate`: prints what [`crate::operations::migrate`] did or would do. Exit 0 when
//! the polis is up to date (or the rollback is done), 1 when something was refused or is left
//! for a person, 2 for usage.

use crate::commands::agent::{finish, Env};
use crate::commands::cli::{AgentOpts, MigrateArgs};
use crate::operations::migrate::{self, Migration, Rollback};
use crate::protocol::migration::{Undo, SCHEMA_VERSION};

pub fn run(args: MigrateArgs) -> anyhow::Result<u8> {
    let opts = AgentOpts {
        polis: args.polis.path.get().map(std::path::Path::to_path_buf),
        json: args.polis.json,
    };
    let env = Env::open(&opts)?;
    if args.rollback {
        let result = migrate::rollback(&env.writer, args.force, args.dry_run);
        return finish(&opts, result, rollback_text);
    }
    let result = migrate::migrate(&env.writer, &env.now, args.dry_run);
    let left_for_a_person = result.as_ref().is_ok_and(|m| !m.blocked.is_empty());
    let code = finish(&opts, result, migration_text)?;
    Ok(if left_for_a_person { code.max(1) } else { code })
}

fn migration_text(m: &Migration) -> String {
    let mut out = Vec::new();
    let n = m.changes.len();
    if n == 0 && m.blocked.is_empty() {
        out.push(format!(
            "polisd migrate: already up to date (schema v{SCHEMA_VERSION}); nothing was written"
        ));
    } else if m.dry_run {
        out.push(format!(
            "dry run: {n} change{} would be made; nothing was written",
            plural(n)
        ));
    } else if let Some(backup) = &m.backup {
        out.push(format!(
            "migrated: {n} change{}; the files as they were are in _polis/{backup}",
            plural(n)
        ));
    }
    for c in &m.changes {
        out.push(format!(
            "  {}: {} ({})",
            c.action.as_str(),
            c.detail,
            c.path
        ));
    }
    if !m.blocked.is_empty() {
        out.push(format!(
            "not changed ({}; fix each, then run `polisd migrate` again):",
            m.blocked.len()
        ));
        for b in &m.blocked {
            out.push(format!("  {}: {}", b.path, b.reason));
        }
    }
    if m.backup.is_some() && n > 0 {
        out.push("undo with: polisd migrate --rollback".to_string());
    }
    out.join("\n")
}

fn rollback_text(r: &Rollback) -> String {
    let mut out = vec![if r.dry_run {
        format!(
            "dry run: rolling back from _polis/{} would do this; nothing was written:",
            r.backup
        )
    } else {
        format!("rolled back from _polis/{}:", r.backup)
    }];
    for f in &r.files {
        let what = match f.undo {
            Undo::Restore => "restore",
            Undo::Remove => "remove",
            Undo::Unchanged => "unchanged",
        };
        let mut line = format!("  {what} {}", f.path);
        if let Some(lost) = &f.forced {
            line.push_str(&format!(" (forced: {lost})"));
        }
        out.push(line);
    }
    out.join("\n")
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
