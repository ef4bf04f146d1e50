//! Settlements kept in `routing_stats.yml` as a one-shot `reconcile` would write them, and open
//! contracts routed once, however the files arrive.

use super::{
    amendment, assert_no_duplicate_markers, chronicle_barrier, count_lines_containing,
    four_citizens, open_contract, today, wait_for_stats, Settled, ALPHA, BRAVO, CHARLIE, FOUNDER,
};
use crate::harness::{chronicle_line, chronicle_stamp, copy_tree, wait_for};
use std::fs;
use std::process::Command;

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
    // The notice gives the command that claims it under the contract's lock.
    let id = rel
        .trim_start_matches("contracts/open/")
        .trim_end_matches(".md");
    let inbox = p.read(&format!("citizens/{chosen}/inbox.md"));
    assert!(
        inbox.contains(&format!("`polisd contract claim {id} --as {chosen}`")),
        "{inbox}"
    );

    // The chosen citizen claims it (an editor save): no new routing, no new notice.
    let claimed = routed
        .replace("owner: null", &format!("owner: {chosen}"))
        .replace("status: proposed", "status: claimed");
    p.save(rel, &claimed);
    chronicle_barrier(&p, 2);
    assert_eq!(p.read(rel), claimed);
    assert_eq!(p.count(&chosen, "contract-routed"), 1);
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
