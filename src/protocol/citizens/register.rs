//! A new citizen's files (SPEC §4, §5, §9): a stamped capability card, `status.md`, `inbox.md`
//! and `journal.md`, and the `joined polis` chronicle line. Used by `init` for the founder and
//! by `register` for everyone after. Pure: parameters in, file texts out; the caller writes.

use crate::protocol::clock::PolisTime;
use crate::protocol::layout;

/// Who is joining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCitizen {
    pub agent_id: String,
    pub vendor: String,
    pub model: String,
    /// The card's `tool`: the agent CLI it works in (`claude code`, `codex`, `gemini cli`…).
    pub tool: String,
    /// Capability tags with their self-ratings (1–5), in the order given.
    pub tags: Vec<(String, u8)>,
    /// `cost_envelope.relative`: low, medium or high.
    pub cost: String,
}

/// Why a registration cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "`{0}` is not a valid agent id: use 8 to 40 lowercase letters, digits and hyphens, \
         starting with a letter (for example `codex-agent-2`)"
    )]
    BadId(String),
    #[error(
        "`{0}` is a system citizen's id (polisd and the reference write as it); choose another"
    )]
    SystemId(String),
    #[error(
        "`{0}` is not a capability tag with a rating: write TAG:RATING, the tag in lowercase \
         letters, digits and hyphens and the rating 1 to 5 (for example `python:4`)"
    )]
    BadTag(String),
    #[error("tag `{0}` is given twice")]
    DuplicateTag(String),
    #[error("give at least one capability tag (--tags python:4,docs:3)")]
    NoTags,
    #[error("cost `{0}` is not one of low, medium, high")]
    BadCost(String),
    #[error("--{0} must not be empty")]
    Empty(&'static str),
    #[error("--{0} holds a line break: pass it on one line")]
    TwoLines(&'static str),
    #[error("cannot stamp the new card: {0}")]
    Stamp(String),
}

/// Parses `--tags python:4,docs:3`.
pub fn parse_tags(text: &str) -> Result<Vec<(String, u8)>, RegisterError> {
    let mut tags: Vec<(String, u8)> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || RegisterError::BadTag(item.to_string());
        let (tag, rating) = item.split_once(':').ok_or_else(bad)?;
        let (tag, rating) = (tag.trim(), rating.trim());
        if !layout::is_slug(tag) {
            return Err(bad());
        }
        let rating: u8 = rating.parse().map_err(|_| bad())?;
        if !(1..=5).contains(&rating) {
            return Err(bad());
        }
        if tags.iter().any(|(t, _)| t == tag) {
            return Err(RegisterError::DuplicateTag(tag.to_string()));
        }
        tags.push((tag.to_string(), rating));
    }
    if tags.is_empty() {
        return Err(RegisterError::NoTags);
    }
    Ok(tags)
}

impl NewCitizen {
    /// Checks the id, tags, cost, vendor and model (not whether the id is taken: that needs
    /// the folder).
    pub fn validate(&self) -> Result<(), RegisterError> {
        if layout::is_system_citizen(&self.agent_id) {
            return Err(RegisterError::SystemId(self.agent_id.clone()));
        }
        if !layout::is_agent_id(&self.agent_id) {
            return Err(RegisterError::BadId(self.agent_id.clone()));
        }
        if self.vendor.trim().is_empty() {
            return Err(RegisterError::Empty("vendor"));
        }
        if self.model.trim().is_empty() {
            return Err(RegisterError::Empty("model"));
        }
        if self.tool.trim().is_empty() {
            return Err(RegisterError::Empty("tool"));
        }
        // Each is one card value, single-quoted: a line break (YAML 1.1 counts NEL and the
        // Unicode line and paragraph separators too) would end or fold it.
        for (flag, value) in [
            ("vendor", &self.vendor),
            ("model", &self.model),
            ("tool", &self.tool),
        ] {
            if crate::protocol::input::line_break(value).is_some() {
                return Err(RegisterError::TwoLines(flag));
            }
        }
        if !matches!(self.cost.as_str(), "low" | "medium" | "high") {
            return Err(RegisterError::BadCost(self.cost.clone()));
        }
        if self.tags.is_empty() {
            return Err(RegisterError::NoTags);
        }
        for (tag, rating) in &self.tags {
            if !layout::is_slug(tag) || !(1..=5).contains(rating) {
                return Err(RegisterError::BadTag(format!("{tag}:{rating}")));
            }
        }
        Ok(())
    }

    /// The unstamped card, in the layout `init` has always written.
    fn card(&self, time: &PolisTime) -> String {
        let now = time.second_stamp();
        let vendor = single_quoted(&self.vendor);
        let mut card = format!(
            "agent_id: {id}\nvendor: {vendor}\nmodel: {model}\ntool: {tool}\nregistered: {now}\n\
             last_card_update: {now}\nlanguages:\n- en\ncapability_tags:\n",
            id = self.agent_id,
            model = single_quoted(&self.model),
            tool = single_quoted(&self.tool),
        );
        for (tag, rating) in &self.tags {
            card.push_str(&format!(
                "  {tag}:\n    self_rating: {rating}\n    evidence: replace with evidence for this rating\n"
            ));
        }
        card.push_str(&format!(
            "cost_envelope:\n  relative: {}\nlatency_envelope:\n  typical_minutes: 5\n\
             tools_available:\n- read_file\n- write_file\nstanding_instructions: ''\n",
            self.cost
        ));
        card
    }

    /// The citizen's four files, relative to `_polis/`, the card stamped.
    pub fn files(&self, time: &PolisTime) -> Result<Vec<(String, String)>, RegisterError> {
        self.validate()?;
        let id = &self.agent_id;
        let card = crate::protocol::citizens::card::stamp(&self.card(time))
            .map_err(|e| RegisterError::Stamp(e.to_string()))?;
        let fill = |template: &str| {
            template
                .replace("{agent_id}", id)
                .replace("{now}", &time.second_stamp())
        };
        Ok(vec![
            (format!("citizens/{id}/capability_card.yml"), card),
            (
                format!("citizens/{id}/status.md"),
                fill(include_str!("templates/status.md")),
            ),
            (
                format!("citizens/{id}/inbox.md"),
                fill(include_str!("templates/inbox.md")),
            ),
            (
                format!("citizens/{id}/journal.md"),
                fill(include_str!("templates/journal.md")),
            ),
        ])
    }

    /// The `joined polis` chronicle line (with its newline), written by the citizen itself.
    pub fn joined_line(&self, time: &PolisTime) -> String {
        format!(
            "- {} | {id} | joined polis | [[citizens/{id}]] | registered with polisd ({} {})\n",
            time.minute_stamp(),
            note(&self.vendor),
            note(&self.model),
            id = self.agent_id,
        )
    }
}

/// A YAML single-quoted scalar: always a string, whatever it looks like.
pub fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Free text for a chronicle note: one line, no field separator.
fn note(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace(" | ", " / ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::clock::PolisZone;

    fn at() -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), "2026-03-02 14:05").unwrap()
    }

    fn codex() -> NewCitizen {
        NewCitizen {
            agent_id: "codex-agent-2".into(),
            vendor: "openai".into(),
            model: "gpt-5".into(),
            tool: "codex".into(),
            tags: parse_tags("python:4, docs:3").unwrap(),
            cost: "low".into(),
        }
    }

    #[test]
    fn register_tags_parse_and_refuse_what_a_card_cannot_hold() {
        assert_eq!(
            parse_tags("python:4,docs:3").unwrap(),
            vec![("python".to_string(), 4), ("docs".to_string(), 3)]
        );
        for bad in ["python", "python:0", "python:6", "Py:3", "python:x"] {
            assert!(
                matches!(parse_tags(bad), Err(RegisterError::BadTag(_))),
                "{bad}"
            );
        }
        assert_eq!(
            parse_tags("a-tag:1,a-tag:2"),
            Err(RegisterError::DuplicateTag("a-tag".into()))
        );
        assert_eq!(parse_tags(" , "), Err(RegisterError::NoTags));
    }

    #[test]
    fn register_card_is_stamped_and_verifies() {
        let files = codex().files(&at()).unwrap();
        let card = &files[0].1;
        assert!(card.contains("  python:\n    self_rating: 4\n"), "{card}");
        assert!(card.contains("relative: low\n"));
        let parsed = crate::protocol::citizens::card::parse(card).unwrap();
        assert_eq!(
            parsed.verify().state,
            crate::protocol::citizens::card::VerifyState::Ok
        );
        assert_eq!(
            codex().joined_line(&at()),
            "- 2026-03-02 14:05 | codex-agent-2 | joined polis | [[citizens/codex-agent-2]] | registered with polisd (openai gpt-5)\n"
        );
    }

    #[test]
    fn register_refuses_system_and_malformed_ids() {
        let mut c = codex();
        c.agent_id = "polis-daemon".into();
        assert!(matches!(c.validate(), Err(RegisterError::SystemId(_))));
        c.agent_id = "Bad".into();
        assert!(matches!(c.validate(), Err(RegisterError::BadId(_))));
    }
}
