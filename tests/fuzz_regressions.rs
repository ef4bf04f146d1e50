//! Inputs the fuzz targets in `fuzz/` found (see fuzz/README.md), each minimised and pinned so
//! the bug stays fixed without nightly or libFuzzer. A test names what it pins.

use polisd::protocol::chronicle;

/// A sync conflict copy merged into the chronicle (no common ancestor, no archives).
fn merge(current: &str, copy: &str) -> String {
    polisd::protocol::merge::merge_chronicle(None, current, copy, &[]).text
}

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
    let merged = merge(current, copy);
    assert_no_line_lost(current, &merged);
    assert_no_line_lost(copy, &merged);
    // Merging again changes nothing.
    assert_eq!(merge(&merged, copy), merged);
}

/// The same with CRLF line ends, which the merge keeps.
#[test]
fn fuzz_chronicle_merge_never_turns_crlf_lines_into_frontmatter() {
    let current = "---\r\nbar\r\n";
    let copy = "y\r\n---\r\n---\r\n";
    let merged = merge(current, copy);
    assert_no_line_lost(current, &merged);
    assert_no_line_lost(copy, &merged);
    assert!(!merged.replace("\r\n", "").contains('\n'), "{merged:?}");
}

/// Found by the `chronicle` target after the fix above: the copy's frontmatter was empty (only
/// blank lines between the fences), and a `---` line from the other file came first in the
/// union. The opening fence's `\s*` then reached over the blank lines, so the copy's closing
/// fence read as YAML and the frontmatter ended at the agent's `---` line instead.
#[test]
fn fuzz_chronicle_merge_keeps_lines_after_an_empty_frontmatter() {
    let current = "x\n---\n";
    let copy = "---\n\n---\n";
    let merged = merge(current, copy);
    assert_no_line_lost(current, &merged);
    assert_no_line_lost(copy, &merged);
    assert_eq!(merge(&merged, copy), merged);
    // The other way round: the empty frontmatter is the chronicle's own.
    let merged = merge(copy, current);
    assert_no_line_lost(current, &merged);
}

/// A frontmatter with fields is kept when the lines are safe behind it.
#[test]
fn fuzz_chronicle_merge_keeps_a_real_frontmatter() {
    let current = "---\nfile_type: chronicle\n---\n- 2026-03-01 09:33 | a | b | - | c\n";
    let copy = "---\n- 2026-03-01 09:34 | a | b | - | d\n";
    let merged = merge(current, copy);
    assert!(
        merged.starts_with("---\nfile_type: chronicle\n---\n"),
        "{merged:?}"
    );
    assert_no_line_lost(current, &merged);
    assert_no_line_lost(copy, &merged);
}

/// Found by the `chronicle` target: a line beginning with U+FEFF that was not the file's first
/// became the merged file's first bytes, where every reader takes U+FEFF for a BOM and drops it,
/// so the line read back changed (and C009 would call it lost).
#[test]
fn fuzz_chronicle_merge_keeps_a_line_that_starts_with_a_bom() {
    let current = "\n\u{feff}x | y\n";
    let merged = merge(current, "");
    assert_no_line_lost(current, &merged);
    assert_eq!(merge(&merged, ""), merged);
}
