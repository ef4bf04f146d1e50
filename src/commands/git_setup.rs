//! `polisd git-setup [PATH]`: registers polisd's merge driver in this clone's git config and
//! writes the `merge=polisd` lines into `_polis/.gitattributes` (docs/sync.md). Every clone
//! needs it once: git never copies its config with a clone (overdeck#1901).

use crate::commands::cli::GitSetupArgs;
use crate::fs::writer::Writer;

pub fn run(args: GitSetupArgs) -> anyhow::Result<u8> {
    let root = super::locate(args.polis.path.get())?;
    let program = match args.program {
        Some(p) => p,
        None => std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "polisd".to_string()),
    };
    let writer = Writer::new(&root)?;
    let done = match crate::operations::sync::git_setup(&root, &writer, &program) {
        Ok(done) => done,
        Err(crate::operations::sync::SetupError::NotARepository(p)) => {
            return Err(super::Refused(format!(
                "{} is not inside a git repository; run `git init` first (nothing was written)",
                p.display()
            ))
            .into());
        }
        Err(
            e @ (crate::operations::sync::SetupError::Linked { .. }
            | crate::operations::sync::SetupError::Unreadable { .. }),
        ) => {
            eprintln!("polisd: {e}");
            return Ok(1);
        }
        Err(e) => return Err(e.into()),
    };
    let code = u8::from(!done.overridden.is_empty());
    if args.polis.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
        return Ok(code);
    }
    println!(
        "{} merge.polisd.driver = {}",
        if done.driver_written { "set" } else { "kept" },
        done.driver
    );
    println!(
        "{} {}",
        if done.gitattributes_written {
            "wrote"
        } else {
            "kept"
        },
        done.gitattributes
    );
    for o in &done.overridden {
        let merge = match o.merge.as_str() {
            "unset" => "-merge".to_string(),
            "unspecified" => "no merge attribute".to_string(),
            "set" => "merge".to_string(),
            other => format!("merge={other}"),
        };
        eprintln!(
            "polisd: git merges `_polis/{}` with `{merge}`, not polisd's driver: a line after \
             polisd's in {} (or one in the repository's info/attributes) sets it; remove that \
             line, then run `polisd git-setup` again",
            o.path, done.gitattributes
        );
    }
    if code != 0 {
        return Ok(code);
    }
    println!(
        "git now merges the chronicle and the inboxes by line id and rebuilds routing_stats.yml; \
         commit _polis/.gitattributes, and run `polisd git-setup` once in every other clone"
    );
    Ok(0)
}
