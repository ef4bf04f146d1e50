//! `polisd run` driven the way agents drive a polis: `>>` appends, editor-style saves, `mv`
//! between contract folders, vote blocks, a whole-folder copy, a `kill -9` in the middle of a
//! scene. Every effect is waited for with a deadline; where a test must show that something did
//! NOT happen, it first waits for a later effect (a barrier) so the daemon has certainly seen
//! the change in question (SPEC §3, §6–§9, §11).
//!
//! The scenes are grouped by concept in modules of one test binary: one link, not one per
//! module.

#[path = "../harness/mod.rs"]
mod harness;

mod amendments;
mod lifecycle;
mod notices;
mod routing;

use harness::{chronicle_line, wait_for, TestPolis};

const FOUNDER: &str = "founder-one";
const ALPHA: &str = "alpha-agent";
const BRAVO: &str = "bravo-agent";
const CHARLIE: &str = "charlie-agent";

fn now_seconds() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// A settled contract. `quality` goes to the frontmatter; `body` is appended after the
/// Settlement heading (e.g. a `Quality self-score:` line).
struct Settled<'a> {
    id: &'a str,
    opener: &'a str,
    owner: &'a str,
    tags: &'a [&'a str],
    settled_at: &'a str,
    quality: Option<u8>,
    minutes: u32,
    body: &'a str,
}

impl Settled<'_> {
    fn text(&self) -> String {
        let quality = self
            .quality
            .map_or(String::new(), |q| format!("quality_score: {q}\n"));
        format!(
            "---\ncontract_id: {id}\ntitle: Contract {id}\nopened_by: {opener}\nopened_at: 2026-11-01 09:00:00\n\
             owner: {owner}\nstatus: settled\nstakes: low\nrequired_tags: [{tags}]\ncost_ceiling: medium\n\
             settled_at: {at}\n{quality}actual_minutes: {minutes}\n---\n\n## Intent\n\nDo {id}.\n\n\
             ## Settlement\n\nDone.\n{body}",
            id = self.id,
            opener = self.opener,
            owner = self.owner,
            tags = self.tags.join(", "),
            at = self.settled_at,
            minutes = self.minutes,
            body = self.body,
        )
    }

    /// Settles the way most agents do: edit the file in `open/`, then `mv` it to `settled/`.
    fn settle_by_mv(&self, p: &TestPolis) {
        let open = format!("contracts/open/{}.md", self.id);
        p.save(&open, &self.text());
        p.mv(&open, &format!("contracts/settled/{}.md", self.id));
    }

    /// Settles by an editor-style save straight into `settled/`.
    fn settle_by_save(&self, p: &TestPolis) {
        p.save(&format!("contracts/settled/{}.md", self.id), &self.text());
    }
}

/// An open contract waiting for the router (`owner: null`, `recommended_by_router: null`).
fn open_contract(id: &str, opener: &str, tags: &[&str]) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: Contract {id}\nopened_by: {opener}\nopened_at: {now}\nowner: null\n\
         status: proposed\nstakes: low\nrequired_tags: [{tags}]\ncost_ceiling: medium\nrouting:\n  \
         recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\n\
         review:\n  required: false\n  reviewer: null\n---\n\n## Intent\n\nPlease do {id}.\n\n## Assignment\n\n\
         ## Settlement\n",
        now = now_seconds(),
        tags = tags.join(", "),
    )
}

/// A proposed amendment; `agree` are frontmatter votes, `body` is appended (vote blocks).
fn amendment(id: &str, proposer: &str, agree: &[&str], body: &str) -> String {
    let agree = if agree.is_empty() {
        " []\n".to_string()
    } else {
        agree
            .iter()
            .map(|a| format!("\n  - {a}"))
            .collect::<String>()
            + "\n"
    };
    format!(
        "---\namendment_id: {id}\ntitle: Quality-impact floor\nproposed_by: {proposer}\nproposed_at: {now}\n\
         status: proposed\nquorum_required: null\nvotes:\n  agree:{agree}  disagree: []\n  abstain: []\n  \
         request_changes: []\nratified_at: null\nexpires_at: null\n---\n\n## Proposal\n\n\
         Lessons with quality_impact below 3 stop affecting routing.\n{body}",
        now = now_seconds(),
    )
}

/// A polis with three more citizens, all active (a `joined polis` line stamped now), so the
/// amendment quorum is 3 of 4.
fn four_citizens() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "openai", &[("rust", 4), ("docs", 2)], "low")
        .citizen(BRAVO, "google", &[("rust", 3), ("docs", 5)], "medium")
        .citizen(CHARLIE, "mistral", &[("rust", 2), ("ops", 4)], "high");
    for id in [ALPHA, BRAVO, CHARLIE] {
        p.append(
            "chronicle.md",
            &chronicle_line(id, "joined polis", "-", "hello"),
        );
    }
    p
}

/// Waits until `routing_stats.yml` holds what a one-shot `polisd reconcile` writes now, and
/// returns that text.
#[track_caller]
fn wait_for_stats(p: &TestPolis, what: &str) -> String {
    let expected = p.expected_stats();
    wait_for(p, what, || {
        p.read("contracts/routing_stats.yml") == expected
    });
    expected
}

/// Appends a line by an unregistered author and waits for the index keeper's notice about it:
/// once it is there, the daemon has processed everything written before it.
#[track_caller]
fn chronicle_barrier(p: &TestPolis, n: usize) {
    let author = format!("zz-barrier-{n:04}");
    p.append(
        "chronicle.md",
        &chronicle_line(&author, "passed barrier", "-", "-"),
    );
    wait_for(
        p,
        &format!("the index keeper's notice about {author}"),
        || {
            p.read(&format!("citizens/{FOUNDER}/inbox.md"))
                .contains(&format!("by `{author}`"))
        },
    );
}

#[track_caller]
fn assert_no_duplicate_markers(p: &TestPolis) {
    let all = p.all_markers();
    let mut seen = std::collections::BTreeSet::new();
    for m in &all {
        assert!(
            seen.insert(m.clone()),
            "notification sent twice: {m:?}\nall: {all:#?}"
        );
    }
}

fn count_lines_containing(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.contains(needle)).count()
}
