//! Folders kept by a file-copy sync tool (Syncthing and its kind): conflict copies merged,
//! reported or removed, a transfer's temporary files left alone, and contracts routed by notice.

use super::{
    assert_converged, found, machine, quiet, replace_as_a_sync_tool, settled, syncthing, tree,
    wait_logged, with_settling, ALPHA, BETA, FOUNDER,
};
use crate::harness::*;
use std::fs;
use std::time::{Duration, Instant};

#[test]
fn two_daemons_on_folders_synced_with_conflict_copies_converge() {
    let a = machine(|d| d.join("project"));
    fs::create_dir_all(a.root.parent().unwrap()).unwrap();
    found(a.root.parent().unwrap());
    let b = machine(|d| d.join("project"));
    copy_tree(a.root.parent().unwrap(), b.root.parent().unwrap());
    let mut last = tree(&a.root);
    let _da = a.start_daemon();
    let _db = b.start_daemon();
    quiet(&a);
    quiet(&b);

    // Both sides append to the chronicle and settle a contract; each daemon notifies the
    // opener on its own side.
    let la = chronicle_line(ALPHA, "noted", "-", "parser on machine A");
    let lb = chronicle_line(BETA, "noted", "-", "lexer on machine B");
    a.append("chronicle.md", &la);
    b.append("chronicle.md", &lb);
    a.save(
        "contracts/settled/parser.md",
        &settled("parser", BETA, ALPHA, 5, "2026-03-02 10:00:00"),
    );
    b.save(
        "contracts/settled/lexer.md",
        &settled("lexer", ALPHA, BETA, 3, "2026-03-02 11:00:00"),
    );
    wait_for(&a, "A's notice", || a.count(BETA, "contract-settled") == 1);
    wait_for(&b, "B's notice", || b.count(ALPHA, "contract-settled") == 1);
    // The contracts travel first: each daemon then notifies the other opener too, so both
    // inboxes change on both sides and the next sync keeps conflict copies of them.
    syncthing(&a.root, &b.root, &mut last, "contracts/settled");
    wait_for(&a, "A's notice about lexer", || {
        a.count(ALPHA, "contract-settled") == 1
    });
    wait_for(&b, "B's notice about parser", || {
        b.count(BETA, "contract-settled") == 1
    });

    // An agent writes to alpha's inbox on B while the daemons wrote there on both sides.
    let message = format!(
        "\n### {} from {BETA}\n\nCan you review the lexer?\n\n---\n",
        chronicle_stamp()
    );
    b.append(&format!("citizens/{ALPHA}/inbox.md"), &message);
    let mut conflicts = 0;
    for _ in 0..6 {
        quiet(&a);
        quiet(&b);
        let (touched, kept) = syncthing(&a.root, &b.root, &mut last, "");
        conflicts += kept;
        if touched == 0 {
            break;
        }
    }
    assert!(
        conflicts >= 2,
        "the sync kept conflict copies (chronicle, inboxes): {conflicts}"
    );
    assert_converged(&a, &b, &[la, lb]);
    for p in [&a, &b] {
        let inbox = p.read(&format!("citizens/{ALPHA}/inbox.md"));
        assert_eq!(
            inbox.matches("Can you review the lexer?").count(),
            1,
            "{inbox}"
        );
        assert_eq!(p.count(ALPHA, "contract-settled"), 1);
        assert_eq!(p.count(BETA, "contract-settled"), 1);
    }
}

/// Conflict copies polisd does not merge: a contract's is reported to the index keeper once,
/// with both paths, and never read as a record; a copy of routing_stats.yml (derived bytes)
/// is removed.
#[test]
fn other_conflict_copies_are_reported_once_and_a_stats_copy_is_removed() {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("rust", 4)], "medium");
    let daemon = p.start_daemon();
    let open = "---\ncontract_id: lexer\ntitle: Lexer\nopened_by: founder-agent\nowner: null\nstatus: proposed\nrouting:\n  recommended_by_router: alpha-agent-one\n---\n";
    p.save("contracts/open/lexer.md", open);
    let copy = "contracts/open/lexer (Bob's conflicted copy 2026-03-02).md";
    p.save(
        copy,
        &open.replace("owner: null", &format!("owner: {ALPHA}")),
    );
    let stats_copy = "contracts/routing_stats.sync-conflict-20260302-120000-BBBBBBB.yml";
    p.save(stats_copy, "last_updated: x\n");
    wait_for(&p, "the sync-conflict notice", || {
        p.count(FOUNDER, "sync-conflict") == 1 && !p.exists(stats_copy)
    });
    let inbox = p.read(&format!("citizens/{FOUNDER}/inbox.md"));
    assert!(
        inbox.contains(copy) && inbox.contains("contracts/open/lexer.md"),
        "{inbox}"
    );
    // Another event in the folder: nothing is sent again, and the copy is not a contract.
    p.append("contracts/open/lexer.md", "\nMore.\n");
    let before = daemon.log_text().matches("pass done").count();
    wait_for(&p, "the next pass", || {
        daemon.log_text().matches("pass done").count() > before
    });
    assert_eq!(p.count(FOUNDER, "sync-conflict"), 1);
    assert!(
        p.exists(copy),
        "a copy polisd cannot merge is left for a person"
    );
    let status: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["contracts"]["open"], 1);
}

/// An inbox conflict copy that arrives while the inbox is still being written (main's
/// stability rule) is not merged then; it is merged as soon as the inbox has been
/// quiet for the window (the deferred inbox's own pass), not at the next rescan minutes later,
/// and the owner's bytes are all kept.
#[test]
fn an_inbox_conflict_copy_waits_for_a_settled_inbox_and_is_merged_then() {
    let p = machine(|d| d.join("project"));
    let project = p.root.parent().unwrap().to_path_buf();
    fs::create_dir_all(&project).unwrap();
    found(&project);
    // A window long enough that the copy is always seen inside it.
    fs::write(
        p.dir.path().join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\nstability = \"2s\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let _d = p.start_daemon();
    let inbox = format!("citizens/{ALPHA}/inbox.md");
    let block = |id: &str, stamp: &str| {
        format!("\n### {stamp} from polis-daemon\n\nSomething.\n\n[[contracts/x]]\n<!-- polisd:contract-settled:{id} -->\n\n---\n")
    };
    let base = p.read(&inbox);
    // The owner writes its inbox and, at once, a sync tool drops the other machine's version.
    p.append(&inbox, &block("00000000000000aa", "2026-03-02 10:00"));
    let copy = format!("citizens/{ALPHA}/inbox.sync-conflict-20260302-120000-BBBBBBB.md");
    p.save(
        &copy,
        &format!("{base}{}", block("00000000000000bb", "2026-03-02 11:00")),
    );
    let started = Instant::now();
    wait_for(&p, "the copy merged into the settled inbox", || {
        !p.exists(&copy) && p.read(&inbox).contains("00000000000000bb")
    });
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "merged while the inbox was changing ({:?})",
        started.elapsed()
    );
    let text = p.read(&inbox);
    assert!(text.contains("00000000000000aa"), "{text}");
    assert_eq!(text.matches("<!-- polisd:").count(), 2, "{text}");
}

/// Syncthing writes an arriving conflict copy under a temporary name first
/// (`.syncthing.<copy>.tmp`): neither a conflict copy nor a record, so no P009 and no notice.
#[test]
fn syncthings_temporary_conflict_copy_is_no_conflict() {
    let p = TestPolis::init(FOUNDER);
    let daemon = p.start_daemon();
    let tmp = ".syncthing.chronicle.sync-conflict-20260302-120000-BBBBBBB.md.tmp";
    p.save(
        tmp,
        "- 2026-03-02 12:00 | founder-agent | noted | - | in flight\n",
    );
    p.append(
        "chronicle.md",
        &chronicle_line(FOUNDER, "noted", "-", "after"),
    );
    wait_logged(&p, &daemon, "chronicle line validated", 1);
    let check: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["check", "--json"]).stdout).unwrap();
    assert!(!check.to_string().contains("P009"), "{check}");
    assert!(p.exists(tmp), "a transfer's file is left alone");
    assert_eq!(p.count(FOUNDER, "sync-conflict"), 0);
    assert!(!daemon.log_text().contains("P009"), "{}", daemon.log_text());
}

/// In a folder Syncthing shares (its `.stfolder` marker above `_polis/`), every contract is
/// seen by the other machine's daemon the moment it lands, and a routing block written on one
/// machine while the other settles the contract brings the open copy back (a modification wins
/// over a deletion). So each is routed by notice alone and its file is left as written.
#[test]
fn in_a_syncthing_folder_contracts_are_routed_by_notice_and_never_edited() {
    let p = machine(|dir| {
        let project = dir.join("project");
        fs::create_dir_all(project.join(".stfolder")).unwrap();
        found(&project);
        project
    });
    let _daemon = p.start_daemon();
    let contract = format!(
        "---\ncontract_id: x\ntitle: x\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00\n\
         owner: null\nstatus: proposed\nrequired_tags: [rust]\nrouting:\n  \
         recommended_by_router: null\n---\n\n## Intent\n\nDo x.\n"
    );
    p.save("contracts/open/x.md", &contract);
    wait_for(&p, "the routing notice", || {
        [ALPHA, BETA, FOUNDER]
            .iter()
            .map(|c| p.count(c, "contract-routed"))
            .sum::<usize>()
            == 1
    });
    assert_eq!(p.read("contracts/open/x.md"), contract);
}

/// A polis (shared by a sync tool when `shared`) whose running daemon read `lost`, an agent's
/// line, before a peer's version of the chronicle without it, returned, was renamed over the
/// file as a sync tool does.
fn a_line_lost_to_a_replace(shared: bool) -> (TestPolis, Daemon, String, String) {
    let p = machine(|d| d.join("project"));
    let project = p.root.parent().unwrap().to_path_buf();
    fs::create_dir_all(&project).unwrap();
    found(&project);
    if shared {
        fs::create_dir_all(project.join(".stfolder")).unwrap();
    }
    with_settling(&p, "1s");
    let daemon = p.start_daemon();
    let before = p.read("chronicle.md");
    let lost = chronicle_line(
        ALPHA,
        "noted",
        "-",
        "appended while the peer's version came",
    );
    p.append("chronicle.md", &lost);
    wait_logged(&p, &daemon, "chronicle line validated", 1);
    let peer = format!(
        "{before}{}",
        chronicle_line(BETA, "noted", "-", "written on the other machine")
    );
    replace_as_a_sync_tool(&p, "chronicle.md", &peer);
    (p, daemon, lost, peer)
}

/// A sync tool replaces a file by renaming a peer's version over it. An agent's line appended
/// between the tool's look at the file and the rename is gone, and no conflict copy holds it
/// (seen with three real Syncthing instances). In a folder a sync tool shares, the daemon puts
/// the line back where its stamp puts it once the settling window ends without it; in a git
/// clone, whose history holds it, it tells the author instead.
#[test]
fn a_line_a_sync_tools_replace_lost_is_put_back_in_a_shared_folder_and_told_in_a_clone() {
    for shared in [true, false] {
        let (p, _daemon, lost, _) = a_line_lost_to_a_replace(shared);
        if shared {
            wait_for(&p, "the lost line put back", || {
                p.read("chronicle.md").contains(lost.trim_end())
            });
            let text = p.read("chronicle.md");
            assert_eq!(text.matches(lost.trim_end()).count(), 1, "{text}");
            assert!(text.contains("written on the other machine"), "{text}");
            let activity = String::from_utf8_lossy(&p.polisd(&["activity"]).stdout).into_owned();
            assert!(activity.contains("restored"), "{activity}");
            assert_eq!(p.count(ALPHA, "chronicle-finding"), 0);
        } else {
            wait_for(&p, "the author told of the lost line", || {
                p.count(ALPHA, "chronicle-finding") == 1
            });
            assert!(!p.read("chronicle.md").contains(lost.trim_end()));
        }
    }
}

/// A line the daemon put back can be taken again by the next replace, before the daemon has
/// read the file it wrote (Syncthing's full mesh brings a third version at any moment). The
/// daemon then still knows the line is its to keep, and puts it back again.
#[test]
fn a_line_put_back_and_taken_again_by_the_next_replace_is_put_back_again() {
    let (p, _daemon, lost, first) = a_line_lost_to_a_replace(true);
    wait_for(&p, "the lost line put back", || {
        p.read("chronicle.md").contains(lost.trim_end())
    });
    // The third machine's version, made before the line came back, renamed over the file.
    let second = format!(
        "{first}{}",
        chronicle_line(FOUNDER, "noted", "-", "written on the third machine")
    );
    replace_as_a_sync_tool(&p, "chronicle.md", &second);
    wait_for(&p, "the line lost again put back again", || {
        p.read("chronicle.md").contains(lost.trim_end())
    });
    let text = p.read("chronicle.md");
    assert_eq!(text.matches(lost.trim_end()).count(), 1, "{text}");
    assert!(text.contains("written on the third machine"), "{text}");
    assert_eq!(p.count(ALPHA, "chronicle-finding"), 0);
}

/// A line a command appended before the daemon read it (the daemon was starting, busy, or not
/// running) and that a sync tool's replace then took: the daemon never saw it in the file, but
/// the command noted it on this machine, so the daemon still puts it back. Once with a daemon
/// that had watched the polis before (and crashed), once with none ever.
#[test]
fn a_line_appended_while_no_daemon_read_it_is_put_back_after_a_sync_tools_replace() {
    for watched_before in [true, false] {
        let p = machine(|d| d.join("project"));
        let project = p.root.parent().unwrap().to_path_buf();
        fs::create_dir_all(project.join(".stfolder")).unwrap();
        found(&project);
        with_settling(&p, "1s");
        if watched_before {
            p.start_daemon().kill9();
        }
        let before = p.read("chronicle.md");
        let note = format!("logged while no daemon read (watched before: {watched_before})");
        let logged = p.polisd(&["log", "--as", ALPHA, "noted", "--note", &note]);
        assert!(logged.status.success(), "{logged:?}");
        let line = p
            .read("chronicle.md")
            .lines()
            .find(|l| l.contains(&note))
            .expect("the logged line")
            .to_string();
        // The peer's version, without the line, renamed over the file as a sync tool does.
        let peer = format!(
            "{before}{}",
            chronicle_line(BETA, "noted", "-", "written on the other machine")
        );
        replace_as_a_sync_tool(&p, "chronicle.md", &peer);

        let _daemon = p.start_daemon();
        wait_for(&p, "the lost line put back", || {
            p.read("chronicle.md").contains(&line)
        });
        let text = p.read("chronicle.md");
        assert_eq!(text.matches(&line).count(), 1, "{text}");
        assert!(text.contains("written on the other machine"), "{text}");
        let activity = String::from_utf8_lossy(&p.polisd(&["activity"]).stdout).into_owned();
        assert!(activity.contains("restored"), "{activity}");
        assert_eq!(p.count(ALPHA, "chronicle-finding"), 0);
    }
}
