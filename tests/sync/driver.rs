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
