//! What SPEC §6, §8 and §10 ask of the records agents write by hand: contracts (id, known keys,
//! status against folder, citizens named, `required_tags`), amendments (status, quorum, expiry,
//! vote categories) and lessons (routing effects). Pure: a record's text and parsed fields in,
//! findings out. `polisd check` reports them; the daemon tells the record's author.

use crate::protocol::finding::{quoted, Code, Finding};
use crate::protocol::frontmatter::{key_line, Record};
use crate::protocol::layout::{self, ContractFolder};
use crate::yaml::Value;
use std::borrow::Cow;

/// Every key SPEC §6 gives a contract, `abandoned_reason`, which the reference's `abandon`
/// writes, and the keys of handoffs and dependencies (docs/handoffs.md): `depends_on` and
/// `touches`, which agents write, and `chain` and `parent_contract`, which a follow-up contract
/// opened by the daemon carries; and `council`, a council request (docs/council.md).
pub const CONTRACT_KEYS: [&str; 24] = [
    "contract_id",
    "title",
    "opened_by",
    "opened_at",
    "owner",
    "status",
    "stakes",
    "required_tags",
    "deadline",
    "cost_ceiling",
    "acceptance_criteria",
    "routing",
    "review",
    "settled_at",
    "quality_score",
    "actual_minutes",
    "abandoned_reason",
    "claimed_at",
    "file_type",
    "depends_on",
    "touches",
    "chain",
    "parent_contract",
    "council",
];

/// The statuses a contract may have in each folder (SPEC §6).
pub fn statuses_for(folder: ContractFolder) -> &'static [&'static str] {
    match folder {
        ContractFolder::Open => &[
            "proposed",
            "claimed",
            "in_progress",
            "blocked",
            "under_review",
        ],
        ContractFolder::Settled => &["settled"],
        ContractFolder::Abandoned => &["abandoned"],
    }
}

/// The closest of `known` to `key`, when it is close enough to be a typo.
pub fn did_you_mean<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(key, k), *k))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The top-level keys, a key that is not a string as Python prints it. Borrowed: the daemon
/// checks every settled file it reads, and a clean one should cost no copies.
fn top_keys(fields: &Value) -> Vec<Cow<'_, str>> {
    match fields {
        Value::Map(m) => m
            .iter()
            .map(|(k, _)| match k.as_str() {
                Some(key) => Cow::Borrowed(key),
                None => Cow::Owned(k.python_str()),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Unknown top-level keys, each with a "did you mean" when one is close.
fn unknown_keys(rel: &str, text: &str, fields: &Value, known: &[&str], what: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for key in top_keys(fields) {
        if known.contains(&key.as_ref()) {
            continue;
        }
        let hint = match did_you_mean(&key, known) {
            Some(k) => format!("did you mean `{k}`?"),
            None => format!("{what} keys are: {}", known.join(", ")),
        };
        out.push(Finding::warning(
            Code::UnknownKey,
            rel,
            key_line(text, &key),
            format!(
                "unknown key `{}` (polisd and the router ignore it); {hint}",
                quoted(&key)
            ),
        ));
    }
    out
}

/// SPEC §6 for one contract file in `folder`, named `stem`.
pub fn check_contract(
    rel: &str,
    folder: ContractFolder,
    stem: &str,
    text: &str,
    record: &Record,
    is_citizen: &dyn Fn(&str) -> bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let fields = &record.fields;
    if !matches!(fields, Value::Map(m) if !m.is_empty()) {
        let opened = text.trim_start_matches('\u{feff}').starts_with("---");
        out.push(Finding::error(
            Code::ContractId,
            rel,
            None,
            if opened {
                "the frontmatter has no closing `---` line, so the contract has no fields; add \
                 it after the last YAML line (contracts/TEMPLATE.md shows the layout)"
            } else {
                "the contract has no frontmatter: start the file with a `---` line, the fields \
                 (contract_id, title, opened_by, status, required_tags...), and a closing `---` \
                 line (contracts/TEMPLATE.md shows the layout)"
            },
        ));
        return out;
    }
    let line = |key: &str| key_line(text, key);
    match fields.get("contract_id") {
        Value::Null => out.push(Finding::error(
            Code::ContractId,
            rel,
            None,
            format!("no `contract_id`; add `contract_id: {stem}` (the file's name without .md)"),
        )),
        Value::Str(id) if id == stem => {}
        other => out.push(Finding::error(
            Code::ContractId,
            rel,
            line("contract_id"),
            format!(
                "`contract_id: {}` does not match the file name; make it `{stem}`, or rename \
                 the file to the id",
                quoted(&other.python_str())
            ),
        )),
    }
    out.extend(unknown_keys(rel, text, fields, &CONTRACT_KEYS, "contract"));

    let allowed = statuses_for(folder);
    match fields.get("status") {
        Value::Str(s) if allowed.contains(&s.as_str()) => {}
        Value::Null => out.push(Finding::warning(
            Code::StatusFolder,
            rel,
            line("status"),
            format!(
                "no `status`; a contract in {}/ has status {}",
                folder.name(),
                allowed.join(", ")
            ),
        )),
        other => {
            let s = other.python_str();
            let fix = match s.as_str() {
                "settled" => "move it to contracts/settled/ (settling is the move)".to_string(),
                "abandoned" => "move it to contracts/abandoned/".to_string(),
                _ if folder != ContractFolder::Open
                    && statuses_for(ContractFolder::Open).contains(&s.as_str()) =>
                {
                    format!(
                        "set `status: {}` or move it back to contracts/open/",
                        allowed[0]
                    )
                }
                _ => format!("use one of {}", allowed.join(", ")),
            };
            out.push(Finding::error(
                Code::StatusFolder,
                rel,
                line("status"),
                format!(
                    "`status: {}` does not belong in contracts/{}/; {fix}",
                    quoted(&s),
                    folder.name()
                ),
            ));
        }
    }

    match fields.get("opened_by") {
        Value::Null => out.push(Finding::warning(
            Code::UnknownCitizen,
            rel,
            None,
            "no `opened_by`; add the id of the citizen who opened it (it is told when the \
             contract settles)",
        )),
        Value::Str(id) if is_citizen(id) => {}
        other => out.push(Finding::warning(
            Code::UnknownCitizen,
            rel,
            line("opened_by"),
            format!(
                "`opened_by: {}` is not a registered citizen (no citizens/<id>/capability_card.yml)",
                quoted(&other.python_str())
            ),
        )),
    }
    match fields.get("owner") {
        Value::Null => {}
        Value::Str(id) if is_citizen(id) => {}
        other => out.push(Finding::warning(
            Code::UnknownCitizen,
            rel,
            line("owner"),
            format!(
                "`owner: {}` is not a registered citizen; the owner must have \
                 citizens/<id>/capability_card.yml (register it with `polisd register`)",
                quoted(&other.python_str())
            ),
        )),
    }

    let tags_line = line("required_tags");
    match fields.get("required_tags") {
        Value::Null
            if !top_keys(fields)
                .iter()
                .any(|k| k.as_ref() == "required_tags") =>
        {
            out.push(Finding::warning(
                Code::BadTags,
                rel,
                None,
                "no `required_tags`: the router cannot match anyone's skills; add a list such as \
                 `required_tags: [python]`",
            ))
        }
        Value::Null => {}
        Value::Str(s) => out.push(Finding::warning(
            Code::BadTags,
            rel,
            tags_line,
            format!(
                "`required_tags` is a string; write a list: `required_tags: [{}]`",
                quoted(s)
            ),
        )),
        Value::Seq(items) => {
            let bad: Vec<String> = items
                .iter()
                .filter(|v| !v.as_str().is_some_and(layout::is_slug))
                .map(Value::python_str)
                .collect();
            if !bad.is_empty() {
                out.push(Finding::error(
                    Code::BadTags,
                    rel,
                    tags_line,
                    format!(
                        "`required_tags` holds {} that {} not tags (lowercase letters, digits and \
                         hyphens); no citizen can match {}",
                        quoted(&bad.join(", ")),
                        if bad.len() == 1 { "is" } else { "are" },
                        if bad.len() == 1 { "it" } else { "them" }
                    ),
                ));
            }
        }
        other => out.push(Finding::error(
            Code::BadTags,
            rel,
            tags_line,
            format!(
                "`required_tags` must be a list of tags, not {}",
                quoted(&other.python_str())
            ),
        )),
    }
    // A tier polisd does not know is read as none of them: told, so `stakes: High` does not
    // skip the review its author meant to ask for without anyone knowing.
    for (key, meaning) in [
        (
            "stakes",
            "polisd reads it as not high, so settling needs no review",
        ),
        (
            "cost_ceiling",
            "the router's cost fit counts every citizen as 0.5 for it",
        ),
    ] {
        match fields.get(key) {
            Value::Null => {}
            Value::Str(t) if TIERS.contains(&t.as_str()) => {}
            other => out.push(Finding::warning(
                Code::BadYaml,
                rel,
                line(key),
                format!(
                    "`{key}: {}` is not low, medium or high; {meaning}; write one of them in lowercase",
                    quoted(&other.python_str())
                ),
            )),
        }
    }
    out
}

/// The tiers of a contract's `stakes` and `cost_ceiling`, and of a card's cost envelope.
pub const TIERS: [&str; 3] = ["low", "medium", "high"];

/// The statuses SPEC §8 gives an amendment.
pub const AMENDMENT_STATUSES: [&str; 4] = ["proposed", "ratified", "rejected", "expired"];
/// The vote lists of an amendment's `votes:` map.
pub const VOTE_CATEGORIES: [&str; 4] = ["agree", "disagree", "abstain", "request_changes"];

/// SPEC §8 for one amendment file: a status the tally knows, a whole-number quorum, an expiry
/// it can read, vote lists it counts. Each finding says what the tally does meanwhile.
pub fn check_amendment(
    rel: &str,
    text: &str,
    now: &crate::protocol::clock::PolisTime,
) -> Vec<Finding> {
    let Ok(record) = crate::protocol::frontmatter::parse(text) else {
        return Vec::new(); // reported as bad YAML where it is read
    };
    let f = &record.fields;
    let line = |key: &str| key_line(text, key);
    let mut out = Vec::new();
    match f.get("status") {
        Value::Str(s)
            if s == "proposed"
                && !crate::protocol::amendments::amendment::outcome_recordable(text) =>
        {
            out.push(Finding::error(
                Code::BadAmendment,
                rel,
                // The YAML starts on the line after the opening `---`.
                line("status").or(Some(2)),
                "the tally cannot record an outcome in this frontmatter: it sets `status` and \
                 `ratified_at` on lines of their own, and here they are not (a `{…}` mapping, \
                 or indented keys); write one `key: value` line per key, from the line's first \
                 column. Until then the tally leaves this amendment as it is"
                    .to_string(),
            ))
        }
        Value::Str(s) if AMENDMENT_STATUSES.contains(&s.as_str()) => {}
        other => out.push(Finding::error(
            Code::BadAmendment,
            rel,
            line("status"),
            format!(
                "`status: {}` is not one of {}; the tally skips this amendment until it is \
                 (a new amendment has `status: proposed`)",
                quoted(&other.python_str()),
                AMENDMENT_STATUSES.join(", ")
            ),
        )),
    }
    match f.get("quorum_required") {
        Value::Null | Value::Int(_) => {}
        Value::Str(s) if s.trim().parse::<i64>().is_ok() => {}
        other => out.push(Finding::error(
            Code::BadAmendment,
            rel,
            line("quorum_required"),
            format!(
                "`quorum_required: {}` is not a whole number; the tally uses the default quorum \
                 (a majority of active citizens, at least 2) until it is",
                quoted(&other.python_str())
            ),
        )),
    }
    let expires = f.get("expires_at");
    if !matches!(expires, Value::Null)
        && crate::protocol::amendments::amendment::read_when(expires, now).is_none()
    {
        out.push(Finding::error(
            Code::BadAmendment,
            rel,
            line("expires_at"),
            format!(
                "`expires_at: {}` is not a date; write `expires_at: 'YYYY-MM-DD'`. Until then \
                 the amendment expires 30 days after `proposed_at`",
                quoted(&expires.python_str())
            ),
        ));
    }
    match f.get("votes") {
        Value::Null => {}
        Value::Map(m) => {
            for (key, _) in m.iter() {
                let name = key
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| key.python_str());
                if !VOTE_CATEGORIES.contains(&name.as_str())
                    && crate::protocol::amendments::amendment::Vote::parse_prefix(&name).is_none()
                {
                    out.push(Finding::error(
                        Code::BadAmendment,
                        rel,
                        line("votes"),
                        format!(
                            "unknown vote category `{}` under `votes:`; its votes are not \
                             counted. Use {}{}",
                            quoted(&name),
                            VOTE_CATEGORIES.join(", "),
                            did_you_mean(&name, &VOTE_CATEGORIES)
                                .map(|k| format!(" (did you mean `{k}`?)"))
                                .unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        other => out.push(Finding::error(
            Code::BadAmendment,
            rel,
            line("votes"),
            format!(
                "`votes` must be a map of {} to lists of ids, not {}",
                VOTE_CATEGORIES.join(", "),
                quoted(&other.python_str())
            ),
        )),
    }
    out
}

/// SPEC §10 for one lesson: every `routing_effect` names a registered citizen (a warning) and
/// has a numeric `delta` (an error: the router skips the entry).
pub fn check_lesson(rel: &str, fields: &Value, is_citizen: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let Value::Seq(effects) = fields.get("routing_effect") else {
        return out;
    };
    for (i, effect) in effects.iter().enumerate() {
        let n = i + 1;
        if let Value::Str(citizen) = effect.get("citizen") {
            if !is_citizen(citizen) {
                out.push(Finding::warning(
                    Code::UnknownCitizen,
                    rel,
                    None,
                    format!(
                        "routing_effect #{n} names `{}`, who is not a registered citizen; \
                         it changes nobody's routing",
                        quoted(citizen)
                    ),
                ));
            }
        }
        let delta = effect.get("delta");
        if !matches!(delta, Value::Null)
            && crate::protocol::contracts::lesson::python_float(delta).is_none()
        {
            out.push(Finding::error(
                Code::BadLesson,
                rel,
                None,
                format!(
                    "routing_effect #{n} has `delta: {}`, which is not a number; the router \
                     skips the entry until it is (for example `delta: 0.05`)",
                    quoted(&delta.python_str())
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(folder: ContractFolder, stem: &str, text: &str) -> Vec<Finding> {
        let record = crate::protocol::frontmatter::parse(text).unwrap();
        check_contract(
            &format!("{}/{stem}.md", folder.dir()),
            folder,
            stem,
            text,
            &record,
            &|id| id == "founder-one",
        )
    }

    fn codes(found: &[Finding]) -> Vec<(Code, Option<usize>)> {
        found.iter().map(|f| (f.code, f.line)).collect()
    }

    #[test]
    fn contract_quick_fix_without_id_or_opener_and_a_typo_draws_each_finding() {
        let text = "---\ntitle: Quick fix\nstatus: proposed\nrequired_tag:\n- python\n---\nbody\n";
        let found = check(ContractFolder::Open, "quick-fix", text);
        assert_eq!(
            codes(&found),
            vec![
                (Code::ContractId, None),
                (Code::UnknownKey, Some(4)),
                (Code::UnknownCitizen, None),
                (Code::BadTags, None),
            ],
            "{found:#?}"
        );
        assert!(found[1].message.contains("did you mean `required_tags`?"));
    }

    #[test]
    fn contract_settled_status_in_open_is_an_error_saying_to_move_it() {
        let text = "---\ncontract_id: x-1\nopened_by: founder-one\nstatus: settled\nrequired_tags: [py]\n---\n";
        let found = check(ContractFolder::Open, "x-1", text);
        assert_eq!(codes(&found), vec![(Code::StatusFolder, Some(4))]);
        assert!(found[0].message.contains("move it to contracts/settled/"));
    }

    #[test]
    fn contract_owner_and_tags_are_checked() {
        let text = "---\ncontract_id: y-2\nopened_by: founder-one\nowner: ghost-agent\nstatus: claimed\nrequired_tags: [Python, 3]\n---\n";
        let found = check(ContractFolder::Open, "y-2", text);
        assert_eq!(
            codes(&found),
            vec![(Code::UnknownCitizen, Some(4)), (Code::BadTags, Some(6))]
        );
        let text = "---\ncontract_id: other\nopened_by: founder-one\nstatus: proposed\nrequired_tags: py\n---\n";
        let found = check(ContractFolder::Open, "y-2", text);
        assert_eq!(
            codes(&found),
            vec![(Code::ContractId, Some(2)), (Code::BadTags, Some(5))]
        );
    }

    #[test]
    fn stakes_and_cost_ceiling_outside_the_tiers_are_told() {
        let text = "---\ncontract_id: w-4\nopened_by: founder-one\nstatus: proposed\nstakes: High\nrequired_tags: [py]\ncost_ceiling: free\n---\n";
        let found = check(ContractFolder::Open, "w-4", text);
        assert_eq!(
            codes(&found),
            vec![(Code::BadYaml, Some(5)), (Code::BadYaml, Some(7))],
            "{found:#?}"
        );
        assert!(found[0]
            .message
            .contains("`stakes: High` is not low, medium or high; polisd reads it as not high"));
        assert!(found[1].message.contains("`cost_ceiling: free`"));
    }

    #[test]
    fn contract_written_as_the_template_says_draws_nothing() {
        let text = "---\ncontract_id: z-3\ntitle: t\nopened_by: founder-one\nopened_at: 2026-01-01 10:00:00\nowner: null\nstatus: proposed\nstakes: low\nrequired_tags:\n- python\ndeadline: null\ncost_ceiling: medium\nacceptance_criteria: []\nrouting:\n  recommended_by_router: null\nreview:\n  required: false\nsettled_at: null\nquality_score: null\nactual_minutes: null\n---\n";
        assert_eq!(check(ContractFolder::Open, "z-3", text), vec![]);
    }

    #[test]
    fn amendment_with_bad_status_quorum_expiry_and_vote_category_draws_four_errors() {
        let text = "---\namendment_id: 2026-01-01-x\nstatus: something-bad\nquorum_required: abc\nexpires_at: 'not-a-date'\nvotes:\n  agree: [a]\n  maybe: [b]\n---\n";
        let now =
            crate::protocol::clock::PolisTime::at_stamp(Default::default(), "2026-01-02 10:00")
                .unwrap();
        let found = check_amendment("amendments/proposed/2026-01-01-x.md", text, &now);
        assert_eq!(
            codes(&found),
            vec![
                (Code::BadAmendment, Some(3)),
                (Code::BadAmendment, Some(4)),
                (Code::BadAmendment, Some(5)),
                (Code::BadAmendment, Some(6)),
            ],
            "{found:#?}"
        );
        let ok = "---\nstatus: proposed\nquorum_required: 3\nexpires_at: '2026-02-01'\nvotes:\n  agree: [a]\n  request_changes: []\n---\n";
        assert_eq!(check_amendment("a.md", ok, &now), vec![]);
    }

    #[test]
    fn lesson_unknown_citizen_warns_and_non_numeric_delta_errs() {
        let text = "---\nrouting_effect:\n- citizen: ghost-agent\n  delta: 0.1\n- citizen: founder-one\n  delta: lots\n---\n";
        let record = crate::protocol::frontmatter::parse(text).unwrap();
        let found = check_lesson("lessons/py/l.md", &record.fields, &|id| id == "founder-one");
        assert_eq!(
            found
                .iter()
                .map(|f| (f.code, f.severity))
                .collect::<Vec<_>>(),
            vec![
                (
                    Code::UnknownCitizen,
                    crate::protocol::finding::Severity::Warning
                ),
                (Code::BadLesson, crate::protocol::finding::Severity::Error),
            ]
        );
    }
}
