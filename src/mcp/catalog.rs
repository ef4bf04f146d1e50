//! The MCP tools as a client sees them: each one's name, one-line description and input
//! schema. `tools/list` answers with these, and every call's arguments are checked against its
//! tool's schema ([`super::arguments`]) before [`super::tools`] runs it.

use crate::operations::chronicle::{MAX_LINK_CHARS, MAX_VERB_CHARS};
use crate::protocol::amendments::amendment::MIN_QUORUM;
use crate::protocol::contracts::reservation::MAX_TTL_MINUTES;
use crate::protocol::input::MAX_TEXT_CHARS;
use rmcp::model::Tool;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The page a list tool answers with when the caller names none.
pub(super) const DEFAULT_LIMIT: u64 = 50;
/// The largest page.
const MAX_LIMIT: u64 = 500;
/// The longest id (contract, citizen, amendment) a tool accepts.
const MAX_ID: u64 = 200;
/// The longest free text (an outcome, a note, a council contribution) a tool accepts.
const MAX_TEXT: u64 = 100_000;

fn id(desc: &str) -> Value {
    json!({"type": "string", "maxLength": MAX_ID, "description": desc})
}

fn plain_id() -> Value {
    json!({"type": "string", "maxLength": MAX_ID})
}

fn text(max: u64) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// A deadline as the operation takes one; the pattern cannot tell a real day (2026-02-30), which
/// the operation refuses. The description says the rule in words: a refusal quotes it.
fn deadline() -> Value {
    json!({"type": "string", "maxLength": 16,
           "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2})?$",
           "description": "YYYY-MM-DD or YYYY-MM-DD HH:MM"})
}

fn strings(desc: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "maxItems": 100, "description": desc})
}

/// `limit` and `offset`, added to a list tool's properties.
fn paged(mut properties: Value) -> Value {
    // The default (DEFAULT_LIMIT) is in no description: every session pays for each byte.
    properties["limit"] = json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT});
    properties["offset"] = json!({"type": "integer", "minimum": 0});
    properties
}

fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    let mut schema = json!({"type": "object", "properties": properties,
                            "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    let Value::Object(schema) = schema else {
        unreachable!("built as an object")
    };
    Tool::new(name, description, schema)
}

/// Every tool, with a one-line description; built once.
pub fn list() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(build)
}

fn build() -> Vec<Tool> {
    let citizen = id("Your citizen id.");
    vec![
        tool(
            "polis_status",
            "Citizens, open/settled counts and each tag's routing leader.",
            json!({}),
            &[],
        ),
        tool(
            "polis_list_contracts",
            "List contracts in one state (default open), a page at a time, with the total.",
            paged(json!({"state": {"type": "string", "enum": ["open", "settled", "abandoned"]},
                   "owner": plain_id()})),
            &[],
        ),
        tool(
            "polis_route",
            "Recommend a citizen for an open contract, with every score.",
            json!({"contract_id": plain_id(),
                   "seed": {"type": "integer", "minimum": 0, "description": "Seed for a reproducible pick."}}),
            &["contract_id"],
        ),
        tool(
            "polis_prime",
            "Your session primer: index.md, the chronicle since you last looked, your contracts, votes, notices (marks them seen).",
            json!({"citizen": citizen,
                   "mark_read": {"type": "boolean", "description": "false: a peek that records nothing."}}),
            &["citizen"],
        ),
        tool(
            "polis_notices",
            "Your inbox notices, newest first, a page at a time.",
            paged(json!({"citizen": citizen,
                   "unread": {"type": "boolean", "description": "Only unread (default true)."},
                   "mark_read": {"type": "boolean", "description": "Mark the listed ones read."}})),
            &["citizen"],
        ),
        tool(
            "polis_amendments",
            "Amendments, votes, and what a tally would decide now; paged.",
            paged(json!({})),
            &[],
        ),
        tool("polis_open_contract", "Open a contract; matching guardrails become acceptance criteria.",
            json!({"title": text(500), "opened_by": plain_id(),
                   "required_tags": strings("Capability tags."),
                   "stakes": {"type": "string", "enum": ["low", "medium", "high"]},
                   "cost_ceiling": {"type": "string", "enum": ["low", "medium", "high"]},
                   "acceptance": strings("Acceptance criteria."),
                   "deadline": deadline()}),
            &["title", "opened_by"]),
        tool("polis_claim_contract", "Claim an open contract (atomic: one claimer wins).",
            json!({"contract_id": plain_id(), "citizen": plain_id(),
                   "force": {"type": "boolean"}, "reason": {"type": "string"}}),
            &["contract_id", "citizen"]),
        tool("polis_settle_contract", "Settle: quality 1-5; a lesson (impact default 3) or no_lesson (why).",
            json!({"contract_id": plain_id(),
                   "quality": {"type": "integer", "minimum": 1, "maximum": 5},
                   "minutes": {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                   "by": plain_id(),
                   "outcome": text(MAX_TEXT),
                   "lesson": text(MAX_TEXT),
                   "impact": {"type": "integer"},
                   "no_lesson": text(MAX_TEXT),
                   "suggest": strings("Next citizens, each CITIZEN:REASON.")}),
            &["contract_id", "quality"]),
        tool("polis_abandon_contract", "Abandon an open contract.",
            json!({"contract_id": plain_id(), "reason": text(MAX_TEXT),
                   "by": plain_id()}),
            &["contract_id"]),
        tool("polis_show_contract", "One contract's file, wherever it is.",
            json!({"contract_id": plain_id()}), &["contract_id"]),
        tool("polis_context", "Read before working: criteria, guardrails, lessons for a contract.",
            json!({"contract_id": plain_id()}), &["contract_id"]),
        tool("polis_reserve", "Reserve project paths or globs; refused naming the holder.",
            json!({"citizen": plain_id(), "paths": strings("Paths or globs."),
                   "ttl_minutes": {"type": "integer", "minimum": 0, "maximum": MAX_TTL_MINUTES}, "note": text(MAX_TEXT),
                   "contract": plain_id()}),
            &["citizen", "paths"]),
        tool("polis_release", "Release your reservations (all, or these paths).",
            json!({"citizen": plain_id(), "paths": strings("Paths (omit for all).")}),
            &["citizen"]),
        tool("polis_reservations", "Every reservation: who holds what, until when; a page at a time.",
            paged(json!({})), &[]),
        tool("polis_add_guardrail", "Record a must-pass check for future contracts on these tags.",
            json!({"text": text(MAX_TEXT), "tags": strings("Tags (empty: every contract)."),
                   "source_contract": plain_id()}),
            &["text"]),
        tool("polis_guardrails", "The active guardrails, a page at a time.", paged(json!({})), &[]),
        tool("polis_vote", "Vote on a proposed amendment.",
            json!({"amendment_id": plain_id(), "citizen": plain_id(),
                   "vote": {"type": "string", "enum": ["agree", "disagree", "abstain", "request_changes"]},
                   "rationale": text(MAX_TEXT)}),
            &["amendment_id", "citizen", "vote"]),
        tool("polis_tally", "Tally proposed amendments; ratify, reject or expire them.",
            json!({"dry_run": {"type": "boolean", "description": "Only report (default false)."}}),
            &[]),
        tool("polis_ready", "Unowned contracts you can start now (dependencies settled); paged.",
            paged(json!({"citizen": citizen})), &["citizen"]),
        tool("polis_council_status", "Where a council review stands: round, seats, deadline, verdict.",
            json!({"contract_id": plain_id()}), &["contract_id"]),
        tool("polis_council_write", "Place your contribution for the council's open round.",
            json!({"contract_id": plain_id(), "citizen": plain_id(),
                   "text": {"type": "string", "maxLength": MAX_TEXT, "description": "Markdown, within the round's word limit."}}),
            &["contract_id", "citizen", "text"]),
        tool("polis_review", "Review another citizen's contract; stakes: high settles only after a sign-off.",
            json!({"contract_id": plain_id(), "citizen": plain_id(),
                   "decision": {"type": "string", "enum": ["signed_off", "requested_changes", "rejected"]},
                   "body": text(MAX_TEXT)}),
            &["contract_id", "citizen", "decision"]),
        tool("polis_log", "Append a chronicle line; a refused one comes back corrected.",
            json!({"citizen": plain_id(), "verb": text(MAX_VERB_CHARS as u64),
                   "link": {"type": "string", "maxLength": MAX_LINK_CHARS, "description": "A path under _polis/."},
                   "note": text(MAX_TEXT_CHARS as u64)}),
            &["citizen", "verb"]),
        tool("polis_file_lesson", "File a lesson (impact 1-5) under lessons/<first tag>/.",
            json!({"citizen": plain_id(), "tags": strings("Capability tags."), "text": text(MAX_TEXT),
                   "impact": {"type": "integer"}, "contract": plain_id()}),
            &["citizen", "tags", "text", "impact"]),
        tool("polis_propose_amendment", "Propose an amendment for a vote; expires YYYY-MM-DD (default 30 days).",
            json!({"citizen": plain_id(), "title": text(500), "body": text(MAX_TEXT),
                   "expires": text(100),
                   "quorum": {"type": "integer", "minimum": MIN_QUORUM, "maximum": u32::MAX}}),
            &["citizen", "title"]),
    ]
}
