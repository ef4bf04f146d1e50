//! The JSON API, for scripts and other front ends: the same snapshot the pages show.
//! Versioned by `api_version` in every body (see docs/dashboard.md); a field is only ever
//! added within a version.
//!
//! - `GET /p/{n}/api/state` (and `/api/state` for the first polis): every citizen with its
//!   state, current contract and unread count; every open contract; the counts; the human
//!   queue; guardrails and reservations in force.
//! - `GET /p/{n}/api/replay?from=K&limit=M` (and `/api/replay`): the settlements in the order
//!   the routing statistics replay them, a page at a time (at most [`MAX_PAGE`]).

use super::view::Snapshot;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The version of the bodies below.
pub const API_VERSION: u32 = 1;
/// Most settlements one `/api/replay` answer holds.
pub const MAX_PAGE: usize = 1000;

/// `/api/state`.
pub fn state(name: &str, s: &Snapshot) -> Value {
    let citizens: Vec<Value> = s
        .summary
        .citizens
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "vendor": c.vendor,
                "state": c.state,
                "current_contract": c.working_on,
                "unread": s.unread.get(&c.id).copied().unwrap_or(0),
                "last_active": c.last_activity,
            })
        })
        .collect();
    let open: Vec<Value> = s
        .polis
        .contracts
        .iter()
        .filter(|c| c.folder == crate::protocol::layout::ContractFolder::Open)
        .map(|c| {
            let k = &c.contract;
            json!({
                "id": c.file.stem,
                "title": k.title,
                "status": k.status,
                "owner": k.owner,
                "stakes": k.stakes,
                "tags": k.required_tags,
            })
        })
        .collect();
    let queue: Vec<Value> = s
        .queue
        .iter()
        .map(|i| json!({ "key": i.key, "title": i.title, "action": i.action, "link": i.link }))
        .collect();
    json!({
        "api_version": API_VERSION,
        "polis": name,
        "generation": s.generation,
        "now": s.now.minute_stamp(),
        "counts": {
            "open": s.summary.contracts.open,
            "settled": s.summary.contracts.settled,
            "abandoned": s.summary.contracts.abandoned,
            "errors": s.summary.findings.errors,
            "warnings": s.summary.findings.warnings,
        },
        "citizens": citizens,
        "open_contracts": open,
        "queue": queue,
        "guardrails": s.guardrails,
        "reservations": s.reservations.as_ref().ok(),
    })
}

/// `/api/replay`: `from` (default 0) and `limit` (default and most [`MAX_PAGE`]), or why
/// they cannot be used (the body of a 400). A value that is not a whole number, and a
/// `limit` of 0 (whose `next` would be its `from`, forever), are refused rather than guessed.
pub fn replay(s: &Snapshot, query: &HashMap<String, String>) -> Result<Value, Value> {
    let number = |k: &str, default: usize| match query.get(k) {
        None => Ok(default),
        Some(v) => v.parse::<usize>().map_err(|_| {
            refusal(&format!(
                "`{k}` must be a whole number from 0 (`{k}={}`)",
                v.chars().take(40).collect::<String>()
            ))
        }),
    };
    let from = number("from", 0)?;
    let limit = number("limit", MAX_PAGE)?.min(MAX_PAGE);
    if limit == 0 {
        return Err(refusal(&format!(
            "`limit` must be 1 to {MAX_PAGE} (a page of none would never end)"
        )));
    }
    let total = s.state.settled.len();
    let settlements: Vec<Value> = s
        .state
        .settled
        .iter()
        .skip(from)
        .take(limit)
        .map(|(path, st)| {
            json!({
                "path": path,
                "owner": st.owner,
                "tags": st.tags,
                "settled_at": st.when_text,
                "quality": st.quality,
                "quality_defaulted": st.quality_defaulted,
                "minutes": st.minutes,
            })
        })
        .collect();
    let next = (from + settlements.len() < total).then_some(from + settlements.len());
    Ok(json!({
        "api_version": API_VERSION,
        "generation": s.generation,
        "total": total,
        "from": from,
        "next": next,
        "settlements": settlements,
    }))
}

/// The body of a refused API request.
pub fn refusal(why: &str) -> Value {
    json!({ "api_version": API_VERSION, "error": why })
}
