//! Inputs the fuzz targets in `fuzz/` found (see fuzz/README.md), each minimised and pinned so
//! the bug stays fixed without nightly or libFuzzer. A test names what it pins.

use polisd::chronicle;

/// Every line of `side` (as scan reads it, repeats included) is still a line of `merged`.
fn assert_no_line_lost(side: &str, merged: &str) {
    let seen: Vec<String> = chronicle::scan(side)
        .lines
        .into_iter()
        .map(|l| l.text)
        .collect();
    let lost = chronicle::lost_lines(&seen, &[merged]);
    assert!(lost.is_empty(), "lost {lost:?}; merged: {merged:?}");
}

/// Found by the `chronicle` target: neither file had frontmatter, the current one's first line
/// was `---` and the copy added another `---` line; the sorted union then read as a frontmatter
/// block and every line between the two fences vanished from the chronicle.
#[test]
fn fuzz_chronicle_merge_never_turns_lines_into_frontmatter() {
    let current = "---\n- 2026-03-01 09:33 | claude-1 | founded polis | - | first\n";
    let copy = "y\n---\n---\n";
    let merged = chronicle::merge_conflict_copy(current, copy);
    assert_no_line_lost(current, &merged);
    assert_no_line_lost(copy, &merged);
    // Merging again changes nothing.
    assert_eq!(chronicle::merge_conflict_copy(&merged, copy), merged);
}

/// The same with CRLF line ends, which the merge keeps.
#[test]
fn fuzz_chronicle_merge_never_turns_crlf_lines_into_frontmatter() {
    let current = "---\r\nbar\r\n";
    let copy = "y\r\n---\r\n---\r\n";
    let merged = chronicle::merge_conflict_copy(current, copy);
    assert_no_line_lost(current, &merged);
    assert_no_line_lost(copy, &merged);
    assert!(!merged.replace("\r\n", "").contains('\n'), "{merged:?}");
}
