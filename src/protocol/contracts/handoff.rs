//! Handoff chains: the suggestion blocks agents write in a `## Settlement` (or a
//! review), the chain rules that keep handoffs from looping or running away, and the bytes of
//! the follow-up contract polisd opens for an accepted suggestion.
//!
//! Pure: text and parsed values in, decisions and text out. `operations::handoff` reads the
//! polis, asks these rules, and writes through the writer. docs/handoffs.md states the rules.

use crate::protocol::chronicle;
use crate::protocol::contracts::contract::{self, NewContract};
use crate::protocol::frontmatter;
use crate::yaml::Value;
use std::collections::BTreeSet;
use std::fmt;

/// The chain depth when `polis.yml` sets none: at most three owners in one handoff sequence.
pub const DEFAULT_MAX_CHAIN_DEPTH: usize = 3;

/// The heading of a suggestion for an existing citizen.
pub const NEXT_HEADING: &str = "### Suggested next citizen";
/// The heading of a suggestion for a citizen the polis does not have.
pub const NEW_HEADING: &str = "### Suggested new citizen";
/// The orchestration seed's own words for the same two headings (its "agent" is a citizen):
/// read exactly as the two above, with `- **Agent**:` for `- **Citizen**:`.
pub const SEED_NEXT_HEADING: &str = "### Suggested next agent";
pub const SEED_NEW_HEADING: &str = "### Suggested new agent";

/// Whether `text` may hold a suggestion block (any of the four headings, in any case): a
/// cheap test before [`parse_blocks`].
pub fn has_suggestion_heading(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        [
            NEXT_HEADING,
            NEW_HEADING,
            SEED_NEXT_HEADING,
            SEED_NEW_HEADING,
        ]
        .iter()
        .any(|h| t.eq_ignore_ascii_case(h))
    })
}

/// A `### Suggested next citizen` block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Suggestion {
    /// 1-based position among the settlement's next-citizen blocks: the follow-up contract
    /// is `<parent>-next-<n>`, so the same block always names the same file.
    pub n: usize,
    pub citizen: String,
    pub reason: String,
    pub context: String,
    pub tags: Vec<String>,
}

/// A `### Suggested new citizen` block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewCitizen {
    pub need: String,
    pub reason: String,
    pub role: String,
}

/// Every suggestion block of a text, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blocks {
    pub next: Vec<Suggestion>,
    pub new: Vec<NewCitizen>,
}

/// The `## Settlement` section of a contract (up to the next level-2 heading), or `""`.
pub fn settlement_section(text: &str) -> &str {
    let mut start = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end();
        match start {
            None if trimmed == "## Settlement" => start = Some(offset + line.len()),
            Some(s) if trimmed.starts_with("## ") => return &text[s..offset],
            _ => {}
        }
        offset += line.len();
    }
    start.map_or("", |s| &text[s..])
}

/// The suggestion blocks of `text` (a Settlement section or a review body). A block runs from
/// its heading to the next heading; its fields are `- **Key**: value` lines (keys in any case).
/// A next-citizen block without a citizen, or a new-citizen block without a need, is skipped.
pub fn parse_blocks(text: &str) -> Blocks {
    enum Open {
        None,
        Next(Vec<(String, String)>),
        New(Vec<(String, String)>),
    }
    let mut blocks = Blocks::default();
    let mut open = Open::None;
    let close = |open: Open, blocks: &mut Blocks| match open {
        Open::None => {}
        Open::Next(fields) => {
            let get = |k: &str| field(&fields, k);
            let citizen = match get("citizen") {
                c if c.is_empty() => get("agent"),
                c => c,
            };
            if !citizen.is_empty() {
                let n = blocks.next.len() + 1;
                blocks.next.push(Suggestion {
                    n,
                    citizen,
                    reason: get("reason"),
                    context: get("context"),
                    tags: get("tags")
                        .split(',')
                        .map(|t| t.trim().to_string())
                        .filter(|t| !t.is_empty())
                        .collect(),
                });
            } else {
                // Still counts for numbering: `-next-<n>` follows the blocks as written.
                blocks.next.push(Suggestion {
                    n: blocks.next.len() + 1,
                    citizen: String::new(),
                    reason: get("reason"),
                    context: get("context"),
                    tags: Vec::new(),
                });
            }
        }
        Open::New(fields) => {
            let get = |k: &str| field(&fields, k);
            if !get("need").is_empty() {
                blocks.new.push(NewCitizen {
                    need: get("need"),
                    reason: get("reason"),
                    role: get("suggested role"),
                });
            }
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            close(std::mem::replace(&mut open, Open::None), &mut blocks);
            if t.eq_ignore_ascii_case(NEXT_HEADING) || t.eq_ignore_ascii_case(SEED_NEXT_HEADING) {
                open = Open::Next(Vec::new());
            } else if t.eq_ignore_ascii_case(NEW_HEADING)
                || t.eq_ignore_ascii_case(SEED_NEW_HEADING)
            {
                open = Open::New(Vec::new());
            }
            continue;
        }
        let fields = match &mut open {
            Open::Next(f) | Open::New(f) => f,
            Open::None => continue,
        };
        if let Some((key, value)) = field_line(t) {
            fields.push((key, value));
        }
    }
    close(open, &mut blocks);
    blocks.next.retain(|s| !s.citizen.is_empty());
    blocks
}

fn field(fields: &[(String, String)], key: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// `- **Key**: value` (also `- **Key:** value`) as `(lowercase key, trimmed value)`.
fn field_line(line: &str) -> Option<(String, String)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?;
    let rest = rest.trim_start().strip_prefix("**")?;
    let (key, value) = rest.split_once("**")?;
    let (key, value) = match key.strip_suffix(':') {
        Some(k) => (k, value),
        None => (key, value.trim_start().strip_prefix(':')?),
    };
    Some((key.trim().to_ascii_lowercase(), value.trim().to_string()))
}

/// The block `contract settle --suggest CITIZEN:REASON` writes.
pub fn render_suggestion(citizen: &str, reason: &str) -> String {
    let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "\n{NEXT_HEADING}\n- **Citizen**: {citizen}\n- **Reason**: {reason}\n- **Context**: -\n"
    )
}

/// Why a suggested citizen cannot take the work at all (the author is told).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Skip {
    /// No card under `citizens/<id>/`.
    Unknown,
    /// Their status says `away`.
    Away,
    /// Their latest membership line in the chronicle is `left polis`.
    Left,
    /// Their id breaks SPEC §2.
    BadId,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Skip::Unknown => "is not a registered citizen (no citizens/<id>/capability_card.yml)",
            Skip::Away => "is away (their status.md says `state: away`)",
            Skip::Left => "has left the polis (their latest membership line is `left polis`)",
            Skip::BadId => "is not a valid citizen id",
        })
    }
}

/// Why the chain rules refuse a suggestion (the chain's first opener is told).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "rule")]
pub enum Deferral {
    /// The follow-up would be step `step` of a chain limited to `max` owners.
    TooDeep { step: usize, max: usize },
    /// The citizen already owns a step of this chain.
    InChain,
    /// The same suggestion (citizen and reason) appears earlier for this parent.
    Duplicate,
}

impl fmt::Display for Deferral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Deferral::TooDeep { step, max } => write!(
                f,
                "it would be step {step} of a chain limited to {max} (max_chain_depth in polis.yml)"
            ),
            Deferral::InChain => f.write_str("that citizen already owns a step of this chain"),
            Deferral::Duplicate => f.write_str("the same suggestion appears earlier"),
        }
    }
}

/// The chain rules, in order: no duplicate suggestion, no citizen twice in the chain, no more
/// than `max` owners. `chain` is the owners so far (the parent's owner last); `seen` holds the
/// `(citizen, reason)` pairs already judged for this parent and is extended.
pub fn judge(
    chain: &[String],
    s: &Suggestion,
    max: usize,
    seen: &mut BTreeSet<(String, String)>,
) -> Result<(), Deferral> {
    if !seen.insert((s.citizen.clone(), s.reason.clone())) {
        return Err(Deferral::Duplicate);
    }
    if chain.iter().any(|c| c == &s.citizen) {
        return Err(Deferral::InChain);
    }
    let step = chain.len() + 1;
    if step > max {
        return Err(Deferral::TooDeep { step, max });
    }
    Ok(())
}

/// `max_chain_depth` from the merged `polis.yml` (top level), else the default. Values below
/// 1 read as 1.
pub fn max_chain_depth(merged: &Value) -> usize {
    merged
        .get("max_chain_depth")
        .as_i64()
        .map_or(DEFAULT_MAX_CHAIN_DEPTH, |n| n.max(1) as usize)
}

/// The ids of a frontmatter list field (`chain`, `depends_on`): a list of strings, or one
/// string. Anything else reads as empty.
pub fn ids_of(v: &Value) -> Vec<String> {
    match v {
        Value::Seq(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::Null => None,
                other => Some(other.python_str()),
            })
            .filter(|s| !s.trim().is_empty())
            .collect(),
        Value::Str(s) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    }
}

/// The membership lines (`joined polis` / `left polis`) of a chronicle text, newest (last in
/// the file) first, each with the citizen it is about: the one its `[[citizens/<id>]]` link
/// names, else its author. Found by searching the whole text for the verb, so a million-line
/// chronicle costs one substring search, not a million parses.
fn membership_lines(text: &str) -> impl Iterator<Item = (String, bool)> + '_ {
    stamped_membership_lines(text).map(|(who, left, _)| (who, left))
}

/// [`membership_lines`] with each line's stamp.
fn stamped_membership_lines(
    text: &str,
) -> impl Iterator<Item = (String, bool, chrono::NaiveDateTime)> + '_ {
    let mut last_start = usize::MAX;
    text.rmatch_indices(" polis |").filter_map(move |(at, _)| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if start == last_start {
            return None; // a second match on a line already read
        }
        last_start = start;
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        chronicle::activity::membership_stamped(&text[start..end])
    })
}

/// Whether `id`'s latest membership line (`joined polis` / `left polis`, by them or linking
/// `citizens/<id>`) in the given chronicle texts (newest text first) is `left polis`.
pub fn has_left(texts: &[&str], id: &str) -> bool {
    for text in texts {
        if let Some((_, left)) = membership_lines(text).find(|(who, _)| who == id) {
            return left;
        }
    }
    false
}

/// Everyone whose latest membership line in `texts` (newest text first) is `left polis`, with
/// that line's stamp (polis-local): what the citizen held then, it no longer holds.
pub fn departures(texts: &[&str]) -> std::collections::BTreeMap<String, chrono::NaiveDateTime> {
    let mut decided: BTreeSet<String> = BTreeSet::new();
    let mut left = std::collections::BTreeMap::new();
    for text in texts {
        for (who, gone, at) in stamped_membership_lines(text) {
            if decided.insert(who.clone()) && gone {
                left.insert(who, at);
            }
        }
    }
    left
}

/// Everyone whose latest membership line in `texts` (newest text first) is `left polis`,
/// in one pass (membership lines name their citizen as author or by `[[citizens/<id>]]`).
pub fn departed(texts: &[&str]) -> BTreeSet<String> {
    departures(texts).into_keys().collect()
}

/// Where a parent's suggestion blocks were written: its `## Settlement`, or a review file
/// about it (`reviews/<YYYY-MM-DD-HHMM>-<cid>.md`, SPEC §10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Settlement,
    /// `stem` is the review file's name without `.md`; `stamp` its `YYYYMMDDHHMM`.
    Review {
        stem: String,
        stamp: String,
    },
}

impl Source {
    /// The review file `name` (`<YYYY-MM-DD-HHMM>-<cid>.md`) as a source, with the id of the
    /// contract its name gives; `None` for a name that is not a review's.
    pub fn review(name: &str) -> Option<(Source, String)> {
        let (when, cid) = crate::protocol::contracts::review::parse_file_name(name)?;
        let stem = name.strip_suffix(".md")?.to_string();
        let stamp = when.format("%Y%m%d%H%M").to_string();
        Some((Source::Review { stem, stamp }, cid))
    }

    /// The id of the n-th follow-up of `parent` from this source: `<parent>-next-<n>` for a
    /// Settlement, `<parent>-review-<YYYYMMDDHHMM>-next-<n>` for a review, so the same block
    /// always names the same file and two sources never name the same one.
    pub fn follow_up_id(&self, parent: &str, n: usize) -> String {
        match self {
            Source::Settlement => format!("{parent}-next-{n}"),
            Source::Review { stamp, .. } => format!("{parent}-review-{stamp}-next-{n}"),
        }
    }

    /// The wikilink target where the suggestions were written.
    pub fn link(&self, parent: &str) -> String {
        match self {
            Source::Settlement => format!("contracts/settled/{parent}"),
            Source::Review { stem, .. } => format!("reviews/{stem}"),
        }
    }

    /// What the author was doing: `settling` or `reviewing`.
    pub fn doing(&self) -> &'static str {
        match self {
            Source::Settlement => "settling",
            Source::Review { .. } => "reviewing",
        }
    }

    /// The subject of the notices about this source's suggestions: the parent for a
    /// Settlement (as before reviews were dispatched), the review file for a review.
    pub fn subject(&self, parent: &str) -> String {
        match self {
            Source::Settlement => parent.to_string(),
            Source::Review { stem, .. } => format!("reviews/{stem}"),
        }
    }
}

/// What the follow-up contract is built from.
#[derive(Debug, Clone)]
pub struct FollowUp<'a> {
    pub id: String,
    pub parent_id: &'a str,
    pub parent_title: &'a str,
    pub parent_tags: &'a [String],
    pub stakes: &'a str,
    pub cost_ceiling: &'a str,
    pub opened_at: String,
    /// The owners so far, the parent's owner last.
    pub chain: &'a [String],
    pub max: usize,
    pub suggestion: &'a Suggestion,
    /// Who wrote the suggestion (the parent's owner, or the reviewer).
    pub suggested_by: &'a str,
    pub source: &'a Source,
}

/// The title of a follow-up: the reason's first sentence, cut at a word near 80 characters.
pub fn follow_up_title(reason: &str, parent_id: &str) -> String {
    let first = reason.split(". ").next().unwrap_or(reason).trim();
    let first = first.trim_end_matches('.');
    if first.is_empty() {
        return format!("Follow-up to {parent_id}");
    }
    let mut out = String::new();
    for word in first.split_whitespace() {
        if !out.is_empty() && out.len() + word.len() > 80 {
            out.push('…');
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The bytes of the follow-up contract: the contract-open rendering (SPEC §6 fields,
/// `status: proposed`) opened by `polis-daemon`, with the router's recommendation set to the
/// suggested citizen, `chain`, `parent_contract`, `depends_on: [parent]`, and an Intent made
/// of the reason, the chain so far and the context.
pub fn render_follow_up(f: &FollowUp<'_>) -> Result<String, crate::yaml::EmitError> {
    let s = f.suggestion;
    let tags = if s.tags.is_empty() {
        f.parent_tags.to_vec()
    } else {
        s.tags.clone()
    };
    let title = follow_up_title(&s.reason, f.parent_id);
    let text = contract::render_new(&NewContract {
        contract_id: f.id.clone(),
        title: title.clone(),
        opened_by: crate::protocol::layout::DAEMON_ID.to_string(),
        opened_at: f.opened_at.clone(),
        stakes: f.stakes.to_string(),
        required_tags: tags,
        deadline: None,
        cost_ceiling: f.cost_ceiling.to_string(),
        acceptance_criteria: Vec::new(),
    })?;
    // Ids are SPEC §2 slugs (checked by the caller), so a flow list needs no quoting.
    let flow = |ids: &[String]| format!("[{}]", ids.join(", "));
    let text = text.replacen(
        "  recommended_by_router: null\n",
        &format!("  recommended_by_router: {}\n", s.citizen),
        1,
    );
    let mut text = text;
    for (key, value) in [
        ("chain", flow(f.chain)),
        ("parent_contract", f.parent_id.to_string()),
        ("depends_on", flow(&[f.parent_id.to_string()])),
    ] {
        text = frontmatter::splice_field(&text, key, &value, None).unwrap_or(text);
    }
    let step = f.chain.len() + 1;
    let reason = one_line(&s.reason);
    // The parent's title may be written by hand on several lines: flattened, it cannot start
    // a `## Settlement` of the follow-up's that its settle would keep and dispatch.
    let parent_title = one_line(f.parent_title);
    let goal = format!(
        "{reason}\n\nSuggested by `{owner}` when {doing} [[{link}]] ({parent_title}). Call chain so far: [{chain}]; you are step {step} of at most {max}.",
        owner = f.suggested_by,
        doing = f.source.doing(),
        link = f.source.link(f.parent_id),
        chain = f.chain.join(", "),
        max = f.max,
    );
    let context = match one_line(&s.context).as_str() {
        "" | "-" => "No context was given; read the parent contract's Settlement.".to_string(),
        c => c.to_string(),
    };
    Ok(text
        .replacen(
            "### Goal\n<what and why>\n",
            &format!("### Goal\n{goal}\n"),
            1,
        )
        .replacen(
            "### Notes for the executor\n<context>\n",
            &format!("### Notes for the executor\n{context}\n"),
            1,
        ))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLED: &str = "---\ncontract_id: a\n---\n\n# A\n\n## Intent\n\n### Suggested next citizen\n- **Citizen**: not-this-one\n\n## Settlement\n\nDone.\n\n### Suggested next citizen\n- **Citizen**: frontend-agent\n- **Reason**: Wire the new endpoint into the form.\n- **Context**: src/api/login.rs, notes in journal\n- **Tags**: frontend, forms\n\n### Suggested new citizen\n- **Need**: legal review\n- **Reason**: nobody here has it\n- **Suggested role**: reviews licences\n\n### Suggested next citizen\n- **Citizen:** qa-agent\n- **Reason**: test it\n\n## Later\n\n### Suggested next citizen\n- **Citizen**: after-section\n";

    #[test]
    fn blocks_come_from_the_settlement_section_only() {
        let b = parse_blocks(settlement_section(SETTLED));
        assert_eq!(b.next.len(), 2);
        assert_eq!(b.next[0].citizen, "frontend-agent");
        assert_eq!(b.next[0].tags, vec!["frontend", "forms"]);
        assert_eq!(b.next[0].context, "src/api/login.rs, notes in journal");
        assert_eq!(b.next[1].citizen, "qa-agent");
        assert_eq!(b.next[1].n, 2);
        assert_eq!(b.new.len(), 1);
        assert_eq!(b.new[0].role, "reviews licences");
    }

    #[test]
    fn the_seed_agent_form_reads_as_the_citizen_form() {
        let seed = "### Suggested next agent\n- **Agent**: connector-agent\n- **Reason**: 5 notes have no links\n- **Context**: notes/ml\n\n### Suggested new agent\n- **Need**: finance\n- **Reason**: none has it\n- **Suggested role**: budgets\n";
        let ours = "### Suggested next citizen\n- **Citizen**: connector-agent\n- **Reason**: 5 notes have no links\n- **Context**: notes/ml\n\n### Suggested new citizen\n- **Need**: finance\n- **Reason**: none has it\n- **Suggested role**: budgets\n";
        assert_eq!(parse_blocks(seed), parse_blocks(ours));
        assert_eq!(parse_blocks(seed).next[0].citizen, "connector-agent");
        assert_eq!(parse_blocks(seed).new.len(), 1);
    }

    #[test]
    fn no_settlement_section_no_blocks() {
        assert_eq!(settlement_section("---\na: 1\n---\n# x\n"), "");
    }

    #[test]
    fn suggest_flag_block_parses_back() {
        let b = parse_blocks(&render_suggestion("codex-2", "wire it\nup"));
        assert_eq!(b.next[0].citizen, "codex-2");
        assert_eq!(b.next[0].reason, "wire it up");
    }

    #[test]
    fn chain_rules_in_order() {
        let s = |c: &str| Suggestion {
            n: 1,
            citizen: c.into(),
            reason: "r".into(),
            context: String::new(),
            tags: vec![],
        };
        let chain = vec!["a".to_string(), "b".to_string()];
        let mut seen = BTreeSet::new();
        assert_eq!(judge(&chain, &s("c"), 3, &mut seen), Ok(()));
        assert_eq!(
            judge(&chain, &s("c"), 3, &mut seen),
            Err(Deferral::Duplicate)
        );
        assert_eq!(judge(&chain, &s("a"), 3, &mut seen), Err(Deferral::InChain));
        let long = vec!["a".into(), "b".into(), "c".into()];
        assert_eq!(
            judge(&long, &s("d"), 3, &mut BTreeSet::new()),
            Err(Deferral::TooDeep { step: 4, max: 3 })
        );
    }

    #[test]
    fn left_is_the_latest_membership_line() {
        let t = "- 2026-03-01 10:00 | x | joined polis | [[citizens/x]] | hi\n- 2026-03-02 10:00 | x | left polis | [[citizens/x]] | bye\n";
        assert!(has_left(&[t], "x"));
        let back = format!("{t}- 2026-03-03 10:00 | x | joined polis | [[citizens/x]] | back\n");
        assert!(!has_left(&[&back], "x"));
        assert!(!has_left(&[t], "y"));
        assert!(departed(&[t]).contains("x"));
        assert!(departed(&[&back]).is_empty());
        // A line about someone else (the index keeper removing `z`) is about `z` only; other
        // verbs ending in "polis" are no membership lines.
        let other = format!("{t}- 2026-03-04 10:00 | k | founded polis | - | x\n- 2026-03-04 11:00 | k | left polis | [[citizens/z]] | removed z\n");
        assert_eq!(
            departed(&[&other]),
            BTreeSet::from(["x".to_string(), "z".to_string()])
        );
        assert!(!has_left(&[&other], "k"));
        // The newest text decides first.
        assert!(!has_left(&[&back, t], "x"));
        assert!(has_left(&[t, &back], "x"));
    }

    #[test]
    fn follow_up_has_chain_parent_and_recommendation() {
        let s = Suggestion {
            n: 1,
            citizen: "c".into(),
            reason: "Wire it up. Then test.".into(),
            context: "see notes".into(),
            tags: vec![],
        };
        let chain = vec!["a".to_string(), "b".to_string()];
        let text = render_follow_up(&FollowUp {
            id: "p-next-1".into(),
            parent_id: "p",
            parent_title: "Parent",
            parent_tags: &["api".to_string()],
            stakes: "medium",
            cost_ceiling: "60min",
            opened_at: "2026-03-02 10:00:00".into(),
            chain: &chain,
            max: 3,
            suggestion: &s,
            suggested_by: "b",
            source: &Source::Settlement,
        })
        .unwrap();
        let c = contract::Contract::parse(&text).unwrap();
        assert_eq!(c.routing.recommended_by_router.as_deref(), Some("c"));
        assert_eq!(c.opened_by.as_deref(), Some("polis-daemon"));
        assert_eq!(c.status.as_deref(), Some("proposed"));
        assert_eq!(c.required_tags, vec!["api"]);
        assert_eq!(ids_of(c.fields.get("chain")), chain);
        assert_eq!(ids_of(c.fields.get("depends_on")), vec!["p"]);
        assert_eq!(c.fields.get("parent_contract").as_str(), Some("p"));
        assert!(
            text.contains("call chain so far: [a, b]; you are step 3 of at most 3")
                || text.contains("Call chain so far: [a, b]; you are step 3 of at most 3")
        );
        assert!(text.contains("see notes"));
        assert_eq!(c.title.as_deref(), Some("Wire it up"));
    }
}
