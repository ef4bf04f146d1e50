//! `polisd route`: recommend a citizen for an open contract (SPEC §7).

use crate::actions::{self, ActionError};
use crate::polis::ContractFolder;
use crate::router::{self, Recommendation};
use crate::snapshot::{ContractFile, Polis};
use crate::writer::Writer;

/// How to route.
#[derive(Debug, Clone, Default)]
pub struct RouteOptions {
    pub adaptive: bool,
    pub seed: Option<u64>,
}

/// Why a contract cannot be routed.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("no contract `{0}` in contracts/open, settled or abandoned")]
    NotFound(String),
    #[error("contract `{0}` is {1}, not open; only open contracts are routed")]
    NotOpen(String, &'static str),
    #[error("contracts/open/{0}.md has no YAML frontmatter; cannot route it")]
    NoFrontmatter(String),
    #[error("no registered citizens; nothing to route to")]
    NoCitizens,
}

/// Finds an open contract by id, as the reference does (open, then settled, then abandoned).
pub fn open_contract<'p>(polis: &'p Polis, id: &str) -> Result<&'p ContractFile, RouteError> {
    let file = ContractFolder::ALL
        .iter()
        .find_map(|folder| {
            polis
                .contracts
                .iter()
                .find(|c| c.folder == *folder && c.file.stem == id)
        })
        .ok_or_else(|| RouteError::NotFound(id.to_string()))?;
    if file.folder != ContractFolder::Open {
        return Err(RouteError::NotOpen(id.to_string(), file.folder.name()));
    }
    if file
        .file
        .record
        .fields
        .as_map()
        .is_none_or(|m| m.is_empty())
    {
        return Err(RouteError::NoFrontmatter(id.to_string()));
    }
    Ok(file)
}

/// Scores every citizen for the contract and picks one.
pub fn recommend(
    polis: &Polis,
    contract: &ContractFile,
    options: &RouteOptions,
) -> Result<Recommendation, RouteError> {
    let candidates = polis.candidates();
    if candidates.is_empty() {
        return Err(RouteError::NoCitizens);
    }
    let stats = actions::current_stats(polis);
    let lessons = polis.routing_lessons();
    let ctx = router::Context {
        stats: &stats,
        lessons: &lessons,
        weights: polis.settings.weights,
        lesson_cap: polis.settings.lesson_cap,
    };
    let rate = router::explore_rate(&polis.settings, &stats);
    Ok(router::recommend(
        &candidates,
        &contract.contract,
        &ctx,
        rate,
        options.adaptive,
        options.seed,
    ))
}

/// Writes the recommendation into the contract's routing block, compare-before-replace.
/// Returns whether the file changed.
pub fn apply(
    polis: &Polis,
    writer: &Writer,
    contract: &ContractFile,
    rec: &Recommendation,
) -> Result<bool, ActionError> {
    let Some(chosen) = rec.recommendation.as_deref() else {
        return Ok(false);
    };
    actions::edit_agent_file(writer, &polis.root, &contract.file.rel, |text| {
        crate::contract::splice_routing(text, chosen, rec.score, rec.exploration)
    })
}

/// The text `route --explain` prints: every candidate's breakdown, sorted by total.
pub fn explain(rec: &Recommendation) -> String {
    let mut out = String::from("Score breakdown (sorted by total):\n");
    for s in &rec.scores {
        out.push_str(&format!(
            "  {:30}  total={:.3}  hist={:.2}  self={:.2}  cost={:.2}  avail={:.2}  lessons={:+.2}\n",
            s.citizen, s.total, s.historical, s.self_rating, s.cost_fit, s.availability, s.lessons
        ));
        if !s.applied_lessons.is_empty() {
            out.push_str(&format!(
                "  {:30}    lessons applied: {}\n",
                "",
                s.applied_lessons.join(", ")
            ));
        }
    }
    out.push_str(&format!("Explore rate: {:.2}\n", rec.explore_rate));
    out
}
