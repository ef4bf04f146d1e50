//! Tallying amendments (SPEC §8) through the application layer.

use super::{Engine, Pass};
use crate::operations;

impl Engine {
    pub(super) fn tally_step(&mut self, pass: &mut Pass) {
        // While files arrive, a vote can be here before the chronicle line that dates it: its
        // ratification waits for the polis to be quiet (docs/sync.md, the settling window).
        let in_transit = !self.settling.is_quiet(std::time::Instant::now());
        match operations::tally(&pass.polis, Some(&self.writer), &pass.now, in_transit) {
            Ok((results, _)) => {
                self.state.counters.tallies += 1;
                for r in results.iter().filter(|r| r.waits_for_lines) {
                    tracing::info!(amendment = %r.amendment_id, detail = %r.detail, "amendment tally waits for the settling window");
                    self.settling.wake_when_quiet();
                }
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
