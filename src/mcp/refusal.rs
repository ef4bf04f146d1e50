//! Why a tool call failed, in the tool's own words: an operation's refusal names the arguments
//! it asks for by the keys of the tool's schema (`no_lesson`, `citizen`), never by the command
//! line's flags, which an MCP client has no way to pass.

use crate::operations::arg::{Arg, Spell};
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
            Failure::Refused(e) => e.spelled(&|arg| named(tool, arg)),
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
