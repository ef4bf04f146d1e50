//! Why a tool call failed, in the tool's own words: an operation's refusal names the arguments
//! it asks for by the keys of the tool's schema (`no_lesson`, `citizen`), never by the command
//! line's flags, which an MCP client has no way to pass; and the action it suggests as the tool
//! to call with its arguments, never a shell command, which an MCP client may have no way to run.
//! What no tool does (registering a citizen) is named as its command, saying that a shell runs it.

use crate::operations::arg::{Action, Arg, Namer, Place, Spell};
use rmcp::model::Tool;
use serde_json::Value;

/// A tool's failure, before it is put in words.
#[derive(Debug)]
pub enum Failure {
    /// Words of the tool's own (its arguments' checks), already in the schema's terms.
    Said(String),
    /// An operation's refusal, spelled once the tool is known ([`Failure::text`]).
    Refused(Box<dyn Spell + Send>),
}

impl Failure {
    /// The reason the client reads, arguments named as `tool`'s schema names them.
    pub fn text(&self, tool: &Tool) -> String {
        match self {
            Failure::Said(text) => text.clone(),
            Failure::Refused(e) => e.spelled(&Schema(tool)),
        }
    }
}

impl From<String> for Failure {
    fn from(text: String) -> Failure {
        Failure::Said(text)
    }
}

impl From<&str> for Failure {
    fn from(text: &str) -> Failure {
        Failure::Said(text.to_string())
    }
}

impl From<crate::operations::OpError> for Failure {
    fn from(e: crate::operations::OpError) -> Failure {
        Failure::Refused(Box::new(e))
    }
}

impl From<crate::operations::reservation::ReservationError> for Failure {
    fn from(e: crate::operations::reservation::ReservationError) -> Failure {
        Failure::Refused(Box::new(e))
    }
}

impl From<crate::operations::session::SessionError> for Failure {
    fn from(e: crate::operations::session::SessionError) -> Failure {
        Failure::Refused(Box::new(e))
    }
}

/// Names as `.0`'s schema and the tools give them.
pub struct Schema<'a>(pub &'a Tool);

impl Namer for Schema<'_> {
    fn arg(&self, arg: Arg) -> String {
        named(self.0, arg)
    }

    fn action(&self, action: &Action) -> String {
        call(action)
    }

    fn instead_of(&self, action: &Action) -> Option<String> {
        let (tool, given) = match tool(action) {
            Ok(call) => call,
            Err(Elsewhere::Read(path)) => return Some(format!("read `{path}`")),
            Err(Elsewhere::Shell(what)) => {
                return Some(format!("a shell command ({})", shell_runs(what)))
            }
        };
        let keys: Vec<String> = given.iter().map(|(key, _)| format!("`{key}`")).collect();
        Some(if keys.is_empty() {
            format!("`{tool}`")
        } else {
            format!("`{tool}` ({})", keys.join(", "))
        })
    }
}

/// An argument's value in a suggested call: a string as JSON writes it, or a placeholder.
enum Given<'a> {
    Text(&'a str),
    /// A list of one string.
    List(&'a str),
    Yes,
    Yours(&'static str),
}

/// A tool and the arguments to pass it.
type Call<'a> = (&'static str, Vec<(&'static str, Given<'a>)>);

/// What an MCP agent does where no tool does the action.
enum Elsewhere {
    /// Read this file: no tool shows the record whole.
    Read(&'static str),
    /// Only a shell runs the command; no tool does this (a verb's phrase: "starts a council").
    Shell(&'static str),
}

/// The tool that does `action`, with the arguments to pass; else what to do instead.
fn tool(action: &Action) -> Result<Call<'_>, Elsewhere> {
    use Given::*;
    fn citizen(by: &Option<String>) -> Given<'_> {
        by.as_deref().map_or(Yours("<your id>"), Text)
    }
    Ok(match action {
        Action::Claim { id, by } => (
            "polis_claim_contract",
            vec![
                (
                    "contract_id",
                    id.as_deref().map_or(Yours("<contract id>"), Text),
                ),
                ("citizen", citizen(by)),
            ],
        ),
        Action::ClaimForce { id, by } => (
            "polis_claim_contract",
            vec![
                ("contract_id", Text(id)),
                ("citizen", citizen(by)),
                ("force", Yes),
            ],
        ),
        Action::ListContracts | Action::Look(Place::OpenContracts) => {
            ("polis_list_contracts", vec![])
        }
        Action::Look(Place::Owned { by }) => ("polis_list_contracts", vec![("owner", Text(by))]),
        Action::ListAmendments | Action::Look(Place::Proposed) => ("polis_amendments", vec![]),
        Action::Vote => ("polis_vote", vec![]),
        Action::Tally => ("polis_tally", vec![]),
        Action::SignOff { cid } => (
            "polis_review",
            vec![
                ("contract_id", Text(cid)),
                ("citizen", Yours("<reviewer>")),
                ("decision", Text("signed_off")),
            ],
        ),
        Action::Settle { id } => ("polis_settle_contract", vec![("contract_id", Text(id))]),
        Action::Abandon { cid } => ("polis_abandon_contract", vec![("contract_id", Text(cid))]),
        Action::CouncilStatus { cid } => ("polis_council_status", vec![("contract_id", Text(cid))]),
        Action::AskReview { by, link } => (
            "polis_log",
            vec![
                ("citizen", Text(by)),
                ("verb", Text("requested review")),
                ("link", Text(link)),
            ],
        ),
        Action::Ready { by } => ("polis_ready", vec![("citizen", Text(by))]),
        Action::Log { by } => (
            "polis_log",
            vec![
                ("citizen", Text(by)),
                ("verb", Yours("<verb>")),
                ("link", Yours("<path under _polis/>")),
            ],
        ),
        Action::SettleWithLesson { by } => (
            "polis_settle_contract",
            vec![
                ("contract_id", Yours("<contract id>")),
                ("quality", Yours("<1-5>")),
                ("by", Text(by)),
                ("lesson", Text("…")),
                ("impact", Yours("<1-5>")),
            ],
        ),
        Action::VoteAs { by } => (
            "polis_vote",
            vec![
                ("amendment_id", Yours("<amendment id>")),
                ("citizen", Text(by)),
                ("vote", Text("agree")),
            ],
        ),
        Action::Notices { by } => ("polis_notices", vec![("citizen", Text(by))]),
        // The tool lists everyone's: each entry names its holder.
        Action::Reservations { .. } => ("polis_reservations", vec![]),
        Action::Release { by, path } => {
            let mut given = vec![("citizen", Text(by))];
            given.extend(path.as_deref().map(|p| ("paths", List(p))));
            ("polis_release", given)
        }
        Action::Reserve => ("polis_reserve", vec![]),
        Action::OpenContract => (
            "polis_open_contract",
            vec![
                ("title", Yours("<title>")),
                ("opened_by", Yours("<your id>")),
            ],
        ),
        Action::CouncilWrite => (
            "polis_council_write",
            vec![
                ("contract_id", Yours("<contract id>")),
                ("citizen", Yours("<your id>")),
                ("text", Yours("<markdown>")),
            ],
        ),
        Action::Look(place @ (Place::Index | Place::Chronicle | Place::Lessons)) => {
            return Err(Elsewhere::Read(place.path()))
        }
        Action::Register { .. } => return Err(Elsewhere::Shell("registers a citizen")),
        Action::CouncilStart { .. } => return Err(Elsewhere::Shell("starts a council")),
        Action::Check => return Err(Elsewhere::Shell("reports the findings")),
        Action::Verify => return Err(Elsewhere::Shell("restamps a capability card")),
        Action::Reconcile => return Err(Elsewhere::Shell("rebuilds the routing stats")),
    })
}

/// Who runs a command no tool does (`what`: "starts a council"), as every MCP text says it.
fn shell_runs(what: &str) -> String {
    format!("no tool {what}; a person or an agent with a shell runs it")
}

/// `action` as the tool that does it, with the arguments to pass:
/// `` `polis_claim_contract` (`contract_id: "x"`, `citizen: "me"`, `force: true`) ``; a record
/// no tool shows whole, as the file to read; what no tool does, as the command and who runs it.
pub fn call(action: &Action) -> String {
    let (tool, given) = match tool(action) {
        Ok(call) => call,
        Err(Elsewhere::Read(path)) => return format!("read `{path}`"),
        Err(Elsewhere::Shell(what)) => {
            return format!(
                "{} (a shell command: {})",
                action.command(),
                shell_runs(what)
            )
        }
    };
    if given.is_empty() {
        return format!("`{tool}`");
    }
    let given: Vec<String> = given
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                Given::Text(t) => Value::from(t).to_string(),
                Given::List(t) => Value::from(vec![t]).to_string(),
                Given::Yes => "true".to_string(),
                Given::Yours(placeholder) => placeholder.to_string(),
            };
            format!("`{key}: {value}`")
        })
        .collect();
    format!("`{tool}` ({})", given.join(", "))
}

/// The keys a tool may give an argument; a tool's schema has at most one of them.
fn keys(arg: Arg) -> &'static [&'static str] {
    match arg {
        Arg::Citizen | Arg::SessionCitizen => &["citizen", "by", "opened_by"],
        Arg::Title => &["title"],
        Arg::Body => &["body"],
        Arg::Text => &["text"],
        Arg::Tags => &["tags", "required_tags"],
        Arg::Contract => &["contract"],
        Arg::Force => &["force"],
        Arg::Lesson => &["lesson"],
        Arg::Impact => &["impact"],
        Arg::NoLesson => &["no_lesson"],
        Arg::Suggest => &["suggest"],
        Arg::By => &["by"],
        Arg::AgentId => &["agent_id", "id"],
        Arg::Vendor => &["vendor"],
        Arg::Model => &["model"],
        Arg::Accept => &["acceptance"],
        Arg::Deadline => &["deadline"],
        Arg::ReviewOverride => &["review_override"],
        Arg::Reason => &["reason"],
        Arg::Note => &["note"],
        Arg::Why => &["why"],
    }
}

/// `arg` as `tool` names it: the key its schema gives it, in a code span.
pub fn named(tool: &Tool, arg: Arg) -> String {
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let keys = keys(arg);
    let key = keys
        .iter()
        .find(|k| properties.is_some_and(|p| p.contains_key(**k)))
        // Each tool's refusals name only its own arguments (a test holds it); the first key
        // is still the argument's name, should one slip through.
        .unwrap_or(&keys[0]);
    format!("`{key}`")
}

#[cfg(test)]
mod tests {
    use crate::mcp::catalog::list;
    use crate::mcp::tools::tests::{args, call, done};
    use crate::mcp::tools::Outcome;
    use serde_json::{json, Value};

    /// Every refusal that suggests something an MCP tool does names that tool and what to pass
    /// it, never a shell command (an MCP client may have no shell).
    #[test]
    fn every_suggested_action_names_the_tool_never_a_command() {
        let (a, b) = ("claude-code-1", "codex-review-1");
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[a, b]);
        for (title, stakes) in [
            ("Owned task", "low"),
            ("Unowned task", "low"),
            ("Risky plain", "high"),
            ("Risky changes", "high"),
            ("Risky rejected", "high"),
            ("Odd owner", "low"),
            ("Half abandoned", "low"),
        ] {
            let id = done(call(
                &root,
                "polis_open_contract",
                &args(json!({"title": title, "opened_by": a, "stakes": stakes})),
            ))["contract_id"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| title.to_lowercase().replace(' ', "-"));
            if title != "Unowned task" {
                done(call(
                    &root,
                    "polis_claim_contract",
                    &args(json!({"contract_id": id, "citizen": a})),
                ));
            }
        }
        for (cid, decision) in [
            ("risky-changes", "requested_changes"),
            ("risky-rejected", "rejected"),
        ] {
            done(call(
                &root,
                "polis_review",
                &args(json!({"contract_id": cid, "citizen": b, "decision": decision})),
            ));
        }
        // An owner line no command can read as a citizen's id.
        let odd = root.join("contracts/open/odd-owner.md");
        let text = std::fs::read_to_string(&odd).unwrap();
        std::fs::write(&odd, text.replace(&format!("owner: {a}"), "owner: true")).unwrap();
        // An abandon interrupted between its edit and its move.
        let half = root.join("contracts/open/half-abandoned.md");
        let text = std::fs::read_to_string(&half).unwrap();
        std::fs::write(&half, text.replace("status: claimed", "status: abandoned")).unwrap();
        // An amendment past its deadline, which no tally has recorded yet.
        let late = done(call(
            &root,
            "polis_propose_amendment",
            &args(json!({"citizen": a, "title": "Longer reviews"})),
        ));
        let late_path = root.join(late["path"].as_str().unwrap());
        let text = std::fs::read_to_string(&late_path).unwrap();
        let text: String = text
            .lines()
            .map(|l| {
                if l.starts_with("expires_at:") {
                    "expires_at: 2020-01-01".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&late_path, text + "\n").unwrap();
        let late_id = late["amendment_id"].as_str().unwrap().to_string();
        let settle =
            |cid: &str| json!({"contract_id": cid, "quality": 4, "by": a, "no_lesson": "x"});
        let cases: Vec<(&str, Value, &str, &[&str])> = vec![
            (
                "polis_settle_contract",
                json!({"contract_id": "owned-task", "quality": 4, "by": b, "no_lesson": "x"}),
                "polis_claim_contract",
                &[
                    "`contract_id: \"owned-task\"`",
                    "`citizen: \"codex-review-1\"`",
                    "`force: true`",
                ],
            ),
            (
                "polis_abandon_contract",
                json!({"contract_id": "owned-task", "by": b}),
                "polis_claim_contract",
                &["`force: true`"],
            ),
            (
                "polis_settle_contract",
                json!({"contract_id": "unowned-task", "quality": 4, "no_lesson": "x"}),
                "polis_claim_contract",
                &["`contract_id: \"unowned-task\"`"],
            ),
            (
                "polis_claim_contract",
                json!({"contract_id": "no-such-task", "citizen": a}),
                "polis_list_contracts",
                &[],
            ),
            (
                "polis_vote",
                json!({"amendment_id": "no-such-amendment", "citizen": a, "vote": "agree"}),
                "polis_amendments",
                &[],
            ),
            (
                "polis_review",
                json!({"contract_id": "owned-task", "citizen": a, "decision": "signed_off"}),
                "polis_log",
                &[
                    "`verb: \"requested review\"`",
                    "`link: \"contracts/open/owned-task\"`",
                ],
            ),
            (
                "polis_settle_contract",
                settle("risky-plain"),
                "polis_review",
                &["`decision: \"signed_off\"`"],
            ),
            (
                "polis_settle_contract",
                settle("risky-changes"),
                "polis_review",
                &["`contract_id: \"risky-changes\"`"],
            ),
            (
                "polis_settle_contract",
                settle("risky-rejected"),
                "polis_abandon_contract",
                &["`contract_id: \"risky-rejected\"`"],
            ),
            (
                "polis_settle_contract",
                settle("odd-owner"),
                "polis_claim_contract",
                &["`contract_id: \"odd-owner\"`", "`force: true`"],
            ),
            (
                "polis_claim_contract",
                json!({"contract_id": "half-abandoned", "citizen": b, "force": true}),
                "polis_abandon_contract",
                &["`contract_id: \"half-abandoned\"`"],
            ),
            (
                "polis_vote",
                json!({"amendment_id": late_id, "citizen": b, "vote": "agree"}),
                "polis_tally",
                &[],
            ),
            (
                "polis_propose_amendment",
                json!({"citizen": a, "title": "Shorter reviews",
                    "body": format!("Why.\n\n### 2026-01-01 from {b}: agree\n")}),
                "polis_vote",
                &[],
            ),
        ];
        let mut wrong = Vec::new();
        for (tool, given, to_call, passed) in cases {
            let why = match call(&root, tool, &args(given.clone())) {
                Outcome::Failed(why) => why,
                other => panic!("{tool} {given}: expected a refusal, got {other:?}"),
            };
            let schema = &list()
                .iter()
                .find(|t| t.name == to_call)
                .unwrap()
                .input_schema;
            for pass in passed {
                let key = pass.trim_matches('`').split(':').next().unwrap();
                assert!(
                    schema["properties"].get(key).is_some(),
                    "{to_call} has no `{key}`"
                );
            }
            // The override of a rejected review is a person's: it alone stays a command.
            let why_left = why.replace(
                "`polisd contract settle risky-rejected --review-override \"PERSON: WHY\"`",
                "",
            );
            if !why.contains(&format!("`{to_call}`"))
                || passed.iter().any(|p| !why.contains(p))
                || why_left.contains("polisd ")
            {
                wrong.push(format!("{tool} {given}: {why}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(!root.join("contracts/settled").exists());
        assert!(!root.join("contracts/abandoned").exists());
    }

    /// A refusal that suggests what no tool does (registering a citizen, starting a council)
    /// still names the command, and tells an MCP agent that a shell runs it, so it neither
    /// looks for a tool nor takes the command for one it can call.
    #[test]
    fn a_command_no_tool_does_says_a_shell_runs_it() {
        let a = "claude-code-1";
        let (_d, root, _w) = crate::operations::test_polis::polis_with(&[a]);
        done(call(
            &root,
            "polis_open_contract",
            &args(json!({"title": "Plain task", "opened_by": a})),
        ));
        let stranger = "nobody-here-1";
        let register = format!(
            "`polisd register {stranger} --vendor <vendor> --model <model> --tags <tag:rating,…>`"
        );
        let start = "`polisd council start plain-task`".to_string();
        let cases: Vec<(&str, Value, &String, &str)> = vec![
            (
                "polis_prime",
                json!({"citizen": stranger}),
                &register,
                "registers a citizen",
            ),
            (
                "polis_notices",
                json!({"citizen": stranger}),
                &register,
                "registers a citizen",
            ),
            (
                "polis_claim_contract",
                json!({"contract_id": "plain-task", "citizen": stranger}),
                &register,
                "registers a citizen",
            ),
            (
                "polis_council_status",
                json!({"contract_id": "plain-task"}),
                &start,
                "starts a council",
            ),
            (
                "polis_council_write",
                json!({"contract_id": "plain-task", "citizen": a, "text": "Looks right."}),
                &start,
                "starts a council",
            ),
        ];
        let mut wrong = Vec::new();
        for (tool, given, command, what) in cases {
            let why = match call(&root, tool, &args(given.clone())) {
                Outcome::Failed(why) => why,
                other => panic!("{tool} {given}: expected a refusal, got {other:?}"),
            };
            let said = format!(
                "{command} (a shell command: no tool {what}; a person or an agent with a shell runs it)"
            );
            if !why.contains(&said) || why.replace(command.as_str(), "").contains("polisd ") {
                wrong.push(format!("{tool} {given}: {why}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(!root.join(format!("citizens/{stranger}")).exists());
        assert!(!root.join("reviews").exists());
    }

    /// Every action a success text names (the primer's, the notices' commands, the records'
    /// fixes) is a listed tool called with keys of its schema, or a file to read; a command no
    /// tool does is said to be a shell's.
    #[test]
    fn every_action_spelled_for_mcp_is_a_tool_with_its_schema_s_keys() {
        use crate::operations::arg::{Action, Place};
        let me = || "me".to_string();
        let (shell, mut actions): (Vec<Action>, Vec<Action>) =
            Action::commands().into_iter().partition(|a| {
                matches!(
                    a,
                    Action::Register { .. }
                        | Action::CouncilStart { .. }
                        | Action::Check
                        | Action::Verify
                        | Action::Reconcile
                )
            });
        for action in &shell {
            let said = super::call(action);
            assert!(
                said.starts_with(&format!("{} (a shell command: no tool ", action.command())),
                "{said}"
            );
        }
        actions.extend([
            Action::Claim {
                id: None,
                by: Some(me()),
            },
            Action::Release {
                by: me(),
                path: None,
            },
            Action::Look(Place::OpenContracts),
            Action::Look(Place::Owned { by: me() }),
            Action::Look(Place::Proposed),
        ]);
        for action in &actions {
            let said = super::call(action);
            let tool = said.split('`').nth(1).unwrap();
            let schema = &list()
                .iter()
                .find(|t| t.name == tool)
                .unwrap_or_else(|| panic!("{action:?}: no tool `{tool}`"))
                .input_schema;
            for part in said.split(" (").nth(1).unwrap_or("").split("`, `") {
                let key = part.trim_matches(['`', ')']).split(':').next().unwrap();
                assert!(
                    key.is_empty() || schema["properties"].get(key).is_some(),
                    "{action:?}: `{tool}` has no `{key}` ({said})"
                );
            }
        }
        for place in [Place::Index, Place::Chronicle, Place::Lessons] {
            let said = super::call(&Action::Look(place.clone()));
            assert_eq!(said, format!("read `{}`", place.path()));
        }
    }
}
