//! `polisd merge-driver %O %A %B %P`: git's merge driver for a polis (docs/sync.md), which
//! `polisd git-setup` registers.
//!
//! git runs it at the top of the worktree with three temporary files (the common ancestor,
//! ours, theirs) and the path the result goes to; the result replaces the file "ours" (`%A`,
//! git's temporary file, not a file in `_polis/`). Exit 0: merged cleanly; 1: conflicts left.
//! - `chronicle.md` and archives: lines unioned by id and sorted by timestamp
//!   (`protocol::merge::merge_chronicle`), an edited line kept from each side and reported;
//! - inboxes: blocks unioned by id, a block removed on one side (archived) stays removed;
//! - `contracts/routing_stats.yml`: not merged: ours is kept, and polisd rebuilds it from the
//!   merged contracts (the daemon on its next pass, or `polisd reconcile`), so the file can
//!   never conflict;
//! - a proposed amendment that both sides' reflection drafted from what each had seen: the
//!   draft with the fuller evidence (`protocol::merge::merge_drafts`);
//! - any other path: git's own text merge (`git merge-file`), markers and all.

use crate::commands::cli::MergeDriverArgs;
use crate::protocol::merge::{self, Strategy};
use anyhow::Context as _;
use std::path::Path;

pub fn run(args: MergeDriverArgs) -> anyhow::Result<u8> {
    // A name that is not UTF-8 is no polis file polisd unions (their ids are ASCII), so the
    // lossy text only picks git's text merge for it, and names it in messages.
    let path = args.path.to_string_lossy();
    let mut strategy = merge::strategy_for(&path);
    if strategy == Strategy::Derived {
        eprintln!(
            "polisd merge-driver: {path}: kept ours; polisd rebuilds it from the merged contracts \
             (the daemon does on its next pass; or run `polisd reconcile`)"
        );
        return Ok(0);
    }
    // The union works on text it can read back byte for byte: a side that is not UTF-8, or
    // that already holds conflict markers (a virtual merge base of a criss-cross merge), goes
    // to git's own merge, which leaves markers for a person rather than guessing.
    let mut texts = Vec::new();
    for p in [&args.base, &args.ours, &args.theirs] {
        let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
        match String::from_utf8(bytes) {
            Ok(t) if merge::conflict_marker_line(&t).is_none() => texts.push(t),
            _ => strategy = Strategy::Text,
        }
    }
    if strategy == Strategy::Text {
        return text_merge(&args);
    }
    let [base, ours, theirs]: [String; 3] = texts
        .try_into()
        .map_err(|_| anyhow::anyhow!("three versions expected"))?;
    let merged = match strategy {
        Strategy::Text | Strategy::Derived => return text_merge(&args),
        Strategy::Draft => match merge::merge_drafts(&ours, &theirs) {
            Some(merged) => merged,
            None => return text_merge(&args),
        },
        Strategy::Chronicle => {
            let beside = siblings(&args.path, |name| {
                crate::protocol::chronicle::rollover::Quarter::from_archive_name(name).is_some()
            });
            let refs: Vec<&str> = beside.iter().map(String::as_str).collect();
            merge::merge_chronicle(Some(&base), &ours, &theirs, &refs)
        }
        Strategy::Inbox => {
            let beside = if path.ends_with("/inbox.md") {
                siblings(&args.path, |name| name == "inbox-archive.md")
            } else {
                Vec::new()
            };
            let refs: Vec<&str> = beside.iter().map(String::as_str).collect();
            merge::merge_inbox(Some(&base), &ours, &theirs, &refs)
        }
    };
    for note in &merged.report {
        eprintln!("polisd merge-driver: {path}: {note}");
    }
    std::fs::write(&args.ours, merged.text.as_bytes())
        .with_context(|| format!("writing the merge result to {}", args.ours.display()))?;
    Ok(0)
}

/// The texts of the files beside `path` (in this worktree, as it is before the merge) whose
/// names pass `keep`, `path` itself left out.
fn siblings(path: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| keep(n) && Some(n.as_str()) != path.file_name().and_then(|f| f.to_str()))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|n| crate::fs::snapshot::read_regular(&dir.join(n)))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// git's own three-way text merge into `%A`, for a path the driver has no rule for.
fn text_merge(args: &MergeDriverArgs) -> anyhow::Result<u8> {
    let status = std::process::Command::new("git")
        .arg("merge-file")
        .args(["-L", "ours", "-L", "base", "-L", "theirs"])
        .arg(&args.ours)
        .arg(&args.base)
        .arg(&args.theirs)
        .status()
        .context("running `git merge-file`")?;
    Ok(u8::from(!status.success()))
}
