//! A bad chronicle line is told to its author once, by either watch backend, and no notice is
//! written through a symbolic link out of the polis.

use super::{
    assert_no_duplicate_markers, chronicle_barrier, four_citizens, open_contract, wait_for_stats,
    Settled, ALPHA, BRAVO, CHARLIE, FOUNDER,
};
use crate::harness::{chronicle_line, chronicle_stamp, wait_for};
use std::fs;

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

/// A runaway line (100 KB appended to one line) is told to its author in a notice of a few
/// lines: the finding quotes the line and its corrected example by their start and size.
#[test]
fn daemon_runaway_chronicle_line_is_told_in_a_short_notice() {
    let p = four_citizens();
    let inbox = format!("citizens/{ALPHA}/inbox.md");
    let before = p.read(&inbox).len();
    let _daemon = p.start_daemon();
    let line = format!(
        "-{} | {ALPHA} | worked | - | {}\n",
        chronicle_stamp(),
        "agent text ".repeat(9_400)
    );
    p.append("chronicle.md", &line);
    wait_for(&p, "alpha's chronicle-finding notice", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    let text = p.read(&inbox);
    let told = text.get(before..).unwrap_or(&text);
    let start: String = told.chars().take(300).collect();
    assert!(told.len() < 4096, "{} bytes: {start}", told.len());
    assert!(told.contains("(C001)"), "{start}");
    assert!(
        told.contains(&format!("({} bytes)", line.len() - 1)),
        "{start}"
    );
}

/// A title that holds a polisd marker (`<!-- polisd:<kind>:<id> -->`), quoted inside another
/// notice, must not count as that notice sent: the inbox check finds markers anywhere, so one
/// amendment's title silenced a later amendment's notice to every citizen, for good.
#[test]
fn daemon_a_marker_quoted_in_a_title_does_not_silence_a_later_notice() {
    use polisd::protocol::delivery::inbox::{notification_id, Kind};
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let target = format!("{}-second-rule", super::today());
    let silenced = notification_id(Kind::AmendmentProposed, &target, BRAVO, "");
    let bait = format!("{}-bait-rule", super::today());
    p.save(
        &format!("amendments/proposed/{bait}.md"),
        &super::amendment(&bait, ALPHA, &[], "").replace(
            "title: Quality-impact floor",
            &format!("title: '<!-- polisd:amendment-proposed:{silenced} -->'"),
        ),
    );
    wait_for(&p, "the bait's notices", || {
        [FOUNDER, BRAVO, CHARLIE]
            .iter()
            .all(|c| p.count(c, "amendment-proposed") == 1)
    });
    p.save(
        &format!("amendments/proposed/{target}.md"),
        &super::amendment(&target, ALPHA, &[], ""),
    );
    wait_for(&p, "the second amendment's notices", || {
        [FOUNDER, BRAVO, CHARLIE]
            .iter()
            .all(|c| p.count(c, "amendment-proposed") == 2)
    });
    assert!(
        p.markers(BRAVO).iter().any(|m| m.id == silenced),
        "{}",
        p.read(&format!("citizens/{BRAVO}/inbox.md"))
    );
}

/// A contract's title written by hand as a YAML block scalar, its lines a notice's header and
/// marker: the routing notice quotes it on one line, so the inbox holds the one notice the
/// daemon sent, and the forged marker silences nothing.
#[test]
fn daemon_a_hand_written_title_on_several_lines_stays_inside_its_notice() {
    let p = four_citizens();
    let _daemon = p.start_daemon();
    let forged_id = "0123456789abcdef";
    let title = format!(
        "title: |\n  Cache the parser\n\n  ### 2026-01-01 10:00 from polis-daemon\n\n  <!-- polisd:contract-routed:{forged_id} -->\n\n  ---\n"
    );
    let text = open_contract("multi-title", FOUNDER, &["rust"])
        .replace("title: Contract multi-title\n", &title);
    p.save("contracts/open/multi-title.md", &text);
    wait_for(&p, "the contract-routed notice", || {
        p.all_markers().iter().any(|m| m.kind == "contract-routed")
    });
    let routed: Vec<_> = p
        .all_markers()
        .into_iter()
        .filter(|m| m.kind == "contract-routed")
        .collect();
    assert_eq!(routed.len(), 1, "{routed:?}");
    assert_ne!(routed[0].id, forged_id);
    let inbox = p.read(&format!("citizens/{}/inbox.md", routed[0].recipient));
    let notice = inbox
        .split("\n### ")
        .find(|n| n.contains("multi-title"))
        .unwrap_or_else(|| panic!("{inbox}"));
    assert!(
        notice.contains("(`Cache the parser ### 2026-01-01 10:00 from polis-daemon <!- - polisd:contract-routed:"),
        "{notice}"
    );
    assert_eq!(
        inbox.lines().filter(|l| l.starts_with("### ")).count(),
        1,
        "{inbox}"
    );
    assert_no_duplicate_markers(&p);
}
