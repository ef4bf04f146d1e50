//! The arguments a refusal asks for, as data. An operation says which argument is at fault
//! ([`Arg`]); each front end names it its own way: the command line as its flag (an error's
//! `Display`), MCP as the key the tool's schema gives it (through [`Spell::spelled`]). So one
//! message serves both, and neither front end is told to pass the other's words. The
//! dashboard's console names it as the label of the form's field that carries it.
//!
//! A text that suggests something to do next (a refusal, the primer, a reservation's fix),
//! where an MCP tool does the same thing, names it as an [`Action`]: the command line spells it
//! as the whole command, MCP as the tool to call with its arguments, the console as the command
//! (a person there has a shell). A command no tool does stays the command: in a refusal a tool
//! can return (registering a citizen, starting a council) it is an [`Action`] too, so MCP adds
//! that a shell runs it; elsewhere (`polisd verify --fix`) it is plain text, for a person or an
//! agent with a shell. The notices are written once, to a file every kind of
//! reader opens, so they keep their commands; [`instead_of_commands`] says beside them which tool
//! does each, for a reader without a shell. It lives here, below the operations, so that the
//! pure texts can take a [`Namer`] too.

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

/// Something a message suggests doing next. An MCP tool does most of them; the few no tool
/// does ([`Action::Register`], [`Action::CouncilStart`], [`Action::Check`], [`Action::Verify`],
/// [`Action::Reconcile`]) stay the command for every front end, and MCP says a shell runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Claim the open contract `id` as `by`; `None` where the message cannot know them.
    Claim {
        id: Option<String>,
        by: Option<String>,
    },
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
    /// The ready queue of `by`.
    Ready { by: String },
    /// Record progress in the chronicle, as `by`.
    Log { by: String },
    /// Settle a contract with a lesson, as `by`.
    SettleWithLesson { by: String },
    /// Vote `agree` on an amendment, as `by`.
    VoteAs { by: String },
    /// The unread notices of `by`.
    Notices { by: String },
    /// The reservations (the command line shows `by`'s).
    Reservations { by: String },
    /// Release `by`'s reservations of `path`, or all of them.
    Release { by: String, path: Option<String> },
    /// Reserve project paths.
    Reserve,
    /// Open a contract.
    OpenContract,
    /// Write a contribution to a council's open round.
    CouncilWrite,
    /// Read the records of `place`.
    Look(Place),
    /// Register citizen `id` (no tool does: a person or an agent with a shell).
    Register { id: String },
    /// Start a council on `cid` (no tool does: a person or an agent with a shell).
    CouncilStart { cid: String },
    /// Report every finding (no tool does).
    Check,
    /// Restamp the capability cards' `content_hash` (no tool does).
    Verify,
    /// Rebuild the routing stats (no tool does).
    Reconcile,
}

/// Records a session may want all of, where the primer shows only the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// `index.md`.
    Index,
    /// The chronicle.
    Chronicle,
    /// The open contracts.
    OpenContracts,
    /// The open contracts `by` owns.
    Owned { by: String },
    /// The proposed amendments.
    Proposed,
    /// The lessons.
    Lessons,
}

impl Place {
    /// The file or folder, from the project's root.
    pub fn path(&self) -> &'static str {
        match self {
            Place::Index => "_polis/index.md",
            Place::Chronicle => "_polis/chronicle.md",
            Place::OpenContracts | Place::Owned { .. } => "_polis/contracts/open/",
            Place::Proposed => "_polis/amendments/proposed/",
            Place::Lessons => "_polis/lessons/",
        }
    }
}

impl Action {
    /// The command's program and subcommands, then the rest of its words: `polisd contract
    /// claim` is what a notice's text is recognised by.
    pub fn words(&self) -> (&'static str, String) {
        let or = |v: &Option<String>, placeholder: &str| {
            v.clone().unwrap_or_else(|| placeholder.to_string())
        };
        match self {
            Action::Claim { id, by } => (
                "polisd contract claim",
                format!(" {} --as {}", or(id, "ID"), or(by, "<id>")),
            ),
            Action::ClaimForce { id, by } => (
                "polisd contract claim",
                format!(" {id} --as {} --force", or(by, "<id>")),
            ),
            Action::ListContracts => ("polisd contract list", String::new()),
            Action::ListAmendments => ("polisd amendment list", String::new()),
            Action::Vote => ("polisd amendment vote", String::new()),
            Action::Tally => ("polisd tally", String::new()),
            Action::SignOff { cid } => (
                "polisd review",
                format!(" {cid} --as <reviewer> --decision signed_off"),
            ),
            Action::Settle { id } => ("polisd contract settle", format!(" {id}")),
            Action::Abandon { cid } => ("polisd contract abandon", format!(" {cid}")),
            Action::CouncilStatus { cid } => ("polisd council status", format!(" {cid}")),
            Action::AskReview { by, link } => (
                "polisd log",
                format!(" --as {by} \"requested review\" --link {link}"),
            ),
            Action::Ready { by } => ("polisd ready", format!(" --as {by}")),
            Action::Log { by } => ("polisd log", format!(" --as {by} VERB --link L")),
            Action::SettleWithLesson { by } => (
                "polisd contract settle",
                format!(" ID --quality N --as {by} --lesson \"…\" --impact N"),
            ),
            Action::VoteAs { by } => (
                "polisd amendment vote",
                format!(" AID --as {by} --vote agree"),
            ),
            Action::Notices { by } => ("polisd notices", format!(" --as {by} --unread")),
            Action::Reservations { by } => ("polisd reservations", format!(" --as {by}")),
            Action::Release { by, path } => (
                "polisd release",
                format!(
                    "{} --as {by}",
                    path.as_ref().map_or(String::new(), |p| format!(" {p}"))
                ),
            ),
            Action::Reserve => ("polisd reserve", String::new()),
            Action::OpenContract => ("polisd contract open", String::new()),
            Action::CouncilWrite => ("polisd council write", String::new()),
            Action::Register { id } => (
                "polisd register",
                format!(" {id} --vendor <vendor> --model <model> --tags <tag:rating,…>"),
            ),
            Action::CouncilStart { cid } => ("polisd council start", format!(" {cid}")),
            Action::Check => ("polisd check", String::new()),
            Action::Verify => ("polisd verify", " --fix".to_string()),
            Action::Reconcile => ("polisd reconcile", String::new()),
            Action::Look(place) => match place {
                Place::Index => ("cat", format!(" {}", place.path())),
                Place::Chronicle => ("tail", format!(" {}", place.path())),
                Place::Owned { by } => ("grep", format!(" -l 'owner: {by}' {}*.md", place.path())),
                _ => ("ls", format!(" {}", place.path())),
            },
        }
    }

    /// The command line's words: the whole command, in a code span.
    pub fn command(&self) -> String {
        let (program, rest) = self.words();
        format!("`{program}{rest}`")
    }

    /// One action of each `polisd` command a text's code spans are recognised by, with
    /// placeholders and the most arguments: every command a tool also does, then those that
    /// polisd's own texts name and no tool does.
    pub fn commands() -> Vec<Action> {
        let who = || "ID".to_string();
        vec![
            Action::Claim { id: None, by: None },
            Action::ListContracts,
            Action::ListAmendments,
            Action::VoteAs { by: who() },
            Action::Tally,
            Action::SignOff { cid: who() },
            Action::SettleWithLesson { by: who() },
            Action::Abandon { cid: who() },
            Action::CouncilStatus { cid: who() },
            Action::Log { by: who() },
            Action::Ready { by: who() },
            Action::Notices { by: who() },
            Action::Reservations { by: who() },
            Action::Release {
                by: who(),
                path: Some("PATH".to_string()),
            },
            Action::Reserve,
            Action::OpenContract,
            Action::CouncilWrite,
            Action::Register { id: who() },
            Action::CouncilStart { cid: who() },
            Action::Check,
            Action::Verify,
            Action::Reconcile,
        ]
    }

    /// The action whose `polisd` command `command` (a code span's text) is, the longest
    /// program matching first (`polisd contract claim` before a `polisd contract`).
    pub fn of_command(command: &str) -> Option<Action> {
        Action::commands()
            .into_iter()
            .filter(|a| {
                let (program, _) = a.words();
                command
                    .strip_prefix(program)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
            })
            .max_by_key(|a| a.words().0.len())
    }
}

/// How a front end names the arguments and the actions a message speaks of.
pub trait Namer {
    fn arg(&self, arg: Arg) -> String;
    /// By default the whole command, for a reader with a shell.
    fn action(&self, action: &Action) -> String {
        action.command()
    }
    /// What the reader does instead of running `action`'s command, which a text it reads
    /// names as written (a notice): `None` for a reader with a shell, who runs it.
    fn instead_of(&self, _action: &Action) -> Option<String> {
        None
    }
}

/// A function naming arguments names actions as the command line does.
impl<F: Fn(Arg) -> String> Namer for F {
    fn arg(&self, arg: Arg) -> String {
        self(arg)
    }
}

/// What a reader who does not run commands does instead of the `polisd` commands `texts` name
/// in code spans, each once, as `names` says it (the tool to call, or that only a shell runs
/// it): one line, or `None` when there is nothing to say (a reader with a shell, or no command
/// named). Each text comes with the programs its own words may name (`polisd contract
/// claim`): a span naming another is the words of someone it quotes, never mapped.
pub fn instead_of_commands<'a>(
    texts: impl IntoIterator<Item = (&'a str, &'a [&'a str])>,
    names: Names,
) -> Option<String> {
    let mut seen: Vec<Action> = Vec::new();
    for (text, own) in texts {
        // The code spans are the odd parts between backticks.
        for span in text.split('`').skip(1).step_by(2) {
            if let Some(action) = Action::of_command(span).filter(|a| own.contains(&a.words().0)) {
                if !seen.iter().any(|s| s.words().0 == action.words().0) {
                    seen.push(action);
                }
            }
        }
    }
    let said: Vec<String> = seen
        .iter()
        .filter_map(|a| {
            names
                .instead_of(a)
                .map(|how| format!("`{} …` is {how}", a.words().0))
        })
        .collect();
    (!said.is_empty()).then(|| format!("For the commands in these notices: {}.", said.join("; ")))
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

    #[test]
    fn a_command_is_recognised_by_its_longest_program() {
        assert_eq!(
            Action::of_command("polisd contract claim x --as me").map(|a| a.words().0),
            Some("polisd contract claim")
        );
        assert_eq!(
            Action::of_command("polisd review x --as me").map(|a| a.words().0),
            Some("polisd review")
        );
        assert_eq!(Action::of_command("polisd reviewer"), None);
        assert_eq!(
            Action::of_command("polisd check").map(|a| a.words().0),
            Some("polisd check")
        );
        assert_eq!(Action::of_command("polisd checks"), None);
        // A reader with a shell is told nothing more.
        assert_eq!(
            instead_of_commands(
                [(
                    "run `polisd contract claim x --as me`",
                    &["polisd contract claim"][..]
                )],
                &flags
            ),
            None
        );
    }
}
