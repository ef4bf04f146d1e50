//! `polisd reserve`, `polisd release` and `polisd reservations`: advisory file reservations
//! for agents that run a shell. Each reads only `polis.yml` (for the timezone), the citizen's
//! card and `reservations.yml`; the work is `operations::reservation`.
//!
//! Exit codes: 0 done (releasing nothing included), 1 refused (a conflict, which names the
//! holder; a path outside the project; an unregistered citizen; an unreadable file) with
//! nothing written, 2 usage.

use crate::commands::cli::{AgentOpts, ReleaseArgs, ReservationsArgs, ReserveArgs};
use crate::fs::snapshot;
use crate::fs::writer::Writer;
use crate::operations::reservation::{self as op, ReservationError, View};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout;
use serde_json::json;
use std::path::PathBuf;

/// The polis, its writer-facing canonical root, and "now" in its timezone.
fn open(opts: &AgentOpts) -> anyhow::Result<(PathBuf, PolisTime)> {
    let root = super::locate(opts.polis.as_deref())?;
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let text = snapshot::read_text(&root, layout::POLIS_YML, None)
        .ok()
        .flatten();
    let (settings, _) = crate::protocol::settings::parse(text.as_deref());
    Ok((root, PolisTime::system(settings.timezone)))
}

/// `text` on one line: a line break in what the file holds (a note, a hand-written path) is
/// written as `\u000a`, the terminal escape's form, so it cannot pose as a line of its own.
fn flat(text: &str) -> String {
    text.replace('\r', "\\u000d").replace('\n', "\\u000a")
}

/// Prints a refusal (one line on stderr; with `--json`, an object on stdout too) and gives
/// its exit code.
fn refuse(json: bool, err: &ReservationError) -> anyhow::Result<u8> {
    let text = super::refusal_text(err);
    tell!("polisd: {}", flat(&text));
    if json {
        let conflicts = match err {
            ReservationError::Conflict(c) => c.clone(),
            _ => Vec::new(),
        };
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "ok": false,
                "error": text,
                "conflicts": conflicts,
            }))?
        );
    }
    Ok(if err.is_usage() { 2 } else { 1 })
}

/// The paths as given, made project-relative; the first bad one refuses the command.
fn project_paths(root: &std::path::Path, raw: &[String]) -> Result<Vec<String>, ReservationError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    raw.iter()
        .map(|p| op::project_path(root, &cwd, p).map_err(ReservationError::from))
        .collect()
}

fn until(v: &View) -> String {
    match &v.expires_at {
        Some(t) => format!("until {t}"),
        None => "until released".to_string(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        "path"
    } else {
        "paths"
    }
}

pub fn reserve(args: ReserveArgs) -> anyhow::Result<u8> {
    let (root, now) = open(&args.opts)?;
    let paths = match project_paths(&root, &args.paths) {
        Ok(p) => p,
        Err(e) => return refuse(args.opts.json, &e),
    };
    let writer = Writer::new(&root)?;
    let request = op::ReserveRequest {
        citizen: args.citizen,
        paths,
        ttl_minutes: args.ttl_minutes,
        note: args.note,
        contract: args.contract,
    };
    let done = match op::reserve(&root, &writer, &now, &request) {
        Ok(done) => done,
        Err(e) => return refuse(args.opts.json, &e),
    };
    let r = &done.reservation;
    if args.opts.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({ "ok": true, "reservation": r }))?
        );
    } else {
        say!(
            "Reserved {} {} for {} {}:",
            r.paths.len(),
            plural(r.paths.len()),
            request.citizen,
            until(r)
        );
        for p in &r.paths {
            say!("  {p}");
        }
    }
    Ok(0)
}

pub fn release(args: ReleaseArgs) -> anyhow::Result<u8> {
    let (root, now) = open(&args.opts)?;
    let targets = if args.paths.is_empty() {
        None
    } else {
        match project_paths(&root, &args.paths) {
            Ok(p) => Some(p),
            Err(e) => return refuse(args.opts.json, &e),
        }
    };
    let writer = Writer::new(&root)?;
    let done = match op::release(&root, &writer, &now, &args.citizen, targets.as_deref()) {
        Ok(done) => done,
        Err(e) => return refuse(args.opts.json, &e),
    };
    if args.opts.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({ "ok": true, "released": done }))?
        );
    } else if done.paths.is_empty() {
        say!(
            "{} holds no reservation{}; nothing released",
            args.citizen,
            targets.map_or(String::new(), |t| format!(" overlapping {}", t.join(", ")))
        );
    } else {
        say!(
            "Released {} {} for {}:",
            done.paths.len(),
            plural(done.paths.len()),
            args.citizen
        );
        for p in &done.paths {
            say!("  {p}");
        }
    }
    Ok(0)
}

pub fn list(args: ReservationsArgs) -> anyhow::Result<u8> {
    let (root, now) = open(&args.opts)?;
    let views = match op::list(&root, &now, &crate::operations::arg::flags) {
        Ok(v) => v,
        Err(e) => return refuse(args.opts.json, &e),
    };
    let shown: Vec<&View> = views
        .iter()
        .filter(|v| args.all || v.active)
        .filter(|v| args.citizen.is_none() || v.citizen == args.citizen)
        .collect();
    if args.opts.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({ "reservations": shown }))?
        );
        return Ok(0);
    }
    if shown.is_empty() {
        let held = if args.all {
            "No reservations"
        } else {
            "No active reservations"
        };
        match args.citizen.as_deref() {
            // Most often a mistyped id: say so, rather than seem to answer for it.
            // (`--as` took only a slug, so the id is printed as given.)
            Some(c) if !crate::operations::chronicle::is_registered(&root, c) => say!(
                "{held} of `{c}`, which is not a registered citizen of this polis (`polisd status` lists them)."
            ),
            Some(c) => say!("{held} of `{c}`."),
            None => say!("{held}."),
        }
        return Ok(0);
    }
    say!(
        "{}:",
        if args.all {
            "Reservations"
        } else {
            "Active reservations"
        }
    );
    for v in &shown {
        let note = v
            .note
            .as_deref()
            .map_or(String::new(), |n| format!("  ({n})"));
        let contract = v
            .contract
            .as_deref()
            .map_or(String::new(), |c| format!(" for {c}"));
        let state = if v.active { "" } else { " [expired]" };
        let line = format!(
            "  {}: {}  {}{contract}{state}{note}",
            v.citizen.as_deref().unwrap_or("(no citizen)"),
            v.paths.join(", "),
            until(v)
        );
        say!("{}", flat(&line));
        if let Some(problem) = &v.problem {
            say!("    warning: {}", flat(problem));
        }
    }
    Ok(0)
}
