//! Councils: a claimed contract that asks for a council gets one, and every
//! council in `reviews/` is moved on through `operations::council` (rounds closing when every
//! seat wrote or their time is up, packets, the verdict). Its notices join the outbox; the
//! earliest round deadline becomes a wake-up of the event loop ([`Engine::next_expiry`]).
//! Where a council stands is read from `council.md` at every pass, never kept in memory.

use super::{Engine, Pass};
use crate::operations::council;
use chrono::Utc;

impl Engine {
    pub(super) fn council_step(&mut self, pass: &mut Pass) {
        let mut wrote = false;
        let (want, bad) = council::wanting_start(&pass.polis);
        for (_, why) in bad {
            if self.warned_once.insert(format!("council request: {why}")) {
                tracing::warn!("council not started: {why}");
            }
        }
        for id in want {
            match council::start(&self.writer, &pass.now, &pass.polis, &id, "contract", None) {
                Ok(started) => {
                    let panel: Vec<&str> = started.seats.iter().map(|s| s.id.as_str()).collect();
                    tracing::info!(contract = %id, mode = started.mode.as_str(), panel = %panel.join(","), chairman = %started.chairman, "council started");
                    self.state.counters.writes += 1;
                    wrote = true;
                    self.enqueue(started.notices);
                }
                Err(e) if e.is_refusal() => {
                    if self.warned_once.insert(format!("council start {id}: {e}")) {
                        tracing::warn!("council on {id} not started: {e}");
                    }
                }
                Err(e) => pass.errors.push(format!("council on {id}: {e}")),
            }
        }
        let mut deadline = None;
        for id in council::listed(&self.root) {
            match council::advance(&self.writer, &pass.now, &id) {
                Ok(a) => {
                    for n in &a.closed_rounds {
                        tracing::info!(contract = %id, round = n, "council round closed");
                    }
                    if let Some(d) = &a.applied {
                        tracing::info!(contract = %id, decision = %d, "council verdict applied");
                    }
                    if a.fell_back {
                        tracing::info!(contract = %id, "council fell back to a chavruta review");
                    }
                    if a.wrote {
                        self.state.counters.writes += 1;
                        wrote = true;
                    }
                    if let Some(d) = a.deadline {
                        deadline = Some(deadline.map_or(d, |e: chrono::NaiveDateTime| e.min(d)));
                    }
                    self.enqueue(a.notices);
                }
                // The contract is being written (or was just seen for the first time): the
                // writer keeps it as deferred and the engine is woken once it is quiet.
                Err(crate::operations::OpError::Action(e)) if e.is_not_settled() => {
                    tracing::debug!("council on {id}: {e}")
                }
                Err(e) if e.is_refusal() => {
                    if self.warned_once.insert(format!("council {id}: {e}")) {
                        tracing::warn!("council on {id}: {e}");
                    }
                    // A verdict that cannot be applied is the owner's to fix, not the log's.
                    let stuck = council::stuck_notice(&self.root, &id, &e.to_string());
                    self.enqueue(stuck.into_iter().collect());
                }
                Err(e) => pass.errors.push(format!("council on {id}: {e}")),
            }
        }
        self.council_deadline = deadline.and_then(|d| {
            d.and_local_timezone(pass.now.zone.0)
                .single()
                .map(|t| t.with_timezone(&Utc))
        });
        if wrote {
            self.after_write(pass);
        }
    }
}
