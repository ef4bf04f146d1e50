//! The one error type of the agents' operations: every refusal names what to do, and nothing
//! was written when one is returned (except [`OpError::Write`], a failure half-way that the
//! operation's idempotence lets the caller simply run again).

use crate::fs::writer::WriteError;
use crate::operations::arg::{flags, Action, Arg, Names, Spell, Words};
use crate::protocol::finding::Finding;

#[derive(Debug, thiserror::Error)]
pub enum OpError {
    // A variant that names an argument is worded by a function given the names, here the
    // command line's flags; `spelled` calls the same function with another front end's.
    #[error("{}", bad_id(.what, .value, .rule, &flags))]
    BadId {
        what: &'static str,
        value: String,
        rule: Words,
    },
    #[error("{}", not_registered(.0, &flags))]
    NotRegistered(String),
    #[error("{}", no_contract(.0, &flags))]
    NoContract(String),
    #[error("contract `{id}` is {folder}, not open; only open contracts can be {action}")]
    NotOpen {
        id: String,
        folder: &'static str,
        action: &'static str,
    },
    #[error("contract `{id}` was already {folder}{}; nothing was written", by.as_ref().map(|b| format!(" (owner {b})")).unwrap_or_default())]
    Ended {
        id: String,
        folder: &'static str,
        by: Option<String>,
    },
    #[error("{}", already_owned(.id, .owner, &flags))]
    AlreadyOwned { id: String, owner: String },
    #[error("{}", owned_by_other(.id, .owner, .by, .action, &flags))]
    OwnedByOther {
        id: String,
        owner: String,
        by: String,
        action: &'static str,
    },
    #[error("{}", no_owner(.0, &flags))]
    NoOwner(String),
    /// Contract `id` is in `open/` with the status of an ending whose move was interrupted.
    #[error("{}", interrupted(.id, *.settled, &flags))]
    Interrupted { id: String, settled: bool },
    /// The contract's `owner:` holds `shown`, which is no citizen id.
    #[error("{}", bad_owner(.id, .shown, &flags))]
    BadOwner { id: String, shown: String },
    #[error("quality must be 1 to 5, not {0}")]
    Quality(i64),
    #[error("impact must be 1 to 5, not {0}")]
    Impact(i64),
    #[error("{path} has no YAML frontmatter polisd can read: {why}; fix it by hand first")]
    Unreadable { path: String, why: String },
    #[error("contract `{id}` was already reviewed this minute by {by} ({path}); nothing was written: edit that file, or review again in a minute")]
    Reviewed {
        id: String,
        by: String,
        path: String,
    },
    #[error("{citizen} already voted {vote} on amendment `{id}`; nothing was written")]
    AlreadyVoted {
        id: String,
        citizen: String,
        vote: &'static str,
    },
    #[error("{}", no_amendment(.0, &flags))]
    NoAmendment(String),
    #[error("{}", vote_refused(.0, .1, &flags))]
    Vote(String, crate::protocol::amendments::amendment::VoteError),
    #[error("refused, nothing written: {} {}: {}", if finding.severity == crate::protocol::finding::Severity::Error { "error" } else { "warning" }, finding.code, finding.message)]
    Chronicle { finding: Box<Finding>, line: String },
    #[error("{what} is empty; {}", .fix.spelled(&flags))]
    Empty { what: &'static str, fix: Words },
    #[error("cannot read {path}: {why}")]
    Read { path: String, why: String },
    #[error("polisd cannot write this as PyYAML would ({0})")]
    Render(#[from] crate::yaml::EmitError),
    #[error("{0} kept changing while polisd tried to edit it; run the command again")]
    Busy(String),
    /// A review gate refused the action; the text says why and what to do.
    #[error("{0}")]
    Review(String),
    /// A review gate refused the action for a reason that suggests a tool's action.
    #[error("{}", .0.worded(&flags))]
    Gate(crate::operations::gate::Gate),
    #[error("this lesson was already filed as {path} (same citizen, tags, contract, impact and text); nothing was written")]
    LessonFiled { path: String },
    #[error("this guardrail is already active as {path} (same text, tags and source contract); nothing was written")]
    GuardrailAdded { path: String },
    /// Text an agent handed in that polisd could not keep (unreadable, too large to read back).
    #[error("{what}: {why}; nothing was written")]
    Body { what: String, why: String },
    #[error("{}", no_lesson(&flags))]
    NoLesson,
    /// A proposal's body holds a vote block at `line`, which the tally would count.
    #[error("{}", vote_in_body(*.line, .vote, .citizen, &flags))]
    VoteInBody {
        line: usize,
        vote: &'static str,
        citizen: String,
    },
    /// A one-line text (a title, a criterion, a reason…) holds a line break or another
    /// control character, which would write lines of structure into the file it lands in.
    #[error("{}", two_lines(.what, *.arg, *.at, .held, .fix, &flags))]
    TwoLines {
        what: &'static str,
        /// The argument that carries it; `None` where the command line takes it without a
        /// flag (`lesson file`'s text).
        arg: Option<Arg>,
        at: usize,
        /// What breaks the line: "a line break (U+000A)", "the control character U+0007".
        held: String,
        fix: Words,
    },
    /// A citizen's id given as the person who answers the human queue.
    #[error("{}", person_is_citizen(.0, &flags))]
    PersonIsCitizen(String),
    /// Accepting a new citizen from the human queue: registering its stub was refused.
    #[error("{}", new_citizen(.why, .need, &flags))]
    NewCitizen {
        why: Box<crate::operations::register::Refusal>,
        need: String,
    },
    #[error("no item `{0}` waits in the human queue (answered already, or never asked); `polisd queue` lists the waiting ones")]
    NoQueueItem(String),
    /// Refused by the rule it names; the text says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// A migration or its rollback was refused; the text says why and what to do.
    #[error("{0}")]
    Migration(String),
    /// A council refused the action; the text says why and what to do.
    #[error("{0}")]
    Council(String),
    /// No council on this contract, which does exist.
    #[error("{}", no_council(.0, &flags))]
    NoCouncil(String),
    /// What an agent passed was refused at the edge (a usage error).
    #[error(transparent)]
    Input(#[from] crate::protocol::input::InputError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Action(#[from] crate::operations::ActionError),
    #[error("{citizen}'s inbox has no unread notice `{id}` waiting for a person's answer; reload the page, it may be answered already")]
    NoNotice { citizen: String, id: String },
}

impl Spell for OpError {
    fn spelled(&self, names: Names) -> String {
        match self {
            OpError::BadId { what, value, rule } => bad_id(what, value, rule, names),
            OpError::AlreadyOwned { id, owner } => already_owned(id, owner, names),
            OpError::NoOwner(id) => no_owner(id, names),
            OpError::BadOwner { id, shown } => bad_owner(id, shown, names),
            OpError::Vote(id, why) => vote_refused(id, why, names),
            OpError::Interrupted { id, settled } => interrupted(id, *settled, names),
            OpError::VoteInBody {
                line,
                vote,
                citizen,
            } => vote_in_body(*line, vote, citizen, names),
            OpError::NotRegistered(id) => not_registered(id, names),
            OpError::NoCouncil(cid) => no_council(cid, names),
            OpError::NoContract(id) => no_contract(id, names),
            OpError::NoAmendment(id) => no_amendment(id, names),
            OpError::OwnedByOther {
                id,
                owner,
                by,
                action,
            } => owned_by_other(id, owner, by, action, names),
            OpError::Gate(gate) => gate.worded(names),
            OpError::Empty { what, fix } => format!("{what} is empty; {}", fix.spelled(names)),
            OpError::NoLesson => no_lesson(names),
            OpError::PersonIsCitizen(by) => person_is_citizen(by, names),
            OpError::TwoLines {
                what,
                arg,
                at,
                held,
                fix,
            } => two_lines(what, *arg, *at, held, fix, names),
            OpError::NewCitizen { why, need } => new_citizen(why, need, names),
            other => other.to_string(),
        }
    }
}

fn bad_id(what: &str, value: &str, rule: &Words, names: Names) -> String {
    format!(
        "`{}` is not a valid {what}: {}",
        shown(value),
        rule.spelled(names)
    )
}

fn not_registered(id: &str, names: Names) -> String {
    let id = shown(id);
    format!(
        "`{id}` is not a registered citizen (no citizens/{id}/capability_card.yml); pass your own agent id, or register first with {}",
        names.action(&Action::Register { id: id.clone() })
    )
}

fn no_council(cid: &str, names: Names) -> String {
    format!(
        "there is no council on `{cid}` (no reviews/{cid}/council.md); start one with {}",
        names.action(&Action::CouncilStart {
            cid: cid.to_string()
        })
    )
}

fn already_owned(id: &str, owner: &str, names: Names) -> String {
    format!(
        "contract `{id}` is already owned by {owner}; pick another contract, or ask {owner} to release it ({} takes it over)",
        names.arg(Arg::Force)
    )
}

fn no_owner(id: &str, names: Names) -> String {
    format!(
        "contract `{id}` has no owner; claim it first ({}) or pass {} <id>",
        names.action(&Action::Claim {
            id: Some(id.to_string()),
            by: None,
        }),
        names.arg(Arg::Citizen)
    )
}

fn bad_owner(id: &str, shown: &str, names: Names) -> String {
    let take = Action::ClaimForce {
        id: id.to_string(),
        by: None,
    };
    format!(
        "contract `{id}`'s `owner:` is {shown}, not a citizen id; write the owner's id (or null) on that line, or take the contract with {}",
        names.action(&take)
    )
}

fn interrupted(id: &str, settled: bool, names: Names) -> String {
    let (ending, again) = if settled {
        ("settled", Action::Settle { id: id.to_string() })
    } else {
        (
            "abandoned",
            Action::Abandon {
                cid: id.to_string(),
            },
        )
    };
    format!(
        "contract `{id}` says `status: {ending}` but is still in contracts/open/ (its move was interrupted); run the same {} command again to finish it; nothing was written",
        names.action(&again)
    )
}

fn vote_refused(
    id: &str,
    why: &crate::protocol::amendments::amendment::VoteError,
    names: Names,
) -> String {
    use crate::protocol::amendments::amendment::VoteError;
    match why {
        VoteError::Expired(_) => format!(
            "amendment `{id}`: {why}; {} records it as expired: propose it again to reopen the question",
            names.action(&Action::Tally)
        ),
        other => format!("amendment `{id}`: {other}"),
    }
}

fn vote_in_body(line: usize, vote: &str, citizen: &str, names: Names) -> String {
    format!(
        "the proposal's body: its line {line} is a vote ({vote} from {citizen}), which the tally would count; a proposal carries no votes (each citizen votes with {}), so reword it, or put an example inside a code fence; nothing was written",
        names.action(&Action::Vote)
    )
}

fn no_contract(id: &str, names: Names) -> String {
    format!(
        "no contract `{}` in contracts/open, settled or abandoned; {} shows the open ones",
        shown(id),
        names.action(&Action::ListContracts)
    )
}

fn no_amendment(id: &str, names: Names) -> String {
    format!(
        "no amendment `{}` in amendments/proposed; {} shows them",
        shown(id),
        names.action(&Action::ListAmendments)
    )
}

fn owned_by_other(id: &str, owner: &str, by: &str, action: &str, names: Names) -> String {
    let take = Action::ClaimForce {
        id: id.to_string(),
        by: Some(by.to_string()),
    };
    format!(
        "contract `{id}` is owned by {owner}; only {owner} {action} it: ask {owner}, or take it over first with {}; nothing was written",
        names.action(&take)
    )
}

fn no_lesson(names: Names) -> String {
    format!(
        "settling files a lesson: pass {} \"<one paragraph>\" {} N, or {} \"<why there is none>\"",
        names.arg(Arg::Lesson),
        names.arg(Arg::Impact),
        names.arg(Arg::NoLesson)
    )
}

fn two_lines(
    what: &str,
    arg: Option<Arg>,
    at: usize,
    held: &str,
    fix: &Words,
    names: Names,
) -> String {
    format!(
        "{what} is one line, and {} holds {held} at character {at}: {}; nothing was written",
        arg.map_or("it".to_string(), |a| names.arg(a)),
        fix.spelled(names)
    )
}

/// Refuses `text` for `arg` when it is not one line ([`crate::protocol::input::line_break`]):
/// it lands in a heading, a list item or a line a reader counts. `fix` says where longer text
/// goes, or how to write it on one line.
pub fn one_line(
    what: &'static str,
    arg: impl Into<Option<Arg>>,
    text: &str,
    fix: impl Into<Words>,
) -> Result<(), OpError> {
    match crate::protocol::input::line_break(text) {
        None => Ok(()),
        Some((at, held)) => Err(OpError::TwoLines {
            what,
            arg: arg.into(),
            at,
            held,
            fix: fix.into(),
        }),
    }
}

/// [`one_line`] with the plain advice: write it on one line.
pub fn on_one_line(
    what: &'static str,
    arg: impl Into<Option<Arg>>,
    text: &str,
) -> Result<(), OpError> {
    one_line(what, arg, text, "write it on one line")
}

fn person_is_citizen(by: &str, names: Names) -> String {
    format!(
        "`{by}` is a citizen, and the queue holds a person's decisions: answer with your own name in {}; nothing was written",
        names.arg(Arg::By)
    )
}

/// A stub's registration refused, its arguments named as the front end names them (the
/// register command's own message names `polisd register`'s flags).
fn new_citizen(why: &crate::operations::register::Refusal, need: &str, names: Names) -> String {
    use crate::operations::register::Refusal;
    use crate::protocol::citizens::register::RegisterError;
    let arg = |flag: &str| match flag {
        "vendor" => Some(Arg::Vendor),
        "model" => Some(Arg::Model),
        _ => None,
    };
    let said = match why {
        Refusal::Invalid(RegisterError::TwoLines(flag)) if arg(flag).is_some() => format!(
            "{} holds a line break: pass it on one line",
            arg(flag).map(|a| names.arg(a)).unwrap_or_default()
        ),
        Refusal::Invalid(RegisterError::Empty(flag)) if arg(flag).is_some() => format!(
            "{} must not be empty",
            arg(flag).map(|a| names.arg(a)).unwrap_or_default()
        ),
        // The tags default to the suggesting contract's: none were given and it requires none.
        Refusal::Invalid(RegisterError::NoTags) => format!(
            "give at least one capability tag with {} (python:4,docs:3)",
            names.arg(Arg::Tags)
        ),
        other => other.to_string(),
    };
    format!("{said} (for the new citizen: {need})")
}

impl OpError {
    /// Whether the operation was refused (the same on every retry) rather than failed.
    pub fn is_refusal(&self) -> bool {
        match self {
            OpError::Write(e) => e.is_refusal(),
            OpError::Busy(_) | OpError::Action(_) | OpError::Read { .. } => false,
            _ => true,
        }
    }
}

impl OpError {
    /// Whether the caller passed something no retry can make right (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            OpError::Input(_)
                | OpError::BadId { .. }
                | OpError::Body { .. }
                | OpError::VoteInBody { .. }
                | OpError::TwoLines { .. }
        )
    }
}

/// The most an agent's text (`--body`) may hold: what is left of a record polisd reads back
/// (`snapshot::MAX_RECORD_BYTES`) once the frontmatter and heading polisd adds are written.
pub const MAX_BODY_BYTES: u64 = crate::fs::snapshot::MAX_RECORD_BYTES - 64 * 1024;

/// Refuses a record of `what` that polisd could not read back whole: a review skipped at the
/// settle gate, an amendment never tallied.
pub fn check_record_size(what: &str, text: &str) -> Result<(), OpError> {
    if text.len() as u64 > crate::fs::snapshot::MAX_RECORD_BYTES {
        return Err(OpError::Body {
            what: what.to_string(),
            why: format!(
                "it would be {} MB, past the {} MB polisd reads back in a record; shorten the text, or link to a longer document",
                text.len() / (1024 * 1024),
                crate::fs::snapshot::MAX_RECORD_BYTES / (1024 * 1024)
            ),
        });
    }
    Ok(())
}

impl From<Finding> for OpError {
    fn from(f: Finding) -> OpError {
        OpError::Read {
            path: f.path.clone(),
            why: f.message,
        }
    }
}

/// A value an agent passed, as a refusal quotes it (a 100 KB id is shown by its start).
fn shown(value: &str) -> String {
    crate::protocol::input::excerpt(value, crate::protocol::input::ECHO_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::register::Refusal;
    use crate::protocol::citizens::register::RegisterError;

    /// A refusal that suggests an action reads, on the command line, the whole command in the
    /// words it always had; another front end names the action its own way.
    #[test]
    fn the_command_line_reads_a_suggested_action_as_the_whole_command() {
        use crate::operations::arg::{Action, Namer};
        use crate::operations::gate::Gate;
        let cases = [
            (
                OpError::OwnedByOther {
                    id: "fix-login".into(),
                    owner: "ann-agent".into(),
                    by: "bob-agent".into(),
                    action: "settles",
                },
                "contract `fix-login` is owned by ann-agent; only ann-agent settles it: ask ann-agent, or take it over first with `polisd contract claim fix-login --as bob-agent --force`; nothing was written",
            ),
            (
                OpError::NoOwner("fix-login".into()),
                "contract `fix-login` has no owner; claim it first (`polisd contract claim fix-login --as <id>`) or pass --as <id>",
            ),
            (
                OpError::NoContract("fix-login".into()),
                "no contract `fix-login` in contracts/open, settled or abandoned; `polisd contract list` shows the open ones",
            ),
            (
                OpError::NoAmendment("a-1".into()),
                "no amendment `a-1` in amendments/proposed; `polisd amendment list` shows them",
            ),
            (
                OpError::Interrupted {
                    id: "fix-login".into(),
                    settled: true,
                },
                "contract `fix-login` says `status: settled` but is still in contracts/open/ (its move was interrupted); run the same `polisd contract settle fix-login` command again to finish it; nothing was written",
            ),
            (
                OpError::Vote(
                    "a-1".into(),
                    crate::protocol::amendments::amendment::VoteError::Expired(
                        "expires_at 2020-01-01".into(),
                    ),
                ),
                "amendment `a-1`: its deadline has passed (expires_at 2020-01-01) and it takes no more votes; `polisd tally` records it as expired: propose it again to reopen the question",
            ),
            (
                OpError::BadOwner {
                    id: "fix-login".into(),
                    shown: "a list".into(),
                },
                "contract `fix-login`'s `owner:` is a list, not a citizen id; write the owner's id (or null) on that line, or take the contract with `polisd contract claim fix-login --as <id> --force`",
            ),
            (
                OpError::VoteInBody {
                    line: 3,
                    vote: "agree",
                    citizen: "bob-agent".into(),
                },
                "the proposal's body: its line 3 is a vote (agree from bob-agent), which the tally would count; a proposal carries no votes (each citizen votes with `polisd amendment vote`), so reword it, or put an example inside a code fence; nothing was written",
            ),
            (
                OpError::Gate(Gate::OwnWork {
                    reviewer: "ann-agent".into(),
                    cid: "fix-login".into(),
                    link: "contracts/open/fix-login".into(),
                }),
                "`ann-agent` owns contract `fix-login`: a chavruta review is another citizen's (ideally of another vendor); ask one with `polisd log --as ann-agent \"requested review\" --link contracts/open/fix-login`",
            ),
            (
                OpError::Gate(Gate::UnderCouncil("fix-login".into())),
                "contract `fix-login` is under council review; it settles after the verdict (`polisd council status fix-login`)",
            ),
            (
                OpError::Gate(Gate::ChangesRequested("fix-login".into())),
                "contract `fix-login` is stakes: high and its reviewer requested changes; revise, then ask for a second round (`polisd review fix-login --as <reviewer> --decision signed_off`)",
            ),
            (
                OpError::Gate(Gate::Rejected("fix-login".into())),
                "contract `fix-login` is stakes: high and its review rejected it; escalate (a person may settle it with `polisd contract settle fix-login --review-override \"PERSON: WHY\"`) or abandon it (`polisd contract abandon fix-login`)",
            ),
            (
                OpError::Gate(Gate::NoSignOff("fix-login".into())),
                "contract `fix-login` is stakes: high: it settles after another citizen (ideally of another vendor) signs off its review (`polisd review fix-login --as <reviewer> --decision signed_off`)",
            ),
            // What no tool does: still the whole command here.
            (
                OpError::NotRegistered("ann-agent".into()),
                "`ann-agent` is not a registered citizen (no citizens/ann-agent/capability_card.yml); pass your own agent id, or register first with `polisd register ann-agent --vendor <vendor> --model <model> --tags <tag:rating,…>`",
            ),
            (
                OpError::NoCouncil("fix-login".into()),
                "there is no council on `fix-login` (no reviews/fix-login/council.md); start one with `polisd council start fix-login`",
            ),
        ];
        struct Other;
        impl Namer for Other {
            fn arg(&self, arg: Arg) -> String {
                format!("<{arg:?}>")
            }
            fn action(&self, action: &Action) -> String {
                format!("<{action:?}>")
            }
        }
        for (e, said) in cases {
            assert_eq!(e.to_string(), said);
            assert_eq!(e.spelled(&flags), said);
            let other = e.spelled(&Other);
            assert!(
                other.contains("<") && !other.contains("`polisd contract claim"),
                "{other}"
            );
        }
    }

    /// The queue's refusals name the command's flags on the command line and another front
    /// end's names through `spelled`, in the same words.
    #[test]
    fn the_queue_s_refusals_name_their_arguments_as_data() {
        let named = |arg: Arg| format!("<{arg:?}>");
        let person = OpError::PersonIsCitizen("ann-agent".into());
        assert!(
            person.to_string().contains("your own name in --by;"),
            "{person}"
        );
        assert!(person.spelled(&named).contains("your own name in <By>;"));
        let stub = |e| OpError::NewCitizen {
            why: Box::new(Refusal::Invalid(e)),
            need: "budgets".into(),
        };
        let vendor = stub(RegisterError::TwoLines("vendor"));
        assert_eq!(
            vendor.to_string(),
            "--vendor holds a line break: pass it on one line (for the new citizen: budgets)"
        );
        assert!(vendor.spelled(&named).starts_with("<Vendor> holds"));
        let tags = stub(RegisterError::NoTags);
        assert!(tags.to_string().contains("with --tags (python:4"), "{tags}");
        assert!(tags.spelled(&named).contains("with <Tags> (python:4"));
        let taken = OpError::NewCitizen {
            why: Box::new(Refusal::Taken("ann-agent".into())),
            need: "budgets".into(),
        };
        assert_eq!(taken.to_string(), taken.spelled(&named));
    }
}
