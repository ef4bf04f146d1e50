//! Reflection: once a day every detector, and after a settlement the detectors that
//! settled contracts feed, filing what they find as amendments through the application layer.
//!
//! After a settlement the ledger (owner, tags, quality) says on which tags a proposal is at all
//! possible ([`rules::tags_worth_reading`]); the evidence of those tags' settled contracts is
//! the ledger's too (it keeps the router's recommendation and whether each was guarded), so a
//! daily run reads no settled file again (but one whose `contract_id` is not its name).

use super::{Engine, Pass};
use crate::fs::snapshot::{self, ContractFile};
use crate::operations::reflection::{self, Scope};
use crate::protocol::amendments::reflection::{self as rules, SettledEvidence};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::contract::Contract;
use crate::protocol::layout::ContractFolder;
use crate::protocol::routing::stats::{Settlement, SettlementView};
use chrono::{DateTime, NaiveDate, Utc};

/// The `state.known` key holding the polis-local date of the last daily run.
const LAST_DAILY_RUN: &str = "reflect/daily";

impl Engine {
    /// The polis-local date of `wall`.
    pub(super) fn polis_day(&self, wall: DateTime<Utc>) -> NaiveDate {
        PolisTime::at(self.settled_zone.unwrap_or_default(), wall)
            .now
            .date()
    }

    /// Whether the daily reflection has not run on the polis-local day of `wall` (it never
    /// runs before the first meeting is over, nor on a machine that does not write).
    pub(super) fn reflection_due(&self, wall: DateTime<Utc>) -> bool {
        self.options.reflect
            && self.options.writer.writes()
            && self.state.first_met.is_some()
            && !self.ran_daily_on(self.polis_day(wall))
    }

    /// Whether the state records the daily run of `day` (polis-local).
    fn ran_daily_on(&self, day: NaiveDate) -> bool {
        self.state.known.get(LAST_DAILY_RUN) == Some(&day_key(day))
    }

    /// When the engine should wake for the daily reflection: now when it is due and this
    /// process has not woken for it today, else the polis's next midnight. `None` before the
    /// first pass, or with reflection off.
    pub(super) fn next_reflection(&self, wall: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let zone = self.settled_zone?;
        if !self.options.reflect || !self.options.writer.writes() || !self.warmed {
            return None;
        }
        let today = self.polis_day(wall);
        if self.reflection_due(wall) && self.reflection_woken != Some(today) {
            return Some(wall);
        }
        let midnight = today.succ_opt()?.and_hms_opt(0, 0, 0)?;
        midnight
            .and_local_timezone(zone.0)
            .single()
            .map(|t| t.with_timezone(&Utc))
    }

    pub(super) fn reflection_step(&mut self, pass: &mut Pass) {
        if !self.options.reflect || pass.first_meeting {
            return;
        }
        let today = pass.now.now.date();
        let daily = !self.ran_daily_on(today);
        let scope = if daily {
            Scope::All
        } else if !pass.new_settled.is_empty() {
            Scope::Settled
        } else {
            return;
        };
        // After a settlement only its own tags can have changed a detector's answer.
        let touched: Option<std::collections::BTreeSet<String>> =
            (scope == Scope::Settled).then(|| {
                pass.new_settled
                    .iter()
                    .filter_map(|(rel, _)| self.ledger.get(rel))
                    .flat_map(|s| s.tags)
                    .collect()
            });
        let settled = self.settled_evidence(touched.as_ref());
        // Reading that many files leaves the heap holding their freed parses, and the evidence
        // too once the detectors ran: given back at the end of the step.
        let read_many = settled.len() >= crate::daemon::memory::MANY_FILES;
        let mut evidence = reflection::gather_with(&pass.polis, settled, scope, &pass.now);
        evidence.clock =
            crate::protocol::chronicle::parse_stamp(&self.polis_clock(&pass.polis, &pass.now))
                .filter(|t| t.and_utc().timestamp() != 0);
        match reflection::reflect(
            &evidence,
            rules::DEFAULT_MIN_EVIDENCE,
            Some(&self.writer),
            &pass.now,
        ) {
            Ok(results) => {
                if daily {
                    self.state
                        .known
                        .insert(LAST_DAILY_RUN.into(), day_key(today));
                }
                let filed: Vec<_> = results.iter().filter(|r| r.written).collect();
                for r in &filed {
                    tracing::info!(amendment = %r.amendment_id, kind = r.proposal.kind.as_str(), "reflection filed a proposal");
                }
                if !filed.is_empty() {
                    self.state.counters.writes += filed.len() as u64;
                    self.after_write(pass);
                }
            }
            Err(e) => pass.errors.push(format!("reflection: {e}")),
        }
        drop(evidence);
        if read_many {
            crate::daemon::memory::trim_heap();
        }
    }

    /// The settled contracts of every tag where a detector could fire (of `only`'s tags, when
    /// given), in path order, as the reference lists them. Their evidence comes from the
    /// ledger, which keeps what the detectors read beside each settlement; only a file whose
    /// `contract_id` is not its name is read, for that id, once while the ledger holds it
    /// unchanged (`renamed_ids`).
    fn settled_evidence(
        &mut self,
        only: Option<&std::collections::BTreeSet<String>>,
    ) -> Vec<SettledEvidence> {
        let mut worth = rules::tags_worth_reading(
            self.ledger
                .iter()
                .map(|(_, s)| (s.owner, s.tags, s.quality)),
            rules::DEFAULT_MIN_EVIDENCE,
        );
        if let Some(only) = only {
            worth.retain(|t| only.contains(t));
        }
        if worth.is_empty() {
            return Vec::new();
        }
        // Each contract's evidence built as it is found (a list of the ledger's views first
        // cost a daily run at 100k settled ~14 MB more at its peak), with its path for order.
        // A renamed one (rare: `polisd check` reports them) takes the id read from its file
        // before, while the ledger's fingerprint of it is the same.
        let ledger = &self.ledger;
        let known_id = |path: &str| {
            let (seen, id) = self.renamed_ids.get(path)?;
            (Some(seen) == ledger.meta(path)).then_some(id.as_str())
        };
        let mut evidence: Vec<(&str, Option<SettledEvidence>)> = ledger
            .iter()
            .filter(|(path, s)| path.ends_with(".md") && s.tags.iter().any(|t| worth.contains(t)))
            .map(|(path, s)| {
                let e = reflection::settled_evidence_of(path, &s).or_else(|| {
                    known_id(path).map(|id| reflection::settled_evidence_named(id, &s))
                });
                (path, e)
            })
            .collect();
        evidence.sort_unstable_by(|a, b| a.0.cmp(b.0));
        // The other renamed ones, read now in their place so that equal ids keep the path
        // order.
        let renamed: Vec<(usize, Settlement)> = (0..evidence.len())
            .filter(|&i| evidence[i].1.is_none())
            .filter_map(|i| Some((i, self.ledger.get(evidence[i].0)?)))
            .collect();
        let root = self.root.clone();
        let read = snapshot::par_map(&renamed, |(_, s)| read_evidence(&root, &s.path, &s.view()));
        for ((i, s), e) in renamed.iter().zip(read) {
            if let (Some(e), Some(fingerprint)) = (&e, self.ledger.meta(&s.path)) {
                self.renamed_ids
                    .insert(s.path.clone(), (*fingerprint, e.contract_id.clone()));
            }
            evidence[*i].1 = e;
        }
        let mut out: Vec<SettledEvidence> = evidence.into_iter().filter_map(|(_, e)| e).collect();
        out.sort_by(|a, b| a.contract_id.cmp(&b.contract_id));
        out
    }
}

/// How `state.known` records a polis-local day.
fn day_key(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

/// A settled contract's evidence read from its file (`None`: it cannot be read now).
pub(super) fn read_evidence(
    root: &std::path::Path,
    path: &str,
    view: &SettlementView<'_>,
) -> Option<SettledEvidence> {
    let stem = path.rsplit('/').next()?.strip_suffix(".md")?;
    let file = snapshot::read_record(root, path, stem, &mut Vec::new())?;
    let contract = Contract::from_record(&file.record);
    let file = ContractFile {
        folder: ContractFolder::Settled,
        file,
        contract,
    };
    Some(reflection::settled_evidence(
        &file,
        &view.to_settlement(path),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::engine::{EngineOptions, Trigger};
    use crate::fs::snapshot::Polis;
    use crate::protocol::clock::PolisTime;

    /// Settled contracts of one tag, all of low quality (so every detector of settled work
    /// reads them), that vary each field reflection reads beside the settlement.
    const VARIANTS: &[(&str, &str)] = &[
        ("a-00", "contract_id: a-00\nrouting:\n  recommended_by_router: bob-dev\nstakes: medium\nreview:\n  required: false\n"),
        ("a-01", "contract_id: a-01\nrouting:\n  recommended_by_router: null\nstakes: high\n"),
        ("a-02", "contract_id: a-02\nreview:\n  required: true\n"),
        ("a-03", "contract_id: a-03\nreview:\n  reviewer: bob-dev\n"),
        ("a-04", "contract_id: a-04\nreview:\n  required: 'yes'\nrouting: {recommended_by_router: alice-dev}\n"),
        ("a-05", "contract_id: another-name\n"),
        // No contract_id at all.
        ("a-06", ""),
        ("a-07", "contract_id: 42\nstakes: HIGH\n"),
        ("a-08", "contract_id: a-08\nrouting: bob-dev\nreview: none\n"),
        ("a-09", "contract_id: a-09\nrouting:\n  recommended_by_router: 7\n"),
        ("a-10", "contract_id: a-10\nrouting:\n  recommended_by_router: alice-dev\n"),
        // The id of the file before it: equal ids keep the path order.
        ("a-11", "contract_id: a-10\nrouting:\n  recommended_by_router: bob-dev\nstakes: high\n"),
    ];

    fn polis() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::write(root.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
        for (i, (name, fields)) in VARIANTS.iter().enumerate() {
            let owner = ["alice-dev", "bob-dev", "carol-dev"][i % 3];
            // Complete otherwise, so that a restart trusts the snapshot's record of it.
            let text = format!(
                "---\n{fields}title: Contract {i}\nopened_by: alice-dev\n\
                 opened_at: 2026-05-01 09:00:00\nstatus: settled\nowner: {owner}\n\
                 required_tags: [ml]\ncost_ceiling: medium\n\
                 settled_at: 2026-05-{:02} 10:00:00\nquality_score: {}\nactual_minutes: 30\n\
                 ---\n\n## Intent\n\nDo the thing.\n\n## Settlement\n\nDone.\n",
                1 + i,
                1 + i % 2,
            );
            std::fs::write(root.join(format!("contracts/settled/{name}.md")), text).unwrap();
        }
        (dir, root)
    }

    fn options() -> EngineOptions {
        let mut options = Engine::default_options();
        options.reflect = true;
        options
    }

    /// The evidence as the daemon built it before the ledger kept it: every wanted file read
    /// again, through [`Contract::from_record`].
    fn read_again(engine: &Engine) -> Vec<SettledEvidence> {
        let mut wanted: Vec<_> = engine.ledger.iter().collect();
        wanted.sort_by(|a, b| a.0.cmp(b.0));
        let mut out: Vec<SettledEvidence> = wanted
            .iter()
            .filter_map(|(path, view)| read_evidence(&engine.root, path, view))
            .collect();
        out.sort_by(|a, b| a.contract_id.cmp(&b.contract_id));
        out
    }

    /// What the detectors propose from this settled evidence (nothing is written).
    fn proposals(polis: &Polis, settled: Vec<SettledEvidence>, now: &PolisTime) -> String {
        let evidence = reflection::gather_with(polis, settled, Scope::All, now);
        let results =
            reflection::reflect(&evidence, rules::DEFAULT_MIN_EVIDENCE, None, now).unwrap();
        serde_json::to_string(&results).unwrap()
    }

    #[test]
    fn reflection_evidence_from_the_ledger_equals_the_files_read_again() {
        let (dir, root) = polis();
        let state = dir.path().join("state");
        let wall = chrono::Utc::now();
        let now = PolisTime::at(Default::default(), wall);
        let polis = Polis::read(&root);
        // The CLI's path (`polisd reflect`): every settled file read with the polis.
        let gathered = reflection::gather(&polis, Scope::All, &now).settled;
        assert_eq!(gathered.len(), VARIANTS.len());
        assert!(gathered.iter().any(|e| e.guarded) && gathered.iter().any(|e| !e.guarded));
        assert!(gathered.iter().any(|e| e.recommended.is_some()));
        // A first meeting (every file read), then a restart (the ledger restored from the
        // state folder's snapshot, no file read).
        for round in ["first meeting", "restart"] {
            let mut engine = Engine::open_in(&root, &state, options()).unwrap();
            engine.handle(&Trigger::Rescan, wall).unwrap();
            if round == "first meeting" {
                // Only the files whose id is wrong or missing have findings (they are read
                // again on restart): every other one is restored from the snapshot's record.
                let mut with_findings: Vec<&str> = engine
                    .settled_findings
                    .slots()
                    .filter_map(|slot| engine.ledger.path_at(slot))
                    .collect();
                with_findings.sort();
                let wrong_id =
                    ["a-05", "a-06", "a-07", "a-11"].map(|n| format!("contracts/settled/{n}.md"));
                assert_eq!(with_findings, wrong_id);
            }
            let from_ledger = engine.settled_evidence(None);
            assert_eq!(from_ledger, read_again(&engine), "{round}");
            assert_eq!(from_ledger, gathered, "{round}");
            assert_eq!(
                proposals(&polis, from_ledger, &now),
                proposals(&polis, gathered.clone(), &now),
                "{round}"
            );
        }
        assert!(!proposals(&polis, gathered, &now).starts_with("[]"));
    }

    /// A renamed file's id is read once while the ledger holds the file unchanged, and again
    /// once the file changed.
    #[test]
    fn a_renamed_contracts_id_is_read_once_while_its_file_is_unchanged() {
        let (dir, root) = polis();
        let state = dir.path().join("state");
        let wall = chrono::Utc::now();
        let mut engine = Engine::open_in(&root, &state, options()).unwrap();
        engine.handle(&Trigger::Rescan, wall).unwrap();
        let first = engine.settled_evidence(None);
        assert!(first.iter().any(|e| e.contract_id == "another-name"));
        // Gone from the disk behind the ledger's back: the id kept is used, not read.
        let a05 = root.join("contracts/settled/a-05.md");
        let text = std::fs::read_to_string(&a05).unwrap();
        std::fs::remove_file(&a05).unwrap();
        assert_eq!(engine.settled_evidence(None), first);
        // Changed (the ledger sees it in a pass): read again.
        std::fs::write(&a05, text.replace("another-name", "third-name")).unwrap();
        engine
            .handle(
                &Trigger::Paths(vec!["contracts/settled/a-05.md".into()]),
                wall,
            )
            .unwrap();
        let again = engine.settled_evidence(None);
        assert!(
            again.iter().any(|e| e.contract_id == "third-name"),
            "{again:?}"
        );
        assert!(!again.iter().any(|e| e.contract_id == "another-name"));
        // Changed again in a way no fingerprint tells (a second write in the clock tick of a
        // read the ledger marked): the ledger and the kept id hold the new fingerprint, and the
        // file's event must still bring the new id.
        let rel = "contracts/settled/a-05.md";
        let print = || crate::fs::state::Fingerprint::of(&std::fs::symlink_metadata(&a05).unwrap());
        std::fs::write(&a05, text.replace("another-name", "fourth-name")).unwrap();
        let held = engine.ledger.get(rel);
        engine.ledger.record(rel, print(), held);
        engine
            .renamed_ids
            .insert(rel.to_string(), (print(), "third-name".to_string()));
        engine
            .settled_racy
            .note_read(rel, &print(), std::time::SystemTime::UNIX_EPOCH);
        engine
            .handle(&Trigger::Paths(vec![rel.into()]), wall)
            .unwrap();
        let last = engine.settled_evidence(None);
        assert!(
            last.iter().any(|e| e.contract_id == "fourth-name"),
            "{last:?}"
        );
    }

    /// The day's reflection runs in the first meeting's start-up, not on the first agent's
    /// change after it; then the engine asks to be woken at the polis's next midnight, and
    /// once at that midnight (not again if that run could not happen).
    #[test]
    fn the_daily_reflection_runs_at_start_up_and_at_the_polis_midnight() {
        let (dir, root) = polis();
        std::fs::write(root.join("polis.yml"), "timezone: '+02:00'\n").unwrap();
        let state = dir.path().join("state");
        // 21:30 UTC is 23:30 in the polis: its next midnight is 22:00 UTC.
        let wall = chrono::DateTime::parse_from_rfc3339("2026-06-01T21:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let mut engine = Engine::open_in(&root, &state, options()).unwrap();
        assert_eq!(
            engine.next_reflection(wall),
            None,
            "not before the first pass"
        );
        engine.handle(&Trigger::Rescan, wall).unwrap();
        assert!(engine.state.first_met.is_some());
        assert_eq!(
            engine.state.known.get(LAST_DAILY_RUN).map(String::as_str),
            Some("2026-06-01"),
            "the first meeting's start-up ran the day's reflection"
        );
        assert!(!engine.reflection_due(wall));
        let midnight = chrono::DateTime::parse_from_rfc3339("2026-06-01T22:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(engine.next_reflection(wall), Some(midnight));

        let later = midnight + chrono::Duration::minutes(1);
        assert!(engine.reflection_due(later));
        assert_eq!(engine.next_reflection(later), Some(later), "due: wake now");
        // Woken for it (the pass could not run): the next wake-up is the day after.
        engine.reflection_woken = Some(engine.polis_day(later));
        let next_midnight = midnight + chrono::Duration::days(1);
        assert_eq!(engine.next_reflection(later), Some(next_midnight));
        engine.reflection_woken = None;
        engine.handle(&Trigger::Reflection, later).unwrap();
        assert_eq!(
            engine.state.known.get(LAST_DAILY_RUN).map(String::as_str),
            Some("2026-06-02")
        );
        assert_eq!(engine.next_reflection(later), Some(next_midnight));

        let mut off = options();
        off.reflect = false;
        engine.set_options(off);
        assert_eq!(
            engine.next_reflection(next_midnight),
            None,
            "reflection off"
        );
    }
}
