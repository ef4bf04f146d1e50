//! The MCP tools: their short schemas and their calls into `operations/`.

use crate::fs::snapshot::Polis;
use crate::fs::writer::Writer;
use crate::operations::{self, contract, session, summary, OpError};
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
            json!({"state": {"type": "string", "enum": ["open", "settled", "abandoned"]},
                   "owner": {"type": "string"}}),
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
            "Your session primer: where things stand (index.md), the chronicle since your last session, routed contracts, claims, votes, unread notices (marks shown notices read and records last_seen_event and last_active).",
            json!({"citizen": citizen,
                   "mark_read": {"type": "boolean", "description": "Default true; false is a peek that records nothing."}}),
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
            "Amendments with their votes, and what a tally would decide now (writes nothing).",
            json!({}),
            &[],
        ),
        tool("polis_open_contract", "Open a contract; matching guardrails become acceptance criteria.",
            json!({"title": {"type": "string"}, "opened_by": {"type": "string"},
                   "required_tags": strings("Capability tags."),
                   "stakes": {"type": "string", "enum": ["low", "medium", "high"]},
                   "cost_ceiling": {"type": "string", "enum": ["low", "medium", "high"]},
                   "acceptance": strings("Acceptance criteria."),
                   "deadline": {"type": "string"}}),
            &["title", "opened_by"]),
        tool("polis_claim_contract", "Claim an open contract (atomic: one claimer wins).",
            json!({"contract_id": {"type": "string"}, "citizen": {"type": "string"},
                   "force": {"type": "boolean", "description": "Take it from its owner."}}),
            &["contract_id", "citizen"]),
        tool("polis_settle_contract", "Settle a contract with a quality 1-5.",
            json!({"contract_id": {"type": "string"},
                   "quality": {"type": "integer", "minimum": 1, "maximum": 5},
                   "minutes": {"type": "integer"}, "by": {"type": "string"},
                   "outcome": {"type": "string"},
                   "suggest": strings("Next citizens, each CITIZEN:REASON.")}),
            &["contract_id", "quality"]),
        tool("polis_abandon_contract", "Abandon an open contract.",
            json!({"contract_id": {"type": "string"}, "reason": {"type": "string"},
                   "by": {"type": "string"}}),
            &["contract_id"]),
        tool("polis_show_contract", "One contract's file, wherever it is.",
            json!({"contract_id": {"type": "string"}}), &["contract_id"]),
        tool("polis_context", "Read before working: criteria, guardrails, lessons for a contract.",
            json!({"contract_id": {"type": "string"}}), &["contract_id"]),
        tool("polis_reserve", "Reserve project paths or globs; refused naming the holder.",
            json!({"citizen": {"type": "string"}, "paths": strings("Paths or globs."),
                   "ttl_minutes": {"type": "integer"}, "note": {"type": "string"},
                   "contract": {"type": "string"}}),
            &["citizen", "paths"]),
        tool("polis_release", "Release your reservations (all, or these paths).",
            json!({"citizen": {"type": "string"}, "paths": strings("Paths (omit for all).")}),
            &["citizen"]),
        tool("polis_reservations", "Every reservation: who holds what, until when.", json!({}), &[]),
        tool("polis_add_guardrail", "Record a must-pass check for future contracts on these tags.",
            json!({"text": {"type": "string"}, "tags": strings("Tags (empty: every contract)."),
                   "source_contract": {"type": "string"}}),
            &["text"]),
        tool("polis_guardrails", "The active guardrails.", json!({}), &[]),
        tool("polis_vote", "Vote on a proposed amendment.",
            json!({"amendment_id": {"type": "string"}, "citizen": {"type": "string"},
                   "vote": {"type": "string", "enum": ["agree", "disagree", "abstain", "request_changes"]},
                   "rationale": {"type": "string"}}),
            &["amendment_id", "citizen", "vote"]),
        tool("polis_tally", "Tally the proposed amendments and apply the outcomes (ratify, reject, expire), as `polisd tally` does.",
            json!({"dry_run": {"type": "boolean", "description": "Only report (default false)."}}),
            &[]),
        tool("polis_ready", "What you can start now: unowned contracts whose dependencies settled.",
            json!({"citizen": citizen}), &["citizen"]),
        tool("polis_council_status", "Where a council review stands: round, seats, deadline, verdict.",
            json!({"contract_id": {"type": "string"}}), &["contract_id"]),
        tool("polis_council_write", "Place your contribution for the council's open round.",
            json!({"contract_id": {"type": "string"}, "citizen": {"type": "string"},
                   "text": {"type": "string", "description": "Markdown, within the round's word limit."}}),
            &["contract_id", "citizen", "text"]),
    ]
}

// The arguments' accessors refuse a value of the wrong type rather than treat it as absent: a
// `"dry_run": "true"` read as "no dry run" would write, and a `"minutes": "25"` read as "no
// minutes" would settle without them. `null` counts as absent, as JSON Schema clients send it.

fn arg_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    opt_str_ref(args, key)?.ok_or_else(|| format!("missing required argument: '{key}'"))
}

/// The arguments that name the citizen a call acts as: never a system identity.
const ACTING_KEYS: [&str; 3] = ["citizen", "by", "opened_by"];

/// Every string argument is checked here, once for all tools: no control characters, and an
/// acting id that may act (the same edge checks as the command line's).
fn opt_str_ref<'a>(args: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    use crate::protocol::input;
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let checked = if ACTING_KEYS.contains(&key) {
                input::check_text(&format!("'{key}'"), s).and_then(|()| input::check_acting_id(s))
            } else {
                input::check_text(&format!("'{key}'"), s)
            };
            checked.map_err(|e| format!("{e}; nothing was done"))?;
            Ok(Some(s))
        }
        Some(other) => Err(wrong_type(key, "a string", other)),
    }
}

fn opt_str(args: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    Ok(opt_str_ref(args, key)?.map(str::to_string))
}

fn arg_bool(args: &Map<String, Value>, key: &str, default: bool) -> Result<bool, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(wrong_type(key, "true or false", other)),
    }
}

/// A whole number that fits `T` (minutes, a seed, a quality checked later for its range).
fn opt_int<T: TryFrom<i128>>(args: &Map<String, Value>, key: &str) -> Result<Option<T>, String> {
    let whole = |v: &Value| {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match whole(v) {
            None => Err(wrong_type(key, "a whole number", v)),
            Some(n) => T::try_from(n).map(Some).map_err(|_| {
                let bound = if n < 0 {
                    "a whole number of at least 0"
                } else {
                    "a smaller whole number"
                };
                wrong_type(key, bound, v)
            }),
        },
    }
}

fn wrong_type(key: &str, expected: &str, got: &Value) -> String {
    format!("'{key}' must be {expected}, not {got}; nothing was done")
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
        "polis_open_contract" => open_contract(root, args),
        "polis_claim_contract" => claim(root, args),
        "polis_settle_contract" => settle(root, args),
        "polis_abandon_contract" => abandon(root, args),
        "polis_show_contract" => {
            arg_str(args, "contract_id").and_then(|id| done(contract::show(root, id)))
        }
        "polis_context" => context(root, args),
        "polis_add_guardrail" => add_guardrail(root, args),
        "polis_guardrails" => Ok(json!({"guardrails": operations::guardrail::list(root)})),
        "polis_vote" => vote(root, args),
        "polis_tally" => tally(root, args),
        "polis_ready" => {
            arg_str(args, "citizen").and_then(|c| done(operations::ready::queue(root, c)))
        }
        "polis_reserve" => reserve(root, args),
        "polis_release" => release(root, args),
        "polis_reservations" => {
            let now = operations::chronicle::polis_now(root);
            operations::reservation::list(root, &now)
                .map(|r| json!({"reservations": r}))
                .map_err(|e| e.to_string())
        }
        "polis_council_status" => {
            arg_str(args, "contract_id").and_then(|id| done(operations::council::status(root, id)))
        }
        "polis_council_write" => council_write(root, args),
        other => return Outcome::Unknown(other.to_string()),
    };
    match result {
        Ok(v) => Outcome::Done(v),
        Err(reason) => Outcome::Failed(reason),
    }
}

fn list_contracts(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let state = opt_str_ref(args, "state")?.unwrap_or("open");
    let folder = ContractFolder::ALL
        .into_iter()
        .find(|f| f.name() == state)
        .ok_or_else(|| format!("unknown state `{state}`: use open, settled or abandoned"))?;
    let owner = opt_str_ref(args, "owner")?;
    Ok(json!({"state": state, "contracts": contract::list(root, folder, owner)}))
}

/// An operation's result as the tool's answer (`ok: true` added, as the commands' `--json`).
fn done<T: serde::Serialize>(result: Result<T, OpError>) -> Result<Value, String> {
    let value = result.map_err(|e| e.to_string())?;
    let mut v = serde_json::to_value(&value).map_err(|e| e.to_string())?;
    if let Some(map) = v.as_object_mut() {
        map.insert("ok".into(), Value::Bool(true));
    }
    Ok(v)
}

fn writer(root: &Path) -> Result<Writer, String> {
    Writer::unrecorded(root).map_err(|e| e.to_string())
}

fn str_list(args: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let text = item
                    .as_str()
                    .ok_or_else(|| wrong_type(key, "a list of strings", item))?;
                crate::protocol::input::check_text(&format!("'{key}'"), text)
                    .map_err(|e| format!("{e}; nothing was done"))?;
                Ok(text.to_string())
            })
            .collect(),
        // A comma-separated string, as the commands take tags.
        Some(Value::String(_)) => Ok(arg_str(args, key)?
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()),
        Some(other) => Err(wrong_type(key, "a list of strings", other)),
    }
}

fn open_contract(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let req = contract::OpenRequest {
        title: arg_str(args, "title")?.trim().to_string(),
        by: arg_str(args, "opened_by")?.to_string(),
        tags: str_list(args, "required_tags")?,
        stakes: opt_str(args, "stakes")?.unwrap_or_else(|| "medium".into()),
        cost_ceiling: opt_str(args, "cost_ceiling")?.unwrap_or_else(|| "medium".into()),
        deadline: opt_str(args, "deadline")?,
        accept: str_list(args, "acceptance")?,
    };
    let now = operations::chronicle::polis_now(root);
    done(contract::open(&writer(root)?, &now, &req))
}

fn council_write(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let id = arg_str(args, "contract_id")?;
    let citizen = arg_str(args, "citizen")?;
    let text = arg_str(args, "text")?;
    let now = operations::chronicle::polis_now(root);
    done(operations::council::write_seat(
        &writer(root)?,
        &now,
        id,
        citizen,
        text,
    ))
}

fn claim(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let id = arg_str(args, "contract_id")?;
    let citizen = arg_str(args, "citizen")?;
    let now = operations::chronicle::polis_now(root);
    done(contract::claim(
        &writer(root)?,
        &now,
        id,
        citizen,
        arg_bool(args, "force", false)?,
    ))
}

fn settle(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let quality =
        opt_int(args, "quality")?.ok_or("missing required argument: 'quality' (an integer 1-5)")?;
    let req = contract::SettleRequest {
        id: arg_str(args, "contract_id")?.to_string(),
        quality,
        minutes: opt_int(args, "minutes")?,
        by: opt_str(args, "by")?,
        outcome: opt_str(args, "outcome")?,
        lesson: None,
        reconcile_without_daemon: true,
        // One string is one suggestion (a reason may hold commas).
        suggest: match args.get("suggest") {
            Some(Value::String(_)) => vec![arg_str(args, "suggest")?.to_string()],
            _ => str_list(args, "suggest")?,
        }
        .iter()
        .map(|s| match s.split_once(':') {
            Some((c, r)) => (c.trim().to_string(), r.trim().to_string()),
            None => (s.trim().to_string(), String::new()),
        })
        .collect(),
    };
    let now = operations::chronicle::polis_now(root);
    done(contract::settle(&writer(root)?, &now, &req))
}

fn abandon(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let id = arg_str(args, "contract_id")?;
    let now = operations::chronicle::polis_now(root);
    done(contract::abandon(
        &writer(root)?,
        &now,
        id,
        opt_str_ref(args, "reason")?,
        opt_str_ref(args, "by")?,
    ))
}

fn context(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let id = arg_str(args, "contract_id")?;
    let packet = operations::context::packet(root, id).map_err(|e| e.to_string())?;
    let markdown = operations::context::render(&packet);
    Ok(json!({"ok": true, "markdown": markdown, "packet": packet}))
}

fn add_guardrail(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let text = arg_str(args, "text")?;
    let now = operations::chronicle::polis_now(root);
    done(operations::guardrail::add(
        &writer(root)?,
        &now,
        text,
        &str_list(args, "tags")?,
        opt_str_ref(args, "source_contract")?,
    ))
}

/// Paths as the agent gave them, relative to the project root (the server's working folder
/// may be anywhere).
fn project_paths(root: &Path, raw: &[String]) -> Result<Vec<String>, String> {
    let project = root.parent().unwrap_or(root);
    raw.iter()
        .map(|p| operations::reservation::project_path(root, project, p).map_err(|e| e.to_string()))
        .collect()
}

fn reserve(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let request = operations::reservation::ReserveRequest {
        citizen: arg_str(args, "citizen")?.to_string(),
        paths: project_paths(root, &str_list(args, "paths")?)?,
        ttl_minutes: opt_int(args, "ttl_minutes")?,
        note: opt_str(args, "note")?,
        contract: opt_str(args, "contract")?,
    };
    let now = operations::chronicle::polis_now(root);
    let done = operations::reservation::reserve(root, &writer(root)?, &now, &request)
        .map_err(|e| e.to_string())?;
    let mut v = serde_json::to_value(&done).map_err(|e| e.to_string())?;
    v["ok"] = Value::Bool(true);
    Ok(v)
}

fn release(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let citizen = arg_str(args, "citizen")?;
    let paths = str_list(args, "paths")?;
    let targets = if paths.is_empty() {
        None
    } else {
        Some(project_paths(root, &paths)?)
    };
    let now = operations::chronicle::polis_now(root);
    let done =
        operations::reservation::release(root, &writer(root)?, &now, citizen, targets.as_deref())
            .map_err(|e| e.to_string())?;
    Ok(json!({"ok": true, "released": done.entries, "paths": done.paths}))
}

fn vote(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    use crate::protocol::amendments::amendment::Vote;
    let aid = arg_str(args, "amendment_id")?;
    let citizen = arg_str(args, "citizen")?;
    let vote = match arg_str(args, "vote")? {
        "agree" => Vote::Agree,
        "disagree" => Vote::Disagree,
        "abstain" => Vote::Abstain,
        "request_changes" | "request changes" => Vote::RequestChanges,
        other => {
            return Err(format!(
                "`{other}` is not a vote: use agree, disagree, abstain or request_changes"
            ))
        }
    };
    let now = operations::chronicle::polis_now(root);
    done(operations::amendment::vote(
        &writer(root)?,
        &now,
        aid,
        citizen,
        vote,
        opt_str_ref(args, "rationale")?,
    ))
}

fn route(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let id = arg_str(args, "contract_id")?;
    let polis = Polis::read(root);
    let contract = operations::route::open_contract(&polis, id).map_err(|e| e.to_string())?;
    let options = operations::route::RouteOptions {
        seed: opt_int(args, "seed")?,
        ..Default::default()
    };
    let routed =
        operations::route::recommend(&polis, contract, &options).map_err(|e| e.to_string())?;
    serde_json::to_value(&routed.recommendation).map_err(|e| e.to_string())
}

fn prime(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let citizen = arg_str(args, "citizen")?;
    let mark_read = arg_bool(args, "mark_read", true)?;
    let now = PolisTime::system(session::polis_zone(root));
    let primed = session::prime(root, citizen, &now).map_err(|e| e.to_string())?;
    if mark_read {
        let writer = crate::fs::writer::Writer::unrecorded(root).map_err(|e| e.to_string())?;
        let left_alone = session::record_session_or_finding(root, &writer, &primed, &now)
            .map_err(|e| e.to_string())?;
        if let Some(finding) = left_alone {
            return Ok(Value::String(format!(
                "{}\n\n> polisd: {finding}\n",
                primed.primer.text
            )));
        }
    }
    Ok(Value::String(primed.primer.text))
}

fn notices(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let citizen = arg_str(args, "citizen")?;
    let (unread, mark_read) = (
        arg_bool(args, "unread", true)?,
        arg_bool(args, "mark_read", false)?,
    );
    session::check_citizen(root, citizen).map_err(|e| e.to_string())?;
    let view = session::read_inbox(root, citizen).map_err(|e| e.to_string())?;
    let listed: Vec<&crate::protocol::delivery::notice::Notice> = if unread {
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
                   "from": n.author, "text": crate::protocol::delivery::notice::render_notice(n),
                   "read": view.read.contains(&n.id)})
        })
        .collect();
    if mark_read && !ids.is_empty() {
        let writer = crate::fs::writer::Writer::unrecorded(root).map_err(|e| e.to_string())?;
        session::mark_read(root, &writer, &view, &ids).map_err(|e| e.to_string())?;
    }
    Ok(json!({"citizen": citizen, "notices": items}))
}

fn amendments(root: &Path) -> Result<Value, String> {
    let polis = Polis::read(root);
    let now = PolisTime::system(polis.settings.timezone);
    let (tally, _) = operations::tally(&polis, None, &now).map_err(|e| e.to_string())?;
    Ok(json!({"amendments": operations::amendment::list(root), "tally": tally}))
}

fn tally(root: &Path, args: &Map<String, Value>) -> Result<Value, String> {
    let applied = operations::tally::apply(root, arg_bool(args, "dry_run", false)?)
        .map_err(|e| e.to_string())?;
    let mut v = serde_json::to_value(&applied).map_err(|e| e.to_string())?;
    v["ok"] = Value::Bool(true);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[track_caller]
    fn failed(outcome: Outcome) -> String {
        match outcome {
            Outcome::Failed(reason) => reason,
            Outcome::Done(v) => panic!("expected a refusal, got {v}"),
            Outcome::Unknown(name) => panic!("unknown tool {name}"),
        }
    }

    #[test]
    fn a_system_identity_or_a_control_character_is_refused_in_every_tool() {
        let (_dir, root, _w) = crate::operations::test_polis::polis_with(&[]);
        let root = root.as_path();
        for system in crate::protocol::layout::SYSTEM_CITIZENS {
            for (tool, key) in [
                ("polis_claim_contract", "citizen"),
                ("polis_abandon_contract", "by"),
                ("polis_open_contract", "opened_by"),
                ("polis_prime", "citizen"),
            ] {
                let a = args(json!({key: system, "contract_id": "x", "title": "t"}));
                let why = failed(call(root, tool, &a));
                assert!(why.contains("system identity"), "{tool}: {why}");
            }
        }
        let a = args(json!({"title": "a\u{1b}[2Jb", "opened_by": "claude-agent-1"}));
        let why = failed(call(root, "polis_open_contract", &a));
        assert!(why.contains("U+001B"), "{why}");
        let a = args(json!({"text": "x", "tags": ["ok", "\u{202e}"]}));
        assert!(failed(call(root, "polis_add_guardrail", &a)).contains("U+202E"));
    }

    #[test]
    fn an_argument_of_the_wrong_type_is_refused_not_taken_as_absent() {
        let a = args(json!({
            "dry_run": "true", "minutes": "25", "big": 5_000_000_000u64, "below": -5,
            "tags": ["rust", 3], "note": 7, "gone": null
        }));
        assert!(arg_bool(&a, "dry_run", false)
            .unwrap_err()
            .contains("'dry_run' must be true or false, not \"true\""));
        assert!(opt_int::<u32>(&a, "minutes")
            .unwrap_err()
            .contains("'minutes' must be a whole number"));
        assert!(opt_int::<u32>(&a, "big")
            .unwrap_err()
            .contains("a smaller whole number"));
        assert_eq!(opt_int::<u64>(&a, "big"), Ok(Some(5_000_000_000)));
        assert!(opt_int::<u32>(&a, "below")
            .unwrap_err()
            .contains("at least 0"));
        assert_eq!(opt_int::<i64>(&a, "below"), Ok(Some(-5)));
        assert!(str_list(&a, "tags").unwrap_err().contains("'tags'"));
        assert!(opt_str(&a, "note")
            .unwrap_err()
            .contains("'note' must be a string"));
        // Absent and null are the same: the default.
        assert_eq!(opt_str(&a, "gone"), Ok(None));
        assert_eq!(arg_bool(&a, "gone", true), Ok(true));
        assert_eq!(opt_int::<u32>(&a, "missing"), Ok(None));
        assert_eq!(
            arg_str(&a, "missing").unwrap_err(),
            "missing required argument: 'missing'"
        );
    }

    #[test]
    fn a_settle_with_minutes_as_text_is_refused_and_the_contract_stays_open() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        let opened = call(
            &root,
            "polis_open_contract",
            &args(json!({"title": "Fix the login", "opened_by": "claude-code-1"})),
        );
        assert!(matches!(opened, Outcome::Done(_)));
        let claimed = call(
            &root,
            "polis_claim_contract",
            &args(
                json!({"contract_id": "fix-the-login", "citizen": "claude-code-1", "force": "no"}),
            ),
        );
        assert!(failed(claimed).contains("'force' must be true or false"));
        let reason = failed(call(
            &root,
            "polis_settle_contract",
            &args(json!({"contract_id": "fix-the-login", "quality": 4, "minutes": "25"})),
        ));
        assert!(
            reason.contains("'minutes' must be a whole number"),
            "{reason}"
        );
        let reason = failed(call(
            &root,
            "polis_settle_contract",
            &args(json!({"contract_id": "fix-the-login", "quality": "4"})),
        ));
        assert!(
            reason.contains("'quality' must be a whole number"),
            "{reason}"
        );
        assert!(root.join("contracts/open/fix-the-login.md").exists());
        assert!(!root.join("contracts/settled").exists());
    }
}
