//! Amendment vote blocks: reading an amendment and its body votes, the tally and the status
//! splice never panic; a splice either leaves the text alone or reads back as asked.
#![no_main]

use chrono::NaiveDateTime;
use libfuzzer_sys::fuzz_target;
use polisd::protocol::amendments::amendment::{self, TallyContext};
use polisd::protocol::clock::{PolisTime, PolisZone};
use polisd::protocol::frontmatter;
use std::collections::BTreeSet;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let now = PolisTime {
        zone: PolisZone::default(),
        now: NaiveDateTime::parse_from_str("2026-03-02 10:00", "%Y-%m-%d %H:%M").unwrap(),
    };

    // The body alone, as if it started on line 1.
    for v in amendment::body_votes(text, 1) {
        assert!(v.line.is_some_and(|l| l >= 1));
        assert!(!v.citizen.is_empty());
    }

    let Ok(a) = amendment::parse(text, "fuzz-amendment") else {
        return;
    };
    let ids: BTreeSet<String> = ["claude-1", "codex-2", "gemini-3"]
        .into_iter()
        .map(String::from)
        .collect();
    let away: BTreeSet<String> = ["gemini-3".to_string()].into_iter().collect();
    let ctx = TallyContext {
        registered: &ids,
        active: &ids,
        away: &away,
        now,
    };
    let outcome = amendment::tally(&a, &ctx);
    assert!(outcome.quorum >= amendment::MIN_QUORUM);
    let _ = amendment::expiry(&a, &now);
    let _ = amendment::chronicle_line(&a, &outcome, &now);

    let stamp = "2026-03-02 10:00:00";
    let spliced = amendment::set_status(text, "ratified", Some(stamp));
    if spliced != text {
        let r = frontmatter::parse(&spliced).expect("a splice reads back");
        assert_eq!(r.get("status").as_str(), Some("ratified"));
        assert_eq!(r.get("ratified_at").as_str(), Some(stamp));
    }
});
