//! Chronicle lines: scanning, the line grammar and C001–C008 never panic, and merging a sync
//! conflict copy never loses a line of either file.
#![no_main]

use chrono::NaiveDateTime;
use libfuzzer_sys::fuzz_target;
use polisd::protocol::chronicle::{self, ChronicleContext, Resume};
use polisd::protocol::clock::{PolisTime, PolisZone};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let now = PolisTime {
        zone: PolisZone::default(),
        now: NaiveDateTime::parse_from_str("2026-03-02 10:00", chronicle::STAMP_FORMAT).unwrap(),
    };
    let registered = |id: &str| matches!(id, "claude-1" | "codex-2" | "polis-daemon");
    let link_exists = |p: &str| p.starts_with("contracts/") || p == "CONSTITUTION";

    let scan = chronicle::scan(text);
    assert!(scan.resume.offset <= text.len());
    assert!(text.is_char_boundary(scan.resume.offset));
    let mut last = 0;
    for line in &scan.lines {
        assert!(line.number > last, "line numbers increase");
        last = line.number;
        assert!(!line.text.contains('\n'));
        let _ = chronicle::parse_entry(&line.text);
        let _ = chronicle::stamp_and_author(&line.text);
    }
    // Resuming where the scan stopped finds nothing new.
    let again =
        chronicle::scan_from(text, scan.resume).expect("a scan's own resume point is valid");
    assert!(again.lines.is_empty());
    assert_eq!(again.resume, scan.resume);
    assert!(chronicle::scan_from(
        text,
        Resume {
            offset: text.len() + 1,
            line: 0
        }
    )
    .is_none());

    let ctx = ChronicleContext {
        path: "chronicle.md",
        is_registered: &registered,
        link_exists: &link_exists,
        newest_earlier: None,
        now,
    };
    for line in &scan.lines {
        for f in chronicle::validate(line, &ctx) {
            assert_eq!(f.line, Some(line.number));
        }
    }
    let _ = chronicle::validate_all(&scan.lines, &ctx);
    let _ = chronicle::rollover(text, &now);
    let _ = chronicle::active_authors(&[text], &now);

    // The first half-ish is "ours", the rest "theirs": the merge is a multiset union, so each
    // file's lines (with their repeats) are all in the result.
    let cut = (0..=text.len() / 2)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let (current, copy) = text.split_at(cut);
    let merged = polisd::protocol::merge::merge_chronicle(None, current, copy, &[]).text;
    for side in [current, copy] {
        let seen: Vec<String> = chronicle::scan(side)
            .lines
            .into_iter()
            .map(|l| l.text)
            .collect();
        let lost = chronicle::lost_lines(&seen, &[&merged]);
        assert!(
            lost.is_empty(),
            "merge lost {lost:?}\ncurrent: {current:?}\ncopy: {copy:?}\nmerged: {merged:?}"
        );
    }
});
