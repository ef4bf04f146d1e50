//! Tallying amendments (SPEC §8) through the application layer.

use super::{Engine, Pass};
use crate::operations;

impl Engine {
    pub(super) fn tally_step(&mut self, pass: &mut Pass) {
        match operations::tally(&pass.polis, Some(&self.writer), &pass.now) {
            Ok((results, _)) => {
                self.state.counters.tallies += 1;
                let acted: Vec<_> = results.iter().filter(|r| r.action != "pending").collect();
                for r in &acted {
                    tracing::info!(amendment = %r.amendment_id, action = r.action, detail = %r.detail, "amendment tallied");
                    self.log_activity(
                        "tallied",
                        Some(&format!("amendments/proposed/{}.md", r.amendment_id)),
                        format!("{} {}: {}", r.action, r.amendment_id, r.detail),
                    );
                }
                if !acted.is_empty() {
                    self.state.counters.writes += acted.len() as u64;
                    self.after_write(pass);
                }
            }
            Err(e) => pass.errors.push(format!("tally: {e}")),
        }
    }
}
