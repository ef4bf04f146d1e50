//! `polisd run` driven the way agents drive a polis: `>>` appends, editor-style saves, `mv`
//! between contract folders, vote blocks, a whole-folder copy, a `kill -9` in the middle of a
//! scene. Every effect is waited for with a deadline; where a test must show that something did
//! NOT happen, it first waits for a later effect (a barrier) so the daemon has certainly seen
//! the change in question (SPEC §3, §6–§9, §11).

mod harness;

use harness::{chronicle_line, chronicle_stamp, copy_tree, wait_for, TestPolis};
use std::collections::BTreeMap;
use std::fs;
use std::process::Command;

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

/// Every (recipient, kind) with how many markers of that kind the recipient has, for markers
/// that are not barrier notices.
fn marker_counts(p: &TestPolis) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for m in p.all_markers() {
        *out.entry((m.recipient, m.kind)).or_default() += 1;
    }
    out
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

// ---------------------------------------------------------------------------------------------

#[test]
fn daemon_stats_equal_reconcile_after_each_settlement() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let steps: Vec<(Settled, bool)> = vec![
        (
            Settled {
                id: "c1-parser",
                opener: FOUNDER,
                owner: ALPHA,
                tags: &["rust"],
                settled_at: "2026-11-10 10:00:00",
                quality: Some(4),
                minutes: 40,
                body: "",
            },
            true,
        ),
        (
            Settled {
                id: "c2-guide",
                opener: FOUNDER,
                owner: BRAVO,
                tags: &["rust", "docs"],
                settled_at: "2026-11-11 10:00:00",
                quality: Some(5),
                minutes: 90,
                body: "",
            },
            false,
        ),
        (
            Settled {
                id: "c3-readme",
                opener: ALPHA,
                owner: BRAVO,
                tags: &["docs"],
                settled_at: "2026-11-12 08:30:00",
                quality: None,
                minutes: 20,
                body: "\nQuality self-score: 2\n",
            },
            true,
        ),
        (
            Settled {
                id: "c4-lexer",
                opener: FOUNDER,
                owner: ALPHA,
                tags: &["rust"],
                settled_at: "2026-11-13 12:00:00",
                quality: None,
                minutes: 15,
                body: "",
            },
            false,
        ),
        (
            // A quoted date settles before the others: mixed styles sort together (SPEC §6).
            Settled {
                id: "c5-deploy",
                opener: BRAVO,
                owner: CHARLIE,
                tags: &["ops", "rust"],
                settled_at: "'2026-11-09'",
                quality: Some(3),
                minutes: 60,
                body: "",
            },
            true,
        ),
    ];
    let mut previous = p.read("contracts/routing_stats.yml");
    for (contract, by_mv) in &steps {
        if *by_mv {
            contract.settle_by_mv(&p);
        } else {
            contract.settle_by_save(&p);
        }
        let expected = wait_for_stats(
            &p,
            &format!("routing_stats.yml after settling {}", contract.id),
        );
        assert_ne!(
            expected, previous,
            "settling {} must change the stats",
            contract.id
        );
        previous = expected;
    }

    // A settled contract changes in place: its quality is corrected.
    let corrected = Settled {
        quality: Some(1),
        ..Settled {
            id: "c1-parser",
            opener: FOUNDER,
            owner: ALPHA,
            tags: &["rust"],
            settled_at: "2026-11-10 10:00:00",
            quality: None,
            minutes: 40,
            body: "",
        }
    };
    corrected.settle_by_save(&p);
    let expected = wait_for_stats(&p, "routing_stats.yml after c1's quality changed");
    assert_ne!(expected, previous);
    previous = expected;

    // A contract leaves settled/.
    p.mv(
        "contracts/settled/c2-guide.md",
        "contracts/abandoned/c2-guide.md",
    );
    let expected = wait_for_stats(&p, "routing_stats.yml after c2 left settled/");
    assert_ne!(expected, previous);

    // Someone edits the generated file by hand: it is rebuilt, though no contract changed.
    let rebuilt = p.read("contracts/routing_stats.yml");
    p.save(
        "contracts/routing_stats.yml",
        &rebuilt.replace("contracts_completed:", "contracts_completed: 99 #"),
    );
    wait_for(&p, "routing_stats.yml restored after a hand edit", || {
        p.read("contracts/routing_stats.yml") == rebuilt
    });

    let out = p.polisd(&["reconcile"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("unchanged"),
        "reconcile: {said}"
    );

    // Openers other than the owner hear of each settlement once; c4 had no quality.
    wait_for(&p, "contract-settled and quality-defaulted notices", || {
        p.count(FOUNDER, "contract-settled") == 3
            && p.count(ALPHA, "contract-settled") == 1
            && p.count(BRAVO, "contract-settled") == 1
            && p.count(ALPHA, "quality-defaulted") == 1
    });
    chronicle_barrier(&p, 1);
    assert_eq!(p.count(FOUNDER, "contract-settled"), 3);
    assert_eq!(p.count(ALPHA, "quality-defaulted"), 1);
    assert_eq!(
        p.count(BRAVO, "quality-defaulted"),
        0,
        "c3's body quality was readable"
    );
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_invalid_chronicle_line_noticed_once() {
    let p = four_citizens();
    let mut daemon = p.start_daemon();

    p.append(
        "chronicle.md",
        &format!("- {} | {ALPHA} | forgot the rest\n", chronicle_stamp()),
    );
    wait_for(&p, "alpha's chronicle-finding notice", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert!(p
        .read(&format!("citizens/{ALPHA}/inbox.md"))
        .contains("(C001)"));

    // Unrelated valid appends, then a barrier: still one notice.
    p.append(
        "chronicle.md",
        &chronicle_line(ALPHA, "started work", "-", "on the parser"),
    );
    p.append(
        "chronicle.md",
        &chronicle_line(BRAVO, "reviewed code", "-", "-"),
    );
    chronicle_barrier(&p, 1);
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 1);
    assert_eq!(p.count(BRAVO, "chronicle-finding"), 0);

    // A full rescan (a restart) does not report it again.
    daemon.kill9();
    daemon = p.start_daemon();
    chronicle_barrier(&p, 2);
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 1);

    // A half-written line waits. The barrier cannot touch the chronicle (it would complete
    // the line), so it is a new open contract and its routing notice.
    p.append(
        "chronicle.md",
        &format!("- {} | {BRAVO} | Half Written", chronicle_stamp()),
    );
    p.save(
        "contracts/open/barrier-one.md",
        &open_contract("barrier-one", FOUNDER, &["rust"]),
    );
    wait_for(&p, "the barrier contract to be routed", || {
        p.all_markers().iter().any(|m| m.kind == "contract-routed")
    });
    assert_eq!(
        p.count(BRAVO, "chronicle-finding"),
        0,
        "a half-written line was reported"
    );
    // Nor at a rescan.
    daemon.kill9();
    let _daemon = p.start_daemon();
    assert_eq!(
        p.count(BRAVO, "chronicle-finding"),
        0,
        "a half-written line was reported at a rescan"
    );

    // Completed, it is checked as the whole line (C008, not the C001 the half would give).
    p.append("chronicle.md", " | - | finished later\n");
    wait_for(&p, "bravo's chronicle-finding notice", || {
        p.count(BRAVO, "chronicle-finding") == 1
    });
    let inbox = p.read(&format!("citizens/{BRAVO}/inbox.md"));
    assert!(
        inbox.contains("(C008)") && !inbox.contains("(C001)"),
        "{inbox}"
    );
    chronicle_barrier(&p, 3);
    assert_eq!(p.count(BRAVO, "chronicle-finding"), 1);
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 1);
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_amendment_ratified_moved_chronicled_notified() {
    let p = four_citizens();
    let daemon = p.start_daemon();
    let id = format!("{}-quality-floor", today());
    let proposed = format!("amendments/proposed/{id}.md");
    let ratified = format!("amendments/ratified/{id}.md");

    p.save(&proposed, &amendment(&id, ALPHA, &[], ""));
    wait_for(&p, "amendment-proposed notices", || {
        [FOUNDER, BRAVO, CHARLIE]
            .iter()
            .all(|c| p.count(c, "amendment-proposed") == 1)
    });

    // Two agrees (the proposer and a body vote) are below the quorum of 3.
    let bravo_vote =
        "\n## Response from bravo-agent (agree)\n\nYes, low-impact lessons are noise.\n";
    p.save(&proposed, &amendment(&id, ALPHA, &[], bravo_vote));
    chronicle_barrier(&p, 1);
    assert!(
        p.exists(&proposed) && !p.exists(&ratified),
        "ratified below quorum"
    );

    // A frontmatter vote reaches it.
    let v3 = amendment(&id, ALPHA, &[CHARLIE], bravo_vote);
    p.save(&proposed, &v3);
    wait_for(&p, "the amendment to move to ratified/", || {
        p.exists(&ratified) && !p.exists(&proposed)
    });
    let text = p.read(&ratified);
    assert!(text.contains("\nstatus: ratified\n"), "{text}");
    let stamp = regex::Regex::new(r"\nratified_at: '\d{4}-\d\d-\d\d \d\d:\d\d:\d\d'\n").unwrap();
    assert!(stamp.is_match(&text), "{text}");
    // Only the status and ratified_at lines changed.
    let keep = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("status:") && !l.starts_with("ratified_at:"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(keep(&text), keep(&v3));

    let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    wait_for(&p, "the ratified amendment chronicle line", || {
        count_lines_containing(&p.read("chronicle.md"), &line) == 1
    });
    wait_for(
        &p,
        "amendment-ratified notices to every active citizen",
        || {
            [FOUNDER, ALPHA, BRAVO, CHARLIE]
                .iter()
                .all(|c| p.count(c, "amendment-ratified") == 1)
        },
    );

    // Nothing happens twice: not on later changes, not at a rescan.
    chronicle_barrier(&p, 2);
    daemon.kill9();
    let _daemon = p.start_daemon();
    chronicle_barrier(&p, 3);
    assert_eq!(count_lines_containing(&p.read("chronicle.md"), &line), 1);
    for c in [FOUNDER, ALPHA, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-ratified"), 1, "{c}");
    }
    for c in [FOUNDER, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-proposed"), 1, "{c}");
    }
    assert_eq!(
        p.count(ALPHA, "amendment-proposed"),
        0,
        "the proposer is not told"
    );
    for c in [ALPHA, BRAVO, CHARLIE] {
        assert_eq!(
            p.count(c, "chronicle-finding"),
            0,
            "{c}: {}",
            p.read("chronicle.md")
        );
    }
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_kill9_restart_mid_scene() {
    let p = four_citizens();
    let daemon = p.start_daemon();
    let id = format!("{}-quality-floor", today());
    let proposed = format!("amendments/proposed/{id}.md");

    // Act one, watched.
    Settled {
        id: "k1-parser",
        opener: FOUNDER,
        owner: ALPHA,
        tags: &["rust"],
        settled_at: "2026-11-10 10:00:00",
        quality: Some(4),
        minutes: 40,
        body: "",
    }
    .settle_by_mv(&p);
    wait_for_stats(&p, "stats after k1");
    p.save(&proposed, &amendment(&id, BRAVO, &[], ""));
    wait_for(&p, "amendment-proposed notices", || {
        [FOUNDER, ALPHA, CHARLIE]
            .iter()
            .all(|c| p.count(c, "amendment-proposed") == 1)
    });
    // A settlement with no quality, and the crash right after it: the daemon may or may not
    // have acted on it.
    Settled {
        id: "k2-guide",
        opener: ALPHA,
        owner: BRAVO,
        tags: &["docs"],
        settled_at: "2026-11-11 10:00:00",
        quality: None,
        minutes: 30,
        body: "",
    }
    .settle_by_save(&p);
    daemon.kill9();

    // Act two, while polisd is down.
    let votes = "\n## Response from charlie-agent (agree)\n\nAgreed.\n";
    p.save(&proposed, &amendment(&id, BRAVO, &[ALPHA], votes));
    p.append(
        "chronicle.md",
        &format!(
            "- {} | {CHARLIE} | voted without fields\n",
            chronicle_stamp()
        ),
    );
    p.save(
        "contracts/open/k3-cache.md",
        &open_contract("k3-cache", FOUNDER, &["rust"]),
    );
    Settled {
        id: "k4-deploy",
        opener: CHARLIE,
        owner: ALPHA,
        tags: &["ops"],
        settled_at: "2026-11-12 10:00:00",
        quality: Some(5),
        minutes: 25,
        body: "",
    }
    .settle_by_mv(&p);

    // Act three: polisd catches up once.
    let daemon = p.start_daemon();
    wait_for_stats(&p, "stats after the restart");
    wait_for(&p, "the amendment to be ratified", || {
        p.exists(&format!("amendments/ratified/{id}.md")) && !p.exists(&proposed)
    });
    let expected: BTreeMap<(String, String), usize> = [
        (FOUNDER, "contract-settled"),
        (ALPHA, "contract-settled"),
        (CHARLIE, "contract-settled"),
        (BRAVO, "quality-defaulted"),
        (FOUNDER, "amendment-proposed"),
        (ALPHA, "amendment-proposed"),
        (CHARLIE, "amendment-proposed"),
        (FOUNDER, "amendment-ratified"),
        (ALPHA, "amendment-ratified"),
        (BRAVO, "amendment-ratified"),
        (CHARLIE, "amendment-ratified"),
        (CHARLIE, "chronicle-finding"),
    ]
    .iter()
    .map(|(c, k)| ((c.to_string(), k.to_string()), 1))
    .collect();
    let without_routing = |p: &TestPolis| {
        let mut counts = marker_counts(p);
        let routed: usize = counts
            .iter()
            .filter(|((_, k), _)| k == "contract-routed")
            .map(|(_, n)| *n)
            .sum();
        counts.retain(|(_, k), _| k != "contract-routed");
        (counts, routed)
    };
    wait_for(&p, "every notice of the scene", || {
        without_routing(&p) == (expected.clone(), 1)
    });
    let ratified_line =
        format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    assert_eq!(
        count_lines_containing(&p.read("chronicle.md"), &ratified_line),
        1
    );
    assert_no_duplicate_markers(&p);

    // Another crash and restart changes nothing.
    let inboxes: Vec<_> = p.all_markers();
    let stats = p.read("contracts/routing_stats.yml");
    daemon.kill9();
    let _daemon = p.start_daemon();
    chronicle_barrier(&p, 1);
    let mut after = p.all_markers();
    after.retain(|m| !(m.recipient == FOUNDER && m.kind == "chronicle-finding"));
    assert_eq!(after, inboxes);
    assert_eq!(p.read("contracts/routing_stats.yml"), stats);
    assert_eq!(p.expected_stats(), stats);
    assert_eq!(
        count_lines_containing(&p.read("chronicle.md"), &ratified_line),
        1
    );
}

#[test]
fn daemon_own_writes_trigger_no_second_reconcile() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let reconciles = || p.daemon_status().expect("daemon.json").counters.reconciles;
    // The status file is written just after the start-up pass logs that it is done.
    wait_for(&p, "daemon.json after the start-up pass", || {
        p.daemon_status()
            .is_some_and(|s| s.counters.reconciles >= 1)
    });
    let start = reconciles();
    let ids = ["r1-one", "r2-two", "r3-three", "r4-four"];
    for (i, id) in ids.iter().enumerate() {
        let contract = Settled {
            id,
            opener: FOUNDER,
            owner: if i % 2 == 0 { ALPHA } else { BRAVO },
            tags: &["rust"],
            settled_at: &format!("2026-11-1{i} 10:00:00"),
            quality: Some(2 + i as u8),
            minutes: 10,
            body: "",
        };
        if i % 2 == 0 {
            contract.settle_by_mv(&p);
        } else {
            contract.settle_by_save(&p);
        }
        wait_for_stats(&p, &format!("stats after {id}"));
        // The stats write's own event comes before the barrier's.
        chronicle_barrier(&p, i);
        let n = reconciles();
        assert_eq!(
            n,
            start + i as u64 + 1,
            "reconciles after settlement {}: polisd's own write (or an ignored name) caused another pass\n{}",
            i + 1,
            fs::read_to_string(p.dir.path().join("daemon.log")).unwrap_or_default()
        );
    }
}

#[test]
fn daemon_symlinked_inbox_outside_never_written() {
    let p = four_citizens();
    let outside = p.dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let target = outside.join("inbox.md");
    let original = b"# not polis's file\n\nleave me alone\n";
    fs::write(&target, original).unwrap();
    let link = p.path(&format!("citizens/{ALPHA}/inbox.md"));
    fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    // A whole citizen folder that is a link to a folder outside.
    let delta_dir = p.dir.path().join("delta-outside");
    fs::create_dir_all(&delta_dir).unwrap();
    fs::write(
        delta_dir.join("capability_card.yml"),
        "agent_id: delta-agent\ncapability_tags:\n  rust:\n    self_rating: 5\n",
    )
    .unwrap();
    fs::write(delta_dir.join("inbox.md"), original).unwrap();
    std::os::unix::fs::symlink(&delta_dir, p.path("citizens/delta-agent")).unwrap();
    let mut daemon = p.start_daemon();

    // A notice for alpha (its own bad line), then one for bravo.
    p.append(
        "chronicle.md",
        &format!("- {} | {ALPHA} | no fields here\n", chronicle_stamp()),
    );
    p.append(
        "chronicle.md",
        &format!("- {} | delta-agent | no fields at all\n", chronicle_stamp()),
    );
    p.append(
        "chronicle.md",
        &format!("- {} | {BRAVO} | no fields either\n", chronicle_stamp()),
    );
    wait_for(&p, "bravo's notice", || {
        p.count(BRAVO, "chronicle-finding") == 1
    });
    // And a settlement: contract-settled to the founder, quality-defaulted to alpha.
    Settled {
        id: "s1-link",
        opener: FOUNDER,
        owner: ALPHA,
        tags: &["rust"],
        settled_at: "2026-11-10 10:00:00",
        quality: None,
        minutes: 10,
        body: "",
    }
    .settle_by_mv(&p);
    wait_for_stats(&p, "stats after s1");
    wait_for(&p, "the founder's contract-settled notice", || {
        p.count(FOUNDER, "contract-settled") == 1
    });
    chronicle_barrier(&p, 1);

    assert_eq!(
        fs::read(&target).unwrap(),
        original,
        "written through a symbolic link"
    );
    assert_eq!(
        fs::read(delta_dir.join("inbox.md")).unwrap(),
        original,
        "written through a linked citizen folder"
    );
    let delta_names: Vec<_> = fs::read_dir(&delta_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        delta_names.len(),
        2,
        "files appeared in the linked folder: {delta_names:?}"
    );
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_link(&link).unwrap(), target);
    let strays: Vec<_> = fs::read_dir(&outside)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(
        strays,
        vec![target.clone()],
        "files appeared outside _polis/"
    );
    assert!(
        daemon.is_running(),
        "the daemon stopped:\n{}",
        daemon.log_text()
    );

    // It keeps serving the others.
    p.append(
        "chronicle.md",
        &format!("- {} | {BRAVO} | second bad line\n", chronicle_stamp()),
    );
    wait_for(&p, "bravo's second notice", || {
        p.count(BRAVO, "chronicle-finding") == 2
    });
    assert!(daemon.is_running());
    assert_eq!(fs::read(&target).unwrap(), original);
    assert_eq!(fs::read(delta_dir.join("inbox.md")).unwrap(), original);
}

#[test]
fn daemon_whole_folder_copy_like_git_pull() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let id = format!("{}-pulled", today());

    // What another machine wrote, arriving all at once.
    let staging = p.dir.path().join("pull");
    let put = |rel: &str, text: &str| {
        let path = staging.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    let g = |id: &'static str, owner: &'static str, q: u8, at: &'static str| Settled {
        id,
        opener: FOUNDER,
        owner,
        tags: &["rust", "docs"],
        settled_at: at,
        quality: Some(q),
        minutes: 30,
        body: "",
    };
    for s in [
        g("g1-a", ALPHA, 4, "2026-11-10 10:00:00"),
        g("g2-b", BRAVO, 5, "2026-11-11 10:00:00"),
        g("g3-c", CHARLIE, 2, "2026-11-12 10:00:00"),
    ] {
        put(&format!("contracts/settled/{}.md", s.id), &s.text());
    }
    put(
        "contracts/open/g4-open.md",
        &open_contract("g4-open", BRAVO, &["docs"]),
    );
    put(
        &format!("amendments/proposed/{id}.md"),
        &amendment(&id, ALPHA, &[BRAVO, CHARLIE], ""),
    );
    let mut chronicle = p.read("chronicle.md");
    chronicle.push_str(&chronicle_line(
        ALPHA,
        "proposed amendment",
        &format!("[[amendments/proposed/{id}]]"),
        "a floor",
    ));
    chronicle.push_str(&format!(
        "- {} | {BRAVO} | pulled in a bad line\n",
        chronicle_stamp()
    ));
    put("chronicle.md", &chronicle);

    let cp = Command::new("cp")
        .arg("-r")
        .arg(format!("{}/.", staging.display()))
        .arg(&p.root)
        .status()
        .unwrap();
    assert!(cp.success());

    wait_for_stats(&p, "stats after the pull");
    wait_for(&p, "the pulled amendment to be ratified", || {
        p.exists(&format!("amendments/ratified/{id}.md"))
            && !p.exists(&format!("amendments/proposed/{id}.md"))
    });
    wait_for(&p, "every notice of the pull", || {
        p.count(FOUNDER, "contract-settled") == 3
            && [FOUNDER, ALPHA, BRAVO, CHARLIE]
                .iter()
                .all(|c| p.count(c, "amendment-ratified") == 1)
            && p.count(BRAVO, "chronicle-finding") == 1
            && p.all_markers()
                .iter()
                .filter(|m| m.kind == "contract-routed")
                .count()
                == 1
    });
    assert!(p
        .read("contracts/open/g4-open.md")
        .contains("recommended_by_router: "));
    let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    assert_eq!(count_lines_containing(&p.read("chronicle.md"), &line), 1);

    // A second pull rewrites a settled contract: the stats follow, nothing is announced again.
    let before = p.all_markers();
    let mut changed = g("g1-a", ALPHA, 1, "2026-11-10 10:00:00");
    changed.minutes = 120;
    put("contracts/settled/g1-a.md", &changed.text());
    fs::remove_file(staging.join("chronicle.md")).unwrap();
    fs::remove_dir_all(staging.join("amendments")).unwrap();
    fs::remove_dir_all(staging.join("contracts/open")).unwrap();
    copy_tree(&staging, &p.root);
    let stats = wait_for_stats(&p, "stats after the second pull");
    assert!(stats.contains("avg_actual_minutes: 120.0"), "{stats}");
    chronicle_barrier(&p, 1);
    let mut after = p.all_markers();
    after.retain(|m| !(m.recipient == FOUNDER && m.kind == "chronicle-finding"));
    assert_eq!(after, before);
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_new_open_contract_routed_and_notified() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let rel = "contracts/open/o1-cache.md";
    let original = open_contract("o1-cache", FOUNDER, &["rust"]);
    p.save(rel, &original);
    wait_for(&p, "the contract to be routed", || {
        !p.read(rel).contains("recommended_by_router: null")
    });
    let routed = p.read(rel);

    // Only the three routing values changed.
    let before: Vec<&str> = original.lines().collect();
    let after: Vec<&str> = routed.lines().collect();
    assert_eq!(before.len(), after.len(), "{routed}");
    let mut chosen = None;
    let three_decimals = regex::Regex::new(r"^\d+\.\d{1,3}$").unwrap();
    for (b, a) in before.iter().zip(&after) {
        if b == a {
            continue;
        }
        let key = a.split(':').next().unwrap();
        assert!(
            b.starts_with(&format!("{key}: ")) && b.ends_with(" null"),
            "polisd changed a line it does not own: {b:?} -> {a:?}"
        );
        match key.trim() {
            "recommended_by_router" => chosen = Some(a.split(": ").nth(1).unwrap().to_string()),
            "recommendation_score" => {
                let v = a.split(": ").nth(1).unwrap();
                assert!(three_decimals.is_match(v), "{a}");
            }
            "exploration" => assert!(a.ends_with(": true") || a.ends_with(": false"), "{a}"),
            other => panic!("unexpected change to {other}: {a}"),
        }
    }
    assert!(routed.ends_with("## Settlement\n"));
    let chosen = chosen.expect("recommended_by_router written");
    assert!(
        [FOUNDER, ALPHA, BRAVO, CHARLIE].contains(&chosen.as_str()),
        "{chosen}"
    );

    wait_for(&p, "the contract-routed notice", || {
        p.count(&chosen, "contract-routed") == 1
    });
    chronicle_barrier(&p, 1);
    let routed_markers: Vec<_> = p
        .all_markers()
        .into_iter()
        .filter(|m| m.kind == "contract-routed")
        .collect();
    assert_eq!(routed_markers.len(), 1, "{routed_markers:?}");
    assert_eq!(routed_markers[0].recipient, chosen);
    assert_eq!(p.read(rel), routed, "routed twice");

    // The chosen citizen claims it (an editor save): no new routing, no new notice.
    let claimed = routed
        .replace("owner: null", &format!("owner: {chosen}"))
        .replace("status: proposed", "status: claimed");
    p.save(rel, &claimed);
    chronicle_barrier(&p, 2);
    assert_eq!(p.read(rel), claimed);
    assert_eq!(p.count(&chosen, "contract-routed"), 1);
}

/// The polling fallback (network file systems, inotify limits) must see a second append to a
/// file within the same wall-clock second as the scan that saw the first. notify's
/// `PollWatcher` compares whole-second mtimes unless `compare_contents` is on; without it such
/// an append waited for the safety rescan (15 minutes by default).
#[test]
fn daemon_poll_backend_sees_an_append_in_the_same_second() {
    let p = four_citizens();
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\nbackend = \"poll\"\npoll_interval = \"100ms\"\ndebounce = \"50ms\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let _daemon = p.start_daemon();
    let second_of =
        |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut tried_in_same_second = false;
    for round in 0..10 {
        // Start early in a second, so the notice and the next append share it. This sleep
        // only aligns the scene with the clock; nothing is asserted on it.
        let subsec = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_millis();
        std::thread::sleep(std::time::Duration::from_millis(
            u64::from(1000 - subsec) + 10,
        ));
        let before = p.count(ALPHA, "chronicle-finding");
        p.append(
            "chronicle.md",
            &format!("- {} | {ALPHA} | first {round}\n", chronicle_stamp()),
        );
        let first_at = second_of(
            fs::metadata(p.path("chronicle.md"))
                .unwrap()
                .modified()
                .unwrap(),
        );
        wait_for(&p, "the first notice", || {
            p.count(ALPHA, "chronicle-finding") == before + 1
        });
        p.append(
            "chronicle.md",
            &format!("- {} | {ALPHA} | second {round}\n", chronicle_stamp()),
        );
        let second_at = second_of(
            fs::metadata(p.path("chronicle.md"))
                .unwrap()
                .modified()
                .unwrap(),
        );
        wait_for(
            &p,
            "the second notice (an append in the same second)",
            || p.count(ALPHA, "chronicle-finding") == before + 2,
        );
        if first_at == second_at {
            tried_in_same_second = true;
            break;
        }
    }
    assert!(
        tried_in_same_second,
        "could not place two appends in one second"
    );
}

/// A ratification while an agent's chronicle line is half-written (no final newline yet) must
/// not split that line: polisd's `ratified amendment` line goes after the completed line
/// (SPEC §3: a line without its newline is not complete; §11: an agent's bytes are never lost
/// to a polisd edit).
#[test]
fn daemon_ratification_waits_for_a_half_written_chronicle_line() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let id = format!("{}-quality-floor", today());
    let proposed = format!("amendments/proposed/{id}.md");
    let ratified = format!("amendments/ratified/{id}.md");
    let bravo_vote = "\n## Response from bravo-agent (agree)\n\nYes.\n";
    p.save(&proposed, &amendment(&id, ALPHA, &[], bravo_vote));
    wait_for(&p, "amendment-proposed notices", || {
        p.count(CHARLIE, "amendment-proposed") == 1
    });

    // Bravo is writing its line; meanwhile charlie's vote reaches the quorum.
    let head = format!("- {} | {BRAVO} | voted on amendment", chronicle_stamp());
    let tail = format!(" | [[amendments/proposed/{id}]] | agreed\n");
    let tallies = |p: &TestPolis| p.daemon_status().map_or(0, |s| s.counters.tallies);
    let before = tallies(&p);
    p.append("chronicle.md", &head);
    wait_for(&p, "a tally after the half line", || tallies(&p) > before);
    let before = tallies(&p);
    p.save(&proposed, &amendment(&id, ALPHA, &[CHARLIE], bravo_vote));
    // The pass that sees the quorum runs before the line is completed.
    wait_for(&p, "a tally after the vote", || tallies(&p) > before);
    p.append("chronicle.md", &tail);

    let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
    wait_for(&p, "the ratification and its chronicle line", || {
        p.exists(&ratified) && count_lines_containing(&p.read("chronicle.md"), &line) == 1
    });
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        count_lines_containing(&chronicle, &format!("{head}{}", tail.trim_end())),
        1,
        "bravo's line was split:\n{chronicle}"
    );
    chronicle_barrier(&p, 1);
    assert_eq!(
        p.count(BRAVO, "chronicle-finding"),
        0,
        "{}",
        p.read("chronicle.md")
    );
    assert_eq!(
        count_lines_containing(&p.read(&format!("citizens/{FOUNDER}/inbox.md")), "(C001)"),
        0,
        "{}",
        p.read("chronicle.md")
    );
}

#[test]
fn daemon_burst_of_settlements_converges_on_reconcile() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let owners = [ALPHA, BRAVO, CHARLIE];
    let ids: Vec<String> = (0..12).map(|i| format!("b{i:02}-burst")).collect();
    for (i, id) in ids.iter().enumerate() {
        let at = format!("2026-11-{:02} 1{}:00:00", 10 + i % 7, i % 10);
        let contract = Settled {
            id,
            opener: FOUNDER,
            owner: owners[i % 3],
            tags: if i % 2 == 0 {
                &["rust"]
            } else {
                &["docs", "rust"]
            },
            settled_at: &at,
            quality: Some(1 + (i % 5) as u8),
            minutes: 5 + i as u32,
            body: "",
        };
        if i % 3 == 0 {
            contract.settle_by_save(&p);
        } else {
            contract.settle_by_mv(&p);
        }
    }
    let stats = wait_for_stats(&p, "stats after a burst of 12 settlements");
    assert!(stats.contains("contracts_completed: 4"), "{stats}");
    wait_for(&p, "one contract-settled notice per settlement", || {
        p.count(FOUNDER, "contract-settled") == ids.len()
    });
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_amendment_expired_and_rejected_told_to_proposer() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let expired_id = format!("{}-too-late", today());
    let rejected_id = format!("{}-unpopular", today());
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let expired = amendment(&expired_id, ALPHA, &[], "")
        .replace("expires_at: null", &format!("expires_at: {yesterday}"));
    p.save(&format!("amendments/proposed/{expired_id}.md"), &expired);
    // Two of four disagree: the proposer and one silent citizen cannot reach 3.
    let rejected = amendment(&rejected_id, BRAVO, &[], "")
        .replace("disagree: []", "disagree: [charlie-agent, founder-one]");
    p.save(&format!("amendments/proposed/{rejected_id}.md"), &rejected);

    wait_for(
        &p,
        "amendment-expired and amendment-rejected notices",
        || p.count(ALPHA, "amendment-expired") == 1 && p.count(BRAVO, "amendment-rejected") == 1,
    );
    let e = p.read(&format!("amendments/proposed/{expired_id}.md"));
    assert!(e.contains("\nstatus: expired\n"), "{e}");
    let r = p.read(&format!("amendments/proposed/{rejected_id}.md"));
    assert!(r.contains("\nstatus: rejected\n"), "{r}");
    chronicle_barrier(&p, 1);
    let chronicle = p.read("chronicle.md");
    for (verb, id) in [
        ("expired amendment", &expired_id),
        ("rejected amendment", &rejected_id),
    ] {
        let line = format!("| polis-daemon | {verb} | [[amendments/proposed/{id}]] |");
        assert_eq!(count_lines_containing(&chronicle, &line), 1, "{chronicle}");
    }
    for c in [FOUNDER, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-expired"), 0, "only the proposer: {c}");
    }
    for c in [FOUNDER, ALPHA, CHARLIE] {
        assert_eq!(
            p.count(c, "amendment-rejected"),
            0,
            "only the proposer: {c}"
        );
    }
    assert_no_duplicate_markers(&p);
}

#[test]
fn daemon_sigterm_exits_0_and_clears_its_status() {
    let p = four_citizens();
    let mut daemon = p.start_daemon();
    wait_for(&p, "daemon.json", || p.daemon_status().is_some());
    let pid = daemon.child.id() as libc::pid_t;
    // SAFETY: signalling our own child process by its pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut code = None;
    wait_for(&p, "the daemon to exit after SIGTERM", || {
        code = daemon.child.try_wait().unwrap().map(|s| s.code());
        code.is_some()
    });
    assert_eq!(code, Some(Some(0)), "{}", daemon.log_text());
    assert!(p.daemon_status().is_none(), "daemon.json left behind");
}

/// A crash at any point of a ratification (status edit, move, chronicle line, notices) is
/// finished by the next start, once: the kill lands at a different moment each round.
#[test]
fn daemon_kill9_at_varying_points_of_a_ratification() {
    let p = four_citizens();
    let mut daemon = p.start_daemon();
    let vote = "\n## Response from bravo-agent (agree)\n\nYes.\n";
    for round in 0..8u64 {
        let id = format!("{}-round-{round}", today());
        p.save(
            &format!("amendments/proposed/{id}.md"),
            &amendment(&id, ALPHA, &[CHARLIE], vote),
        );
        // Only varies where the kill lands; every outcome must be right.
        std::thread::sleep(std::time::Duration::from_millis(round * 7));
        daemon.kill9();
        daemon = p.start_daemon();
        let line = format!("| polis-daemon | ratified amendment | [[amendments/ratified/{id}]] |");
        wait_for(
            &p,
            &format!("round {round}: ratified, chronicled, notified"),
            || {
                p.exists(&format!("amendments/ratified/{id}.md"))
                    && !p.exists(&format!("amendments/proposed/{id}.md"))
                    && count_lines_containing(&p.read("chronicle.md"), &line) == 1
                    && [FOUNDER, ALPHA, BRAVO, CHARLIE]
                        .iter()
                        .all(|c| p.count(c, "amendment-ratified") == round as usize + 1)
            },
        );
    }
    chronicle_barrier(&p, 1);
    let chronicle = p.read("chronicle.md");
    assert_eq!(
        count_lines_containing(&chronicle, "| polis-daemon | ratified amendment |"),
        8,
        "{chronicle}"
    );
    for c in [FOUNDER, ALPHA, BRAVO, CHARLIE] {
        assert_eq!(p.count(c, "amendment-ratified"), 8, "{c}");
    }
    assert_no_duplicate_markers(&p);
}

/// A test that fails while its daemon runs must not leave the daemon behind (it once kept
/// watching a deleted temporary folder for minutes): dropping the handle kills it.
#[test]
fn a_daemon_whose_test_fails_is_killed_with_its_handle() {
    let p = TestPolis::init(FOUNDER);
    let pid = std::sync::Mutex::new(None);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let daemon = p.start_daemon();
        *pid.lock().unwrap() = Some(daemon.child.id());
        panic!("a failing assertion while the daemon runs");
    }));
    assert!(failed.is_err());
    let pid = pid.lock().unwrap().expect("the daemon started");
    // Killed and reaped: no process (not even a zombie) has the pid any more.
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "polisd run (pid {pid}) outlived its failing test"
    );
}

/// `polisd run` without PATH and with no polis configured watches the polis found walking up
/// from its working directory, like every other command.
#[test]
fn run_without_path_watches_the_polis_above_the_working_directory() {
    let p = TestPolis::init(FOUNDER);
    let config = p.dir.path().join("empty.toml");
    fs::write(&config, "[watch]\ndebounce = \"50ms\"\n").unwrap();
    let log = p.dir.path().join("walk-up.log");
    let child = Command::new(harness::BIN)
        .args(["run", "--config"])
        .arg(&config)
        .current_dir(p.path("citizens"))
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut daemon = harness::Daemon { child, log };
    let root = p.canonical_root();
    harness::wait_until("the daemon to watch the polis", harness::DEADLINE, || {
        assert!(daemon.is_running(), "exited:\n{}", daemon.log_text());
        let text = daemon.log_text();
        text.contains("initial scan done")
            && (text.contains(&*root.to_string_lossy())
                || text.contains(&*p.root.to_string_lossy()))
    });
}

/// The newcomer's `quick-fix.md` (no `contract_id`, a typo `required_tag:`) is not routed; its
/// opener hears of each finding once; fixed, it is routed and nothing is sent again.
#[test]
fn daemon_contract_with_findings_is_not_routed_and_its_opener_hears_each_once() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let rel = "contracts/open/quick-fix.md";
    let broken = open_contract("quick-fix", ALPHA, &["rust"])
        .replace("contract_id: quick-fix\n", "")
        .replace("required_tags:", "required_tag:");
    p.save(rel, &broken);
    wait_for(&p, "a record-finding per finding to the opener", || {
        p.count(ALPHA, "record-finding") == 3
    });
    let inbox = p.read(&format!("citizens/{ALPHA}/inbox.md"));
    for code in ["P016", "P017", "P020"] {
        assert!(
            inbox.contains(&format!("({code})")),
            "{code} missing:\n{inbox}"
        );
    }
    assert!(inbox.contains("did you mean `required_tags`?"), "{inbox}");
    assert!(
        p.read(rel).contains("recommended_by_router: null"),
        "routed a broken contract"
    );
    // Fixed: routed, and the old findings are not sent again.
    p.save(rel, &open_contract("quick-fix", ALPHA, &["rust"]));
    wait_for(&p, "the fixed contract to be routed", || {
        !p.read(rel).contains("recommended_by_router: null")
    });
    assert_eq!(p.count(ALPHA, "record-finding"), 3);
    let about = p.findings_about(rel);
    assert!(about.is_empty(), "{about:#?}");
}

/// At the default level a log file gets plain text (no colour codes), one info line per
/// validated line and per notice, and the notice's id is the inbox marker's; `status` counts
/// the inbox append as a write.
#[test]
fn daemon_log_file_is_plain_and_names_each_notice_by_its_marker_id() {
    let p = four_citizens();
    let config = p.dir.path().join("info.toml");
    fs::write(
        &config,
        "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"info\"\n",
    )
    .unwrap();
    let log = p.dir.path().join("info.log");
    let child = Command::new(harness::BIN)
        .arg("run")
        .arg(&p.root)
        .arg("--config")
        .arg(&config)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let daemon = harness::Daemon { child, log };
    wait_for(&p, "the initial scan", || {
        daemon.log_text().contains("initial scan done")
    });
    // C008: the verb phrase is not lowercase.
    p.append(
        "chronicle.md",
        &chronicle_line(ALPHA, "Shipped It", "-", "-"),
    );
    wait_for(&p, "the chronicle-finding notice", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    let marker = p
        .markers(ALPHA)
        .into_iter()
        .find(|m| m.kind == "chronicle-finding")
        .unwrap();
    wait_for(&p, "the notice's log line", || {
        daemon.log_text().contains(&format!("id={}", marker.id))
    });
    let text = daemon.log_text();
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    assert!(text.contains("chronicle line validated"), "{text}");
    wait_for(&p, "status to count the inbox append as a write", || {
        p.daemon_status().is_some_and(|s| s.counters.writes >= 1)
    });
}

/// `polisd activity` shows what the daemon did, newest last, with the cause of each write;
/// `-f` keeps printing.
#[test]
fn activity_shows_each_write_with_its_cause_and_follows() {
    use std::io::Read;
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let mut follower = harness::Killed::new(
        Command::new(harness::BIN)
            .args(["activity", "-f"])
            .current_dir(&p.root)
            .env("POLISD_STATE_DIR", &p.state_dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = follower.child().stdout.take().unwrap();
    let followed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = followed.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Settled {
        id: "s1-done",
        opener: FOUNDER,
        owner: ALPHA,
        tags: &["rust"],
        settled_at: "2026-11-02 10:00:00",
        quality: Some(4),
        minutes: 30,
        body: "",
    }
    .settle_by_save(&p);
    // The entry is recorded just after the write it describes: wait for it.
    let activity = || -> Vec<serde_json::Value> {
        let out = p.polisd(&["activity", "--json"]);
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let is_stats_write = |e: &serde_json::Value| {
        e["action"] == "wrote"
            && e["path"] == "contracts/routing_stats.yml"
            && e["cause"]
                .as_str()
                .is_some_and(|c| c.contains("contracts/settled/s1-done.md settled"))
    };
    wait_for(
        &p,
        "the stats write, with its cause, in the activity log",
        || activity().iter().any(is_stats_write),
    );
    let text = String::from_utf8_lossy(&p.polisd(&["activity"]).stdout).into_owned();
    assert!(
        text.contains(
            "wrote       contracts/routing_stats.yml: contracts/settled/s1-done.md settled"
        ),
        "{text}"
    );
    wait_for(&p, "activity -f to print the write", || {
        followed
            .lock()
            .unwrap()
            .contains("contracts/routing_stats.yml")
    });
}

/// Waits until the durable ledger in the state folder (`settled.ledger`) records `needle`: the
/// pass that recorded it has ended, so a kill now loses nothing of it.
#[track_caller]
fn wait_for_ledger(p: &TestPolis, needle: &str) {
    let dir = p.polis_state_dir();
    wait_for(
        p,
        &format!("{needle} in settled.ledger"),
        || match polisd::fs::state::read_ledger_in(&dir).0 {
            polisd::fs::state::Restored::Records { records, .. } => {
                records.iter().any(|r| r.path == needle)
            }
            _ => false,
        },
    );
}

#[test]
fn daemon_restart_restores_the_ledger_checking_fingerprints_and_distrusting_damage() {
    let p = four_citizens();
    let settled = |id: &'static str, owner, quality| Settled {
        id,
        opener: FOUNDER,
        owner,
        tags: &["rust"],
        settled_at: "2026-11-10 10:00:00",
        quality: Some(quality),
        minutes: 30,
        body: "",
    };
    settled("r0-restart", CHARLIE, 4).settle_by_save(&p);
    settled("r1-restart", ALPHA, 4).settle_by_save(&p);
    settled("r2-restart", BRAVO, 2).settle_by_save(&p);
    let daemon = p.start_daemon();
    wait_for_stats(&p, "stats of the first run");
    wait_for_ledger(&p, "contracts/settled/r2-restart.md");
    daemon.kill9();

    // While no daemon runs: an edit of the same size (only the fingerprint's mtime tells), a
    // new settlement and a removal.
    settled("r1-restart", ALPHA, 5).settle_by_save(&p);
    settled("r3-restart", CHARLIE, 3).settle_by_save(&p);
    fs::remove_file(p.path("contracts/settled/r2-restart.md")).unwrap();
    let daemon = p.start_daemon();
    let stats = wait_for_stats(&p, "stats after a restart with changes made meanwhile");
    assert!(stats.contains("avg_quality_score: 5.0"), "{stats}");
    assert!(!stats.contains(BRAVO), "{stats}");
    let log = daemon.log_text();
    assert_eq!(
        count_lines_containing(&log, "restored the ledger"),
        1,
        "{log}"
    );
    assert_eq!(count_lines_containing(&log, "is not used"), 0, "{log}");
    wait_for_ledger(&p, "contracts/settled/r3-restart.md");
    // r1 and r2 were there when polisd first met the polis: only r3 is news.
    wait_for(&p, "the opener told of r3", || {
        p.count(FOUNDER, "contract-settled") == 1
    });
    daemon.kill9();

    // A damaged snapshot (r0's owner changed inside it) is not trusted: one log line, every
    // file read again, the stats still a full reconcile's, no notice sent again.
    let ledger = p.polis_state_dir().join("settled.ledger");
    let mut bytes = fs::read(&ledger).unwrap();
    let at = bytes
        .windows(CHARLIE.len())
        .position(|w| w == CHARLIE.as_bytes())
        .expect("the snapshot names r0's owner");
    bytes[at] = b'C';
    fs::write(&ledger, bytes).unwrap();
    settled("r4-restart", ALPHA, 1).settle_by_save(&p);
    let daemon = p.start_daemon();
    let stats = wait_for_stats(&p, "stats after a restart with a damaged snapshot");
    assert!(stats.contains("avg_quality_score: 3.0"), "{stats}");
    let log = daemon.log_text();
    assert_eq!(count_lines_containing(&log, "is not used"), 1, "{log}");
    wait_for(&p, "the opener told of r4", || {
        p.count(FOUNDER, "contract-settled") == 2
    });
    chronicle_barrier(&p, 1);
    assert_eq!(p.count(FOUNDER, "contract-settled"), 2);
    assert_no_duplicate_markers(&p);
}
