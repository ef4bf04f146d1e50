//! Routing rules: `polis.yml` `routing.rules`, a list of
//! `{when: {tags: [...]} | {title: <regex>}, route_to: <citizen>}`. The first rule that
//! matches decides the recommendation before any policy runs; a target that is not a
//! registered, available, active candidate falls through to the policy, with a finding.

use crate::protocol::contracts::contract::Contract;
use crate::protocol::finding::{quoted, Code, Finding, QUOTED_CHARS};
use crate::protocol::layout;
use crate::yaml::Value;
use regex::Regex;

/// What a rule matches.
#[derive(Debug, Clone)]
pub enum When {
    /// Every listed tag is among the contract's `required_tags`.
    Tags(Vec<String>),
    /// The regular expression matches somewhere in the title.
    Title(Regex),
}

#[derive(Debug, Clone)]
pub struct Rule {
    /// 1-based position in `routing.rules`.
    pub n: usize,
    pub when: When,
    pub route_to: String,
}

impl Rule {
    pub fn describe(&self) -> String {
        match &self.when {
            When::Tags(t) => format!(
                "rule {} (tags [{}]) -> {}",
                self.n,
                t.join(", "),
                self.route_to
            ),
            When::Title(r) => format!(
                "rule {} (title /{}/) -> {}",
                self.n,
                r.as_str(),
                self.route_to
            ),
        }
    }

    pub fn matches(&self, c: &Contract) -> bool {
        match &self.when {
            When::Tags(t) => !t.is_empty() && t.iter().all(|x| c.required_tags.contains(x)),
            When::Title(r) => c.title.as_deref().is_some_and(|t| r.is_match(t)),
        }
    }
}

/// The rules of the merged `polis.yml`, and findings for entries that cannot be used.
/// Whether `polis.yml` lists any routing rule (valid or not), so callers gather what only a
/// rule needs (the activity window) only then.
pub fn any(merged: &Value) -> bool {
    merged
        .get("routing")
        .get("rules")
        .as_seq()
        .is_some_and(|items| !items.is_empty())
}

pub fn parse(merged: &Value) -> (Vec<Rule>, Vec<Finding>) {
    let mut rules = Vec::new();
    let mut findings = Vec::new();
    let Some(items) = merged.get("routing").get("rules").as_seq() else {
        return (rules, findings);
    };
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let bad = |why: &str| {
            Finding::warning(
                Code::BadYaml,
                layout::POLIS_YML,
                None,
                format!("routing.rules entry {n} is ignored: {why}; write `{{when: {{tags: [a, b]}}, route_to: <citizen>}}` or `{{when: {{title: <regex>}}, route_to: <citizen>}}`"),
            )
        };
        let Some(to) = item
            .get("route_to")
            .as_str()
            .filter(|t| layout::is_agent_id(t))
        else {
            findings.push(bad("`route_to` is not a citizen id"));
            continue;
        };
        let when = item.get("when");
        let rule_when = if let Some(tags) = when.get("tags").as_seq() {
            When::Tags(tags.iter().map(Value::python_str).collect())
        } else if let Some(t) = when.get("title").as_str() {
            match Regex::new(t) {
                Ok(r) => When::Title(r),
                Err(e) => {
                    findings.push(bad(&format!(
                        "`title` is not a regular expression ({})",
                        regex_error(t, &e)
                    )));
                    continue;
                }
            }
        } else {
            findings.push(bad("`when` has neither `tags` nor `title`"));
            continue;
        };
        rules.push(Rule {
            n,
            when: rule_when,
            route_to: to.to_string(),
        });
    }
    (rules, findings)
}

/// Why `pattern` did not compile. The regex crate's message repeats the whole pattern (with a
/// caret line as wide), so past [`QUOTED_CHARS`] the pattern is quoted by its start and only
/// the message's last line, the reason, is kept; a shorter pattern's message is left whole.
fn regex_error(pattern: &str, e: &regex::Error) -> String {
    let message = e.to_string();
    if pattern.chars().nth(QUOTED_CHARS).is_none() {
        return message;
    }
    match message.rsplit_once("error: ") {
        Some((_, why)) => format!("`{}`: {why}", quoted(pattern)),
        None => quoted(&message),
    }
}

/// Which rule matched a contract, and whether it decided.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuleMatch {
    pub rule: String,
    pub route_to: String,
    /// `false` when the target was not available and the policy decided.
    pub applied: bool,
    #[serde(skip)]
    pub finding: Option<Finding>,
}

/// The first matching rule, judged against `available(id)` (a registered candidate that is not
/// away and has not left).
pub fn decide(rules: &[Rule], c: &Contract, available: &dyn Fn(&str) -> bool) -> Option<RuleMatch> {
    let rule = rules.iter().find(|r| r.matches(c))?;
    let applied = available(&rule.route_to);
    let finding = (!applied).then(|| {
        Finding::warning(
            Code::BadYaml,
            layout::POLIS_YML,
            None,
            format!(
                "{} matched `{}`, but `{}` is not registered, is away, has left or has written no chronicle line in 14 days, so the policy decided instead; fix the rule or the citizen's status",
                quoted(&rule.describe()),
                quoted(c.contract_id.as_deref().unwrap_or("?")),
                rule.route_to
            ),
        )
    });
    Some(RuleMatch {
        rule: rule.describe(),
        route_to: rule.route_to.clone(),
        applied,
        finding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_rule_decides_and_unavailable_falls_through() {
        let merged = crate::yaml::load(
            "routing:\n  rules:\n    - {when: {tags: [legal]}, route_to: lawyer-agent}\n    - {when: {title: '^Docs'}, route_to: writer-agent}\n    - {when: {}, route_to: x}\n",
        )
        .unwrap();
        let (rules, findings) = parse(&merged);
        assert_eq!(rules.len(), 2);
        assert_eq!(findings.len(), 1);
        let c = Contract::parse("---\ntitle: Docs for legal\nrequired_tags: [legal, api]\n---\n")
            .unwrap();
        let m = decide(&rules, &c, &|_| true).unwrap();
        assert_eq!(m.route_to, "lawyer-agent");
        assert!(m.applied);
        let m = decide(&rules, &c, &|_| false).unwrap();
        assert!(!m.applied && m.finding.is_some());
        let d = Contract::parse("---\ntitle: Docs\nrequired_tags: [api]\n---\n").unwrap();
        assert_eq!(
            decide(&rules, &d, &|_| true).unwrap().route_to,
            "writer-agent"
        );
    }

    #[test]
    fn a_bad_title_regex_is_quoted_whole_when_short_and_by_its_start_when_long() {
        let rule = |pattern: &str| {
            let text = format!("routing:\n  rules:\n    - {{when: {{title: '{pattern}'}}, route_to: lawyer-agent}}\n");
            let (rules, findings) = parse(&crate::yaml::load(&text).unwrap());
            assert!(rules.is_empty());
            findings[0].message.clone()
        };
        // The regex crate's own message, as before.
        assert!(rule("(ab")
            .contains("(regex parse error:\\n    (ab\\n    ^\\nerror: unclosed group); write"));
        let long = format!("({}", "ab ".repeat(30_000));
        let message = rule(&long);
        assert!(message.len() < 1_000, "{}", &message[..1_000]);
        assert!(message.contains(&format!(
            "(`({}… ({} bytes)`: unclosed group); write",
            &long[1..QUOTED_CHARS],
            long.len()
        )));
    }
}
