//! git's merge driver and `git-setup` on the inputs real repositories give them: a program
//! path git's shell would split, a path git hands over in bytes that are not UTF-8.

use super::{commit_all, git, project, pull, two_clones, ALPHA, BETA};
use crate::harness::*;

/// A home folder with a space (`/Users/Jo Smith/.cargo/bin/polisd`) is common; git runs the
/// driver through `sh`, so an unquoted path ran `/Users/Jo`, failed, and left the chronicle
/// in conflict with only our side's lines.
#[test]
fn a_driver_installed_in_a_folder_with_a_space_still_merges() {
    let (_origin, a, b) = two_clones();
    let folder = b.dir.path().join("my tools");
    std::fs::create_dir_all(&folder).unwrap();
    let program = folder.join("polisd");
    std::os::unix::fs::symlink(BIN, &program).unwrap();
    ok(b.polisd(&["git-setup", "--program", program.to_str().unwrap()]));

    let la = chronicle_line(ALPHA, "noted", "-", "from A");
    a.append("chronicle.md", &la);
    commit_all(&a, "a");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    let lb = chronicle_line(BETA, "noted", "-", "from B");
    b.append("chronicle.md", &lb);
    commit_all(&b, "b");
    pull(&b);
    let merged = b.read("chronicle.md");
    for l in [&la, &lb] {
        assert_eq!(
            merged.matches(l.trim_end()).count(),
            1,
            "{l:?} in\n{merged}"
        );
    }
}

/// git hands the driver the path as the bytes of the file name; a name that is not UTF-8 (a
/// proposal saved by a Latin-1 editor) made the argument parser exit 2, and git kept our side
/// whole, their edit gone.
#[test]
fn a_path_that_is_not_utf8_is_merged_as_text() {
    use std::os::unix::ffi::OsStrExt;
    let (_origin, a, b) = two_clones();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
    let file = |p: &TestPolis| p.root.join("amendments/proposed").join(name);
    std::fs::create_dir_all(file(&a).parent().unwrap()).unwrap();
    std::fs::write(file(&a), "one\ntwo\nthree\n").unwrap();
    commit_all(&a, "propose");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    pull(&b);
    std::fs::write(file(&a), "ONE\ntwo\nthree\n").unwrap();
    commit_all(&a, "a");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    std::fs::write(file(&b), "one\ntwo\nTHREE\n").unwrap();
    commit_all(&b, "b");
    pull(&b);
    assert_eq!(
        std::fs::read_to_string(file(&b)).unwrap(),
        "ONE\ntwo\nTHREE\n"
    );
}

/// A `_polis/` that is a symbolic link is stored by git as the link, not the files: a merge
/// driver in the repository holding the link merges nothing. `git-setup` says so and names the
/// folder to run it in, instead of asking for a `git init` the project already had.
#[test]
fn git_setup_on_a_linked_polis_names_the_link_and_writes_nothing() {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .arg("init")
        .arg(elsewhere.path())
        .args(["--agent-id", super::FOUNDER])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (p, project) = super::founded_repo();
    std::fs::remove_dir_all(&p.root).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("_polis"), &p.root).unwrap();
    let out = std::process::Command::new(BIN)
        .current_dir(&project)
        .args(["git-setup", "--program", BIN])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("symbolic link") && err.contains(&elsewhere.path().display().to_string()),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!elsewhere.path().join("_polis/.gitattributes").exists());
}

/// A later line of `.gitattributes` (or `.git/info/attributes`) that gives the chronicle
/// another merge (`merge=union`, the scar behind beads#1485) wins over polisd's line: git then
/// never runs the driver for it. `git-setup` found its own lines present and said git merges
/// the chronicle by line id; it now asks git, names the path and what git uses, and exits 1.
#[test]
fn git_setup_names_a_path_a_later_attribute_takes_from_the_driver() {
    let (_origin, a, _b) = two_clones();
    a.append(".gitattributes", "chronicle.md merge=union\n");
    let before = a.read(".gitattributes");
    let out = a.polisd(&["git-setup", "--program", BIN]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("chronicle.md") && err.contains("merge=union"),
        "{err}"
    );
    assert!(!err.contains("inbox.md"), "{err}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("by line id"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        a.read(".gitattributes"),
        before,
        "the person's line was kept"
    );

    let out = a.polisd(&["git-setup", "--program", BIN, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["overridden"],
        serde_json::json!([{"path": "chronicle.md", "merge": "union"}])
    );
}

/// A notice delivered on machine A and pushed, and words written beneath it on machine B and
/// pushed; then `meanwhile` on A, committed, and a merging pull on A, which must succeed.
/// Returns the inbox on A after the merge and git's stderr (what the driver said).
fn words_beneath_a_notice_meet(meanwhile: impl FnOnce(&TestPolis, &str)) -> (String, String) {
    let (_origin, a, b) = two_clones();
    let inbox = format!("citizens/{ALPHA}/inbox.md");
    a.append(&inbox, &notice("2026-03-02 10:00", "00000000000000aa"));
    commit_all(&a, "a notice");
    git(&project(&a), &["push", "-q", "origin", "main"]);
    pull(&b);

    b.append(&inbox, "\nSeen; I take it after the parser.\n");
    commit_all(&b, "a reply beneath");
    git(&project(&b), &["push", "-q", "origin", "main"]);
    meanwhile(&a, &inbox);
    commit_all(&a, "meanwhile");
    let out = super::git_command(
        &project(&a),
        &["pull", "--no-rebase", "--no-edit", "origin", "main"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let merged = a.read(&inbox);
    assert_eq!(
        merged.matches("Seen; I take it after the parser.").count(),
        1,
        "{merged}"
    );
    (merged, err)
}

/// A notice block as polisd delivers it.
fn notice(stamp: &str, id: &str) -> String {
    format!("\n### {stamp} from polis-daemon\n\nSomething.\n\n<!-- polisd:contract-settled:{id} -->\n\n---\n")
}

/// An agent writes beneath a notice in its inbox on one machine while the other machine's
/// polisd delivers the next notice. git's own merge would keep both changes; the driver took
/// our copy of the notice whole (the block's id is its marker) and said it "was written on
/// both sides for the same cause": the agent's words were gone. A block one side left as the
/// base had it is the other side's edit.
#[test]
fn words_written_beneath_a_notice_survive_the_merge_of_the_next_notice() {
    let (merged, err) = words_beneath_a_notice_meet(|a, inbox| {
        a.append(inbox, &notice("2026-03-02 11:00", "00000000000000bb"));
    });
    assert_eq!(merged.matches("00000000000000aa").count(), 1, "{merged}");
    assert_eq!(merged.matches("00000000000000bb").count(), 1, "{merged}");
    assert!(!err.contains("written on both sides"), "{err}");
}

/// `_polis/.gitattributes` that is a symbolic link (one file shared by several repositories)
/// is never written through. `git-setup` said the file "kept changing" and that it "will try
/// again on the next change", which a one-shot command never does, after it had already
/// written the driver into git's config. It now says it is a link, what to do, and writes
/// nothing.
#[test]
fn git_setup_on_a_linked_gitattributes_says_so_and_writes_nothing() {
    let (p, project) = super::founded_repo();
    let shared = p.dir.path().join("shared-attributes");
    std::fs::write(&shared, "*.png binary\n").unwrap();
    std::os::unix::fs::symlink(&shared, p.path(".gitattributes")).unwrap();
    let out = p.polisd(&["git-setup", "--program", BIN]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(".gitattributes") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(!err.contains("kept changing"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "*.png binary\n");
    let config = super::git_command(&project, &["config", "--get", "merge.polisd.driver"])
        .output()
        .unwrap();
    assert!(config.stdout.is_empty(), "the driver was registered");
}

/// The owner archives a notice on one machine while words are written beneath it on the
/// other: the archive holds the notice as it was, so the removal standing took the words with
/// it, silently. The edited block is kept, and the driver says so.
#[test]
fn words_written_beneath_a_notice_archived_on_the_other_side_are_kept() {
    let (_, err) = words_beneath_a_notice_meet(|a, inbox| {
        let block = notice("2026-03-02 10:00", "00000000000000aa");
        a.save(inbox, &a.read(inbox).replace(&block, "\n"));
        a.append(&format!("citizens/{ALPHA}/inbox-archive.md"), &block);
    });
    assert!(err.contains("archived on one side"), "{err}");
}
