//! Routing an open contract (SPEC §7): gathering the router's inputs from the polis, and
//! writing its pick into the contract.

use crate::fs::snapshot::{ContractFile, Polis};
use crate::fs::writer::Writer;
use crate::operations::ActionError;
use crate::protocol::layout::ContractFolder;
use crate::protocol::routing::policy::{History, Policy};
use crate::protocol::routing::{self, Recommendation, Routed};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// How to route.
#[derive(Debug, Clone, Default)]
pub struct RouteOptions {
    pub adaptive: bool,
    pub seed: Option<u64>,
    /// The policy that picks; `None` takes `routing.policy` from `polis.yml`, else the default.
    pub policy: Option<Policy>,
}

/// Why a contract cannot be routed.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("no contract `{0}` in contracts/open, settled or abandoned")]
    NotFound(String),
    /// The contract's file is there but could not be read as a contract: the reading's own
    /// finding, so the message says what to fix rather than that there is no such contract.
    #[error("{path}: {why}")]
    Unreadable { path: String, why: String },
    #[error("contract `{0}` is {1}, not open; only open contracts are routed")]
    NotOpen(String, &'static str),
    #[error("contracts/open/{0}.md has no YAML frontmatter; cannot route it")]
    NoFrontmatter(String),
    #[error("no registered citizens; nothing to route to")]
    NoCitizens,
    /// Not a `#[from]`: that would make the policy's error the source as well, and a refusal
    /// prints its sources, so the message came twice.
    #[error("polis.yml: {0}")]
    Policy(crate::protocol::routing::policy::UnknownPolicy),
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
        .ok_or_else(|| {
            // A polis read without its settled contracts (a reader that keeps them apart)
            // still tells a settled one.
            if super::ready::is_in(&polis.root, ContractFolder::Settled, id) {
                RouteError::NotOpen(id.to_string(), ContractFolder::Settled.name())
            } else if let Some(f) = polis.unreadable_contract(id) {
                RouteError::Unreadable {
                    path: f.path.clone(),
                    why: f.message.clone(),
                }
            } else {
                RouteError::NotFound(id.to_string())
            }
        })?;
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

/// Gathers the router's inputs from the polis (cards, the stats file, lessons, settlements)
/// and asks [`routing::recommend`] for a pick.
pub fn recommend(
    polis: &Polis,
    contract: &ContractFile,
    options: &RouteOptions,
) -> Result<Routed, RouteError> {
    routed(polis, contract, options, &polis.settlements, None)
}

/// [`recommend`] learning from `history` rather than from the polis's settlements (a reader
/// that keeps the history between calls reads the polis without its settled contracts).
pub fn recommend_from(
    polis: &Polis,
    history: &History,
    contract: &ContractFile,
    options: &RouteOptions,
) -> Result<Routed, RouteError> {
    routed(polis, contract, options, &[], Some(history))
}

fn routed(
    polis: &Polis,
    contract: &ContractFile,
    options: &RouteOptions,
    settlements: &[crate::protocol::routing::stats::Settlement],
    history: Option<&History>,
) -> Result<Routed, RouteError> {
    // Citizens who have left the polis are no candidates.
    let left = polis.departed();
    let candidates: Vec<_> = polis
        .candidates()
        .into_iter()
        .filter(|c| !left.contains(&c.id))
        .collect();
    if candidates.is_empty() {
        return Err(RouteError::NoCitizens);
    }
    let policy =
        routing::policy_for(&polis.settings, options.policy).map_err(RouteError::Policy)?;
    let stats = super::current_stats(polis);
    let lessons = polis.routing_lessons();
    // A routing rule's target must be active; only a rule reads it, so the window
    // is worked out only when `polis.yml` has rules.
    let active = routing::rules::any(&polis.settings.merged).then(|| {
        polis.active_authors(&crate::protocol::clock::PolisTime::system(
            polis.settings.timezone,
        ))
    });
    let inputs = routing::Inputs {
        candidates: &candidates,
        contract: &contract.contract,
        stats: &stats,
        lessons: &lessons,
        settings: &polis.settings,
        settlements,
        history,
        active: active.as_ref(),
    };
    let mut rng = match options.seed {
        Some(seed) => StdRng::seed_from_u64(seed),
        None => StdRng::from_os_rng(),
    };
    Ok(routing::recommend(
        &inputs,
        policy,
        options.adaptive,
        &mut rng,
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
    super::edit_agent_file(writer, &polis.root, &contract.file.rel, |text| {
        crate::protocol::contracts::contract::splice_routing(
            text,
            chosen,
            rec.score,
            rec.exploration,
        )
    })
}

/// The text `route --explain` prints: every candidate's breakdown, sorted by total.
pub fn explain(rec: &crate::protocol::routing::Recommendation) -> String {
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

/// A settlement on an open contract's tags after the contract was opened: something the router
/// has learnt since it made the pick recorded in the contract's routing block.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SettledSince {
    /// The settled contract's id (its file name).
    pub contract: String,
    pub owner: String,
    pub quality: u8,
    /// `settled_at` as written.
    pub settled_at: String,
}

/// The settlements that share a tag with `contract` and settled after it was opened, oldest
/// first. polisd writes the routing block on its first pass over a new contract, so these are
/// what the router learnt from since the recorded pick. None when `opened_at` cannot be read,
/// as nothing can then be said to come after it.
pub fn settled_since<'s>(
    contract: &crate::protocol::contracts::contract::Contract,
    settlements: impl Iterator<Item = (&'s str, crate::protocol::routing::stats::SettlementView<'s>)>,
    zone: crate::protocol::clock::PolisZone,
) -> Vec<SettledSince> {
    // Read as a settlement's instant is read, so the two compare on one clock.
    let Some(opened) = crate::protocol::contracts::contract::instant_of(&contract.opened_at, zone)
    else {
        return Vec::new();
    };
    let mut since: Vec<_> = settlements
        .filter(|(_, v)| v.tags.iter().any(|t| contract.required_tags.contains(t)))
        .filter_map(|(path, v)| {
            let at = v.instant.filter(|at| *at > opened)?;
            let found = SettledSince {
                contract: crate::protocol::layout::record_stem(path).to_string(),
                owner: v.owner.to_string(),
                quality: v.quality,
                settled_at: v.when_text.to_string(),
            };
            Some((at, found))
        })
        .collect();
    since.sort_by(|a, b| (a.0, &a.1.contract).cmp(&(b.0, &b.1.contract)));
    since.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_names_why_an_unreadable_contract_is_not_read() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["alpha-agent"]);
        let open = root.join("contracts/open");
        std::fs::write(open.join("latin.md"), b"---\ntitle: caf\xe9\n---\n").unwrap();
        std::fs::write(open.join("colons.md"), "---\ntitle: t\n: : bad\n---\n").unwrap();
        std::fs::create_dir(open.join("folder.md")).unwrap();
        let polis = Polis::read(&root);
        for (id, why) in [
            ("latin", "not valid UTF-8"),
            ("colons", "invalid YAML"),
            ("folder", "contracts/open/folder.md"),
        ] {
            let e = open_contract(&polis, id).unwrap_err().to_string();
            assert!(e.contains(&format!("contracts/open/{id}.md")), "{e}");
            assert!(e.contains(why), "{e}");
            assert!(!e.starts_with("no contract"), "{e}");
        }
        let e = open_contract(&polis, "missing").unwrap_err().to_string();
        assert!(e.starts_with("no contract `missing`"), "{e}");
    }

    #[test]
    fn an_unknown_policy_is_said_once() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["alpha-agent"]);
        std::fs::write(root.join("polis.yml"), "routing:\n  policy: quantum\n").unwrap();
        std::fs::write(
            root.join("contracts/open/x.md"),
            "---\ncontract_id: x\nstatus: proposed\nrequired_tags: [rust]\n---\n",
        )
        .unwrap();
        let polis = Polis::read(&root);
        let contract = open_contract(&polis, "x").unwrap();
        let e = recommend(&polis, contract, &RouteOptions::default()).unwrap_err();
        // As the command line prints a refusal: the error and its sources.
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(
            shown.matches("unknown routing policy").count(),
            1,
            "{shown}"
        );
        assert!(shown.starts_with("polis.yml: "), "{shown}");
    }
}
