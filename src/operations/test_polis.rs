//! A polis for the application layer's unit tests: a constitution, registered citizens (each a
//! card and an empty inbox), the contract folders, and a writer.

use crate::fs::writer::Writer;
use std::path::PathBuf;

/// `_polis/` in a temporary folder (kept while the `TempDir` lives) with these citizens.
pub fn polis_with(citizens: &[&str]) -> (tempfile::TempDir, PathBuf, Writer) {
    let d = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(d.path()).unwrap().join("_polis");
    for c in citizens {
        let dir = root.join("citizens").join(c);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("capability_card.yml"), format!("agent_id: {c}\n")).unwrap();
        std::fs::write(dir.join("inbox.md"), "# Inbox\n").unwrap();
    }
    std::fs::create_dir_all(root.join("contracts/open")).unwrap();
    // What makes a folder a polis to every entry point (SPEC §1).
    std::fs::write(
        root.join(crate::protocol::layout::CONSTITUTION),
        "# Constitution\n",
    )
    .unwrap();
    let w = Writer::new(&root).unwrap();
    (d, root, w)
}
