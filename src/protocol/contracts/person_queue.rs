//! The person's decisions (orchestration seed, "Suggesting a New Agent" and "What Happens at
//! Max Depth"): the items only a person answers, and their answers as the chronicle records
//! them.
//!
//! An item is derived from the folder (a `Suggested new citizen` block, a suggestion deferred
//! at the chain's maximum depth, a chaining hint), so it needs no file of its own; an answer is
//! one `answered queue item` line by `polis-daemon` whose note starts with the item's key and
//! the answer. The newest answer of a key decides; `later` hides an item for a day. Pure: text
//! in, answers out.

use crate::protocol::chronicle;
use chrono::NaiveDateTime;
use std::collections::BTreeMap;

/// The verb of an answer line.
pub const ANSWER_VERB: &str = "answered queue item";

/// How long `later` keeps an item out of the queue.
pub const LATER_HOURS: i64 = 24;

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    Accept,
    Decline,
    Later,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Accept => "accept",
            Answer::Decline => "decline",
            Answer::Later => "later",
        }
    }

    pub fn parse(text: &str) -> Option<Answer> {
        match text.trim() {
            "accept" => Some(Answer::Accept),
            "decline" => Some(Answer::Decline),
            "later" => Some(Answer::Later),
            _ => None,
        }
    }
}

/// The note of an answer line: `<key> <answer> by <person>: <why>`.
pub fn answer_note(key: &str, answer: Answer, person: &str, why: &str) -> String {
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let person = person.split_whitespace().collect::<Vec<_>>().join(" ");
    if why.is_empty() {
        format!("{key} {} by {person}", answer.as_str())
    } else {
        format!("{key} {} by {person}: {why}", answer.as_str())
    }
}

/// The newest answer of each key in a chronicle text, with its stamp.
pub fn answers(text: &str) -> LatestAnswers {
    let mut out = Answers::default();
    if text.contains(ANSWER_VERB) {
        for line in text.lines() {
            out.line(line);
        }
    }
    out.into_map()
}

/// Per queue item, the person's newest answer and its stamp.
pub type LatestAnswers = BTreeMap<String, (Answer, NaiveDateTime)>;

/// [`answers`] fed the lines one at a time.
#[derive(Debug, Default, Clone)]
pub struct Answers(LatestAnswers);

impl Answers {
    /// Takes in the next line.
    pub fn line(&mut self, line: &str) {
        // One vectorised search per line: every line of the chronicle is asked.
        static VERB: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(ANSWER_VERB));
        if VERB.find(line.as_bytes()).is_none() {
            return;
        }
        let Ok(e) = chronicle::parse_entry(line) else {
            return;
        };
        if e.verb != ANSWER_VERB || !crate::protocol::layout::is_system_citizen(e.author) {
            return;
        }
        let mut words = e.note.split_whitespace();
        let (Some(key), Some(answer)) = (words.next(), words.next().and_then(Answer::parse)) else {
            return;
        };
        match self.0.get(key) {
            Some((_, at)) if *at > e.stamp => {}
            _ => {
                self.0.insert(key.to_string(), (answer, e.stamp));
            }
        }
    }

    /// The newest answer of each key, with its stamp.
    pub fn into_map(self) -> LatestAnswers {
        self.0
    }
}

/// Whether an item with this newest answer still waits for the person at `now`: unanswered,
/// or postponed more than [`LATER_HOURS`] ago.
pub fn stands(answer: Option<&(Answer, NaiveDateTime)>, now: NaiveDateTime) -> bool {
    match answer {
        None => true,
        Some((Answer::Later, at)) => now - *at >= chrono::Duration::hours(LATER_HOURS),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
    }

    #[test]
    fn the_newest_answer_decides_and_later_lasts_a_day() {
        let text = format!(
            "- 2026-03-02 10:00 | polis-daemon | {ANSWER_VERB} | [[contracts/settled/p]] | new-citizen/p/1 later by Dana\n\
             - 2026-03-02 09:00 | polis-daemon | {ANSWER_VERB} | [[contracts/settled/p]] | deferred/p/2 decline by Dana: no\n\
             - 2026-03-02 11:00 | some-agent-x | {ANSWER_VERB} | - | deferred/p/3 accept by me\n"
        );
        let a = answers(&text);
        assert_eq!(a["new-citizen/p/1"].0, Answer::Later);
        assert_eq!(a["deferred/p/2"].0, Answer::Decline);
        assert!(
            !a.contains_key("deferred/p/3"),
            "only polisd records answers"
        );
        assert!(!stands(a.get("new-citizen/p/1"), at("2026-03-02 12:00")));
        assert!(stands(a.get("new-citizen/p/1"), at("2026-03-03 10:00")));
        assert!(!stands(a.get("deferred/p/2"), at("2026-03-09 10:00")));
        assert!(stands(None, at("2026-03-02 12:00")));
    }

    #[test]
    fn the_note_starts_with_key_and_answer() {
        assert_eq!(
            answer_note(
                "new-citizen/p/1",
                Answer::Accept,
                "Dana  Person",
                "we need\nit"
            ),
            "new-citizen/p/1 accept by Dana Person: we need it"
        );
    }
}
