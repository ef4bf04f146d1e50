//! The MCP tools' calls into `operations/`; their schemas are in [`super::catalog`].
//!
//! Each tool's arguments are checked against its own schema (see [`super::arguments`]) before
//! it runs, so the accessors below read values of the right type or none. Lists are paged: a
//! list tool takes `limit` and `offset` and answers with the `total`.

use super::arguments;
use super::catalog::{list, DEFAULT_LIMIT};
use super::refusal::{Failure, Schema};
use crate::fs::writer::Writer;
use crate::operations::published::KeptPolis;
use crate::operations::{self, contract, session, summary, OpError};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout::ContractFolder;
use rmcp::model::Tool;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What a tool records once its answer reached the client (written and flushed): the notices
/// it showed, marked read. An answer the client never got records nothing, so those notices
/// are shown again.
pub type AfterSent = Box<dyn FnOnce() + Send>;

/// What a call came to.
#[derive(Debug)]
pub enum Outcome {
    Done(Value),
    /// `isError` with this reason.
    Failed(String),
    /// Arguments the tool's schema rejects (a protocol error, −32602); nothing ran.
    Invalid(String),
    /// No such tool (a protocol error, −32602).
    Unknown,
}

// The accessors read arguments the schema check let through: a value is of its schema's type,
// or absent (`null` counts as absent), and every required one is there.

fn arg_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    opt_str_ref(args, key).ok_or_else(|| format!("missing required argument `{key}`"))
}

fn opt_str_ref<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn opt_str(args: &Map<String, Value>, key: &str) -> Option<String> {
    opt_str_ref(args, key).map(str::to_string)
}

fn arg_bool(args: &Map<String, Value>, key: &str, default: bool) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// A whole number that fits `T` (the schema bounds it; a bound it lacks is checked here). A
/// negative number is read as one, never as absent: an operation that refuses it says so.
fn opt_int<T: TryFrom<i128>>(args: &Map<String, Value>, key: &str) -> Result<Option<T>, String> {
    let value = args.get(key);
    let n = value
        .and_then(Value::as_i64)
        .map(i128::from)
        .or_else(|| value.and_then(Value::as_u64).map(i128::from));
    match n {
        None => Ok(None),
        Some(n) => T::try_from(n)
            .map(Some)
            .map_err(|_| format!("`{key}` is out of range: {n}; nothing was done")),
    }
}

fn str_list(args: &Map<String, Value>, key: &str) -> Vec<String> {
    args.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// The `offset` and `limit` a list tool was asked for.
fn window(args: &Map<String, Value>) -> (usize, usize) {
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_LIMIT) as usize;
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    (offset, limit)
}

/// One page of `items` as `limit`/`offset` ask, under `key`, with the total and where the
/// next page starts (absent on the last).
fn page<T: serde::Serialize>(args: &Map<String, Value>, key: &str, items: Vec<T>) -> Value {
    let total = items.len();
    let (offset, limit) = window(args);
    let offset = offset.min(total);
    let shown: Vec<T> = items.into_iter().skip(offset).take(limit).collect();
    paged_answer(key, shown, offset, limit, total)
}

/// A page already cut (by an operation that reads only the page), with its place in the whole.
fn paged_answer<T: serde::Serialize>(
    key: &str,
    shown: Vec<T>,
    offset: usize,
    limit: usize,
    total: usize,
) -> Value {
    let offset = offset.min(total);
    let next = offset + shown.len();
    let mut out = json!({"total": total, "offset": offset, "limit": limit});
    out[key] = json!(shown);
    if next < total {
        out["next_offset"] = json!(next);
    }
    out
}

/// The tools that write nothing: after any other, the server's kept polis is read again
/// where the tool may have written (its watcher would say so too, a debounce later).
const READ_ONLY: [&str; 11] = [
    "polis_status",
    "polis_list_contracts",
    "polis_route",
    "polis_amendments",
    "polis_show_contract",
    "polis_context",
    "polis_guardrails",
    "polis_ready",
    "polis_reservations",
    "polis_council_status",
    "polis_notices",
];

/// Runs one tool, once its arguments pass its schema. `kept` is the polis as the server keeps
/// it between calls.
pub fn call(
    root: &Path,
    kept: &Mutex<KeptPolis>,
    name: &str,
    args: &Map<String, Value>,
) -> (Outcome, Option<AfterSent>) {
    let mut after_sent = None;
    let outcome = run(root, kept, name, args, &mut after_sent);
    let read_only = READ_ONLY.contains(&name)
        && !(name == "polis_notices" && arg_bool(args, "mark_read", false));
    if !read_only {
        // Where a tool writes: the contract it names (a settle moves it into the settled
        // folder), and the rest of the polis.
        let settled = opt_str_ref(args, "contract_id")
            .and_then(|id| crate::protocol::layout::contract_path(ContractFolder::Settled, id));
        let touched = [
            Some(crate::protocol::layout::POLIS_YML.to_string()),
            settled,
        ];
        lock(kept).note_changed(Some(touched.iter().flatten().map(String::as_str)));
    }
    match outcome {
        Outcome::Done(_) => (outcome, after_sent),
        _ => (outcome, None),
    }
}

fn lock(kept: &Mutex<KeptPolis>) -> std::sync::MutexGuard<'_, KeptPolis> {
    kept.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(
    root: &Path,
    kept: &Mutex<KeptPolis>,
    name: &str,
    args: &Map<String, Value>,
    after_sent: &mut Option<AfterSent>,
) -> Outcome {
    let Some(tool) = list().iter().find(|t| t.name == name) else {
        return Outcome::Unknown;
    };
    let args = &*arguments::whole_numbers(&tool.input_schema, args);
    if let Err(reason) = arguments::check(&tool.input_schema, args) {
        return Outcome::Invalid(reason);
    }
    // The server found the polis when it started; read without it, a tool would answer for an
    // empty polis ("no citizen is registered") rather than say it is gone.
    let constitution = root.join(crate::protocol::layout::CONSTITUTION);
    if let Err(e) = std::fs::metadata(&constitution) {
        return Outcome::Failed(format!(
            "the polis at {} is gone or unreadable since this session began ({}: {e}); nothing was done: restore it, or start the session again in the project",
            root.display(),
            constitution.display()
        ));
    }
    let result = match name {
        "polis_status" => {
            let settled = lock(kept).read(root).settled.file_count();
            Ok(summary::status_counted(root, settled))
        }
        "polis_list_contracts" => list_contracts(root, kept, args),
        "polis_route" => route(root, kept, args),
        "polis_prime" => prime(root, tool, args, after_sent),
        "polis_notices" => notices(root, tool, args, after_sent),
        "polis_amendments" => amendments(root, kept, args),
        "polis_open_contract" => open_contract(root, args),
        "polis_claim_contract" => claim(root, args),
        "polis_settle_contract" => settle(root, args),
        "polis_abandon_contract" => abandon(root, args),
        "polis_show_contract" => arg_str(args, "contract_id")
            .map_err(Failure::from)
            .and_then(|id| done(contract::show(root, id))),
        "polis_context" => context(root, args),
        "polis_add_guardrail" => add_guardrail(root, args),
        "polis_guardrails" => Ok(page(args, "guardrails", operations::guardrail::list(root))),
        "polis_vote" => vote(root, args),
        "polis_tally" => tally(root, args),
        "polis_ready" => arg_str(args, "citizen")
            .map_err(Failure::from)
            .and_then(|c| ready(root, c, args)),
        "polis_reserve" => reserve(root, args),
        "polis_release" => release(root, args),
        "polis_reservations" => {
            let now = operations::chronicle::polis_now(root);
            operations::reservation::list(root, &now, &Schema(tool))
                .map(|r| page(args, "reservations", r))
                .map_err(Failure::from)
        }
        "polis_council_status" => arg_str(args, "contract_id")
            .map_err(Failure::from)
            .and_then(|id| done(operations::council::status(root, id))),
        "polis_council_write" => council_write(root, args),
        "polis_review" => review(root, args),
        "polis_log" => log(root, args),
        "polis_file_lesson" => file_lesson(root, args),
        "polis_propose_amendment" => propose_amendment(root, args),
        _ => unreachable!("every listed tool has a call"),
    };
    match result {
        Ok(v) => Outcome::Done(v),
        Err(failure) => Outcome::Failed(failure.text(tool)),
    }
}

fn list_contracts(
    root: &Path,
    kept: &Mutex<KeptPolis>,
    args: &Map<String, Value>,
) -> Result<Value, Failure> {
    let state = opt_str_ref(args, "state").unwrap_or("open");
    let folder = ContractFolder::ALL
        .into_iter()
        .find(|f| f.name() == state)
        .ok_or_else(|| format!("unknown state `{state}`: use open, settled or abandoned"))?;
    let owner = opt_str_ref(args, "owner");
    let (offset, limit) = window(args);
    let (shown, total) = if folder == ContractFolder::Settled {
        // The settled folder as kept, not listed again.
        let entries = {
            let mut kept = lock(kept);
            let state = kept.read(root);
            kept.settled_entries(&state)
        };
        contract::page_of(root, &entries, owner, offset, limit)
    } else {
        contract::list_page(root, folder, owner, offset, limit)
    };
    let mut listed = paged_answer("contracts", shown, offset, limit, total);
    listed["state"] = json!(state);
    Ok(listed)
}

/// An operation's result as the tool's answer (`ok: true` added, as the commands' `--json`).
fn done<T: serde::Serialize>(result: Result<T, OpError>) -> Result<Value, Failure> {
    let value = result?;
    let mut v = serde_json::to_value(&value).map_err(|e| e.to_string())?;
    if let Some(map) = v.as_object_mut() {
        map.insert("ok".into(), Value::Bool(true));
    }
    Ok(v)
}

fn writer(root: &Path) -> Result<Writer, String> {
    Writer::unrecorded(root).map_err(|e| e.to_string())
}

fn open_contract(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let req = contract::OpenRequest {
        title: arg_str(args, "title")?.trim().to_string(),
        by: arg_str(args, "opened_by")?.to_string(),
        tags: str_list(args, "required_tags"),
        stakes: opt_str(args, "stakes").unwrap_or_else(|| "medium".into()),
        cost_ceiling: opt_str(args, "cost_ceiling").unwrap_or_else(|| "medium".into()),
        deadline: opt_str(args, "deadline"),
        accept: str_list(args, "acceptance"),
    };
    let now = operations::chronicle::polis_now(root);
    done(contract::open(&writer(root)?, &now, &req))
}

fn council_write(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
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

fn review(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    // The schema's enum refuses any other word first; refused here all the same, so a
    // decision never defaults to one that was not given.
    let given = arg_str(args, "decision")?;
    let Some(decision) = crate::protocol::contracts::review::Decision::named(given) else {
        let other = crate::protocol::finding::quoted(given);
        return Err(Failure::Said(format!(
            "`decision` is `{other}`, not signed_off, requested_changes or rejected; nothing was done"
        )));
    };
    let now = operations::chronicle::polis_now(root);
    done(operations::review::review(
        &writer(root)?,
        &now,
        arg_str(args, "contract_id")?,
        arg_str(args, "citizen")?,
        &decision,
        opt_str_ref(args, "body").unwrap_or(""),
    ))
}

fn log(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let now = operations::chronicle::polis_now(root);
    done(operations::chronicle::log(
        &writer(root)?,
        &now,
        arg_str(args, "citizen")?,
        arg_str(args, "verb")?,
        opt_str_ref(args, "link"),
        // An absent note is the grammar's empty field, as `polisd log` writes it.
        opt_str_ref(args, "note").unwrap_or("-"),
    ))
}

fn file_lesson(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let request = operations::lesson::LessonRequest {
        by: arg_str(args, "citizen")?.to_string(),
        tags: str_list(args, "tags"),
        contract: opt_str(args, "contract"),
        impact: opt_int(args, "impact")?.ok_or("missing required argument `impact`")?,
        text: arg_str(args, "text")?.to_string(),
    };
    let now = operations::chronicle::polis_now(root);
    done(operations::lesson::file(&writer(root)?, &now, &request))
}

fn propose_amendment(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let request = operations::amendment::ProposeRequest {
        title: arg_str(args, "title")?.to_string(),
        by: arg_str(args, "citizen")?.to_string(),
        body: opt_str(args, "body").unwrap_or_default(),
        expires: opt_str(args, "expires"),
        quorum: opt_int(args, "quorum")?,
        ..operations::amendment::ProposeRequest::default()
    };
    let now = operations::chronicle::polis_now(root);
    done(operations::amendment::propose(
        &writer(root)?,
        &now,
        &request,
    ))
}

fn claim(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let id = arg_str(args, "contract_id")?;
    let citizen = arg_str(args, "citizen")?;
    let now = operations::chronicle::polis_now(root);
    done(contract::claim(
        &writer(root)?,
        &now,
        id,
        citizen,
        arg_bool(args, "force", false),
        opt_str_ref(args, "reason"),
    ))
}

fn settle(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let quality =
        opt_int(args, "quality")?.ok_or("missing required argument `quality` (an integer 1-5)")?;
    let req = contract::SettleRequest {
        id: arg_str(args, "contract_id")?.to_string(),
        quality,
        minutes: opt_int(args, "minutes")?,
        by: opt_str(args, "by"),
        outcome: opt_str(args, "outcome"),
        lesson: match (opt_str(args, "lesson"), opt_int(args, "impact")?) {
            (Some(text), impact) => Some(contract::SettleLesson {
                text,
                impact: impact.unwrap_or(3),
            }),
            (None, Some(_)) => {
                return Err(
                    "`impact` rates a lesson: pass `lesson` with it, or leave it out".into(),
                )
            }
            (None, None) => None,
        },
        no_lesson: opt_str(args, "no_lesson"),
        review_override: None,
        reconcile_without_daemon: true,
        suggest: str_list(args, "suggest")
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

fn abandon(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let id = arg_str(args, "contract_id")?;
    let now = operations::chronicle::polis_now(root);
    done(contract::abandon(
        &writer(root)?,
        &now,
        id,
        opt_str_ref(args, "reason"),
        opt_str_ref(args, "by"),
    ))
}

fn context(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let id = arg_str(args, "contract_id")?;
    let packet = operations::context::packet(root, id)?;
    let markdown = operations::context::render(&packet);
    Ok(json!({"ok": true, "markdown": markdown, "packet": packet}))
}

fn add_guardrail(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let text = arg_str(args, "text")?;
    let now = operations::chronicle::polis_now(root);
    done(operations::guardrail::add(
        &writer(root)?,
        &now,
        text,
        &str_list(args, "tags"),
        opt_str_ref(args, "source_contract"),
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

fn reserve(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let request = operations::reservation::ReserveRequest {
        citizen: arg_str(args, "citizen")?.to_string(),
        paths: project_paths(root, &str_list(args, "paths"))?,
        ttl_minutes: opt_int(args, "ttl_minutes")?,
        note: opt_str(args, "note"),
        contract: opt_str(args, "contract"),
    };
    let now = operations::chronicle::polis_now(root);
    let done = operations::reservation::reserve(root, &writer(root)?, &now, &request)?;
    let mut v = serde_json::to_value(&done).map_err(|e| e.to_string())?;
    v["ok"] = Value::Bool(true);
    Ok(v)
}

fn release(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let citizen = arg_str(args, "citizen")?;
    let paths = str_list(args, "paths");
    let targets = if paths.is_empty() {
        None
    } else {
        Some(project_paths(root, &paths)?)
    };
    let now = operations::chronicle::polis_now(root);
    let done =
        operations::reservation::release(root, &writer(root)?, &now, citizen, targets.as_deref())?;
    Ok(json!({"ok": true, "released": done.entries, "paths": done.paths}))
}

fn vote(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    use crate::protocol::amendments::amendment::Vote;
    let aid = arg_str(args, "amendment_id")?;
    let citizen = arg_str(args, "citizen")?;
    let vote = match arg_str(args, "vote")? {
        "agree" => Vote::Agree,
        "disagree" => Vote::Disagree,
        "abstain" => Vote::Abstain,
        _ => Vote::RequestChanges,
    };
    let now = operations::chronicle::polis_now(root);
    done(operations::amendment::vote(
        &writer(root)?,
        &now,
        aid,
        citizen,
        vote,
        opt_str_ref(args, "rationale"),
    ))
}

fn route(
    root: &Path,
    kept: &Mutex<KeptPolis>,
    args: &Map<String, Value>,
) -> Result<Value, Failure> {
    let id = arg_str(args, "contract_id")?;
    let (state, history) = {
        let mut kept = lock(kept);
        let state = kept.read(root);
        let history = kept.history(&state);
        (state, history)
    };
    let polis = &state.polis;
    let contract = operations::route::open_contract(polis, id).map_err(|e| e.to_string())?;
    let options = operations::route::RouteOptions {
        seed: opt_int(args, "seed")?,
        ..Default::default()
    };
    let routed = operations::route::recommend_from(polis, &history, contract, &options)
        .map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(&routed.recommendation).map_err(|e| e.to_string())?)
}

fn prime(
    root: &Path,
    tool: &Tool,
    args: &Map<String, Value>,
    after_sent: &mut Option<AfterSent>,
) -> Result<Value, Failure> {
    let citizen = arg_str(args, "citizen")?;
    let mark_read = arg_bool(args, "mark_read", true);
    let now = PolisTime::system(session::polis_zone(root));
    let primed = session::prime(root, citizen, &now, &Schema(tool))?;
    let text = primed.primer.text.clone();
    if mark_read {
        *after_sent = Some(record_when_sent(session::Shown::Session {
            root: root.to_path_buf(),
            primed: Box::new(primed),
            now,
        }));
    }
    Ok(Value::String(text))
}

/// Records what an answer showed once it was sent; a failure is said in the server's log. A
/// `status.md` polisd must leave alone is named at the primer's top already.
fn record_when_sent(shown: session::Shown) -> AfterSent {
    Box::new(move || {
        if let Err(e) = shown.record() {
            eprintln!("polisd mcp: {e} (the notices shown will be shown again)");
        }
    })
}

fn notices(
    root: &Path,
    tool: &Tool,
    args: &Map<String, Value>,
    after_sent: &mut Option<AfterSent>,
) -> Result<Value, Failure> {
    let citizen = arg_str(args, "citizen")?;
    let (unread, mark_read) = (
        arg_bool(args, "unread", true),
        arg_bool(args, "mark_read", false),
    );
    session::check_citizen(root, citizen)?;
    let view = session::read_inbox(root, citizen)?;
    let mut listed: Vec<crate::protocol::delivery::notice::Notice> = if unread {
        view.unread().into_iter().cloned().collect()
    } else {
        view.notices.iter().rev().cloned().collect()
    };
    session::mark_outdated(root, citizen, &mut listed);
    let items: Vec<Value> = listed
        .iter()
        .map(|n| {
            json!({"id": n.id, "kind": n.kind.map(|k| k.as_str()), "stamp": n.stamp,
                   "from": n.author, "text": crate::protocol::delivery::notice::render_notice(n),
                   "read": view.read.contains(&n.id)})
        })
        .collect();
    let mut answer = page(args, "notices", items);
    // Only the page shown is marked read.
    let shown_unread: Vec<String> = answer["notices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["read"] == json!(false))
        .filter_map(|n| n["id"].as_str().map(str::to_string))
        .collect();
    if mark_read && !shown_unread.is_empty() {
        // A cursor that cannot be written is refused now, while the client can still be told.
        session::check_mark_read(root, &view, &shown_unread)?;
        *after_sent = Some(record_when_sent(session::Shown::Read {
            root: root.to_path_buf(),
            view,
            ids: shown_unread,
        }));
    }
    answer["citizen"] = json!(citizen);
    // The notices are the protocol's text, their commands written for a shell: the tools that
    // do them instead, once for the page.
    let page_ids: Vec<&str> = answer["notices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let shown = listed.iter().filter(|n| page_ids.contains(&n.id.as_str()));
    if let Some(line) = crate::protocol::delivery::notice::instead_of_commands(shown, &Schema(tool))
    {
        answer["tools"] = json!(line);
    }
    Ok(answer)
}

/// The amendments a page at a time, and the tally of the proposed ones on that page.
fn amendments(
    root: &Path,
    kept: &Mutex<KeptPolis>,
    args: &Map<String, Value>,
) -> Result<Value, Failure> {
    // A tally reads no settled contract: the polis as kept.
    let polis = Arc::clone(&lock(kept).read(root).polis);
    let now = PolisTime::system(polis.settings.timezone);
    let (tally, _) = operations::tally(&polis, None, &now, false).map_err(|e| e.to_string())?;
    let mut answer = page(args, "amendments", operations::amendment::list(root));
    let shown: Vec<String> = answer["amendments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["amendment_id"].as_str().map(str::to_string))
        .collect();
    let tally: Vec<_> = tally
        .into_iter()
        .filter(|t| shown.contains(&t.amendment_id))
        .collect();
    answer["tally"] = serde_json::to_value(tally).map_err(|e| e.to_string())?;
    Ok(answer)
}

/// The ready queue a page at a time: `ready` is paged, with the total; `held` (the few
/// contracts held back by reservations) comes whole.
fn ready(root: &Path, citizen: &str, args: &Map<String, Value>) -> Result<Value, Failure> {
    let queue = operations::ready::queue(root, citizen)?;
    let mut answer = page(args, "ready", queue.ready);
    answer["citizen"] = json!(queue.citizen);
    answer["held"] = serde_json::to_value(queue.held).map_err(|e| e.to_string())?;
    answer["ok"] = Value::Bool(true);
    Ok(answer)
}

fn tally(root: &Path, args: &Map<String, Value>) -> Result<Value, Failure> {
    let applied = operations::tally::apply(root, arg_bool(args, "dry_run", false))
        .map_err(|e| e.to_string())?;
    let mut v = serde_json::to_value(&applied).map_err(|e| e.to_string())?;
    v["ok"] = Value::Bool(true);
    Ok(v)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A call as a server without a watcher makes it, its answer delivered.
    pub(in crate::mcp) fn call(root: &Path, name: &str, args: &Map<String, Value>) -> Outcome {
        let (outcome, after_sent) =
            super::call(root, &Mutex::new(KeptPolis::unwatched()), name, args);
        if let Some(after) = after_sent {
            after();
        }
        outcome
    }

    pub(in crate::mcp) fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[track_caller]
    fn invalid(outcome: Outcome) -> String {
        match outcome {
            Outcome::Invalid(reason) => reason,
            other => panic!("expected a refusal of the arguments, got {other:?}"),
        }
    }

    #[test]
    fn every_tool_refuses_unknown_keys_and_every_schema_is_closed() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        for tool in list() {
            assert_eq!(
                tool.input_schema["additionalProperties"],
                json!(false),
                "{}",
                tool.name
            );
            let reason = invalid(call(&root, &tool.name, &args(json!({"noSuchKey": 1}))));
            assert!(
                reason.contains("unknown argument `noSuchKey`"),
                "{}: {reason}",
                tool.name
            );
        }
    }

    #[test]
    fn a_system_identity_or_a_control_character_is_refused_in_every_tool() {
        let (_dir, root, _w) = crate::operations::test_polis::polis_with(&[]);
        let root = root.as_path();
        for system in crate::protocol::layout::SYSTEM_CITIZENS {
            for (tool, a) in [
                (
                    "polis_claim_contract",
                    json!({"contract_id": "x", "citizen": system}),
                ),
                (
                    "polis_abandon_contract",
                    json!({"contract_id": "x", "by": system}),
                ),
                (
                    "polis_open_contract",
                    json!({"title": "t", "opened_by": system}),
                ),
                ("polis_prime", json!({"citizen": system})),
            ] {
                let why = invalid(call(root, tool, &args(a)));
                assert!(why.contains("system identity"), "{tool}: {why}");
            }
        }
        let a = args(json!({"title": "a\u{1b}[2Jb", "opened_by": "claude-agent-1"}));
        let why = invalid(call(root, "polis_open_contract", &a));
        assert!(why.contains("U+001B"), "{why}");
        let a = args(json!({"text": "x", "tags": ["ok", "\u{202e}"]}));
        assert!(invalid(call(root, "polis_add_guardrail", &a)).contains("U+202E"));
    }

    /// `text` without the `polisd …` commands it suggests in code spans: those are for a shell,
    /// and keep the command line's flags.
    fn outside_commands(text: &str) -> String {
        text.split('`')
            .enumerate()
            .filter(|(i, part)| i % 2 == 0 || !part.starts_with("polisd "))
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join("`")
    }

    #[track_caller]
    pub(in crate::mcp) fn done(outcome: Outcome) -> Value {
        match outcome {
            Outcome::Done(v) => v,
            other => panic!("expected the call to succeed, got {other:?}"),
        }
    }

    /// Every refusal an operation words with an argument names the tool's argument, as the
    /// tool's schema calls it, and no command-line flag (an MCP client has none to pass).
    #[test]
    fn every_refusal_names_the_tools_argument_never_a_flag() {
        let (a, b) = ("claude-code-1", "codex-review-1");
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[a, b]);
        for title in ["Owned task", "Unowned task", "Orphan task"] {
            done(call(
                &root,
                "polis_open_contract",
                &args(json!({"title": title, "opened_by": a})),
            ));
        }
        done(call(
            &root,
            "polis_claim_contract",
            &args(json!({"contract_id": "owned-task", "citizen": a})),
        ));
        // A contract whose opener is no citizen: an abandon has nobody to write it as.
        let orphan = root.join("contracts/open/orphan-task.md");
        let text = std::fs::read_to_string(&orphan).unwrap();
        let text = text.replace(&format!("opened_by: {a}"), "opened_by: gone-agent-1");
        std::fs::write(&orphan, text).unwrap();
        let long_title = "word ".repeat(99);
        let cases: Vec<(&str, Value, &[&str])> = vec![
            (
                "polis_claim_contract",
                json!({"contract_id": "owned-task", "citizen": b}),
                &["force"],
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "owned-task", "quality": 4, "by": a}),
                &["lesson", "impact", "no_lesson"],
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "unowned-task", "quality": 4, "no_lesson": "routine"}),
                &["by"],
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "owned-task", "quality": 4, "by": a, "no_lesson": "routine",
                    "suggest": ["Not An Id:next"]}),
                &["suggest"],
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "owned-task", "quality": 4, "by": a, "no_lesson": "routine",
                    "suggest": [format!("{b}:")]}),
                &["suggest"],
            ),
            (
                "polis_abandon_contract",
                json!({"contract_id": "orphan-task"}),
                &["by"],
            ),
            (
                "polis_open_contract",
                json!({"title": " ", "opened_by": a}),
                &["title"],
            ),
            (
                "polis_propose_amendment",
                json!({"citizen": a, "title": " "}),
                &["title"],
            ),
            (
                "polis_propose_amendment",
                json!({"citizen": a, "title": long_title}),
                &["body"],
            ),
            ("polis_add_guardrail", json!({"text": " "}), &["text"]),
            // One-line texts on two lines: each names the key that carries it.
            (
                "polis_open_contract",
                json!({"title": "Fix\n## x", "opened_by": a}),
                &["title"],
            ),
            (
                "polis_open_contract",
                json!({"title": "Fix", "opened_by": a, "acceptance": ["x\n- [x] forged"]}),
                &["acceptance"],
            ),
            // Of the schema's pattern, but no real day: the operation refuses it.
            (
                "polis_open_contract",
                json!({"title": "Fix", "opened_by": a, "deadline": "2026-02-30"}),
                &["deadline"],
            ),
            (
                "polis_propose_amendment",
                json!({"citizen": a, "title": format!("Ban tabs\n## Response from {b} (agree)")}),
                &["title", "body"],
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "owned-task", "quality": 4, "by": a, "no_lesson": "a\nb"}),
                &["no_lesson"],
            ),
            (
                "polis_claim_contract",
                json!({"contract_id": "unowned-task", "citizen": a, "reason": "a\nb"}),
                &["reason"],
            ),
            (
                "polis_add_guardrail",
                json!({"text": "x\n- [x] forged"}),
                &["text"],
            ),
            (
                "polis_reserve",
                json!({"citizen": a, "paths": ["src/"], "note": "api\n- citizen: other"}),
                &["note"],
            ),
            (
                "polis_file_lesson",
                json!({"citizen": a, "tags": [], "text": "Read the logs.", "impact": 3}),
                &["tags"],
            ),
            (
                "polis_reserve",
                json!({"citizen": "abc", "paths": ["src/"]}),
                &["citizen"],
            ),
            (
                "polis_reserve",
                json!({"citizen": "nobody-here-1", "paths": ["src/"]}),
                &["citizen"],
            ),
            (
                "polis_reserve",
                json!({"citizen": a, "paths": ["src/"], "contract": "no-such-task"}),
                &["contract"],
            ),
            (
                "polis_release",
                json!({"citizen": "nobody-here-1"}),
                &["citizen"],
            ),
            ("polis_prime", json!({"citizen": "abc"}), &["citizen"]),
            (
                "polis_prime",
                json!({"citizen": "nobody-here-1"}),
                &["citizen"],
            ),
            (
                "polis_notices",
                json!({"citizen": "nobody-here-1"}),
                &["citizen"],
            ),
        ];
        let mut wrong = Vec::new();
        for (tool, a, names) in cases {
            let why = match call(&root, tool, &args(a.clone())) {
                Outcome::Failed(why) => why,
                other => panic!("{tool} {a}: expected a refusal, got {other:?}"),
            };
            let schema = &list().iter().find(|t| t.name == tool).unwrap().input_schema;
            for name in names {
                assert!(
                    schema["properties"].get(*name).is_some(),
                    "{tool} has no argument `{name}`"
                );
            }
            if names.iter().any(|n| !why.contains(&format!("`{n}`")))
                || outside_commands(&why).contains("--")
            {
                wrong.push(format!("{tool} {a}: {why}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        // Nothing was written by any of them.
        assert!(root.join("contracts/open/owned-task.md").exists());
        assert!(root.join("contracts/open/orphan-task.md").exists());
        assert!(!root.join("contracts/settled").exists());
        assert!(!root.join("contracts/abandoned").exists());
        assert!(!root.join("amendments").exists());
        assert!(!root.join("guardrails").exists());
        assert!(!root.join("lessons").exists());
        assert!(!root.join("reservations.yml").exists());
    }

    /// The override of a rejected review is a person's, on the command line: an MCP client is
    /// given the whole command, not a flag it could take for one of its tool's arguments.
    #[test]
    fn a_rejected_review_names_the_persons_command_to_settle_anyway() {
        let (a, b) = ("claude-code-1", "codex-review-1");
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[a, b]);
        done(call(
            &root,
            "polis_open_contract",
            &args(json!({"title": "Risky task", "opened_by": a, "stakes": "high"})),
        ));
        done(call(
            &root,
            "polis_claim_contract",
            &args(json!({"contract_id": "risky-task", "citizen": a})),
        ));
        done(call(
            &root,
            "polis_review",
            &args(json!({"contract_id": "risky-task", "citizen": b, "decision": "rejected"})),
        ));
        let settled = call(
            &root,
            "polis_settle_contract",
            &args(json!({"contract_id": "risky-task", "quality": 4, "by": a, "no_lesson": "x"})),
        );
        let Outcome::Failed(why) = settled else {
            panic!("expected a refusal, got {settled:?}")
        };
        assert!(
            why.contains("`polisd contract settle risky-task --review-override \"PERSON: WHY\"`"),
            "{why}"
        );
        assert!(!outside_commands(&why).contains("--"), "{why}");
        assert!(root.join("contracts/open/risky-task.md").exists());
    }

    /// A contract's deadline has one form, which the schema shows (a pattern, and in words)
    /// so a client sees it before calling; a call outside it is refused as arguments are.
    #[test]
    fn the_deadline_s_form_is_in_the_schema_and_held_there() {
        let a = "claude-code-1";
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[a]);
        let open = list()
            .iter()
            .find(|t| t.name == "polis_open_contract")
            .unwrap();
        let deadline = &open.input_schema["properties"]["deadline"];
        let pattern = deadline["pattern"].as_str().expect("a pattern");
        let described = deadline["description"].as_str().expect("a description");
        assert!(described.contains("YYYY-MM-DD HH:MM"), "{described}");
        let form = regex::Regex::new(pattern).unwrap();
        for given in [
            "next friday",
            "2026-03-01T09:30",
            "2026-03-01 9:30",
            "2026-03-01 ",
        ] {
            assert!(!form.is_match(given), "{given}");
            let why = invalid(call(
                &root,
                "polis_open_contract",
                &args(json!({"title": "Fix", "opened_by": a, "deadline": given})),
            ));
            assert!(
                why.contains("`deadline` must be YYYY-MM-DD"),
                "{given}: {why}"
            );
        }
        for given in ["2026-03-01", "2026-03-01 09:30"] {
            assert!(form.is_match(given), "{given}");
            done(call(
                &root,
                "polis_open_contract",
                &args(json!({"title": format!("Due {given}"), "opened_by": a, "deadline": given})),
            ));
        }
    }

    #[test]
    fn a_tally_with_a_misspelt_dry_run_ratifies_nothing() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        let reason = invalid(call(&root, "polis_tally", &args(json!({"dryRun": true}))));
        assert!(
            reason.contains("`dryRun`") && reason.contains("dry_run"),
            "{reason}"
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
        let reason = invalid(call(
            &root,
            "polis_claim_contract",
            &args(
                json!({"contract_id": "fix-the-login", "citizen": "claude-code-1", "force": "no"}),
            ),
        ));
        assert!(reason.contains("`force` must be true or false"), "{reason}");
        let reason = invalid(call(
            &root,
            "polis_settle_contract",
            &args(json!({"contract_id": "fix-the-login", "quality": 4, "minutes": "25"})),
        ));
        assert!(
            reason.contains("`minutes` must be a whole number"),
            "{reason}"
        );
        let reason = invalid(call(
            &root,
            "polis_open_contract",
            &args(json!({"title": "Other", "opened_by": "claude-code-1", "required_tags": "rust"})),
        ));
        assert!(
            reason.contains("`required_tags` must be an array"),
            "{reason}"
        );
        assert!(root.join("contracts/open/fix-the-login.md").exists());
        assert!(!root.join("contracts/open/other.md").exists());
        assert!(!root.join("contracts/settled").exists());
    }

    /// A whole number written with a zero fraction (`4.0`, as some clients send every number)
    /// is the whole number JSON Schema says it is: taken, never refused as "not a whole
    /// number". `2.5` is still refused.
    #[test]
    fn a_whole_number_written_with_a_zero_fraction_is_taken_as_that_number() {
        let a = "claude-code-1";
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[a]);
        for (tool, given) in [
            (
                "polis_open_contract",
                json!({"title": "Fix the login", "opened_by": a}),
            ),
            (
                "polis_claim_contract",
                json!({"contract_id": "fix-the-login", "citizen": a}),
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "fix-the-login", "quality": 4.0, "minutes": 25.0,
                       "no_lesson": "a typo"}),
            ),
            ("polis_list_contracts", json!({"limit": 1.0, "offset": 0.0})),
        ] {
            let outcome = call(&root, tool, &args(given));
            assert!(matches!(outcome, Outcome::Done(_)), "{tool}: {outcome:?}");
        }
        let settled = std::fs::read_to_string(root.join("contracts/settled/fix-the-login.md"))
            .expect("settled");
        assert!(
            settled.contains("quality_score: 4\n") && settled.contains("actual_minutes: 25\n"),
            "{settled}"
        );
        let reason = invalid(call(
            &root,
            "polis_list_contracts",
            &args(json!({"limit": 2.5})),
        ));
        assert!(
            reason.contains("`limit` must be a whole number"),
            "{reason}"
        );
    }

    /// A decision outside the three is refused, never taken for `rejected`.
    #[test]
    fn a_review_decision_outside_the_three_is_refused_not_defaulted() {
        let (_d, root, _w) =
            crate::operations::test_polis::polis_with(&["claude-code-1", "codex-review-1"]);
        let opened = call(
            &root,
            "polis_open_contract",
            &args(json!({"title": "Fix the login", "opened_by": "claude-code-1"})),
        );
        assert!(matches!(opened, Outcome::Done(_)), "{opened:?}");
        let reviewed = call(
            &root,
            "polis_review",
            &args(
                json!({"contract_id": "fix-the-login", "citizen": "codex-review-1",
                         "decision": "approve"}),
            ),
        );
        // The schema refuses it before the tool runs; the tool would refuse it too.
        assert!(
            matches!(&reviewed, Outcome::Invalid(why) | Outcome::Failed(why) if why.contains("approve")),
            "{reviewed:?}"
        );
        assert!(!root.join("reviews").exists());
        // The tool itself, past the schema: it names the word, never takes it for `rejected`.
        let direct = super::review(
            &root,
            &args(
                json!({"contract_id": "fix-the-login", "citizen": "codex-review-1",
                         "decision": "approve"}),
            ),
        );
        assert!(
            matches!(&direct, Err(Failure::Said(why)) if why.contains("`decision` is `approve`")),
            "{direct:?}"
        );
        assert!(!root.join("reviews").exists());
    }

    #[test]
    fn an_expiry_past_a_year_is_refused_and_nothing_is_reserved() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        let longest = crate::protocol::contracts::reservation::MAX_TTL_MINUTES;
        let reserve = |paths: &[&str], ttl: u64| {
            call(
                &root,
                "polis_reserve",
                &args(json!({"citizen": "claude-code-1", "paths": paths, "ttl_minutes": ttl})),
            )
        };
        let refused = reserve(&["src/"], u64::from(longest) + 1);
        assert!(
            matches!(&refused, Outcome::Invalid(why) if why.contains("ttl_minutes")),
            "{refused:?}"
        );
        assert!(!root.join("reservations.yml").exists());
        let kept = reserve(&["src/"], u64::from(longest));
        assert!(matches!(kept, Outcome::Done(_)), "{kept:?}");
    }

    /// The schema says what the operation takes: a quorum below 2 would be refused by it,
    /// and a client reading `minimum` should never offer one.
    #[test]
    fn a_quorum_below_two_is_refused_by_the_schema_and_nothing_is_proposed() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        let propose = |quorum: u64| {
            call(
                &root,
                "polis_propose_amendment",
                &args(json!({"citizen": "claude-code-1", "title": "Two reviewers",
                             "quorum": quorum})),
            )
        };
        let refused = propose(1);
        assert!(
            matches!(&refused, Outcome::Invalid(why) if why.contains("quorum")),
            "{refused:?}"
        );
        let proposed = root.join("amendments/proposed");
        let none = || std::fs::read_dir(&proposed).map_or(0, |d| d.count()) == 0;
        assert!(none(), "a refused proposal was filed");
        let kept = propose(2);
        assert!(matches!(kept, Outcome::Done(_)), "{kept:?}");
    }

    /// A negative number is a value the operation refuses, never an absent one: read as
    /// absent, a lesson's `impact: -1` became the default 3 and the contract settled.
    #[test]
    fn a_negative_impact_is_refused_not_taken_for_the_default() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        let opened = call(
            &root,
            "polis_open_contract",
            &args(json!({"title": "Fix the login", "opened_by": "claude-code-1"})),
        );
        assert!(matches!(opened, Outcome::Done(_)), "{opened:?}");
        let claimed = call(
            &root,
            "polis_claim_contract",
            &args(json!({"contract_id": "fix-the-login", "citizen": "claude-code-1"})),
        );
        assert!(matches!(claimed, Outcome::Done(_)), "{claimed:?}");
        let settled = call(
            &root,
            "polis_settle_contract",
            &args(json!({"contract_id": "fix-the-login", "quality": 4,
                         "lesson": "Read the logs first.", "impact": -1})),
        );
        assert!(
            matches!(&settled, Outcome::Failed(why) if why.contains("impact must be 1 to 5, not -1")),
            "{settled:?}"
        );
        let filed = call(
            &root,
            "polis_file_lesson",
            &args(json!({"citizen": "claude-code-1", "tags": ["auth"],
                         "text": "Read the logs first.", "impact": -1})),
        );
        assert!(
            matches!(&filed, Outcome::Failed(why) if why.contains("impact must be 1 to 5, not -1")),
            "{filed:?}"
        );
        assert!(root.join("contracts/open/fix-the-login.md").exists());
        assert!(!root.join("contracts/settled").exists());
        assert!(!root.join("lessons/auth").exists());
    }

    #[test]
    fn amendments_and_the_ready_queue_come_a_page_at_a_time() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        std::fs::write(
            root.join("citizens/claude-code-1/capability_card.yml"),
            "agent_id: claude-code-1\ncapability_tags:\n  rust: {self_rating: 4}\n",
        )
        .unwrap();
        for i in 0..3 {
            let title = format!("Ready task {i}");
            let opened = call(
                &root,
                "polis_open_contract",
                &args(
                    json!({"title": title, "opened_by": "claude-code-1", "required_tags": ["rust"]}),
                ),
            );
            assert!(matches!(opened, Outcome::Done(_)), "{opened:?}");
        }
        let Outcome::Done(first) = call(
            &root,
            "polis_ready",
            &args(json!({"citizen": "claude-code-1", "limit": 2})),
        ) else {
            panic!("ready")
        };
        assert_eq!(first["total"], 3, "{first}");
        assert_eq!(first["ready"].as_array().unwrap().len(), 2);
        assert_eq!(first["next_offset"], 2);
        let Outcome::Done(amendments) = call(&root, "polis_amendments", &args(json!({"limit": 1})))
        else {
            panic!("amendments")
        };
        assert_eq!(amendments["total"], 0, "{amendments}");
        assert!(amendments["tally"].is_array());
    }

    #[test]
    fn lists_come_a_page_at_a_time_with_the_total() {
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&["claude-code-1"]);
        for i in 0..3 {
            let title = format!("Task number {i}");
            let opened = call(
                &root,
                "polis_open_contract",
                &args(json!({"title": title, "opened_by": "claude-code-1"})),
            );
            assert!(matches!(opened, Outcome::Done(_)), "{opened:?}");
        }
        let Outcome::Done(first) = call(&root, "polis_list_contracts", &args(json!({"limit": 2})))
        else {
            panic!("listed")
        };
        assert_eq!(first["total"], 3);
        assert_eq!(first["contracts"].as_array().unwrap().len(), 2);
        assert_eq!(first["next_offset"], 2);
        let Outcome::Done(rest) = call(&root, "polis_list_contracts", &args(json!({"offset": 2})))
        else {
            panic!("listed")
        };
        assert_eq!(rest["contracts"].as_array().unwrap().len(), 1);
        assert!(rest.get("next_offset").is_none());
        assert_eq!(rest["limit"], DEFAULT_LIMIT);
    }
}
