//! The ready queue and the dependency findings, over the open contracts only: a
//! dependency is looked up by one `lstat` in `contracts/settled/`, never by reading that folder.

use crate::fs::snapshot;
use crate::operations::chronicle;
use crate::operations::error::OpError;
use crate::protocol::contracts::contract::Contract;
use crate::protocol::contracts::dependency::{self, Held, Node, Ready};
use crate::protocol::finding::Finding;
use crate::protocol::layout::{self, ContractFolder};
use std::collections::BTreeSet;
use std::path::Path;

/// Whether contract `id` is in `folder` (an `lstat`; a bad id is in no folder).
pub fn is_in(root: &Path, folder: ContractFolder, id: &str) -> bool {
    layout::contract_path(folder, id)
        .is_some_and(|rel| std::fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.is_file()))
}

/// The open contracts as dependency nodes, and the findings of reading them.
pub fn open_nodes(root: &Path) -> (Vec<Node>, Vec<Finding>) {
    let mut findings = Vec::new();
    let records = snapshot::read_records(root, ContractFolder::Open.dir(), &mut findings);
    let nodes = records
        .iter()
        .map(|r| Node::of(&r.stem, &r.rel, &Contract::from_record(&r.record)))
        .collect();
    (nodes, findings)
}

/// Unknown `depends_on` ids and dependency cycles among the open contracts.
pub fn dependency_findings(root: &Path, nodes: &[Node]) -> Vec<Finding> {
    let exists = |id: &str| ContractFolder::ALL.into_iter().any(|f| is_in(root, f, id));
    dependency::findings(nodes, &exists)
}

/// `polisd ready --as ID`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Queue {
    pub citizen: String,
    pub ready: Vec<Ready>,
    /// Ready contracts left out because their `touches` overlap work in progress.
    pub held: Vec<Held>,
}

/// The ready queue of `citizen` (who must be registered).
pub fn queue(root: &Path, citizen: &str) -> Result<Queue, OpError> {
    chronicle::require_citizen(root, citizen)?;
    let card = layout::card_path(citizen).expect("a registered id");
    let tags: BTreeSet<String> =
        snapshot::read_text(root, &card, Some(snapshot::MAX_RECORD_BYTES))?
            .and_then(|t| crate::protocol::citizens::card::parse(&t).ok())
            .map(|c| c.capability_tags.into_iter().map(|(t, _)| t).collect())
            .unwrap_or_default();
    let (nodes, _) = open_nodes(root);
    let now = chronicle::polis_now(root);
    // An unreadable reservations.yml holds nothing back here; `polisd check` reports it.
    let reservations =
        crate::operations::reservation::list(root, &now, &crate::operations::arg::flags)
            .unwrap_or_default();
    Ok(queue_of(root, citizen, &tags, &nodes, &reservations))
}

/// The ready queue from what a caller has already read (the primer reads the open contracts,
/// the card and the reservations for itself): each dependency is one `lstat` in
/// `contracts/settled/`; nothing else is read.
pub fn queue_of(
    root: &Path,
    citizen: &str,
    tags: &BTreeSet<String>,
    nodes: &[Node],
    reservations: &[crate::operations::reservation::View],
) -> Queue {
    let settled = |id: &str| is_in(root, ContractFolder::Settled, id);
    let reserved: Vec<dependency::Reserved> = reservations
        .iter()
        .filter(|v| v.active)
        .filter_map(|v| {
            Some(dependency::Reserved {
                citizen: v.citizen.clone()?,
                paths: v.paths.clone(),
            })
        })
        .collect();
    let (ready, held) = dependency::ready_queue(citizen, tags, nodes, &settled, &reserved);
    Queue {
        citizen: citizen.to_string(),
        ready,
        held,
    }
}
