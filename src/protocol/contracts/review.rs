//! Review files `reviews/<YYYY-MM-DD-HHMM>-<cid>.md` (SPEC §10): who reviewed which contract
//! and what they decided.
//!
//! Pure: text and file names in, a [`Review`] out. polisd only reads reviews.

use crate::protocol::frontmatter::{self, FrontmatterError};
use crate::yaml::Value;
use chrono::NaiveDateTime;

/// `decision:`. Spelling variants agents write (`signed off`, `requested-changes`, any case)
/// are read as the value they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    SignedOff,
    RequestedChanges,
    Rejected,
    /// Anything else, as written.
    Other(String),
}

impl Decision {
    /// One of the three decisions by its exact name (`signed_off`, `requested_changes`,
    /// `rejected`), as the commands and tools take it; [`Decision::parse`] reads the spellings
    /// agents write in files.
    pub fn named(text: &str) -> Option<Decision> {
        [
            Decision::SignedOff,
            Decision::RequestedChanges,
            Decision::Rejected,
        ]
        .into_iter()
        .find(|d| d.as_str() == text)
    }

    pub fn parse(text: &str) -> Decision {
        let norm: String = text
            .trim()
            .to_lowercase()
            .chars()
            .map(|c| if c == ' ' || c == '-' { '_' } else { c })
            .collect();
        match norm.as_str() {
            "signed_off" | "signoff" | "sign_off" | "approved" => Decision::SignedOff,
            "requested_changes" | "request_changes" | "changes_requested" => {
                Decision::RequestedChanges
            }
            "rejected" | "reject" => Decision::Rejected,
            _ => Decision::Other(text.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Decision::SignedOff => "signed_off",
            Decision::RequestedChanges => "requested_changes",
            Decision::Rejected => "rejected",
            Decision::Other(s) => s,
        }
    }
}

/// A review file's frontmatter.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub reviewer: Option<String>,
    /// `contract`, else `contract_id`; a wikilink or path is reduced to the contract id.
    pub contract: Option<String>,
    pub decision: Option<Decision>,
    pub fields: Value,
}

/// Reads a review file's text.
pub fn parse(text: &str) -> Result<Review, FrontmatterError> {
    let record = frontmatter::parse(text)?;
    let f = record.fields;
    let string = |key: &str| match f.get(key) {
        Value::Null => None,
        v => Some(v.python_str()).filter(|s| !s.trim().is_empty()),
    };
    let contract = string("contract")
        .or_else(|| string("contract_id"))
        .map(|c| contract_id_of(&c));
    Ok(Review {
        reviewer: string("reviewer").map(|s| s.trim().to_string()),
        contract,
        decision: string("decision").map(|d| Decision::parse(&d)),
        fields: f.clone(),
    })
}

/// `fix-login`, `[[contracts/open/fix-login]]` or `contracts/settled/fix-login.md` → `fix-login`.
fn contract_id_of(text: &str) -> String {
    let t = text.trim();
    let t = t
        .strip_prefix("[[")
        .and_then(|x| x.strip_suffix("]]"))
        .unwrap_or(t);
    let t = t.split(['|', '#']).next().unwrap_or(t);
    let t = t.rsplit('/').next().unwrap_or(t);
    t.strip_suffix(".md").unwrap_or(t).trim().to_string()
}

/// Reads a review file name `<YYYY-MM-DD-HHMM>-<cid>.md` into its stamp and contract id.
pub fn parse_file_name(name: &str) -> Option<(NaiveDateTime, String)> {
    let stem = name.strip_suffix(".md")?;
    let stamp = stem.get(..15)?;
    let cid = stem.get(15..)?.strip_prefix('-')?;
    let when = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d-%H%M").ok()?;
    crate::protocol::layout::is_slug(cid).then(|| (when, cid.to_string()))
}

/// The file name of a review: `<YYYY-MM-DD-HHMM>-<cid>.md`.
pub fn file_name(at: &NaiveDateTime, contract_id: &str) -> String {
    format!("{}-{contract_id}.md", at.format("%Y-%m-%d-%H%M"))
}

/// Why an open contract waits for a review, as a team lead asks "what is waiting for review?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Awaiting {
    /// `stakes: high`, claimed, no review decision yet, and nobody asked: a person chooses the
    /// reviewer (the human queue's item).
    NoReviewer,
    /// `stakes: high`, claimed, and the reviewer named in `review.reviewer` has not decided yet.
    Reviewer(String),
    /// Its `status` says `under_review`.
    StatusSays,
}

/// Whether contract `k` (an open one) waits for a review, and why: its owner set `status:
/// under_review`, or it is `stakes: high` and claimed with no decision in its `review.status`
/// (it settles only after another citizen signs it off). A decision other than a sign-off is
/// the owner's to act on, not a review to wait for. `None` when it waits for no review.
pub fn awaiting(k: &super::contract::Contract) -> Option<Awaiting> {
    let decided = k
        .review
        .status
        .as_deref()
        .is_some_and(|s| !matches!(Decision::parse(s), Decision::Other(_)));
    let reviewer = k
        .review
        .reviewer
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if k.stakes.as_deref().map(str::trim) == Some("high") && k.owner.is_some() && !decided {
        return Some(match reviewer {
            Some(r) => Awaiting::Reviewer(r.to_string()),
            None => Awaiting::NoReviewer,
        });
    }
    (k.status.as_deref().map(str::trim) == Some("under_review")).then_some(Awaiting::StatusSays)
}

/// The chronicle verb a decision is announced with: the reserved `signed off` and
/// `rejected review`, and the free verb `requested changes`.
pub fn chronicle_verb(decision: &Decision) -> &'static str {
    match decision {
        Decision::SignedOff => "signed off",
        Decision::Rejected => "rejected review",
        _ => "requested changes",
    }
}

/// The bytes of a new review file (SPEC §10 keys, `round` (1 for the first review by a citizen
/// other than the owner, 2 for the one after it…), then the reviewer's text).
pub fn render_new(
    reviewer: &str,
    contract_link: &str,
    contract_id: &str,
    decision: &Decision,
    reviewed_at: &str,
    round: usize,
    body: &str,
) -> Result<String, crate::yaml::EmitError> {
    let s = |v: &str| Value::Str(v.to_string());
    let mut m = crate::yaml::Mapping::new();
    m.insert(s("reviewer"), s(reviewer));
    m.insert(s("contract"), s(contract_id));
    m.insert(s("decision"), s(decision.as_str()));
    m.insert(s("reviewed_at"), s(reviewed_at));
    m.insert(s("round"), Value::Int(round as i64));
    let head = crate::yaml::dump(&Value::Map(m), &crate::yaml::DumpOptions::FRONTMATTER)?;
    let body = body.trim();
    let body = if body.is_empty() {
        "## What is right\n\n## What is missing\n"
    } else {
        body
    };
    Ok(format!(
        "---\n{head}---\n\n# Review of [[{contract_link}]]: {}\n\n{body}\n",
        decision.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_high_stakes_claim_awaits_review_until_a_decision_and_under_review_always_does() {
        let k = |front: &str| {
            super::super::contract::Contract::parse(&format!("---\n{front}\n---\n")).unwrap()
        };
        let high = "owner: a-citizen1\nstatus: claimed\nstakes: high";
        assert_eq!(awaiting(&k(high)), Some(Awaiting::NoReviewer));
        assert_eq!(
            awaiting(&k(&format!(
                "{high}\nreview:\n  reviewer: b-citizen1\n  status: null"
            ))),
            Some(Awaiting::Reviewer("b-citizen1".into()))
        );
        for decided in ["signed_off", "requested_changes", "rejected"] {
            let text = format!("{high}\nreview:\n  reviewer: b-citizen1\n  status: {decided}");
            assert_eq!(awaiting(&k(&text)), None, "{decided}");
        }
        assert_eq!(
            awaiting(&k("owner: null\nstatus: proposed\nstakes: high")),
            None
        );
        assert_eq!(
            awaiting(&k("owner: a-citizen1\nstatus: claimed\nstakes: low")),
            None
        );
        assert_eq!(
            awaiting(&k("owner: a-citizen1\nstatus: under_review\nstakes: low")),
            Some(Awaiting::StatusSays)
        );
    }

    #[test]
    fn reads_reviewer_contract_and_decision() {
        let r = parse(
            "---\nreviewer: gemini-agent-x\ncontract: fix-login\ndecision: signed_off\n---\nok\n",
        )
        .unwrap();
        assert_eq!(r.reviewer.as_deref(), Some("gemini-agent-x"));
        assert_eq!(r.contract.as_deref(), Some("fix-login"));
        assert_eq!(r.decision, Some(Decision::SignedOff));
    }

    #[test]
    fn contract_id_and_spelling_variants() {
        let r = parse(
            "---\ncontract_id: '[[contracts/open/fix-login]]'\ndecision: Requested Changes\n---\n",
        )
        .unwrap();
        assert_eq!(r.contract.as_deref(), Some("fix-login"));
        assert_eq!(r.decision, Some(Decision::RequestedChanges));
        let r = parse("---\ndecision: maybe\n---\n").unwrap();
        assert_eq!(r.decision, Some(Decision::Other("maybe".into())));
        assert_eq!(r.contract, None);
    }

    #[test]
    fn file_names() {
        let (when, cid) = parse_file_name("2026-03-02-1405-fix-login.md").unwrap();
        assert_eq!(
            when.format("%Y-%m-%d %H:%M").to_string(),
            "2026-03-02 14:05"
        );
        assert_eq!(cid, "fix-login");
        assert!(parse_file_name("2026-03-02-fix-login.md").is_none());
        assert!(parse_file_name("2026-03-02-2505-x.md").is_none());
        assert!(parse_file_name("notes.md").is_none());
    }
}
