//! Why a tool call failed, in the tool's own words: an operation's refusal names the arguments
//! it asks for by the keys of the tool's schema (`no_lesson`, `citizen`), never by the command
//! line's flags, which an MCP client has no way to pass; and the action it suggests as the tool
//! to call with its arguments, never a shell command, which an MCP client may have no way to run.

use crate::operations::arg::{Action, Arg, Namer, Spell};
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
struct Schema<'a>(&'a Tool);

impl Namer for Schema<'_> {
    fn arg(&self, arg: Arg) -> String {
        named(self.0, arg)
    }

    fn action(&self, action: &Action) -> String {
        call(action)
    }
}

/// An argument's value in a suggested call: a string as JSON writes it, or a placeholder.
enum Given<'a> {
    Text(&'a str),
    Yes,
    Yours(&'static str),
}

/// `action` as the tool that does it, with the arguments to pass:
/// `` `polis_claim_contract` (`contract_id: "x"`, `citizen: "me"`, `force: true`) ``.
pub fn call(action: &Action) -> String {
    use Given::*;
    let (tool, given): (&str, Vec<(&str, Given)>) = match action {
        Action::Claim { id } => (
            "polis_claim_contract",
            vec![("contract_id", Text(id)), ("citizen", Yours("<your id>"))],
        ),
        Action::ClaimForce { id, by } => (
            "polis_claim_contract",
            vec![
                ("contract_id", Text(id)),
                ("citizen", by.as_deref().map_or(Yours("<your id>"), Text)),
                ("force", Yes),
            ],
        ),
        Action::ListContracts => ("polis_list_contracts", vec![]),
        Action::ListAmendments => ("polis_amendments", vec![]),
        Action::Vote => ("polis_vote", vec![]),
        Action::SignOff { cid } => (
            "polis_review",
            vec![
                ("contract_id", Text(cid)),
                ("citizen", Yours("<reviewer>")),
                ("decision", Text("signed_off")),
            ],
        ),
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
    };
    if given.is_empty() {
        return format!("`{tool}`");
    }
    let given: Vec<String> = given
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                Text(t) => Value::from(t).to_string(),
                Yes => "true".to_string(),
                Yours(placeholder) => placeholder.to_string(),
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
