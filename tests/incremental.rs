//! The daemon's incremental stats ([`Ledger`]) against a from-scratch [`reconcile`]: after every
//! step of a random sequence of settlements, edits, removals and restarts, both must render the
//! same `routing_stats.yml` bytes (SPEC §6). A restart goes through the state folder as the
//! daemon's does: the journal and snapshot of `fs::state` written, loaded again, and the ledger
//! restored from them.

use chrono::NaiveDate;
use polisd::fs::state::{Fingerprint, Restored, SettledRecord, State};
use polisd::protocol::routing::stats::{self, Ledger, Settlement};
use polisd::yaml::Value;
use proptest::prelude::*;
use std::collections::BTreeMap;

const OWNERS: [&str; 4] = ["alice-agent", "bob-agent1", "carol-agent", "dave-agent1"];
const TAGS: [&str; 5] = ["py", "rust", "docs", "infra", "data"];

#[derive(Debug, Clone)]
enum Op {
    /// Settle (or edit) file `file` with these values.
    Put {
        file: u8,
        day: Option<u8>,
        owner: u8,
        tags: Vec<u8>,
        quality: u8,
        minutes: u8,
        defaulted: bool,
    },
    Remove {
        file: u8,
    },
    /// Save the state, drop the ledger, load the state again and restore the ledger from it.
    Restart,
    /// Rewrite the snapshot from the ledger (the daemon does when the journal grows).
    Snapshot,
}

/// Settlements, edits and removals; with `restarts`, restarts and snapshots too.
fn op(restarts: bool) -> impl Strategy<Value = Op> {
    let r = u32::from(restarts);
    prop_oneof![
        4 => (
            0u8..24,
            proptest::option::weighted(0.85, 0u8..12),
            0u8..4,
            proptest::collection::vec(0u8..5, 0..4),
            1u8..=5,
            0u8..6,
            any::<bool>(),
        )
            .prop_map(|(file, day, owner, tags, quality, minutes, defaulted)| Op::Put {
                file,
                day,
                owner,
                tags,
                quality,
                minutes,
                defaulted,
            }),
        1 => (0u8..24).prop_map(|file| Op::Remove { file }),
        r => Just(Op::Restart),
        r => Just(Op::Snapshot),
    ]
}

fn settlement(op: &Op) -> Option<Settlement> {
    let Op::Put {
        file,
        day,
        owner,
        tags,
        quality,
        minutes,
        defaulted,
    } = op
    else {
        return None;
    };
    let mut seen: Vec<String> = Vec::new();
    for t in tags {
        let t = TAGS[*t as usize].to_string();
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    // Few distinct days, so ties in the replay order (and the path tie-break) are common.
    let instant = day.map(|d| {
        NaiveDate::from_ymd_opt(2026, 3, 1 + u32::from(d / 2))
            .unwrap()
            .and_hms_opt(if d % 2 == 0 { 9 } else { 17 }, 0, 0)
            .unwrap()
    });
    // As `contract::settlement_of` gives it: the text only orders settlements without a time.
    let when_text = match instant {
        Some(_) => String::new(),
        None => ["", "soon", "None"][usize::from(*file % 3)].to_string(),
    };
    Some(Settlement {
        path: format!("contracts/settled/c-{file:02}.md"),
        owner: OWNERS[usize::from(*owner)].to_string(),
        tags: seen,
        last_completed: instant.map(|i| i.to_string()[..10].to_string()),
        instant,
        when_text,
        quality: *quality,
        quality_defaulted: *defaulted,
        // Fractions whose running means are inexact, so a different replay order shows.
        minutes: [10.0, 7.5, 1.0 / 3.0, 45.0, 0.1, 120.0][usize::from(*minutes)],
        // What reflection reads beside it, kept through snapshots and journals too (the
        // settlements are compared whole at the end).
        recommended: (*quality % 2 == 0)
            .then(|| OWNERS[usize::from(*quality) % OWNERS.len()].to_string()),
        guarded: *file % 3 == 1,
        renamed: *file % 5 == 2,
    })
}

fn from_scratch(files: &BTreeMap<String, Settlement>, rate: &Value, last: &Value) -> String {
    let all: Vec<Settlement> = files.values().cloned().collect();
    stats::render(&stats::reconcile(&all, rate, last)).unwrap()
}

/// A fingerprint that tells the steps apart.
// Field by field: the fingerprint grows fields (ctime, mode, inode) that these tests
// leave at their defaults.
#[allow(clippy::field_reassign_with_default)]
fn fingerprint(step: usize) -> Fingerprint {
    let mut f = Fingerprint::default();
    f.size = step as u64;
    f.mtime_ns = step as i64 * 1_000_000_007;
    f
}

fn snapshot(state: &mut State, ledger: &Ledger<Fingerprint>) {
    let records = ledger
        .files()
        .map(|(path, fp, s)| SettledRecord::of(path, fp, false, s));
    let records: Vec<SettledRecord> = records.collect();
    state
        .write_settled_snapshot(3600, records.iter().map(SettledRecord::as_ref))
        .unwrap();
}

/// A state folder journalling the ledger as the daemon's does.
struct Durable {
    base: tempfile::TempDir,
    polis: tempfile::TempDir,
    state: State,
}

impl Durable {
    fn new() -> Durable {
        let base = tempfile::tempdir().unwrap();
        let polis = tempfile::tempdir().unwrap();
        let state = State::load_in(base.path(), polis.path()).unwrap();
        Durable { base, polis, state }
    }

    /// Saves, loads the folder again and restores a ledger from it (as the daemon does), with
    /// the stats a one-shot command renders straight from the records (`contract settle` with
    /// no daemon running: the records' settlements in path order).
    fn restart(
        &mut self,
        step: usize,
        rate: &Value,
        last: &Value,
    ) -> (Ledger<Fingerprint>, String) {
        self.state.save().unwrap();
        self.state = State::load_in(self.base.path(), self.polis.path()).unwrap();
        let Restored::Records {
            zone_seconds,
            records,
        } = self.state.take_settled()
        else {
            panic!("the state folder's ledger was not trusted after step {step}");
        };
        assert_eq!(zone_seconds, 3600);
        let views: Vec<_> = records.iter().filter_map(|r| r.settlement).collect();
        let command = stats::render(&stats::reconcile_views(&views, rate, last)).unwrap();
        let ledger = Ledger::restore(
            records
                .iter()
                .map(|r| (r.path, r.fingerprint, r.settlement)),
        );
        (ledger, command)
    }
}

/// Plays `ops` on a ledger (journalled in a state folder when `durable`) and compares its
/// render with a from-scratch reconcile along the way.
fn play(ops: &[Op], durable: bool) -> Result<(), TestCaseError> {
    let rate = Value::Float(0.2);
    let last = Value::Str("2025-12-31 00:00:00".into());
    let mut durable = durable.then(Durable::new);
    let mut ledger: Ledger<Fingerprint> = Ledger::default();
    // The daemon's first pass ends with a snapshot; changes after it are journalled.
    if let Some(d) = &mut durable {
        snapshot(&mut d.state, &ledger);
    }
    let mut files: BTreeMap<String, Settlement> = BTreeMap::new();
    for (step, op) in ops.iter().enumerate() {
        match (op, settlement(op)) {
            (_, Some(s)) => {
                files.insert(s.path.clone(), s.clone());
                let path = s.path.clone();
                if let Some(d) = &mut durable {
                    let record =
                        SettledRecord::of(&path, &fingerprint(step), false, Some(s.view()));
                    d.state.settled_put(record);
                }
                ledger.record(&path, fingerprint(step), Some(s));
            }
            (Op::Remove { file }, None) => {
                let path = format!("contracts/settled/c-{file:02}.md");
                if let Some(d) = &mut durable {
                    d.state.settled_remove(&path);
                }
                prop_assert_eq!(ledger.remove(&path), files.remove(&path));
            }
            (Op::Snapshot, None) => {
                if let Some(d) = &mut durable {
                    snapshot(&mut d.state, &ledger);
                }
            }
            (Op::Restart, None) => {
                let Some(d) = &mut durable else { continue };
                let (restored, command) = d.restart(step, &rate, &last);
                prop_assert_eq!(
                    command,
                    from_scratch(&files, &rate, &last),
                    "the command's stats from the records restored at step {}",
                    step
                );
                for (path, fp, _) in ledger.files() {
                    prop_assert_eq!(restored.meta(path), Some(fp), "{}", path);
                }
                prop_assert_eq!(restored.file_count(), ledger.file_count());
                ledger = restored;
                // Always compared right after a restart: the restored ledger's own render.
                let ours = stats::render(&ledger.stats(&rate, &last)).unwrap();
                prop_assert_eq!(
                    ours,
                    from_scratch(&files, &rate, &last),
                    "after the restart at step {}",
                    step
                );
            }
            _ => unreachable!(),
        }
        prop_assert_eq!(ledger.len(), files.len());
        // Not after every step: a stats call settles dirty tags, and skipping some steps
        // checks that several changes between two passes also add up.
        if step % 3 == 0 || step + 1 == ops.len() {
            let ours = stats::render(&ledger.stats(&rate, &last)).unwrap();
            prop_assert_eq!(
                ours,
                from_scratch(&files, &rate, &last),
                "after step {}",
                step
            );
        }
    }
    prop_assert_eq!(
        ledger.settlements(),
        files.values().cloned().collect::<Vec<_>>()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn incremental_stats_equal_a_full_reconcile(ops in proptest::collection::vec(op(false), 1..60)) {
        play(&ops, false)?;
    }
}

proptest! {
    // Each restart writes and syncs the state folder: fewer, shorter cases.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_restored_ledger_equals_a_full_reconcile(ops in proptest::collection::vec(op(true), 1..40)) {
        play(&ops, true)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn settlements_in_time_order_only_extend(count in 1usize..80) {
        // Every settlement newer than the last: the ledger's direct extension must give the
        // same bytes as a replay.
        let mut ledger = Ledger::new();
        let mut files = BTreeMap::new();
        for i in 0..count {
            let day = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(i as u64);
            let instant = day.and_hms_opt(12, 0, 0).unwrap();
            let s = Settlement {
                path: format!("contracts/settled/s-{i:03}.md"),
                owner: OWNERS[i % 4].to_string(),
                tags: vec![TAGS[i % 5].to_string(), TAGS[(i / 5) % 5].to_string()]
                    .into_iter()
                    .fold(Vec::new(), |mut v, t| {
                        if !v.contains(&t) {
                            v.push(t);
                        }
                        v
                    }),
                when_text: instant.to_string(),
                last_completed: Some(instant.to_string()[..10].to_string()),
                instant: Some(instant),
                quality: (i % 5 + 1) as u8,
                minutes: 1.0 / (i as f64 + 3.0),
                ..Default::default()
            };
            files.insert(s.path.clone(), s.clone());
            ledger.insert(s);
            let ours = stats::render(&ledger.stats(&Value::Null, &Value::Null)).unwrap();
            prop_assert_eq!(ours, from_scratch(&files, &Value::Null, &Value::Null));
        }
    }
}

#[test]
fn an_empty_ledger_keeps_the_previous_values() {
    let mut ledger = Ledger::new();
    let last = Value::Str("x".into());
    assert_eq!(
        ledger.stats(&Value::Float(0.3), &last),
        stats::reconcile(&[], &Value::Float(0.3), &last)
    );
}
