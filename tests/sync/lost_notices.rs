//! Inbox notices a sync tool's replace lost: a sync tool renames a peer's version over the
//! inbox, and a notice the daemon appended between the tool's look at the file and that rename
//! is gone with no conflict copy. In a folder a sync tool shares, the daemon delivers it again,
//! once, and never touches the bytes agents append meanwhile.

use super::{
    assert_converged, found, machine, quiet, replace_as_a_sync_tool, settled, syncthing, tree,
    with_settling, ALPHA, BETA, FOUNDER,
};
use crate::harness::*;
use std::fs;

/// A polis in a folder Syncthing shares (its `.stfolder` marker above `_polis/`).
fn shared_polis() -> TestPolis {
    let p = machine(|d| d.join("project"));
    let project = p.root.parent().unwrap().to_path_buf();
    fs::create_dir_all(project.join(".stfolder")).unwrap();
    found(&project);
    with_settling(&p, "1s");
    p
}

fn activity(p: &TestPolis) -> String {
    String::from_utf8_lossy(&p.polisd(&["activity"]).stdout).into_owned()
}

fn inbox(who: &str) -> String {
    format!("citizens/{who}/inbox.md")
}

/// A settled contract beta opened and alpha settled: one `contract-settled` notice to beta.
fn settle_for_beta(p: &TestPolis, id: &str) {
    p.save(
        &format!("contracts/settled/{id}.md"),
        &settled(id, BETA, ALPHA, 4, "2026-03-02 10:00:00"),
    );
}

/// The notice comes back once after the replace, an agent's message appended right after the
/// replace is kept byte for byte, and a restart (also one while the loss waits for the
/// settling window) sends nothing twice.
#[test]
fn a_notice_a_sync_tools_replace_lost_is_delivered_again_once() {
    let p = shared_polis();
    let daemon = p.start_daemon();
    let before = p.read(&inbox(BETA));
    settle_for_beta(&p, "parser");
    wait_for(&p, "the notice", || p.count(BETA, "contract-settled") == 1);
    let sent = p.read(&inbox(BETA));

    // The peer's version, without the notice, renamed over the inbox; then an agent appends a
    // message to it at once.
    replace_as_a_sync_tool(&p, &inbox(BETA), &before);
    let message = format!("\n### 2026-03-02 10:05 from {ALPHA}\n\nParser is in; please look.\n");
    p.append(&inbox(BETA), &message);
    wait_for(&p, "the lost notice delivered again", || {
        p.count(BETA, "contract-settled") == 1
    });
    let text = p.read(&inbox(BETA));
    assert!(text.starts_with(&format!("{before}{message}")), "{text}");
    // The same block as the first time, stamp included.
    assert_eq!(
        &text[before.len() + message.len()..],
        &sent[before.len()..],
        "{text}"
    );
    wait_for(&p, "the delivery again in the activity log", || {
        activity(&p).contains("delivered again")
    });

    // A restart looks at the inbox again and finds the notice there.
    daemon.kill9();
    let daemon = p.start_daemon();
    settle_for_beta(&p, "probe");
    wait_for(&p, "a later notice", || {
        p.count(BETA, "contract-settled") == 2
    });
    assert_eq!(
        p.read(&inbox(BETA)).matches("parser").count(),
        text.matches("parser").count()
    );

    // Lost while the daemon is down: delivered again once after the start.
    let two = p.read(&inbox(BETA));
    daemon.kill9();
    replace_as_a_sync_tool(&p, &inbox(BETA), &text);
    let daemon = p.start_daemon();
    wait_for(&p, "the notice lost while down delivered again", || {
        p.count(BETA, "contract-settled") == 2
    });
    assert_eq!(p.read(&inbox(BETA)), two);
    // A restart after that delivery again: nothing twice.
    daemon.kill9();
    let _daemon = p.start_daemon();
    settle_for_beta(&p, "third");
    wait_for(&p, "a third notice", || {
        p.count(BETA, "contract-settled") == 3
    });
    let markers = p.markers(BETA);
    let mut ids: Vec<&str> = markers.iter().map(|m| m.id.as_str()).collect();
    let all = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all, "{}", p.read(&inbox(BETA)));
}

/// A lost notice whose record has moved on (here: the contract it offers was claimed by someone
/// else) is not delivered again: it would ask for what is no longer wanted.
#[test]
fn a_lost_notice_about_a_contract_claimed_since_is_not_delivered_again() {
    let p = shared_polis();
    let _daemon = p.start_daemon();
    let contract = |owner: &str, status: &str| {
        format!(
            "---\ncontract_id: x\ntitle: x\nopened_by: {FOUNDER}\nopened_at: 2026-03-02 10:00\n\
             owner: {owner}\nstatus: {status}\nrequired_tags: [rust]\nrouting:\n  \
             recommended_by_router: null\n---\n\n## Intent\n\nDo x.\n"
        )
    };
    let befores: Vec<(String, String)> = [ALPHA, BETA, FOUNDER]
        .iter()
        .map(|c| (c.to_string(), p.read(&inbox(c))))
        .collect();
    p.save("contracts/open/x.md", &contract("null", "proposed"));
    let routed = || {
        [ALPHA, BETA, FOUNDER]
            .iter()
            .find(|c| p.count(c, "contract-routed") == 1)
            .map(|c| c.to_string())
    };
    wait_for(&p, "the routing notice", || routed().is_some());
    let to = routed().unwrap();
    let before = &befores.iter().find(|(c, _)| *c == to).unwrap().1;
    let other = if to == ALPHA { BETA } else { ALPHA };
    // Someone else claims it, then the inbox loses the notice.
    p.save("contracts/open/x.md", &contract(other, "claimed"));
    replace_as_a_sync_tool(&p, &inbox(&to), before);
    wait_for(&p, "the daemon to let the outdated notice go", || {
        activity(&p).contains("not delivered again")
    });
    assert_eq!(
        p.count(&to, "contract-routed"),
        0,
        "{}",
        p.read(&inbox(&to))
    );
}

/// A notice lost together with the reply an agent wrote beneath it: the notice comes back
/// once, alone (the reply is the agent's words, which polisd never writes for it). Lost a
/// second time (a reader deleting it by hand looks the same), it is left gone: delivered again
/// at most once, so polisd never fights a reader over its inbox.
#[test]
fn a_notice_lost_with_a_reply_comes_back_alone_and_only_once() {
    let p = shared_polis();
    let _daemon = p.start_daemon();
    let before = p.read(&inbox(BETA));
    settle_for_beta(&p, "parser");
    wait_for(&p, "the notice", || p.count(BETA, "contract-settled") == 1);
    let sent = p.read(&inbox(BETA));
    p.append(
        &inbox(BETA),
        &format!("\n### 2026-03-02 10:05 from {BETA}\n\nSeen, thanks.\n"),
    );
    replace_as_a_sync_tool(&p, &inbox(BETA), &before);
    wait_for(&p, "the lost notice delivered again", || {
        p.count(BETA, "contract-settled") == 1
    });
    assert_eq!(p.read(&inbox(BETA)), sent);

    // Gone again: the settling window passes (a chronicle line linking to nothing is told
    // when it ends, in the same pass that would deliver the notice again) without it.
    replace_as_a_sync_tool(&p, &inbox(BETA), &before);
    p.append(
        "chronicle.md",
        &chronicle_line(
            ALPHA,
            "noted",
            "[[contracts/open/nothing]]",
            "a link to nothing",
        ),
    );
    wait_for(&p, "the chronicle finding told after the window", || {
        p.count(ALPHA, "chronicle-finding") == 1
    });
    assert_eq!(p.read(&inbox(BETA)), before);
}

/// Two machines, a daemon on each, whose inboxes both lost the notice both had delivered:
/// each daemon delivers it again in its own copy, and once synced it is there once on both.
#[test]
fn two_daemons_that_both_lost_a_notice_end_with_it_once() {
    let a = shared_polis();
    let b = machine(|d| d.join("project"));
    copy_tree(a.root.parent().unwrap(), b.root.parent().unwrap());
    assert!(b.root.parent().unwrap().join(".stfolder").is_dir());
    with_settling(&b, "1s");
    let mut last = tree(&a.root);
    let _da = a.start_daemon();
    let _db = b.start_daemon();
    let before = a.read(&inbox(BETA));
    settle_for_beta(&a, "parser");
    wait_for(&a, "A's notice", || a.count(BETA, "contract-settled") == 1);
    syncthing(&a.root, &b.root, &mut last, "contracts/settled");
    wait_for(&b, "B's notice", || b.count(BETA, "contract-settled") == 1);
    let sync_until_still = |last: &mut std::collections::BTreeMap<String, Vec<u8>>| {
        for _ in 0..6 {
            quiet(&a);
            quiet(&b);
            if syncthing(&a.root, &b.root, last, "").0 == 0 {
                break;
            }
        }
    };
    sync_until_still(&mut last);
    assert_converged(&a, &b, &[]);

    for p in [&a, &b] {
        replace_as_a_sync_tool(p, &inbox(BETA), &before);
    }
    for p in [&a, &b] {
        wait_for(p, "the notice delivered again", || {
            p.count(BETA, "contract-settled") == 1
        });
    }
    sync_until_still(&mut last);
    assert_converged(&a, &b, &[]);
    for p in [&a, &b] {
        assert_eq!(
            p.count(BETA, "contract-settled"),
            1,
            "{}",
            p.read(&inbox(BETA))
        );
    }
}
