//! The arguments a refusal asks for, as data. An operation says which argument is at fault
//! ([`Arg`]); each front end names it its own way: the command line as its flag (an error's
//! `Display`), MCP as the key the tool's schema gives it (through [`Spell::spelled`]). So one
//! message serves both, and neither front end is told to pass the other's words. The
//! dashboard's console names it as the label of the form's field that carries it.
//!
//! A refusal that suggests something to do next, where an MCP tool does the same thing, names
//! it as an [`Action`]: the command line spells it as the whole command, MCP as the tool to call
//! with its arguments, the console as the command (a person there has a shell). Commands no
//! tool does (`polisd verify --fix`) stay plain text, for a person or an agent with a shell.

/// An argument an operation's refusal names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// The acting citizen's id.
    Citizen,
    /// The acting citizen's id where the command line also reads `$POLIS_CITIZEN`.
    SessionCitizen,
    Title,
    Body,
    Text,
    Tags,
    /// The contract a reservation is for.
    Contract,
    Force,
    Lesson,
    Impact,
    NoLesson,
    Suggest,
    /// The person who answers an item of the human queue (a name, not a citizen id).
    By,
    /// A new citizen's agent id, when a person accepts one.
    AgentId,
    Vendor,
    Model,
    /// An acceptance criterion of a new contract.
    Accept,
    Deadline,
    /// A person's waiver of the review a `stakes: high` contract needs.
    ReviewOverride,
    /// Why a contract is abandoned, or claimed against the router's pick.
    Reason,
    /// A reservation's note.
    Note,
    /// Why a person answers an item of the human queue as they do.
    Why,
}

impl Arg {
    /// How the command line names it.
    pub fn flag(self) -> &'static str {
        match self {
            Arg::Citizen => "--as",
            Arg::SessionCitizen => "--as or POLIS_CITIZEN",
            Arg::Title => "--title",
            Arg::Body => "--body",
            Arg::Text => "--text",
            Arg::Tags => "--tags",
            Arg::Contract => "--contract",
            Arg::Force => "--force",
            Arg::Lesson => "--lesson",
            Arg::Impact => "--impact",
            Arg::NoLesson => "--no-lesson",
            Arg::Suggest => "--suggest",
            Arg::By => "--by",
            Arg::AgentId => "--id",
            Arg::Vendor => "--vendor",
            Arg::Model => "--model",
            Arg::Accept => "--accept",
            Arg::Deadline => "--deadline",
            Arg::ReviewOverride => "--review-override",
            Arg::Reason => "--reason",
            Arg::Note => "--note",
            Arg::Why => "--why",
        }
    }
}

/// Something a refusal suggests doing next, which an MCP tool also does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Claim the open contract `id`.
    Claim { id: String },
    /// Take over contract `id` from its owner; `by: None` when the citizen to act as is the
    /// caller's own id, which the refusal cannot know.
    ClaimForce { id: String, by: Option<String> },
    /// List the open contracts.
    ListContracts,
    /// List the proposed amendments.
    ListAmendments,
    /// Vote on a proposed amendment.
    Vote,
    /// Tally the proposed amendments.
    Tally,
    /// Sign off contract `cid`'s review as another citizen.
    SignOff { cid: String },
    /// Settle contract `id` (the caller passes the rest).
    Settle { id: String },
    /// Abandon contract `cid`.
    Abandon { cid: String },
    /// Show where the council on `cid` stands.
    CouncilStatus { cid: String },
    /// Ask for a review of the contract at `link` in the chronicle, as `by`.
    AskReview { by: String, link: String },
}

impl Action {
    /// The command line's words: the whole command, in a code span.
    pub fn command(&self) -> String {
        let said = match self {
            Action::Claim { id } => format!("polisd contract claim {id} --as <id>"),
            Action::ClaimForce { id, by } => format!(
                "polisd contract claim {id} --as {} --force",
                by.as_deref().unwrap_or("<id>")
            ),
            Action::ListContracts => "polisd contract list".to_string(),
            Action::ListAmendments => "polisd amendment list".to_string(),
            Action::Vote => "polisd amendment vote".to_string(),
            Action::Tally => "polisd tally".to_string(),
            Action::SignOff { cid } => {
                format!("polisd review {cid} --as <reviewer> --decision signed_off")
            }
            Action::Settle { id } => format!("polisd contract settle {id}"),
            Action::Abandon { cid } => format!("polisd contract abandon {cid}"),
            Action::CouncilStatus { cid } => format!("polisd council status {cid}"),
            Action::AskReview { by, link } => {
                format!("polisd log --as {by} \"requested review\" --link {link}")
            }
        };
        format!("`{said}`")
    }
}

/// How a front end names the arguments and the actions a message speaks of.
pub trait Namer {
    fn arg(&self, arg: Arg) -> String;
    /// By default the whole command, for a reader with a shell.
    fn action(&self, action: &Action) -> String {
        action.command()
    }
}

/// A function naming arguments names actions as the command line does.
impl<F: Fn(Arg) -> String> Namer for F {
    fn arg(&self, arg: Arg) -> String {
        self(arg)
    }
}

/// How a front end names what a message speaks of.
pub type Names<'a> = &'a dyn Namer;

/// The command line's names: the flags. Every error's `Display` uses them.
pub fn flags(arg: Arg) -> String {
    arg.flag().to_string()
}

/// An error whose message may name arguments and actions, with each spelled by `names`.
pub trait Spell: std::fmt::Display + std::fmt::Debug {
    fn spelled(&self, names: Names) -> String;
}

/// Fixed words around at most one argument: what a refusal tells the caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    pub before: &'static str,
    pub arg: Option<Arg>,
    pub after: &'static str,
}

impl Words {
    /// `before`, the argument's name, then `after`.
    pub const fn asking(before: &'static str, arg: Arg, after: &'static str) -> Words {
        Words {
            before,
            arg: Some(arg),
            after,
        }
    }

    pub fn spelled(&self, names: Names) -> String {
        let name = self.arg.map(|a| names.arg(a)).unwrap_or_default();
        format!("{}{name}{}", self.before, self.after)
    }
}

impl From<&'static str> for Words {
    fn from(text: &'static str) -> Words {
        Words {
            before: text,
            arg: None,
            after: "",
        }
    }
}

impl std::fmt::Display for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.spelled(&flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_name_their_argument_as_each_front_end_spells_it() {
        let w = Words::asking("pass ", Arg::NoLesson, " \"why\"");
        assert_eq!(w.to_string(), "pass --no-lesson \"why\"");
        assert_eq!(
            w.spelled(&|a| format!("`{a:?}`")),
            "pass `NoLesson` \"why\""
        );
        let plain = Words::from("write one paragraph");
        assert_eq!(plain.spelled(&|_| unreachable!()), "write one paragraph");
    }
}
