//! Handoffs: the suggestions of newly settled contracts, and of review files, become
//! routed follow-up contracts through `operations::handoff`; their notices join the outbox.

use super::{Engine, Pass};
use crate::fs::snapshot;
use crate::fs::state::Fingerprint;
use crate::operations::handoff;
use crate::protocol::contracts::handoff::{self as rules, Source};
use crate::protocol::layout;

/// The `state.known` key of a review file whose suggestions were dispatched (its value: the
/// hex SHA-256 of the bytes they were dispatched from).
fn review_key(name: &str) -> String {
    format!("review/{name}")
}

/// The `state.known` key set once the reviews' baseline is taken: on first meeting, or on the
/// first run of a polisd that dispatches reviews over the state of one that did not (whose
/// reviews are then recorded, not dispatched).
const REVIEWS_BASELINE: &str = "reviews-baseline";

impl Engine {
    pub(super) fn handoff_step(&mut self, pass: &mut Pass) {
        // What was settled before polisd met the polis is not acted on (SPEC §3, §9).
        if pass.first_meeting || pass.new_settled.is_empty() {
            return;
        }
        self.postit_step(pass);
        // `new_settled` holds paths (`contracts/settled/<id>.md`).
        let ids: Vec<String> = pass
            .new_settled
            .iter()
            .filter(|(_, heading)| heading.suggests)
            .filter_map(|(rel, _)| {
                let name = rel
                    .strip_prefix("contracts/settled/")?
                    .strip_suffix(".md")?;
                (!name.contains('/')).then(|| name.to_string())
            })
            .collect();
        let mut wrote = false;
        for id in ids {
            let result = handoff::dispatch_settled(&self.writer, &pass.now, &pass.polis, &id);
            wrote |= self.take_dispatch(pass, &id, result);
        }
        if wrote {
            self.after_write(pass);
        }
    }

    /// The suggestions written in review files (`reviews/<YYYY-MM-DD-HHMM>-<cid>.md`) that
    /// polisd has not dispatched from these bytes yet. A review there when polisd first met
    /// the polis (or first ran with this step) is recorded, not dispatched (SPEC §3, §9); one
    /// edited later is dispatched again, which opens only its new blocks (each block names a
    /// fixed follow-up file).
    pub(super) fn review_handoff_step(&mut self, pass: &mut Pass) {
        let mut findings = Vec::new();
        let entries = snapshot::list(&self.root, layout::REVIEWS_DIR, ".md", &mut findings);
        let mut present = std::collections::HashSet::new();
        let mut wrote = false;
        let baseline = pass.first_meeting || !self.state.known.contains_key(REVIEWS_BASELINE);
        for entry in entries {
            let name = entry
                .rel
                .rsplit('/')
                .next()
                .unwrap_or(&entry.rel)
                .to_string();
            if Source::review(&name).is_none() {
                continue; // not a review's name (SPEC §10): not a record to act on
            }
            present.insert(name.clone());
            let Ok(meta) = std::fs::symlink_metadata(self.root.join(&entry.rel)) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let print = Fingerprint::of(&meta);
            if self.review_prints.get(&name) == Some(&print) {
                continue;
            }
            let Ok(Some(text)) =
                snapshot::read_text(&self.root, &entry.rel, Some(snapshot::MAX_RECORD_BYTES))
            else {
                continue;
            };
            // A print taken in the clock tick of the file's change may also be a second write's
            // in that tick: not kept, so the next look reads the file again.
            if print.may_change_unseen(crate::fs::state::read_instant()) {
                self.review_prints.remove(&name);
            } else {
                self.review_prints.insert(name.clone(), print);
            }
            if !rules::has_suggestion_heading(&text) {
                continue;
            }
            let hash = crate::protocol::digest::sha256_hex(text.as_bytes());
            let key = review_key(&name);
            if self.state.known.get(&key) == Some(&hash) {
                continue;
            }
            if baseline {
                self.state.known.insert(key, hash);
                continue;
            }
            let result = handoff::dispatch_review(&self.writer, &pass.now, &pass.polis, &name);
            if result.is_ok() {
                self.state.known.insert(key, hash);
            }
            wrote |= self.take_dispatch(pass, &format!("reviews/{name}"), result);
        }
        self.review_prints.retain(|name, _| present.contains(name));
        if baseline {
            self.state
                .known
                .insert(REVIEWS_BASELINE.to_string(), pass.now.second_stamp());
        }
        if wrote {
            self.after_write(pass);
        }
    }

    /// The orchestration seed's post-its: each newly settled step of a handoff chain (a
    /// contract that suggests a next one, or a follow-up) should find its owner's post-it
    /// (`status.md`) written since the step began (its `opened_at`) and at most 30 lines; if
    /// not, the owner is nudged once (the notice's id is the step's).
    fn postit_step(&mut self, pass: &Pass) {
        let mut nudges = Vec::new();
        for (rel, heading) in &pass.new_settled {
            let Ok(Some(text)) =
                snapshot::read_text(&self.root, rel, Some(snapshot::MAX_RECORD_BYTES))
            else {
                continue;
            };
            let Ok(c) = crate::protocol::contracts::contract::Contract::parse(&text) else {
                continue;
            };
            if !heading.suggests && c.fields.get("parent_contract").is_null() {
                continue;
            }
            let (Some(owner), Some(start)) = (
                c.owner.as_deref().filter(|o| layout::is_agent_id(o)),
                crate::protocol::contracts::contract::instant_of(&c.opened_at, pass.now.zone),
            ) else {
                continue;
            };
            let status = snapshot::read_text(
                &self.root,
                &format!("{}/{owner}/status.md", layout::CITIZENS_DIR),
                Some(snapshot::MAX_RECORD_BYTES),
            )
            .ok()
            .flatten();
            if let Some(why) = crate::protocol::citizens::citizen::postit_gap(
                status.as_deref(),
                start,
                pass.now.zone,
            ) {
                let id = layout::record_stem(rel);
                nudges.push(
                    crate::protocol::delivery::inbox::Notification::postit_missing(owner, id, &why),
                );
            }
        }
        self.enqueue(nudges);
    }

    /// Logs a dispatch and queues its notices; whether it wrote into the polis.
    fn take_dispatch(
        &mut self,
        pass: &mut Pass,
        id: &str,
        result: Result<handoff::Dispatch, crate::operations::OpError>,
    ) -> bool {
        match result {
            Ok(d) => {
                for o in d.opened.iter().filter(|o| !o.existing) {
                    tracing::info!(parent = %id, contract = %o.contract_id, to = %o.citizen, step = o.step, "handoff opened");
                }
                for n in &d.deferred {
                    tracing::info!(parent = %id, citizen = %n.suggestion.citizen, why = %n.why, "handoff deferred");
                }
                for n in &d.skipped {
                    tracing::info!(parent = %id, citizen = %n.suggestion.citizen, why = %n.why, "handoff skipped");
                }
                if d.wrote {
                    self.state.counters.writes += 1;
                }
                self.enqueue(d.notices);
                d.wrote
            }
            Err(e) if e.is_refusal() => {
                tracing::warn!("handoffs of {id}: {e}");
                false
            }
            Err(e) => {
                pass.errors.push(format!("handoffs of {id}: {e}"));
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::daemon::engine::{Engine, Trigger};
    use crate::fs::state::{set_read_instant, Fingerprint};
    use std::time::Duration;

    #[test]
    fn a_reviews_print_taken_in_the_tick_of_its_change_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir_all(root.join("reviews")).unwrap();
        std::fs::write(root.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
        let name = "2026-05-02-1000-fix-login.md";
        let path = root.join("reviews").join(name);
        std::fs::write(&path, "---\nreviewer: bob-dev\n---\n\nLooks right.\n").unwrap();
        let print = Fingerprint::of(&std::fs::symlink_metadata(&path).unwrap());
        let changed_at = print.changed_at();
        let options = Engine::default_options();
        let mut engine = Engine::open_in(&root, &dir.path().join("state"), options).unwrap();
        let wall = chrono::Utc::now();
        set_read_instant(Some(changed_at + Duration::from_millis(5)));
        engine.handle(&Trigger::Rescan, wall).unwrap();
        let kept = engine.review_prints.contains_key(name);
        set_read_instant(Some(changed_at + Duration::from_secs(60)));
        engine.handle(&Trigger::Rescan, wall).unwrap();
        let kept_later = engine.review_prints.get(name) == Some(&print);
        set_read_instant(None);
        assert!(
            !kept,
            "a print that may be a second write's must not vouch for the file"
        );
        assert!(kept_later, "read long after its change, the print is kept");
    }
}
