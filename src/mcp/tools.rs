//! The MCP tools: their short schemas and their calls into `operations/`.

use crate::fs::snapshot::Polis;
use crate::operations::{self, session, summary};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout::ContractFolder;
use serde_json::{json, Map, Value};
use std::path::Path;

/// What a call came to.
pub enum Outcome {
    Done(Value),
    /// `isError` with this reason.
    Failed(String),
    /// No such tool (a protocol error, −32602).
    Unknown(String),
}

fn strings(desc: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": desc})
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    json!({"name": name, "description": description, "inputSchema": schema})
}

/// Every tool, with a one-line description.
pub fn list() -> Vec<Value> {
    let citizen = json!({"type": "string", "description": "Your citizen id."});
    let _ = strings;
    vec![
        tool(
            "polis_status",
            "Citizens, open/settled counts and each tag's routing leader.",
            json!({}),
            &[],
        ),
        tool(
            "polis_list_contracts",
            "List contracts in one state (default open).",
            json!({"state": {"type": "string", "enum": ["open", "settled", "abandoned"]}}),
            &[],
        ),
        tool(
            "polis_route",
            "Recommend a citizen for an open contract, with every score.",
            json!({"contract_id": {"type": "string"},
                   "seed": {"type": "integer", "description": "Seed for a reproducible pick."}}),
            &["contract_id"],
        ),
        tool(
            "polis_prime",
            "Your session primer: routed contracts, claims, votes, unread notices (marks shown notices read).",
            json!({"citizen": citizen,
                   "mark_read": {"type": "boolean", "description": "Default true."}}),
            &["citizen"],
        ),
        tool(
            "polis_notices",
            "Your inbox notices, newest first.",
            json!({"citizen": citizen,
                   "unread": {"type": "boolean", "description": "Only unread (default true)."},
                   "mark_read": {"type": "boolean", "description": "Mark the listed ones read."}}),
            &["citizen"],
        ),
        tool(
            "polis_amendments",
            "Proposed amendments and what a tally would decide now (writes nothing).",
            json!({}),
            &[],
        ),
    ]
}

fn arg_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing required argument: '{key}'"))
}

fn arg_bool(args: &Map<String, Value>, key: &str, default: bool) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// Runs one tool.
pub fn call(root: &Path, name: &str, args: &Map<String, Value>) -> Outcome {
    let result = match name {
        "polis_status" => Ok(summary::status(root)),
        "polis_list_contracts" => list_contracts(root, args),
        "polis_route" => route(root, args),
        "polis_prime" => prime(root, args),
        "polis_notices" => notices(root, args),
        "polis_amendments" => amendments(root),
        other => return Outcome::Unknown(other.to_string()),
    };
    match result {
        Ok(v) => Outcome::Done(v),
        Err(reason) => Outcome::Failed(reason),
    }
}

fn list_contracts(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let state = args.get("state").and_then(Value::as_str).unwrap_or("open");
    let folder = ContractFolder::ALL
        .into_iter()
        .find(|f| f.name() == state)
        .ok_or_else(|| format!("unknown state `{state}`: use open, settled or abandoned"))?;
    Ok(json!({"state": state, "contracts": summary::list_contracts(root, folder)}))
}

fn route(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let id = arg_str(args, "contract_id")?;
    let polis = Polis::read(root);
    let contract = operations::route::open_contract(&polis, id).map_err(|e| e.to_string())?;
    let options = operations::route::RouteOptions {
        seed: args.get("seed").and_then(Value::as_u64),
        ..Default::default()
    };
    let routed =
        operations::route::recommend(&polis, contract, &options).map_err(|e| e.to_string())?;
    serde_json::to_value(&routed.recommendation).map_err(|e| e.to_string())
}

fn prime(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let citizen = arg_str(args, "citizen")?;
    let now = PolisTime::system(session::polis_zone(root));
    let primed = session::prime(root, citizen, &now).map_err(|e| e.to_string())?;
    if arg_bool(args, "mark_read", true) && !primed.primer.shown_notices.is_empty() {
        let writer = crate::fs::writer::Writer::new(root).map_err(|e| e.to_string())?;
        session::mark_read(root, &writer, &primed.view, &primed.primer.shown_notices)
            .map_err(|e| e.to_string())?;
    }
    Ok(Value::String(primed.primer.text))
}

fn notices(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let citizen = arg_str(args, "citizen")?;
    session::check_citizen(root, citizen).map_err(|e| e.to_string())?;
    let view = session::read_inbox(root, citizen).map_err(|e| e.to_string())?;
    let listed: Vec<&crate::protocol::notice::Notice> = if arg_bool(args, "unread", true) {
        view.unread()
    } else {
        view.notices.iter().rev().collect()
    };
    let ids: Vec<String> = listed
        .iter()
        .filter(|n| !view.read.contains(&n.id))
        .map(|n| n.id.clone())
        .collect();
    let items: Vec<Value> = listed
        .iter()
        .map(|n| {
            json!({"id": n.id, "kind": n.kind.map(|k| k.as_str()), "stamp": n.stamp,
                   "from": n.author, "text": crate::protocol::notice::render_notice(n),
                   "read": view.read.contains(&n.id)})
        })
        .collect();
    if arg_bool(args, "mark_read", false) && !ids.is_empty() {
        let writer = crate::fs::writer::Writer::new(root).map_err(|e| e.to_string())?;
        session::mark_read(root, &writer, &view, &ids).map_err(|e| e.to_string())?;
    }
    Ok(json!({"citizen": citizen, "notices": items}))
}

fn amendments(root: &Path) -> Result<Value, String> {
    let polis = Polis::read(root);
    let now = PolisTime::system(polis.settings.timezone);
    let (results, _) = operations::tally(&polis, None, &now).map_err(|e| e.to_string())?;
    Ok(json!({"amendments": results}))
}
