//! Amendments (SPEC §8): reading an amendment and its votes, the quorum rule, the tally, and
//! the single-line frontmatter splices that record an outcome.
//!
//! Pure: text and citizen sets in, an [`Outcome`] and new text out. The tally never rewrites a
//! file through YAML: it changes the `status` and `ratified_at` lines and keeps every other byte
//! (where the reference re-dumps the whole frontmatter). Moving the file is the caller's job.

use crate::protocol::chronicle;
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::{quoted, Code, Finding};
use crate::protocol::frontmatter::{self, FrontmatterError};
use crate::yaml::Value;
use chrono::{Duration, NaiveDate, NaiveDateTime};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// Days an amendment stays open when it names no `expires_at`.
pub const DEFAULT_LIFETIME_DAYS: i64 = 30;
/// The smallest quorum.
pub const MIN_QUORUM: usize = 2;

/// A vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vote {
    Agree,
    Disagree,
    Abstain,
    RequestChanges,
}

impl Vote {
    /// The four votes in the order the reference keeps their lists.
    pub const ALL: [Vote; 4] = [
        Vote::Agree,
        Vote::Disagree,
        Vote::Abstain,
        Vote::RequestChanges,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Vote::Agree => "agree",
            Vote::Disagree => "disagree",
            Vote::Abstain => "abstain",
            Vote::RequestChanges => "request_changes",
        }
    }

    /// Reads a vote at the start of `text` (`agree`, `disagree`, `abstain`, `request_changes`,
    /// `request changes`, `request-changes`; any case; markdown emphasis ignored). The word must
    /// end there: `agreed` is not a vote.
    pub fn parse_prefix(text: &str) -> Option<Vote> {
        let t = text
            .trim_start()
            .trim_start_matches(['*', '_', '`'])
            .to_lowercase();
        const WORDS: [(&str, Vote); 6] = [
            ("request_changes", Vote::RequestChanges),
            ("request changes", Vote::RequestChanges),
            ("request-changes", Vote::RequestChanges),
            ("disagree", Vote::Disagree),
            ("agree", Vote::Agree),
            ("abstain", Vote::Abstain),
        ];
        WORDS.iter().find_map(|(w, v)| {
            let rest = t.strip_prefix(w)?;
            (!rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')).then_some(*v)
        })
    }
}

/// One place a vote is recorded, in precedence order (the last one naming a citizen wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteRecord {
    pub citizen: String,
    pub vote: Vote,
    /// The file line of a body response block; `None` for a frontmatter `votes` entry.
    pub line: Option<usize>,
}

/// An amendment file as the tally reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Amendment {
    /// `amendment_id`, or the file name without `.md` when it has none (as the reference).
    pub id: String,
    /// The file name without `.md`: links name the file that exists.
    pub file_stem: String,
    pub title: Option<String>,
    pub proposed_by: Option<String>,
    pub proposed_at: Value,
    /// `status` when it is a string.
    pub status: Option<String>,
    pub quorum_required: Value,
    pub expires_at: Value,
    pub ratified_at: Value,
    /// Every vote record: frontmatter lists first (in the order written), then body blocks.
    pub votes: Vec<VoteRecord>,
}

/// Reads an amendment. `file_stem` is its file name without `.md`.
pub fn parse(text: &str, file_stem: &str) -> Result<Amendment, FrontmatterError> {
    let record = frontmatter::parse(text)?;
    let f = &record.fields;
    let string = |key: &str| match f.get(key) {
        Value::Null => None,
        v => Some(v.python_str()),
    };
    let mut votes = frontmatter_votes(f.get("votes"));
    votes.extend(body_votes(&record.body, record.body_line));
    Ok(Amendment {
        id: string("amendment_id")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| file_stem.to_string()),
        file_stem: file_stem.to_string(),
        title: string("title"),
        proposed_by: string("proposed_by"),
        proposed_at: f.get("proposed_at").clone(),
        status: f.get("status").as_str().map(str::to_string),
        quorum_required: f.get("quorum_required").clone(),
        expires_at: f.get("expires_at").clone(),
        ratified_at: f.get("ratified_at").clone(),
        votes,
    })
}

/// The frontmatter `votes` mapping, lists in the order written. A single id instead of a list
/// counts as a one-item list; keys that are not votes and items that are not strings are
/// skipped.
fn frontmatter_votes(votes: &Value) -> Vec<VoteRecord> {
    let Some(map) = votes.as_map() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, ids) in map.iter() {
        let Some(vote) = key.as_str().and_then(Vote::parse_prefix) else {
            continue;
        };
        let ids: &[Value] = match ids {
            Value::Seq(s) => s,
            one @ Value::Str(_) => std::slice::from_ref(one),
            _ => continue,
        };
        for id in ids.iter().filter_map(Value::as_str) {
            out.push(VoteRecord {
                citizen: id.trim().to_string(),
                vote,
                line: None,
            });
        }
    }
    out
}

static DATED_RESPONSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^#{2,4}[ \t]+[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[ T][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)?[ \t]+from[ \t]+([A-Za-z0-9_.-]+)[ \t]*:(.*)$",
    )
    .unwrap()
});
static NAMED_RESPONSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^#{2,4}[ \t]+(?i:response)[ \t]+(?i:from)[ \t]+([A-Za-z0-9_.-]+)[ \t]*\(([^)]*)\)")
        .unwrap()
});

/// Response blocks in a body, in order: `### <date[ time]> from <id>: <vote>` and
/// `## Response from <id> (<vote>)` (2 to 4 `#`). Lines inside fenced code blocks are
/// examples, not votes. `first_line` is the file line the body starts on.
pub fn body_votes(body: &str, first_line: usize) -> Vec<VoteRecord> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in body.lines().enumerate() {
        let t = line.trim_end();
        let lead = t.trim_start();
        for marker in ["```", "~~~"] {
            if lead.starts_with(marker) {
                fence = match fence {
                    None => Some(marker),
                    Some(open) if open == marker => None,
                    other => other,
                };
            }
        }
        if fence.is_some() || lead.starts_with("```") || lead.starts_with("~~~") {
            continue;
        }
        let found = if let Some(c) = DATED_RESPONSE.captures(t) {
            Vote::parse_prefix(&c[2]).map(|v| (c[1].to_string(), v))
        } else if let Some(c) = NAMED_RESPONSE.captures(t) {
            Vote::parse_prefix(&c[2]).map(|v| (c[1].to_string(), v))
        } else {
            None
        };
        if let Some((citizen, vote)) = found {
            out.push(VoteRecord {
                citizen,
                vote,
                line: Some(first_line + i),
            });
        }
    }
    out
}

/// Where votes are recorded, one file per voter and amendment:
/// `amendments/votes/<amendment file stem>/<citizen>.md`. Two machines voting on one amendment
/// at once write two different files, which git adds side by side and Syncthing copies
/// without a conflict; the amendment file itself is edited only by the tally.
pub const VOTES_DIR: &str = "amendments/votes";

/// The vote file of `citizen` on the amendment filed as `stem`; `None` for ids that are not
/// file names.
pub fn vote_path(stem: &str, citizen: &str) -> Option<String> {
    (crate::protocol::layout::is_slug(stem) && crate::protocol::layout::is_agent_id(citizen))
        .then(|| format!("{VOTES_DIR}/{stem}/{citizen}.md"))
}

/// The text of a vote file: frontmatter naming the amendment, the voter, the vote and when,
/// then the rationale as the body.
pub fn vote_file_text(
    stem: &str,
    citizen: &str,
    vote: Vote,
    voted_at: &str,
    rationale: Option<&str>,
) -> String {
    let rationale = rationale.map(str::trim).filter(|r| !r.is_empty());
    format!(
        "---\namendment_id: {stem}\nvoter: {citizen}\nvote: {}\nvoted_at: {voted_at}\n---\n{}",
        vote.as_str(),
        rationale.map_or(String::new(), |r| format!("\n{r}\n"))
    )
}

/// The vote a vote file records, for the citizen its file name (`stem`) names: the file name
/// decides who voted, so a copied file cannot vote for someone else. `None` when the file
/// holds no readable vote.
pub fn parse_vote_file(text: &str, stem: &str) -> Option<VoteRecord> {
    let record = frontmatter::parse(text).ok()?;
    let vote = record
        .fields
        .get("vote")
        .as_str()
        .and_then(Vote::parse_prefix)?;
    Some(VoteRecord {
        citizen: stem.to_string(),
        vote,
        line: None,
    })
}

/// Why a vote file counts for nobody, as a finding on `rel`: a frontmatter that does not
/// parse, or no `vote:` the tally reads. `None` when [`parse_vote_file`] reads its vote. The
/// tally skips such a file, so the voter's vote silently falls back to whatever the amendment
/// itself records for them; this is what `check` says instead.
pub fn vote_file_problem(rel: &str, text: &str) -> Option<Finding> {
    let record = match frontmatter::parse(text) {
        Ok(r) => r,
        Err(e) => {
            return Some(Finding::error(
                Code::BadYaml,
                rel,
                Some(e.line()),
                format!(
                    "{e}; this vote is not counted until the file reads `---`, \
                     `vote: agree` (or disagree, abstain, request_changes), `---`"
                ),
            ))
        }
    };
    let vote = record.fields.get("vote");
    if vote.as_str().and_then(Vote::parse_prefix).is_some() {
        return None;
    }
    // The line as written: YAML reads `vote: yes` as a boolean, which is not what was typed.
    let line = frontmatter::key_line(text, "vote");
    let written = match line.and_then(|n| text.lines().nth(n - 1)) {
        Some(l) if !matches!(vote, Value::Null) => format!("`{}`", quoted(l.trim())),
        _ => "no `vote:`".to_string(),
    };
    Some(Finding::error(
        Code::BadAmendment,
        rel,
        line.or(Some(1)),
        format!(
            "this vote file holds {written}, which the tally does not read, so the vote is not \
             counted; write `vote: agree`, `vote: disagree`, `vote: abstain` or \
             `vote: request_changes` (or vote again with `polisd amendment vote`)"
        ),
    ))
}

/// The votes that count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Votes {
    /// Each registered citizen's last vote (the proposer's implied `agree` included).
    pub by_citizen: BTreeMap<String, Vote>,
    /// Ids that voted but are not registered citizens, sorted, once each.
    pub unknown: Vec<String>,
}

impl Votes {
    pub fn count(&self, vote: Vote) -> usize {
        self.by_citizen.values().filter(|v| **v == vote).count()
    }
}

/// Each registered citizen's vote: the last record naming them; the proposer counts as
/// `agree` unless they voted otherwise. A proposer that is not a registered citizen (e.g.
/// `polis-reflector`) gets no implied vote: only citizens decide.
pub fn counted_votes(a: &Amendment, registered: &BTreeSet<String>) -> Votes {
    let mut votes = Votes::default();
    let mut unknown = BTreeSet::new();
    for r in &a.votes {
        if registered.contains(&r.citizen) {
            votes.by_citizen.insert(r.citizen.clone(), r.vote);
        } else {
            unknown.insert(r.citizen.clone());
        }
    }
    if let Some(p) = &a.proposed_by {
        if registered.contains(p) {
            votes.by_citizen.entry(p.clone()).or_insert(Vote::Agree);
        }
    }
    votes.unknown = unknown.into_iter().collect();
    votes
}

/// Findings for votes by ids that are not registered citizens (`check` reports them).
pub fn unknown_voter_findings(
    path: &str,
    a: &Amendment,
    registered: &BTreeSet<String>,
) -> Vec<Finding> {
    let mut seen = BTreeSet::new();
    a.votes
        .iter()
        .filter(|r| !registered.contains(&r.citizen) && seen.insert(r.citizen.clone()))
        .map(|r| {
            Finding::warning(
                Code::UnknownVoter,
                path,
                r.line,
                format!(
                    "`{}` voted `{}`, but `{}` is not a registered citizen (no `citizens/{}/capability_card.yml`), so the vote does not count. Register that citizen, or correct the id to a registered one",
                    quoted(&r.citizen),
                    r.vote.as_str(),
                    quoted(&r.citizen),
                    quoted(&r.citizen)
                ),
            )
        })
        .collect()
}

/// The quorum of SPEC §8: `quorum_required` when set (raised to at least 2), else
/// `max(2, active / 2 + 1)`. A quoted number counts; a fraction rounds up; anything else that
/// is not a number falls back to the default.
pub fn quorum(quorum_required: &Value, active: usize) -> usize {
    let default = MIN_QUORUM.max(active / 2 + 1);
    let set = match quorum_required {
        Value::Int(i) => Some(usize::try_from(*i).unwrap_or(0)),
        Value::BigInt(s) if !s.starts_with('-') => Some(usize::MAX),
        Value::BigInt(_) => Some(0),
        Value::Float(f) if f.is_finite() => Some(if *f <= 0.0 {
            0
        } else if *f >= usize::MAX as f64 {
            usize::MAX
        } else {
            f.ceil() as usize
        }),
        Value::Str(s) => s
            .trim()
            .parse::<i64>()
            .ok()
            .map(|i| usize::try_from(i).unwrap_or(0)),
        _ => None,
    };
    set.map_or(default, |q| q.max(MIN_QUORUM))
}

/// What the tally decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Ratified,
    Expired,
    Rejected,
    /// Still open.
    Pending,
    /// `status` is not `proposed`: nothing to tally (see [`needs_move`] for an interrupted
    /// ratification).
    Closed,
}

impl Action {
    /// The `status` value an outcome writes.
    pub fn status(self) -> Option<&'static str> {
        match self {
            Action::Ratified => Some("ratified"),
            Action::Expired => Some("expired"),
            Action::Rejected => Some("rejected"),
            Action::Pending | Action::Closed => None,
        }
    }
}

/// The tally of one amendment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub action: Action,
    pub agrees: usize,
    pub quorum: usize,
    /// One human sentence: why.
    pub detail: String,
    pub votes: Votes,
}

/// What the tally needs to know about the citizens.
#[derive(Debug, Clone, Copy)]
pub struct TallyContext<'a> {
    /// Citizens with a capability card.
    pub registered: &'a BTreeSet<String>,
    /// Authors with a chronicle line in the activity window
    /// ([`chronicle::active_authors`]); intersected with the voters minus `away` here.
    pub active: &'a BTreeSet<String>,
    /// Citizens whose status says `away`.
    pub away: &'a BTreeSet<String>,
    /// Citizens who have left the polis: their latest membership line is `left polis`
    /// ([`crate::protocol::contracts::handoff::departed`]). They are no voters.
    pub departed: &'a BTreeSet<String>,
    pub now: PolisTime,
}

/// The citizens whose votes count: registered and not departed. With [`active_voters`], the
/// one definition of who the quorum rules count (tally, notices, status, dashboard).
pub fn voters(ctx: &TallyContext<'_>) -> BTreeSet<String> {
    ctx.registered
        .iter()
        .filter(|c| !ctx.departed.contains(*c))
        .cloned()
        .collect()
}

/// The *active* citizens of SPEC §8, whose number sets the default quorum: voters with a
/// chronicle line in the activity window whose state is not `away`.
pub fn active_voters(ctx: &TallyContext<'_>) -> BTreeSet<String> {
    ctx.active
        .iter()
        .filter(|c| {
            ctx.registered.contains(*c) && !ctx.departed.contains(*c) && !ctx.away.contains(*c)
        })
        .cloned()
        .collect()
}

/// SPEC §8's tally, in its order: ratify, expire, reject, else pending. Only `status:
/// proposed` is tallied, as the reference does; anything else is [`Action::Closed`].
pub fn tally(a: &Amendment, ctx: &TallyContext<'_>) -> Outcome {
    let voters = voters(ctx);
    let votes = counted_votes(a, &voters);
    let quorum = quorum(&a.quorum_required, active_voters(ctx).len());
    let agrees = votes.count(Vote::Agree);
    let outcome = |action, detail: String| Outcome {
        action,
        agrees,
        quorum,
        detail,
        votes: votes.clone(),
    };
    if a.status.as_deref() != Some("proposed") {
        let status = a.status.as_deref().unwrap_or("missing");
        return outcome(
            Action::Closed,
            format!("status is `{}`, not `proposed`", quoted(status)),
        );
    }
    if agrees >= quorum {
        return outcome(
            Action::Ratified,
            format!("met quorum ({agrees} agree of {quorum} needed)"),
        );
    }
    match expiry(a, &ctx.now) {
        Expiry::Passed(when) => {
            return outcome(Action::Expired, format!("deadline passed ({when})"));
        }
        Expiry::Open(_) | Expiry::Never => {}
    }
    let undecided = voters
        .iter()
        .filter(|c| !ctx.away.contains(*c) && !votes.by_citizen.contains_key(*c))
        .count();
    let possible = agrees + undecided;
    if possible < quorum {
        return outcome(
            Action::Rejected,
            format!(
                "cannot meet quorum: {agrees} agree and {undecided} citizens left to vote, {quorum} agrees needed"
            ),
        );
    }
    let deadline = match expiry(a, &ctx.now) {
        Expiry::Open(when) => format!("; open until {when}"),
        _ => "; no deadline (no readable `expires_at` or `proposed_at`)".to_string(),
    };
    outcome(
        Action::Pending,
        format!("{agrees} agree of {quorum} needed, {undecided} citizens have not voted{deadline}"),
    )
}

/// Where an amendment stands against its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiry {
    /// The deadline has passed; the text says which deadline.
    Passed(String),
    /// Still open until the deadline described.
    Open(String),
    /// No readable `expires_at` or `proposed_at`: it never expires.
    Never,
}

/// A point in time as the protocol writes one: a YAML date or datetime, or a string holding
/// either. Aware datetimes are converted to the polis timezone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Day(NaiveDate),
    Moment(NaiveDateTime),
}

/// Reads a date or time value (`None` for anything else).
pub fn read_when(value: &Value, now: &PolisTime) -> Option<When> {
    match value {
        Value::Date(d) => Some(When::Day(*d)),
        Value::DateTime(ts) => Some(When::Moment(match ts.offset_seconds {
            Some(off) => {
                ts.local - Duration::seconds(i64::from(off))
                    + Duration::seconds(i64::from(now.zone.0.local_minus_utc()))
            }
            None => ts.local,
        })),
        Value::Str(s) => {
            let s = s.trim();
            if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                return Some(When::Day(d));
            }
            [
                "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%d %H:%M",
                "%Y-%m-%dT%H:%M:%S",
                "%Y-%m-%dT%H:%M",
            ]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
            .map(When::Moment)
        }
        _ => None,
    }
}

/// The deadline of SPEC §8: the end of the `expires_at` day (or that moment, for a datetime);
/// else `proposed_at` + 30 days. An `expires_at` that cannot be read falls back to the 30
/// days, so a typo never keeps an amendment open forever.
pub fn expiry(a: &Amendment, now: &PolisTime) -> Expiry {
    let now_t = now.now;
    match read_when(&a.expires_at, now) {
        Some(When::Day(d)) => {
            let text = d.format("%Y-%m-%d").to_string();
            return if now_t.date() > d {
                Expiry::Passed(format!("expires_at {text}"))
            } else {
                Expiry::Open(format!("the end of {text}"))
            };
        }
        Some(When::Moment(t)) => {
            let text = t.format("%Y-%m-%d %H:%M:%S").to_string();
            return if now_t > t {
                Expiry::Passed(format!("expires_at {text}"))
            } else {
                Expiry::Open(text)
            };
        }
        None => {}
    }
    let start = match read_when(&a.proposed_at, now) {
        Some(When::Day(d)) => d.and_time(chrono::NaiveTime::MIN),
        Some(When::Moment(t)) => t,
        None => return Expiry::Never,
    };
    let end = start + Duration::days(DEFAULT_LIFETIME_DAYS);
    let text = end.format("%Y-%m-%d %H:%M:%S").to_string();
    if now_t > end {
        Expiry::Passed(format!(
            "{DEFAULT_LIFETIME_DAYS} days after proposed_at, {text}"
        ))
    } else {
        Expiry::Open(text)
    }
}

/// An interrupted ratification: the file says `ratified` but is still in `proposed/`. The next
/// pass moves it without tallying again, once [`ratification_stands`] says it was one.
pub fn needs_move(a: &Amendment, in_proposed: bool) -> bool {
    in_proposed && a.status.as_deref() == Some("ratified")
}

/// Whether an amendment that [`needs_move`] is a ratification polisd may finish: its votes
/// reach the quorum, as they did when the tally set `status: ratified`. A status typed by hand
/// without them is no ratification: finishing it would have polisd move the file, chronicle
/// `ratified amendment` in its own name and tell every citizen to edit the constitution for a
/// proposal the polis never passed. [`hand_ratified_finding`] reports it instead.
pub fn ratification_stands(a: &Amendment, ctx: &TallyContext<'_>) -> bool {
    let o = as_proposed(a, ctx);
    o.agrees >= o.quorum
}

fn as_proposed(a: &Amendment, ctx: &TallyContext<'_>) -> Outcome {
    let proposed = Amendment {
        status: Some("proposed".to_string()),
        ..a.clone()
    };
    tally(&proposed, ctx)
}

/// The finding about an amendment in `proposed/` whose status says `ratified` while its votes
/// do not reach the quorum; `None` for any other. `text` is the file's, for the line.
pub fn hand_ratified_finding(
    rel: &str,
    text: &str,
    a: &Amendment,
    ctx: &TallyContext<'_>,
) -> Option<Finding> {
    if !needs_move(a, true) {
        return None;
    }
    let o = as_proposed(a, ctx);
    (o.agrees < o.quorum).then(|| {
        Finding::error(
            Code::BadAmendment,
            rel,
            frontmatter::key_line(text, "status"),
            format!(
                "`status: ratified`, but the votes do not reach the quorum ({} agree of {} \
                 needed), so this is no ratification: only the tally ratifies. polisd leaves \
                 the file in proposed/ and writes nothing for it; set `status: proposed` so \
                 the tally decides",
                o.agrees, o.quorum
            ),
        )
    })
}

/// Records an outcome in an amendment's text: sets `status` and, when given, `ratified_at`
/// (added after `status` if missing, written single-quoted as the reference's dump writes it,
/// so it reads back as a string). Every other byte is kept, BOM and CRLF included.
///
/// The text comes back unchanged when it cannot be spliced safely: no frontmatter, or a
/// frontmatter (e.g. flow style) that would not read back with the new values. The caller sees
/// that nothing changed and reports the file instead of moving it.
pub fn set_status(text: &str, status: &str, ratified_at: Option<&str>) -> String {
    let Some(mut out) = frontmatter::splice_field(text, "status", status, None) else {
        return text.to_string();
    };
    if let Some(stamp) = ratified_at {
        let quoted = format!("'{}'", stamp.replace('\'', "''"));
        match frontmatter::splice_field(&out, "ratified_at", &quoted, Some("status")) {
            Some(t) => out = t,
            None => return text.to_string(),
        }
    }
    let reads_back = frontmatter::parse(&out).is_ok_and(|r| {
        r.get("status").as_str() == Some(status)
            && ratified_at.is_none_or(|t| r.get("ratified_at").as_str() == Some(t))
    });
    if reads_back {
        out
    } else {
        text.to_string()
    }
}

/// Whether [`set_status`] can record an outcome in `text`: false for a frontmatter it leaves
/// as it was (one flow mapping, no frontmatter). The tally then records nothing,
/// appends no line and moves nothing; `check` names the file.
pub fn outcome_recordable(text: &str) -> bool {
    set_status(text, "ratified", Some("2000-01-01 00:00:00")) != text
}

/// The chronicle line polisd appends for an outcome (newline included), `None` for pending and
/// closed amendments. A ratified amendment links its new home in `ratified/`; the others stay
/// in `proposed/`.
pub fn chronicle_line(a: &Amendment, outcome: &Outcome, now: &PolisTime) -> Option<String> {
    chronicle_line_for(a, outcome.action, &outcome.detail, now)
}

/// [`chronicle_line`] from an action and a detail, for an outcome recorded earlier (the next
/// pass after an interrupted ratification: `chronicle_line_for(a, Action::Ratified, "…", now)`).
pub fn chronicle_line_for(
    a: &Amendment,
    action: Action,
    detail: &str,
    now: &PolisTime,
) -> Option<String> {
    let (verb, folder) = outcome_verb(action)?;
    let title = a.title.as_deref().unwrap_or(&a.id);
    Some(chronicle::daemon_line(
        now,
        verb,
        Some(&link(a, folder)),
        &format!("{title}: {detail}"),
    ))
}

fn outcome_verb(action: Action) -> Option<(&'static str, &'static str)> {
    match action {
        Action::Ratified => Some(("ratified amendment", "ratified")),
        Action::Expired => Some(("expired amendment", "proposed")),
        Action::Rejected => Some(("rejected amendment", "proposed")),
        Action::Pending | Action::Closed => None,
    }
}

/// Whether one of the chronicle texts already records this outcome (its verb linking this
/// amendment, by anyone): a resumed pass appends the line only when this is false.
pub fn outcome_in_chronicle(texts: &[&str], a: &Amendment, action: Action) -> bool {
    let Some((verb, folder)) = outcome_verb(action) else {
        return false;
    };
    let target = link(a, folder);
    texts
        .iter()
        .any(|t| chronicle::rollover::has_line(t, verb, &target))
}

/// When an amendment's quorum was reached, read from the synced chronicle rather than a clock,
/// so that two machines tallying the same files write the same `ratified_at`: the
/// `quorum`-th earliest of the agreeing citizens' votes, each dated by the citizen's last line
/// on it: `voted on amendment`, or for the proposer's implied agree `proposed amendment`. `None` when the lines do not show it (votes edited in without their
/// lines); the caller then uses its clock.
pub fn quorum_reached_at(texts: &[&str], a: &Amendment, outcome: &Outcome) -> Option<String> {
    let mut stamps: Vec<NaiveDateTime> = agree_moments(texts, a, outcome)
        .into_values()
        .flatten()
        .collect();
    stamps.sort();
    let needed = outcome.quorum.max(1);
    stamps
        .get(needed - 1)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
}

/// The agreeing citizens whose vote no chronicle line in `texts` dates (see
/// [`quorum_reached_at`]), in id order. While a sync is still bringing files, such a vote's
/// line may be on its way: a quorum moment read without it is another machine's.
pub fn undated_agrees(texts: &[&str], a: &Amendment, outcome: &Outcome) -> Vec<String> {
    agree_moments(texts, a, outcome)
        .into_iter()
        .filter(|(_, at)| at.is_none())
        .map(|(id, _)| id.to_string())
        .collect()
}

/// Each agreeing citizen of `outcome`, with their last line on the amendment in `texts`
/// (`voted on amendment`, or the proposer's `proposed amendment`); `None` without one.
fn agree_moments<'a>(
    texts: &[&str],
    a: &Amendment,
    outcome: &'a Outcome,
) -> BTreeMap<&'a str, Option<NaiveDateTime>> {
    let target = chronicle::link_target(&link(a, "proposed"));
    let mut last: BTreeMap<&str, Option<NaiveDateTime>> = outcome
        .votes
        .by_citizen
        .iter()
        .filter(|(_, v)| **v == Vote::Agree)
        .map(|(id, _)| (id.as_str(), None))
        .collect();
    let scans: Vec<chronicle::Scan> = texts.iter().map(|t| chronicle::scan(t)).collect();
    for line in scans.iter().flat_map(|s| &s.lines) {
        let Ok(e) = chronicle::parse_entry(&line.text) else {
            continue;
        };
        let takes_part = e.verb == "voted on amendment"
            || (e.verb == "proposed amendment" && a.proposed_by.as_deref() == Some(e.author));
        if !takes_part || e.link.and_then(chronicle::link_target) != target {
            continue;
        }
        // A voter's last line is when their current vote was cast (the last record wins).
        if let Some(at) = last.get_mut(e.author) {
            *at = Some(at.map_or(e.stamp, |t| t.max(e.stamp)));
        }
    }
    last
}

/// The `ratified_at` a ratification writes: when the quorum was reached ([`quorum_reached_at`],
/// else `now`), never earlier than `proposed_at`. Chronicle stamps have minutes only, so the
/// vote that reached the quorum in the minute of the proposal reads as that minute's start,
/// before a `proposed_at` with seconds; the later stamp is then made equal, never earlier.
pub fn ratified_at(texts: &[&str], a: &Amendment, outcome: &Outcome, now: &PolisTime) -> String {
    const FORMAT: &str = "%Y-%m-%d %H:%M:%S";
    let reached = quorum_reached_at(texts, a, outcome).unwrap_or_else(|| now.second_stamp());
    let proposed = match read_when(&a.proposed_at, now) {
        Some(When::Moment(t)) => Some(t),
        Some(When::Day(d)) => d.and_hms_opt(0, 0, 0),
        None => None,
    };
    match (NaiveDateTime::parse_from_str(&reached, FORMAT), proposed) {
        (Ok(r), Some(p)) if r < p => p.format(FORMAT).to_string(),
        _ => reached,
    }
}

/// When an amendment's outcome happened, read from the synced files only, for the headings of
/// the notices about it (two machines stamp them the same way): a ratification at its
/// `ratified_at`; an expiry at its deadline (the end of the `expires_at` day, that moment for a
/// datetime, else `proposed_at` + 30 days); a rejection at the newest vote or proposal line on
/// it in `texts`, the last event that can have put the quorum out of reach. `None` when the
/// files do not show it.
pub fn decided_at(
    texts: &[&str],
    a: &Amendment,
    action: Action,
    now: &PolisTime,
) -> Option<NaiveDateTime> {
    let moment = |v: &Value| {
        read_when(v, now).map(|w| match w {
            When::Moment(t) => t,
            When::Day(d) => d.and_time(chrono::NaiveTime::MIN),
        })
    };
    match action {
        Action::Ratified => moment(&a.ratified_at),
        Action::Expired => match read_when(&a.expires_at, now) {
            Some(When::Day(d)) => d.succ_opt().map(|d| d.and_time(chrono::NaiveTime::MIN)),
            Some(When::Moment(t)) => Some(t),
            None => moment(&a.proposed_at).map(|t| t + Duration::days(DEFAULT_LIFETIME_DAYS)),
        },
        Action::Rejected => {
            let target = chronicle::link_target(&link(a, "proposed"));
            texts
                .iter()
                .flat_map(|t| chronicle::scan(t).lines)
                .filter_map(|line| {
                    let e = chronicle::parse_entry(&line.text).ok()?;
                    let on_it = matches!(e.verb, "voted on amendment" | "proposed amendment")
                        && e.link.and_then(chronicle::link_target) == target;
                    on_it.then_some(e.stamp)
                })
                .max()
                .or_else(|| moment(&a.proposed_at))
        }
        Action::Pending | Action::Closed => None,
    }
}

/// The action a recorded `status` stands for (`ratified`, `expired`, `rejected`).
pub fn recorded_action(a: &Amendment) -> Option<Action> {
    match a.status.as_deref()? {
        "ratified" => Some(Action::Ratified),
        "expired" => Some(Action::Expired),
        "rejected" => Some(Action::Rejected),
        _ => None,
    }
}

/// Who hears of a decided amendment (SPEC §8, §9): of a ratification every active citizen and
/// the index keeper, of a rejection or an expiry the proposer. A system citizen (the reflector
/// that drafts proposals) has no inbox, so it is never one: a notice to it would wait forever
/// for a card that no one writes.
pub fn outcome_recipients(
    a: &Amendment,
    ratified: bool,
    active: &BTreeSet<String>,
    index_keeper: Option<&String>,
) -> BTreeSet<String> {
    let mut recipients = BTreeSet::new();
    if ratified {
        recipients.extend(active.iter().cloned());
        recipients.extend(index_keeper.cloned());
    } else {
        recipients.extend(a.proposed_by.iter().cloned());
    }
    recipients.retain(|r| !crate::protocol::layout::is_system_citizen(r));
    recipients
}

/// The wikilink target of an amendment in a folder (`proposed` or `ratified`).
pub fn link(a: &Amendment, folder: &str) -> String {
    format!("amendments/{folder}/{}", a.file_stem)
}

// ---------------------------------------------------------------------------------------------
// Writing amendments: a new proposal, and a vote as the reference's `vote_amendment` casts it

/// Why a vote cannot be written into an amendment's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VoteError {
    #[error("{0}; fix the frontmatter by hand, then vote again")]
    Frontmatter(#[from] FrontmatterError),
    #[error(
        "the amendment's status is `{}`, not `proposed`; only a proposed amendment takes votes",
        quoted(.0)
    )]
    NotProposed(String),
    /// What to do next is the caller's to say: a tally records it as expired.
    #[error("its deadline has passed ({0}) and it takes no more votes")]
    Expired(String),
    #[error("`votes:` is not a mapping of vote -> list of ids; fix it by hand, then vote again")]
    BadVotes,
    #[error("polisd cannot rewrite this frontmatter as PyYAML would ({0}); vote by adding a `## Response from <id> (<vote>)` block by hand")]
    Emit(#[from] crate::yaml::EmitError),
}

/// The text of `text` with `citizen`'s vote cast as the reference casts it: the id leaves
/// every `votes` list and joins `vote`'s (missing lists are added, in the reference's order),
/// the citizen's earlier `## Response from <id>` block is removed and a new one appended, and
/// the frontmatter is written again as PyYAML dumps it. Deliberate difference: a `votes` list
/// written as null counts as empty (the reference crashes on it).
pub fn cast_vote(
    text: &str,
    citizen: &str,
    vote: Vote,
    rationale: Option<&str>,
) -> Result<String, VoteError> {
    let record = frontmatter::parse(text)?;
    let mut fields = match record.fields {
        Value::Map(m) => m,
        _ => crate::yaml::Mapping::new(),
    };
    let status = fields.get("status").cloned().unwrap_or(Value::Null);
    if status.as_str() != Some("proposed") {
        return Err(VoteError::NotProposed(status.python_str()));
    }
    let mut votes = match fields.get("votes") {
        None | Some(Value::Null) => crate::yaml::Mapping::new(),
        Some(Value::Map(m)) => m.clone(),
        Some(_) => return Err(VoteError::BadVotes),
    };
    for kind in Vote::ALL {
        let mut list = match votes.get(kind.as_str()) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Seq(items)) => items.clone(),
            Some(_) => return Err(VoteError::BadVotes),
        };
        if let Some(at) = list.iter().position(|v| v.as_str() == Some(citizen)) {
            list.remove(at);
        }
        if kind == vote {
            list.push(Value::Str(citizen.to_string()));
        }
        votes.insert(Value::Str(kind.as_str().into()), Value::Seq(list));
    }
    fields.insert(Value::Str("votes".into()), Value::Map(votes));
    let head = crate::yaml::dump(&Value::Map(fields), &crate::yaml::DumpOptions::FRONTMATTER)?;

    let own = format!("## Response from {citizen}");
    let mut kept = Vec::new();
    let mut skipping = false;
    for line in record.body.lines() {
        if line.starts_with(&own) {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("## Response from ") {
            skipping = false;
        }
        if !skipping {
            kept.push(line);
        }
    }
    let mut body = kept.join("\n").trim_end().to_string();
    body.push_str(&format!(
        "\n\n## Response from {citizen} ({})",
        vote.as_str()
    ));
    if let Some(r) = rationale.map(str::trim).filter(|r| !r.is_empty()) {
        body.push('\n');
        body.push_str(r);
    }
    Ok(format!("---\n{head}---\n{body}\n"))
}

/// What `amendment propose` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAmendment {
    pub amendment_id: String,
    pub title: String,
    pub proposed_by: String,
    /// `YYYY-MM-DD HH:MM:SS` in the polis timezone.
    pub proposed_at: String,
    pub quorum_required: Option<u32>,
    /// `YYYY-MM-DD`.
    pub expires_at: String,
    pub body: String,
    /// More frontmatter keys, written after `status` in this order (reflection's `kind`,
    /// `reflect_slug`, evidence, …, as the reference's reflect writes them).
    pub extra: Vec<(String, Value)>,
}

/// The bytes of a new amendment, in the key order the reference's proposals use.
pub fn render_new(a: &NewAmendment) -> Result<String, crate::yaml::EmitError> {
    let s = |v: &str| Value::Str(v.to_string());
    let mut votes = crate::yaml::Mapping::new();
    for kind in Vote::ALL {
        votes.insert(s(kind.as_str()), Value::Seq(Vec::new()));
    }
    let mut m = crate::yaml::Mapping::new();
    m.insert(s("amendment_id"), s(&a.amendment_id));
    m.insert(s("title"), s(&a.title));
    m.insert(s("proposed_by"), s(&a.proposed_by));
    m.insert(s("proposed_at"), s(&a.proposed_at));
    m.insert(s("status"), s("proposed"));
    for (key, value) in &a.extra {
        m.insert(s(key), value.clone());
    }
    m.insert(
        s("quorum_required"),
        a.quorum_required
            .map_or(Value::Null, |q| Value::Int(q.into())),
    );
    m.insert(s("votes"), Value::Map(votes));
    m.insert(s("ratified_at"), Value::Null);
    m.insert(s("expires_at"), s(&a.expires_at));
    let head = crate::yaml::dump(&Value::Map(m), &crate::yaml::DumpOptions::FRONTMATTER)?;
    let body = a.body.trim();
    let body = if body.is_empty() {
        "## Problem\n<what goes wrong today>\n\n## Proposed change\n<the change to CONSTITUTION.md>\n\n## Rationale\n<why>"
    } else {
        body
    };
    Ok(format!(
        "---\n{head}---\n\n# Amendment: {}\n\n{body}\n",
        a.title
    ))
}

/// Whether the amendment file `existing` is the proposal `new` (what [`render_new`] writes)
/// filed already, apart from its id and the second it was proposed: the same proposer, title,
/// quorum, deadline and text, and still untouched by a tally. A replayed command, not a second
/// proposal that would split the votes.
pub fn same_proposal(existing: &str, new: &str) -> bool {
    crate::protocol::frontmatter::same_record_apart_from(
        existing,
        new,
        &["amendment_id", "proposed_at"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_proposal_ignores_only_the_id_and_the_second() {
        let new = |id: &str, at: &str, by: &str| {
            render_new(&NewAmendment {
                amendment_id: id.into(),
                title: "Floor".into(),
                proposed_by: by.into(),
                proposed_at: at.into(),
                quorum_required: None,
                expires_at: "2026-04-01".into(),
                body: String::new(),
                extra: Vec::new(),
            })
            .unwrap()
        };
        let first = new("2026-03-02-floor", "2026-03-02 10:00:00", "alpha-agent");
        let again = new("2026-03-02-floor-2", "2026-03-02 10:01:00", "alpha-agent");
        assert!(same_proposal(&first, &again));
        let other = new("2026-03-02-floor-2", "2026-03-02 10:01:00", "bravo-agent");
        assert!(!same_proposal(&first, &other));
        let tallied = set_status(&first, "expired", None);
        assert!(!same_proposal(&tallied, &again));
    }

    #[test]
    fn a_vote_file_reads_back_as_the_vote_of_its_file_name() {
        let text = vote_file_text(
            "2026-03-01-x",
            "bob-agent-one",
            Vote::Disagree,
            "2026-03-02 10:00",
            Some("too slow"),
        );
        assert!(text.starts_with(
            "---\namendment_id: 2026-03-01-x\nvoter: bob-agent-one\nvote: disagree\n"
        ));
        assert!(text.ends_with("---\n\ntoo slow\n"), "{text}");
        let r = parse_vote_file(&text, "bob-agent-one").unwrap();
        assert_eq!(
            (r.citizen.as_str(), r.vote),
            ("bob-agent-one", Vote::Disagree)
        );
        assert_eq!(
            parse_vote_file(&text, "carol-agent-one").unwrap().citizen,
            "carol-agent-one"
        );
        assert!(parse_vote_file("---\nvote: maybe\n---\n", "bob-agent-one").is_none());
        assert_eq!(
            vote_path("2026-03-01-x", "bob-agent-one").as_deref(),
            Some("amendments/votes/2026-03-01-x/bob-agent-one.md")
        );
        assert!(vote_path("../x", "bob-agent-one").is_none());
    }

    #[test]
    fn cast_vote_moves_the_id_and_replaces_the_block_as_the_reference() {
        let text = "---\namendment_id: 2026-03-01-x\ntitle: X\nstatus: proposed\nvotes:\n  agree: null\n  disagree:\n  - bob-agent-one\n---\n\n# Amendment: X\n\n## Response from bob-agent-one (disagree)\nno\n\n## Response from carol-agent-one (agree)\nyes\n";
        let out = cast_vote(text, "bob-agent-one", Vote::Agree, Some(" fine now ")).unwrap();
        // The reference's fence pattern (`\n---\s*\n`) swallows the blank line after the fence.
        assert_eq!(
            out,
            "---\namendment_id: 2026-03-01-x\ntitle: X\nstatus: proposed\nvotes:\n  agree:\n  - bob-agent-one\n  disagree: []\n  abstain: []\n  request_changes: []\n---\n# Amendment: X\n\n## Response from carol-agent-one (agree)\nyes\n\n## Response from bob-agent-one (agree)\nfine now\n"
        );
        let ratified = text.replace("status: proposed", "status: ratified");
        assert!(matches!(
            cast_vote(&ratified, "bob-agent-one", Vote::Agree, None),
            Err(VoteError::NotProposed(_))
        ));
    }

    #[test]
    fn outcome_recipients_never_include_a_system_citizen() {
        let proposal = |by: &str| {
            let text = format!(
                "---\namendment_id: 2026-03-01-x\nproposed_by: {by}\nstatus: rejected\n---\n"
            );
            parse(&text, "2026-03-01-x").unwrap()
        };
        let active = set(&["alpha-agent", "bravo-agent"]);
        let keeper = "keeper-agent".to_string();
        // A rejection goes to its proposer, unless that is the reflector, which has no inbox.
        assert_eq!(
            outcome_recipients(&proposal("alpha-agent"), false, &active, Some(&keeper)),
            set(&["alpha-agent"])
        );
        assert_eq!(
            outcome_recipients(&proposal("polis-reflector"), false, &active, Some(&keeper)),
            set(&[])
        );
        // A ratification goes to every active citizen and the index keeper.
        assert_eq!(
            outcome_recipients(&proposal("polis-reflector"), true, &active, Some(&keeper)),
            set(&["alpha-agent", "bravo-agent", "keeper-agent"])
        );
    }

    use crate::protocol::clock::PolisZone;
    use proptest::prelude::*;

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), stamp).unwrap()
    }

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    const A: &str = "alpha-agent";
    const B: &str = "bravo-agent";
    const C: &str = "charlie-agent";
    const D: &str = "delta-agent";

    struct World {
        registered: BTreeSet<String>,
        active: BTreeSet<String>,
        away: BTreeSet<String>,
        departed: BTreeSet<String>,
    }

    impl World {
        fn all_active() -> World {
            World {
                registered: set(&[A, B, C, D]),
                active: set(&[A, B, C, D]),
                away: set(&[]),
                departed: set(&[]),
            }
        }

        fn tally(&self, text: &str, now: &str) -> Outcome {
            let a = parse(text, "2026-03-01-floor").unwrap();
            tally(
                &a,
                &TallyContext {
                    registered: &self.registered,
                    active: &self.active,
                    away: &self.away,
                    departed: &self.departed,
                    now: at(now),
                },
            )
        }
    }

    fn amendment(extra: &str, body: &str) -> String {
        format!(
            "---\namendment_id: 2026-03-01-floor\ntitle: Quality floor\nproposed_by: {A}\nproposed_at: 2026-03-01 10:00:00\nstatus: proposed\n{extra}---\n\n## Problem\n\nx\n{body}"
        )
    }

    #[test]
    fn tally_unquoted_expires_at() {
        let w = World::all_active();
        // Unquoted: a YAML date (the reference's strptime crashes on it).
        let text = amendment("expires_at: 2026-03-10\n", "");
        assert_eq!(w.tally(&text, "2026-03-10 23:59").action, Action::Pending);
        assert_eq!(w.tally(&text, "2026-03-11 00:00").action, Action::Expired);
        let quoted = amendment("expires_at: '2026-03-10'\n", "");
        assert_eq!(w.tally(&quoted, "2026-03-11 00:00").action, Action::Expired);
        // Absent: proposed_at + 30 days.
        let none = amendment("", "");
        assert_eq!(w.tally(&none, "2026-03-31 10:00").action, Action::Pending);
        assert_eq!(w.tally(&none, "2026-03-31 10:01").action, Action::Expired);
        // proposed_at as a date or a string.
        let date = none.replace("2026-03-01 10:00:00", "2026-03-01");
        assert_eq!(w.tally(&date, "2026-03-31 00:01").action, Action::Expired);
        let string = none.replace("2026-03-01 10:00:00", "'2026-03-01 10:00'");
        assert_eq!(w.tally(&string, "2026-03-31 10:01").action, Action::Expired);
    }

    #[test]
    fn quorum_reached_at_is_read_from_the_chronicle_not_a_clock() {
        let w = World::all_active();
        let body = format!("\n## Response from {B} (agree)\n\n## Response from {C} (agree)\n");
        let text = amendment("", &body);
        let o = w.tally(&text, "2026-03-04 10:00");
        assert_eq!((o.action, o.quorum), (Action::Ratified, 3));
        let a = parse(&text, "2026-03-01-floor").unwrap();
        let link = "[[amendments/proposed/2026-03-01-floor]]";
        // B first disagreed, then agreed at 12:00; C agreed at 11:00; D's line is no agree.
        let chron = format!(
            "- 2026-03-01 10:00 | {A} | proposed amendment | {link} | Quality floor\n\
             - 2026-03-01 10:30 | {B} | voted on amendment | {link} | disagree: -\n\
             - 2026-03-01 11:00 | {C} | voted on amendment | {link} | agree: -\n\
             - 2026-03-01 11:30 | {D} | voted on amendment | [[amendments/proposed/other]] | agree: -\n\
             - 2026-03-01 12:00 | {B} | voted on amendment | {link} | agree: -\n"
        );
        assert_eq!(
            quorum_reached_at(&[&chron], &a, &o).as_deref(),
            Some("2026-03-01 12:00:00"),
            "the third agreeing vote, dated by its voter's last line"
        );
        // The same files give the same stamp; missing lines give none (the caller's clock).
        let without_b = chron.replace(&format!("{B} | voted"), &format!("{D} | voted"));
        assert_eq!(quorum_reached_at(&[&without_b], &a, &o), None);
    }

    #[test]
    fn undated_agrees_names_the_votes_whose_lines_have_not_arrived() {
        let w = World::all_active();
        let body = format!("\n## Response from {B} (agree)\n\n## Response from {C} (agree)\n");
        let text = amendment("", &body);
        let o = w.tally(&text, "2026-03-04 10:00");
        let a = parse(&text, "2026-03-01-floor").unwrap();
        let link = "[[amendments/proposed/2026-03-01-floor]]";
        let proposal =
            format!("- 2026-03-01 10:00 | {A} | proposed amendment | {link} | Quality floor\n");
        let b = format!("- 2026-03-01 11:00 | {B} | voted on amendment | {link} | agree: -\n");
        let c = format!("- 2026-03-01 12:00 | {C} | voted on amendment | {link} | agree: -\n");
        let all = format!("{proposal}{b}{c}");
        assert!(undated_agrees(&[&all], &a, &o).is_empty());
        assert_eq!(
            undated_agrees(&[&format!("{proposal}{c}")], &a, &o),
            vec![B.to_string()]
        );
        assert_eq!(
            undated_agrees(&[&b], &a, &o),
            vec![A.to_string(), C.to_string()]
        );
    }

    #[test]
    fn ratified_at_is_never_before_proposed_at_when_minutes_round() {
        let w = World::all_active();
        let body = format!("\n## Response from {B} (agree)\n\n## Response from {C} (agree)\n");
        let text = amendment("", &body).replace("10:00:00", "10:00:42");
        let o = w.tally(&text, "2026-03-01 10:01");
        assert_eq!(o.action, Action::Ratified);
        let a = parse(&text, "2026-03-01-floor").unwrap();
        let link = "[[amendments/proposed/2026-03-01-floor]]";
        // Every vote in the proposal's minute: the chronicle says 10:00, before 10:00:42.
        let chron = format!(
            "- 2026-03-01 10:00 | {A} | proposed amendment | {link} | Quality floor\n\
             - 2026-03-01 10:00 | {B} | voted on amendment | {link} | agree: -\n\
             - 2026-03-01 10:00 | {C} | voted on amendment | {link} | agree: -\n"
        );
        let now = at("2026-03-01 10:01");
        assert_eq!(ratified_at(&[&chron], &a, &o, &now), "2026-03-01 10:00:42");
        // A later quorum is kept as it is; with no lines, the clock, clamped the same way.
        let later = chron.replace(&format!("10:00 | {C}"), &format!("10:05 | {C}"));
        assert_eq!(ratified_at(&[&later], &a, &o, &now), "2026-03-01 10:05:00");
        let early_clock = at("2026-03-01 09:59");
        assert_eq!(
            ratified_at(&[], &a, &o, &early_clock),
            "2026-03-01 10:00:42"
        );
    }

    #[test]
    fn tally_votes_only_in_body() {
        let w = World::all_active();
        let body = format!(
            "\n### 2026-03-02 14:00 from {B}: agree\nLooks right.\n\n## Response from {C} (request changes)\n\n### 2026-03-03 from {C}: Agree — after the fix\n"
        );
        let o = w.tally(&amendment("", &body), "2026-03-04 10:00");
        assert_eq!(o.agrees, 3);
        assert_eq!(o.quorum, 3);
        assert_eq!(o.action, Action::Ratified);
        assert_eq!(o.votes.by_citizen[C], Vote::Agree);
    }

    #[test]
    fn body_vote_overrides_frontmatter_and_last_wins() {
        let w = World::all_active();
        let text = amendment(
            &format!("votes:\n  agree: [{B}, {C}]\n  disagree: []\n"),
            &format!(
                "\n## Response from {B} (disagree)\n\n```\n## Response from {C} (disagree)\n```\n"
            ),
        );
        let o = w.tally(&text, "2026-03-04 10:00");
        assert_eq!(o.votes.by_citizen[B], Vote::Disagree);
        assert_eq!(
            o.votes.by_citizen[C],
            Vote::Agree,
            "fenced example is not a vote"
        );
        assert_eq!(o.agrees, 2);
    }

    #[test]
    fn tally_proposer_never_voted() {
        let w = World::all_active();
        let o = w.tally(&amendment("", ""), "2026-03-02 10:00");
        assert_eq!(o.votes.by_citizen[A], Vote::Agree);
        assert_eq!(o.agrees, 1);
        // The proposer voting otherwise overrides the implied agree.
        let o = w.tally(
            &amendment("", &format!("\n## Response from {A} (abstain)\n")),
            "2026-03-02 10:00",
        );
        assert_eq!(o.agrees, 0);
        assert_eq!(o.votes.by_citizen[A], Vote::Abstain);
    }

    #[test]
    fn tally_quorum_below_two_raised() {
        let w = World::all_active();
        // quorum_required 1 → 2: the proposer alone does not ratify.
        let one = amendment("quorum_required: 1\n", "");
        let o = w.tally(&one, "2026-03-02 10:00");
        assert_eq!((o.quorum, o.action), (2, Action::Pending));
        let zero = amendment("quorum_required: 0\n", "");
        assert_eq!(w.tally(&zero, "2026-03-02 10:00").quorum, 2);
        let with_b = amendment(
            "quorum_required: 1\n",
            &format!("\n### 2026-03-02 from {B}: agree\n"),
        );
        assert_eq!(
            w.tally(&with_b, "2026-03-02 10:00").action,
            Action::Ratified
        );
        assert_eq!(quorum(&Value::Null, 4), 3);
        assert_eq!(quorum(&Value::Null, 5), 3);
        assert_eq!(quorum(&Value::Null, 1), 2);
        assert_eq!(quorum(&Value::Str("4".into()), 1), 4);
        assert_eq!(quorum(&Value::Int(-3), 9), 2);
    }

    #[test]
    fn tally_zero_active_citizens_not_rejected() {
        let w = World {
            registered: set(&[A, B, C]),
            active: set(&[]),
            away: set(&[]),
            departed: set(&[]),
        };
        let o = w.tally(&amendment("", ""), "2026-03-02 10:00");
        assert_eq!(o.quorum, 2);
        assert_eq!(o.action, Action::Pending, "{}", o.detail);
    }

    #[test]
    fn tally_rejects_when_quorum_is_out_of_reach() {
        let w = World {
            registered: set(&[A, B, C, D]),
            active: set(&[A, B, C, D]),
            away: set(&[D]),
            departed: set(&[]),
        };
        // Quorum max(2, 3/2+1) = 2 over the three not away; B and C disagree.
        let body = format!("\n## Response from {B} (disagree)\n## Response from {C} (disagree)\n");
        let o = w.tally(&amendment("", &body), "2026-03-02 10:00");
        assert_eq!((o.agrees, o.quorum, o.action), (1, 2, Action::Rejected));
    }

    #[test]
    fn tally_leaves_out_citizens_who_left() {
        const E: &str = "echo-agent";
        // Five registered and active: quorum 3. Two left (their `left polis` line keeps them
        // in the activity window): quorum max(2, 3/2+1) = 2, and their votes do not count.
        let w = World {
            registered: set(&[A, B, C, D, E]),
            active: set(&[A, B, C, D, E]),
            away: set(&[]),
            departed: set(&[D, E]),
        };
        let body = format!("\n## Response from {D} (agree)\n");
        let o = w.tally(&amendment("", &body), "2026-03-02 10:00");
        assert_eq!((o.agrees, o.quorum, o.action), (1, 2, Action::Pending));
        // Those who left are not waited for: with B and C against, quorum is out of reach.
        let body = format!(
            "\n## Response from {B} (disagree)\n## Response from {C} (disagree)\n## Response from {E} (agree)\n"
        );
        let o = w.tally(&amendment("", &body), "2026-03-02 10:00");
        assert_eq!((o.agrees, o.quorum, o.action), (1, 2, Action::Rejected));
        let stayed = World {
            departed: set(&[]),
            ..w
        };
        let o = stayed.tally(&amendment("", &body), "2026-03-02 10:00");
        assert_eq!((o.agrees, o.quorum, o.action), (2, 3, Action::Pending));
    }

    #[test]
    fn unknown_voters_do_not_count_and_are_reported() {
        let w = World::all_active();
        let text = amendment(
            "votes:\n  agree: [ghost-agent]\n",
            "\n## Response from nobody-agent (agree)\n",
        );
        let o = w.tally(&text, "2026-03-02 10:00");
        assert_eq!(o.agrees, 1);
        assert_eq!(o.votes.unknown, vec!["ghost-agent", "nobody-agent"]);
        let a = parse(&text, "x").unwrap();
        let f = unknown_voter_findings("amendments/proposed/x.md", &a, &w.registered);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].code, Code::UnknownVoter);
        assert_eq!(f[1].line, Some(15));
    }

    #[test]
    fn tally_interrupted_ratification() {
        let w = World::all_active();
        let text = amendment("", "").replace("status: proposed", "status: ratified");
        let a = parse(&text, "2026-03-01-floor").unwrap();
        assert!(needs_move(&a, true));
        assert!(!needs_move(&a, false));
        assert_eq!(w.tally(&text, "2026-03-02 10:00").action, Action::Closed);
        let open = parse(&amendment("", ""), "2026-03-01-floor").unwrap();
        assert!(!needs_move(&open, true));
        // The resumed pass appends the line once.
        assert_eq!(recorded_action(&a), Some(Action::Ratified));
        let line = chronicle_line_for(
            &a,
            Action::Ratified,
            "ratified earlier",
            &at("2026-03-02 10:00"),
        )
        .unwrap();
        assert!(!outcome_in_chronicle(
            &["---\nfile_type: chronicle\n---\n"],
            &a,
            Action::Ratified
        ));
        assert!(outcome_in_chronicle(&["", &line], &a, Action::Ratified));
        assert!(!outcome_in_chronicle(&[&line], &a, Action::Expired));
    }

    #[test]
    fn set_status_splices_only_two_lines() {
        let text = amendment("ratified_at: null\nexpires_at: 2026-04-01\n", "");
        let out = set_status(&text, "ratified", Some("2026-03-02 10:00:00"));
        assert_eq!(
            out,
            text.replace("status: proposed", "status: ratified")
                .replace("ratified_at: null", "ratified_at: '2026-03-02 10:00:00'")
        );
        let r = frontmatter::parse(&out).unwrap();
        assert_eq!(
            r.get("ratified_at"),
            &Value::Str("2026-03-02 10:00:00".into())
        );
        // Missing ratified_at is added after status.
        let plain = amendment("", "");
        let out = set_status(&plain, "ratified", Some("2026-03-02 10:00:00"));
        assert!(out.contains("status: ratified\nratified_at: '2026-03-02 10:00:00'\n---\n"));
        assert_eq!(
            set_status(&plain, "expired", None),
            plain.replace("status: proposed", "status: expired")
        );
        assert_eq!(
            set_status("no frontmatter\n", "expired", None),
            "no frontmatter\n"
        );
    }

    #[test]
    fn bom_crlf_amendment_file() {
        let text = format!(
            "\u{feff}{}",
            amendment(
                "votes:\n  agree:\n  - bravo-agent\n",
                "\n## Response from charlie-agent (agree)\n"
            )
            .replace('\n', "\r\n")
        );
        let w = World::all_active();
        let o = w.tally(&text, "2026-03-02 10:00");
        assert_eq!((o.agrees, o.action), (3, Action::Ratified));
        let out = set_status(&text, "ratified", Some("2026-03-02 10:00:00"));
        assert_eq!(
            out,
            text.replace(
                "status: proposed\r\n",
                "status: ratified\r\nratified_at: '2026-03-02 10:00:00'\r\n"
            )
        );
        let back = parse(&out, "2026-03-01-floor").unwrap();
        assert_eq!(back.status.as_deref(), Some("ratified"));
    }

    #[test]
    fn lone_cr_amendment_file_gets_its_status() {
        // Regression: the status could not be spliced, so tally moved the file to ratified/
        // with `status: proposed` still in it.
        let text = amendment("ratified_at: null\n", "").replace('\n', "\r");
        let out = set_status(&text, "ratified", Some("2026-03-02 10:00:00"));
        assert_eq!(
            out,
            text.replace("status: proposed\r", "status: ratified\r")
                .replace(
                    "ratified_at: null\r",
                    "ratified_at: '2026-03-02 10:00:00'\r"
                )
        );
        let back = parse(&out, "2026-03-01-floor").unwrap();
        assert_eq!(back.status.as_deref(), Some("ratified"));
    }

    #[test]
    fn chronicle_lines_link_the_right_folder() {
        let w = World::all_active();
        let text = amendment(
            "quorum_required: 2\n",
            &format!("\n## Response from {B} (agree)\n"),
        );
        let a = parse(&text, "2026-03-01-floor").unwrap();
        let o = w.tally(&text, "2026-03-02 10:00");
        let line = chronicle_line(&a, &o, &at("2026-03-02 10:00")).unwrap();
        assert!(line.starts_with("- 2026-03-02 10:00 | polis-daemon | ratified amendment | [[amendments/ratified/2026-03-01-floor]] | Quality floor: met quorum"), "{line}");
        let expired = Outcome {
            action: Action::Expired,
            ..o.clone()
        };
        assert!(chronicle_line(&a, &expired, &at("2026-03-02 10:00"))
            .unwrap()
            .contains("| expired amendment | [[amendments/proposed/2026-03-01-floor]] |"));
        let rejected = Outcome {
            action: Action::Rejected,
            ..o.clone()
        };
        assert!(chronicle_line(&a, &rejected, &at("2026-03-02 10:00"))
            .unwrap()
            .contains("| rejected amendment | [[amendments/proposed/2026-03-01-floor]] |"));
        assert!(chronicle_line(
            &a,
            &Outcome {
                action: Action::Pending,
                ..o
            },
            &at("2026-03-02 10:00")
        )
        .is_none());
    }

    proptest! {
        #[test]
        fn vote_parser_never_panics(body in any::<String>(), head in "[#a-zA-Z0-9 ():_-]{0,40}") {
            let _ = body_votes(&body, 1);
            let _ = body_votes(&format!("{head}\n{body}"), 1);
            let _ = Vote::parse_prefix(&body);
            if let Ok(a) = parse(&body, "x") {
                let _ = tally(&a, &TallyContext { registered: &set(&[A]), active: &set(&[]), away: &set(&[]), departed: &set(&[]), now: at("2026-03-02 10:00") });
            }
            let _ = set_status(&body, "ratified", Some("2026-03-02 10:00:00"));
        }
    }
}
