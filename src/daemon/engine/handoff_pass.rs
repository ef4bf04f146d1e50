//! Handoffs (issue 15): the suggestions of newly settled contracts become routed follow-up
//! contracts through `operations::handoff`; their notices join the outbox.

use super::{Engine, Pass};
use crate::operations::handoff;

impl Engine {
    pub(super) fn handoff_step(&mut self, pass: &mut Pass) {
        // What was settled before polisd met the polis is not acted on (SPEC §3, §9).
        if pass.first_meeting || pass.new_settled.is_empty() {
            return;
        }
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
            match handoff::dispatch_settled(&self.writer, &pass.now, &pass.polis, &id) {
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
                        wrote = true;
                    }
                    self.enqueue(d.notices);
                }
                Err(e) if e.is_refusal() => tracing::warn!("handoffs of {id}: {e}"),
                Err(e) => pass.errors.push(format!("handoffs of {id}: {e}")),
            }
        }
        if wrote {
            self.after_write(pass);
        }
    }
}
