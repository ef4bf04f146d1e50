//! `polisd activity [PATH] [-f] [-n N] [--json]`: what the daemon did to a polis, newest last,
//! with the cause of each write, from the activity log in its state folder. Read-only.

use crate::commands::cli::ActivityArgs;
use crate::fs::activity::{self, Activity};
use std::io::Write;
use std::time::Duration;

pub fn run(args: ActivityArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let root = super::locate(args.path.get())?;
    let dir = activity::dir_for(&root)?;
    let entries = activity::read(&dir);
    let skip = entries.len().saturating_sub(args.lines);
    if entries.is_empty() && !args.follow {
        if args.json {
            writeln!(out, "[]")?;
        } else {
            writeln!(
                out,
                "no daemon activity recorded for {} yet (start one with `polisd run`)",
                root.display()
            )?;
        }
        return Ok(0);
    }
    if args.json && !args.follow {
        writeln!(out, "{}", serde_json::to_string_pretty(&entries[skip..])?)?;
        return Ok(0);
    }
    for e in &entries[skip..] {
        print_entry(out, e, args.json)?;
    }
    if !args.follow {
        return Ok(0);
    }
    // Follow: print what is appended after the last entry shown, through rotations, until
    // interrupted.
    let mut last = entries.last().cloned();
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let now = activity::read(&dir);
        let from = match &last {
            Some(l) => now.iter().rposition(|e| e == l).map_or(0, |p| p + 1),
            None => 0,
        };
        for e in &now[from..] {
            print_entry(out, e, args.json)?;
        }
        out.flush()?;
        if let Some(e) = now.last() {
            last = Some(e.clone());
        }
    }
}

fn print_entry(out: &mut dyn Write, e: &Activity, json: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
    }
    let at = e.at.replacen('T', " ", 1).trim_end_matches('Z').to_string();
    match &e.path {
        Some(p) => writeln!(out, "{at} UTC  {:<11} {p}: {}", e.action, e.cause),
        None => writeln!(out, "{at} UTC  {:<11} {}", e.action, e.cause),
    }
}
