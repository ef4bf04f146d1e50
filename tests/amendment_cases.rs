//! Amendment tally cases (SPEC §8), one row each: who is registered, active and away, the
//! amendment's extra frontmatter and body, when the tally runs, and what it must decide. Rows
//! named `ref_*` pin a place where the reference (polis/amendments.py) decides differently and
//! SPEC §8 overrides it.

use chrono::NaiveDateTime;
use polisd::protocol::amendments::amendment::{self, Action, TallyContext};
use polisd::protocol::clock::{PolisTime, PolisZone};
use std::collections::BTreeSet;

struct Case {
    name: &'static str,
    registered: &'static [&'static str],
    active: &'static [&'static str],
    away: &'static [&'static str],
    frontmatter: &'static str,
    body: &'static str,
    now: &'static str,
    action: Action,
    agrees: usize,
    quorum: usize,
}

const FOUR: &[&str] = &["alpha-agent", "bravo-agent", "charlie-agent", "delta-agent"];

const CASES: &[Case] = &[
    Case {
        name: "proposer_alone_is_pending",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Pending,
        agrees: 1,
        quorum: 3,
    },
    Case {
        name: "frontmatter_majority_ratifies",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "votes:\n  agree:\n  - bravo-agent\n  - charlie-agent\n  disagree: []\n",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Ratified,
        agrees: 3,
        quorum: 3,
    },
    Case {
        name: "ref_body_votes_count",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "",
        body: "## Response from bravo-agent (agree)\nYes.\n\n### 2026-03-02 09:00 from charlie-agent: agree\n",
        now: "2026-03-02 10:00",
        action: Action::Ratified,
        agrees: 3,
        quorum: 3,
    },
    Case {
        name: "later_body_block_overrides_frontmatter",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "votes:\n  agree: [bravo-agent, charlie-agent]\n",
        body: "## Response from charlie-agent (request changes)\nNot yet.\n",
        now: "2026-03-02 10:00",
        action: Action::Pending,
        agrees: 2,
        quorum: 3,
    },
    Case {
        name: "ref_quorum_zero_is_raised_to_two",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "quorum_required: 0\nvotes:\n  agree: [bravo-agent]\n",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Ratified,
        agrees: 2,
        quorum: 2,
    },
    Case {
        name: "ref_quorum_one_is_raised_to_two",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "quorum_required: 1\n",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Pending,
        agrees: 1,
        quorum: 2,
    },
    Case {
        name: "ref_zero_active_is_not_rejected",
        registered: FOUR,
        active: &[],
        away: &[],
        frontmatter: "",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Pending,
        agrees: 1,
        quorum: 2,
    },
    Case {
        name: "ref_unquoted_expires_at_expires",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "expires_at: 2026-03-05\n",
        body: "",
        now: "2026-03-06 00:00",
        action: Action::Expired,
        agrees: 1,
        quorum: 3,
    },
    Case {
        name: "thirty_days_without_expires_at",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "",
        body: "",
        now: "2026-03-31 10:01",
        action: Action::Expired,
        agrees: 1,
        quorum: 3,
    },
    Case {
        name: "ratify_wins_over_expiry",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "expires_at: '2026-03-05'\nvotes:\n  agree: [bravo-agent, charlie-agent]\n",
        body: "",
        now: "2026-04-01 00:00",
        action: Action::Ratified,
        agrees: 3,
        quorum: 3,
    },
    Case {
        name: "away_citizens_cannot_rescue",
        registered: FOUR,
        active: FOUR,
        away: &["charlie-agent", "delta-agent"],
        frontmatter: "votes:\n  disagree: [bravo-agent]\n",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Rejected,
        agrees: 1,
        quorum: 2,
    },
    Case {
        name: "unknown_voters_do_not_count",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "votes:\n  agree: [ghost-agent, nobody-agent]\n",
        body: "## Response from phantom-agent (agree)\n",
        now: "2026-03-02 10:00",
        action: Action::Pending,
        agrees: 1,
        quorum: 3,
    },
    Case {
        name: "not_proposed_is_closed",
        registered: FOUR,
        active: FOUR,
        away: &[],
        frontmatter: "status: rejected\n",
        body: "",
        now: "2026-03-02 10:00",
        action: Action::Closed,
        agrees: 1,
        quorum: 3,
    },
];

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn amendment_cases() {
    let mut failures = Vec::new();
    for case in CASES {
        // A later `status:` line wins in YAML, so a case can override the default status.
        let text = format!(
            "---\namendment_id: 2026-03-01-case\ntitle: Case\nproposed_by: alpha-agent\nproposed_at: 2026-03-01 10:00:00\nstatus: proposed\n{}---\n\n## Problem\n\nx\n\n{}",
            case.frontmatter, case.body
        );
        let a = amendment::parse(&text, "2026-03-01-case").expect(case.name);
        let (registered, active, away) = (set(case.registered), set(case.active), set(case.away));
        let now = PolisTime {
            zone: PolisZone::default(),
            now: NaiveDateTime::parse_from_str(case.now, "%Y-%m-%d %H:%M").unwrap(),
        };
        let o = amendment::tally(
            &a,
            &TallyContext {
                registered: &registered,
                active: &active,
                away: &away,
                departed: &BTreeSet::new(),
                now,
            },
        );
        let got = (o.action, o.agrees, o.quorum);
        let want = (case.action, case.agrees, case.quorum);
        if got != want {
            failures.push(format!(
                "{}: got {got:?} ({}), want {want:?}",
                case.name, o.detail
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
