//! The arguments a refusal asks for, as data. An operation says which argument is at fault
//! ([`Arg`]); each front end names it its own way: the command line as its flag (an error's
//! `Display`), MCP as the key the tool's schema gives it (through [`Spell::spelled`]). So one
//! message serves both, and neither front end is told to pass the other's words. The
//! dashboard's console names it as the label of the form's field that carries it.
//!
//! Whole commands a refusal suggests (`polisd verify --fix`) are not arguments: they stay as
//! the command line spells them, for a person or an agent with a shell.

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
        }
    }
}

/// How a front end names an argument in a message.
pub type Names<'a> = &'a dyn Fn(Arg) -> String;

/// The command line's names: the flags. Every error's `Display` uses them.
pub fn flags(arg: Arg) -> String {
    arg.flag().to_string()
}

/// An error whose message may name arguments, with each spelled by `names`.
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
        let name = self.arg.map(names).unwrap_or_default();
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
