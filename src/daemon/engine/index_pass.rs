//! Keeps the state block of `index.md` current (`protocol::delivery::index_state`): written
//! by compare-before-replace, and only when its bytes change.

use super::{Engine, Pass};
use crate::protocol::delivery::index_state::{self, InFlight, IndexState};
use crate::protocol::layout::{self, ContractFolder};

impl Engine {
    pub(super) fn index_step(&mut self, pass: &mut Pass) {
        let polis = &pass.polis;
        let open: Vec<_> = polis
            .contracts
            .iter()
            .filter(|c| c.folder == ContractFolder::Open)
            .collect();
        let mut in_flight: Vec<InFlight> = open
            .iter()
            .filter_map(|c| {
                let k = &c.contract;
                Some(InFlight {
                    id: c.file.stem.clone(),
                    title: k.title.clone().unwrap_or_else(|| c.file.stem.clone()),
                    owner: k.owner.clone()?,
                    status: k.status.clone().unwrap_or_else(|| "claimed".into()),
                })
            })
            .collect();
        in_flight.sort_by(|a, b| a.id.cmp(&b.id));
        let mut needs_a_person = Vec::new();
        for c in &open {
            let k = &c.contract;
            let id = &c.file.stem;
            // The person's queue and the dashboard ask for a reviewer by the same rule.
            if crate::protocol::contracts::review::awaiting(k)
                == Some(crate::protocol::contracts::review::Awaiting::NoReviewer)
            {
                needs_a_person.push(format!(
                    "[[contracts/open/{id}]] is high-stakes with no reviewer"
                ));
            }
            match k.fields.get("review").get("status").as_str() {
                Some("rejected") => needs_a_person.push(format!(
                    "[[contracts/open/{id}]]: its review rejected it (escalate or abandon)"
                )),
                Some("requested_changes") => needs_a_person.push(format!(
                    "[[contracts/open/{id}]]: its review requested changes"
                )),
                _ => {}
            }
        }
        needs_a_person.sort();
        let block = index_state::render(&IndexState {
            citizens: polis.cards.len(),
            open: open.len(),
            in_flight,
            needs_a_person,
        });
        match crate::operations::edit_agent_file(&self.writer, &self.root, layout::INDEX, |text| {
            index_state::splice(text, &block)
        }) {
            Ok(true) => {
                self.state.counters.writes += 1;
                self.after_write(pass);
            }
            Ok(false) => {}
            Err(e) => tracing::warn!("index.md: {e}"),
        }
    }
}
