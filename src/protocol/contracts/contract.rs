//! Contracts (SPEC §6, §7): the typed view of a contract's frontmatter, what a settled contract
//! contributes to routing stats, and the one edit polisd makes to a contract — filling its
//! `routing:` block.
//!
//! Pure: text and parsed values in, values and findings out. It never reads or writes a file;
//! `splice_routing` returns new text and leaves the compare-before-replace write to the writer.

use crate::protocol::clock::PolisZone;
use crate::protocol::finding::{quoted, Code, Finding};
use crate::protocol::frontmatter::{self, Record};
use crate::protocol::routing::stats::Settlement;
use crate::yaml::{self, Value};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use regex::Regex;
use std::sync::LazyLock;

/// The `routing:` block of a contract.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Routing {
    pub recommended_by_router: Option<String>,
    pub recommendation_score: Option<f64>,
    pub exploration: Option<bool>,
    pub override_: Value,
}

/// The `review:` block of a contract.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Review {
    pub required: Option<bool>,
    pub reviewer: Option<String>,
    pub status: Option<String>,
}

/// A contract's frontmatter, typed leniently: a field of the wrong type reads as absent, and the
/// raw value stays available in `fields`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Contract {
    pub contract_id: Option<String>,
    pub title: Option<String>,
    pub opened_by: Option<String>,
    pub opened_at: Value,
    pub owner: Option<String>,
    pub status: Option<String>,
    pub stakes: Option<String>,
    /// Tags in first-seen order, duplicates dropped; a plain string is one tag (SPEC §6 step 1).
    pub required_tags: Vec<String>,
    /// Items of `required_tags` that are not strings (they never match a tag).
    pub bad_tags: Vec<Value>,
    pub deadline: Value,
    /// `cost_ceiling` as written; `Value::Null` when present but null. Missing reads as
    /// `medium` through [`Contract::cost_ceiling`].
    pub cost_ceiling_raw: Option<Value>,
    pub routing: Routing,
    pub review: Review,
    pub settled_at: Value,
    pub quality_score: Value,
    pub actual_minutes: Value,
    /// Every frontmatter field as parsed.
    pub fields: Value,
    pub body: String,
    pub body_line: usize,
}

/// Python's `str(x)` for a scalar that stands for a name; `None` for null and collections.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null | Value::Seq(_) | Value::Map(_) => None,
        Value::Str(s) => Some(s.clone()),
        other => Some(other.python_str()),
    }
}

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// What the notices about a settled contract name besides its settlement: who opened it, its
/// title and its quality score (SPEC §9), read without building the whole [`Contract`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Heading {
    pub opened_by: Option<String>,
    /// Who settled it: the first to be told of a finding in the file.
    pub owner: Option<String>,
    pub title: Option<String>,
    pub quality: Option<i64>,
    /// The body holds a suggestion block (handoffs), so the file is worth reading
    /// again for them.
    pub suggests: bool,
}

impl Heading {
    pub fn of(record: &Record) -> Heading {
        let f = &record.fields;
        Heading {
            opened_by: string(f.get("opened_by")),
            owner: string(f.get("owner")),
            title: text(f.get("title")),
            quality: f.get("quality_score").as_i64(),
            suggests: record.body.contains("### Suggested"),
        }
    }
}

/// Splits a `required_tags` value into string tags (deduplicated, first-seen order) and the
/// items that are not strings.
pub fn tags_of(v: &Value) -> (Vec<String>, Vec<Value>) {
    let mut tags: Vec<String> = Vec::new();
    let mut bad = Vec::new();
    // Past a few tags a set answers "seen?", so a hostile list of 100,000 is not quadratic.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut push = |t: &str, tags: &mut Vec<String>| {
        let new = if tags.len() < 32 {
            !tags.iter().any(|x| x == t)
        } else {
            if seen.is_empty() {
                seen.extend(tags.iter().cloned());
            }
            seen.insert(t.to_string())
        };
        if new {
            tags.push(t.to_string());
        }
    };
    match v {
        Value::Null => {}
        Value::Str(s) if s.is_empty() => {}
        Value::Str(s) => push(s, &mut tags),
        Value::Seq(items) => {
            for item in items {
                match item {
                    Value::Str(s) => push(s, &mut tags),
                    other => bad.push(other.clone()),
                }
            }
        }
        other if !other.is_truthy() => {}
        other => bad.push(other.clone()),
    }
    (tags, bad)
}

impl Contract {
    pub fn from_record(record: &Record) -> Contract {
        let f = &record.fields;
        let (required_tags, bad_tags) = tags_of(f.get("required_tags"));
        let routing = f.get("routing");
        let review = f.get("review");
        let cost_ceiling_raw = f.as_map().and_then(|m| m.get("cost_ceiling")).cloned();
        Contract {
            contract_id: text(f.get("contract_id")),
            title: text(f.get("title")),
            opened_by: string(f.get("opened_by")),
            opened_at: f.get("opened_at").clone(),
            owner: string(f.get("owner")),
            status: string(f.get("status")),
            stakes: string(f.get("stakes")),
            required_tags,
            bad_tags,
            deadline: f.get("deadline").clone(),
            cost_ceiling_raw,
            routing: Routing {
                recommended_by_router: string(routing.get("recommended_by_router")),
                recommendation_score: match routing.get("recommendation_score") {
                    Value::Int(i) => Some(*i as f64),
                    Value::Float(x) => Some(*x),
                    _ => None,
                },
                exploration: match routing.get("exploration") {
                    Value::Bool(b) => Some(*b),
                    _ => None,
                },
                override_: routing.get("override").clone(),
            },
            review: Review {
                required: match review.get("required") {
                    Value::Bool(b) => Some(*b),
                    _ => None,
                },
                reviewer: string(review.get("reviewer")),
                status: string(review.get("status")),
            },
            settled_at: f.get("settled_at").clone(),
            quality_score: f.get("quality_score").clone(),
            actual_minutes: f.get("actual_minutes").clone(),
            fields: f.clone(),
            body: record.body.clone(),
            body_line: record.body_line,
        }
    }

    /// Parses a contract file's text.
    pub fn parse(raw: &str) -> Result<Contract, frontmatter::FrontmatterError> {
        frontmatter::parse(raw).map(|r| Contract::from_record(&r))
    }

    /// The cost ceiling the router compares: `medium` when the key is missing, `None` when it
    /// is present but not a string (which fits nothing in the table, as in the reference).
    pub fn cost_ceiling(&self) -> Option<&str> {
        match &self.cost_ceiling_raw {
            None => Some("medium"),
            Some(v) => v.as_str(),
        }
    }

    /// SPEC §7: a contract the router should fill in — nobody owns it and the router has not
    /// recommended anyone (a missing block counts as empty).
    pub fn wants_recommendation(&self) -> bool {
        self.fields.get("owner").is_null()
            && self
                .fields
                .get("routing")
                .get("recommended_by_router")
                .is_null()
    }
}

/// Where a settled contract's quality came from (SPEC §6 step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QualitySource {
    Frontmatter,
    BodyLine,
    BodyHeading,
    /// Nothing readable: 3 was assumed and the owner should be told.
    Default,
}

// The reference's patterns, adjusted so Rust matches what Python's `re` matches: Python's `\s`
// also takes U+001C..U+001F, and its IGNORECASE also matches `i` with `ı` and `İ`.
static QUALITY_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&py_pattern(
        r"^\s*(?:#{1,6}\s*)?Quality\s*self[-_ ]score\s*:\s*(\d+)\s*$",
    ))
    .unwrap()
});
static QUALITY_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&py_pattern(
        r"^\s*#{1,6}\s*Quality\s*self[-_ ]score\s*$\s*\n\s*\n\s*(\d+)\s*$",
    ))
    .unwrap()
});
static MINUTES_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&py_pattern(
        r"^\s*(?:#{1,6}\s*|[-*]\s+)?actual[_ ]minutes\s*:\s*(\d+)\s*$",
    ))
    .unwrap()
});

/// Whether `needle` (lowercase ASCII) is in `hay`, ASCII case ignored.
fn contains_ignoring_ascii_case(hay: &str, needle: &[u8]) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

fn py_pattern(p: &str) -> String {
    format!(
        "(?mi){}",
        p.replace(r"\s", r"[\s\x1C-\x1F]")
            .replace("Quality", "Qual[iıİ]ty")
            .replace("minutes", "m[iıİ]nutes")
    )
}
static ONE_DIGIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\d$").unwrap());

/// The value of a Unicode decimal digit (the reference's `\d` and `int()` accept them all).
/// Decimal digits come in runs of ten consecutive code points starting at zero, so the value
/// is the distance from the start of the run, modulo ten.
fn digit_value(c: char) -> u32 {
    if let Some(d) = c.to_digit(10) {
        return d;
    }
    let is_digit = |cp: u32| {
        char::from_u32(cp).is_some_and(|ch| ONE_DIGIT.is_match(ch.encode_utf8(&mut [0; 4])))
    };
    let mut start = c as u32;
    while start > 0 && is_digit(start - 1) {
        start -= 1;
    }
    (c as u32 - start) % 10
}

/// A run of `\d` characters as ASCII digits without leading zeros ("0" for zero).
fn ascii_digits(digits: &str) -> String {
    let s: String = digits
        .chars()
        .map(|c| char::from_digit(digit_value(c), 10).unwrap_or('0'))
        .skip_while(|c| *c == '0')
        .collect();
    if s.is_empty() {
        "0".to_string()
    } else {
        s
    }
}

/// An integer too long for `u64` saturates; only comparisons with 1 and 5 need it then.
fn digits_u64(ascii: &str) -> u64 {
    ascii.parse().unwrap_or(u64::MAX)
}

fn clamp_quality(q: i128) -> u8 {
    q.clamp(1, 5) as u8
}

/// SPEC §6 step 2. Body values are clamped too (the reference keeps them as written).
pub fn extract_quality(fields: &Value, body: &str) -> (u8, QualitySource) {
    match fields.get("quality_score") {
        Value::Int(i) => return (clamp_quality(*i as i128), QualitySource::Frontmatter),
        // Python's bool is an int: True and False both clamp to 1.
        Value::Bool(_) => return (1, QualitySource::Frontmatter),
        Value::BigInt(s) => {
            let q = if s.starts_with('-') { 1 } else { 5 };
            return (q, QualitySource::Frontmatter);
        }
        _ => {}
    }
    let from = |m: regex::Match<'_>| clamp_quality(digits_u64(&ascii_digits(m.as_str())) as i128);
    // Both patterns need "Qual", whose letters fold to ASCII only: most bodies are passed over
    // without compiling them.
    if !contains_ignoring_ascii_case(body, b"qual") {
        return (3, QualitySource::Default);
    }
    if let Some(c) = QUALITY_LINE.captures(body) {
        return (from(c.get(1).expect("group")), QualitySource::BodyLine);
    }
    if let Some(c) = QUALITY_HEADING.captures(body) {
        return (from(c.get(1).expect("group")), QualitySource::BodyHeading);
    }
    (3, QualitySource::Default)
}

/// SPEC §6 step 3. The result is the double the reference's arithmetic would use.
pub fn extract_minutes(fields: &Value, body: &str) -> f64 {
    match fields.get("actual_minutes") {
        Value::Int(i) => return (*i).max(1) as f64,
        Value::Bool(_) => return 1.0,
        Value::BigInt(s) => {
            return if s.starts_with('-') {
                1.0
            } else {
                s.parse().unwrap_or(f64::MAX)
            }
        }
        _ => {}
    }
    // The pattern needs "actual", whose letters fold to ASCII only (see extract_quality).
    if !contains_ignoring_ascii_case(body, b"actual") {
        return 30.0;
    }
    match MINUTES_LINE.captures(body) {
        // Python converts the int to a double with correct rounding; so does `parse`.
        Some(c) => ascii_digits(c.get(1).expect("group").as_str())
            .parse()
            .unwrap_or(f64::MAX),
        None => 30.0,
    }
}

static TIME_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:[Tt]|\s+)(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?)?\s*$",
    )
    .unwrap()
});

/// A settlement time as an instant in the polis timezone (SPEC §6 step 4): naive datetimes are
/// taken as polis time, aware ones are converted, dates are midnight, and strings are read in
/// any of the usual layouts. `None` when the value holds no recognisable time.
pub fn instant_of(v: &Value, zone: PolisZone) -> Option<NaiveDateTime> {
    let shift = |local: NaiveDateTime, offset: Option<i32>| -> Option<NaiveDateTime> {
        match offset {
            None => Some(local),
            Some(off) => {
                let utc = local.checked_sub_signed(chrono::Duration::seconds(off as i64))?;
                utc.checked_add_signed(chrono::Duration::seconds(zone.0.local_minus_utc() as i64))
            }
        }
    };
    match v {
        Value::Date(d) => Some(d.and_time(NaiveTime::MIN)),
        Value::DateTime(ts) => shift(ts.local, ts.offset_seconds),
        Value::Str(s) => {
            // The layouts polisd and the reference write, read without the pattern (which
            // reads them the same way: no fraction, no zone).
            if let Some((y, mo, d, time)) = crate::yaml::common_timestamp(s.as_bytes()) {
                let date = NaiveDate::from_ymd_opt(y as i32, mo, d)?;
                return Some(match time {
                    None => date.and_time(NaiveTime::MIN),
                    Some((h, m, sec)) => date.and_time(NaiveTime::from_hms_opt(h, m, sec)?),
                });
            }
            let c = TIME_TEXT.captures(s)?;
            let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
            let date = NaiveDate::from_ymd_opt(n(1)? as i32, n(2)?, n(3)?)?;
            let Some(hour) = n(4) else {
                return Some(date.and_time(NaiveTime::MIN));
            };
            let micros = c.get(7).map_or(0, |f| {
                let mut d: String = f.as_str().chars().take(6).collect();
                while d.len() < 6 {
                    d.push('0');
                }
                d.parse().unwrap_or(0)
            });
            let time = NaiveTime::from_hms_micro_opt(hour, n(5)?, n(6).unwrap_or(0), micros)?;
            let offset = c.get(8).map(|m| {
                let t = m.as_str();
                if t.eq_ignore_ascii_case("z") {
                    return 0;
                }
                let sign = if t.starts_with('-') { -1 } else { 1 };
                let digits: String = t[1..].chars().filter(|c| *c != ':').collect();
                let h: i32 = digits[..2].parse().unwrap_or(0);
                let m: i32 = digits.get(2..).and_then(|x| x.parse().ok()).unwrap_or(0);
                sign * (h * 3600 + m * 60)
            });
            shift(date.and_time(time), offset)
        }
        _ => None,
    }
}

/// What reading one file of `contracts/settled/` gave.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SettledRead {
    /// `None` when the file does not count: not `status: settled`, or unusable (then a finding
    /// says why).
    pub settlement: Option<Settlement>,
    pub findings: Vec<Finding>,
}

/// Reads a file of `contracts/settled/` into a [`Settlement`] (SPEC §6 steps 1–3). `path` is
/// relative to `_polis/` and only names the file in findings.
pub fn read_settled(path: &str, raw: &str, zone: PolisZone) -> SettledRead {
    match frontmatter::parse(raw) {
        Ok(record) => settlement_of(path, &record, zone),
        Err(e) => SettledRead {
            settlement: None,
            findings: vec![unreadable_frontmatter(path, &e)],
        },
    }
}

/// The finding for a settled contract whose frontmatter cannot be read.
pub fn unreadable_frontmatter(path: &str, e: &frontmatter::FrontmatterError) -> Finding {
    Finding::error(
        Code::BadYaml,
        path,
        Some(e.line()),
        format!("{e}; this settled contract is left out of routing_stats.yml until the frontmatter is fixed"),
    )
}

/// [`read_settled`] for a file whose frontmatter is already parsed.
pub fn settlement_of(path: &str, record: &Record, zone: PolisZone) -> SettledRead {
    let mut out = SettledRead::default();
    let f = &record.fields;
    if f.get("status").as_str() != Some("settled") {
        return out;
    }
    let owner = match f.get("owner") {
        Value::Str(s) if !s.is_empty() => s.clone(),
        other => {
            out.findings.push(Finding::error(
                Code::BadSettlement,
                path,
                None,
                format!(
                    "`owner` is {}, not a citizen id; routing_stats.yml cannot credit this settlement \
                     until `owner:` names the citizen who did the work",
                    describe(other)
                ),
            ));
            return out;
        }
    };
    let (tags, bad_tags) = tags_of(f.get("required_tags"));
    if !bad_tags.is_empty() {
        out.findings.push(Finding::warning(
            Code::BadSettlement,
            path,
            None,
            format!(
                "`required_tags` holds items that are not tag names ({}); they are ignored. \
                 Write tags as lowercase words, e.g. `required_tags: [python, docs]`",
                quoted(
                    &bad_tags
                        .iter()
                        .map(Value::python_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            ),
        ));
    }
    // `settled_at or opened_at`, with Python truthiness.
    let when = if f.get("settled_at").is_truthy() {
        f.get("settled_at")
    } else {
        f.get("opened_at")
    };
    let last_completed = when
        .is_truthy()
        .then(|| when.python_str().chars().take(10).collect::<String>());
    let instant = instant_of(when, zone);
    let when_text = if when.is_truthy() && instant.is_none() {
        when.python_str()
    } else {
        String::new()
    };
    let (quality, source) = extract_quality(f, &record.body);
    if source == QualitySource::Default {
        out.findings.push(Finding::warning(
            Code::QualityDefaulted,
            path,
            None,
            "no readable quality score, so 3 is assumed in routing_stats.yml; add \
             `quality_score: <1-5>` to the frontmatter (or a body line `Quality self-score: <1-5>`)",
        ));
    }
    let minutes = extract_minutes(f, &record.body);
    let routing = f.get("routing");
    let review = f.get("review");
    out.settlement = Some(Settlement {
        path: path.to_string(),
        owner,
        tags,
        instant,
        when_text,
        last_completed,
        quality,
        quality_defaulted: source == QualitySource::Default,
        minutes,
        // What reflection reads of a settled contract, as [`Contract::from_record`] reads it.
        recommended: string(routing.get("recommended_by_router")),
        guarded: f.get("stakes").as_str() == Some("high")
            || matches!(review.get("required"), Value::Bool(true))
            || review.get("reviewer").as_str().is_some(),
        renamed: text(f.get("contract_id"))
            .is_some_and(|id| id != crate::protocol::layout::record_stem(path)),
    });
    out
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "missing".to_string(),
        Value::Str(_) => "empty".to_string(),
        other => format!("`{}`", quoted(&other.python_str())),
    }
}

static ROUTING_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^routing\s*:\s*(.*?)\s*$").unwrap());
static CHILD_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([ \t]+)(recommended_by_router|recommendation_score|exploration)\s*:").unwrap()
});

/// One physical line of the original text: its content and its line end as written.
struct Line<'a> {
    content: &'a str,
    end: &'a str,
}

/// Splits at `\r\n`, `\n` or a lone `\r`, the line ends Python's universal newlines read.
fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'\n' => {
                out.push(Line {
                    content: &text[start..i],
                    end: &text[i..i + 1],
                });
                i += 1;
                start = i;
            }
            b'\r' => {
                let len = if b.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                out.push(Line {
                    content: &text[start..i],
                    end: &text[i..i + len],
                });
                i += len;
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < b.len() {
        out.push(Line {
            content: &text[start..],
            end: "",
        });
    }
    out
}

/// A recommended id as a YAML scalar that reads back as the same string.
fn yaml_scalar(id: &str) -> String {
    if matches!(yaml::load(id), Ok(Value::Str(ref s)) if s == id) && !id.contains(['#', '\'', '"'])
    {
        id.to_string()
    } else {
        format!("\"{}\"", id.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// SPEC §7: writes `recommended_by_router`, `recommendation_score` (3 decimals) and
/// `exploration` into the frontmatter's `routing:` block, adding the keys (or the block) when
/// missing. Every other byte is kept, line ends included. `None` when the text has no
/// frontmatter mapping, or when the block is written in a form this cannot splice safely
/// (e.g. a non-empty flow mapping); the result is re-read to prove nothing else changed.
pub fn splice_routing(
    text: &str,
    recommended: &str,
    score: f64,
    exploration: bool,
) -> Option<String> {
    if !score.is_finite() {
        return None;
    }
    let before = frontmatter::parse(text).ok()?;
    let normalised = frontmatter::normalise(text);
    let split = frontmatter::split(&normalised);
    let yaml_text = split.yaml?;
    let bom = if text.starts_with('\u{feff}') {
        "\u{feff}"
    } else {
        ""
    };
    let raw = &text[bom.len()..];
    let all = lines(raw);
    // Normalised and raw text have the same lines, so line numbers carry over.
    let first = split.yaml_line - 1;
    let fence = first + yaml_text.split('\n').count();
    if fence > all.len() {
        return None;
    }
    let default_end =
        all.get(first.saturating_sub(1))
            .map_or("\n", |l| if l.end.is_empty() { "\n" } else { l.end });
    let values = [
        ("recommended_by_router", yaml_scalar(recommended)),
        ("recommendation_score", format!("{score:.3}")),
        ("exploration", exploration.to_string()),
    ];

    // The last top-level `routing:` key wins, as in PyYAML.
    let routing_at = (first..fence).rfind(|&i| ROUTING_KEY.is_match(all[i].content));
    let mut out: Vec<String> = Vec::with_capacity(all.len() + 4);
    let push_line =
        |out: &mut Vec<String>, l: &Line<'_>| out.push(format!("{}{}", l.content, l.end));
    match routing_at {
        None => {
            for (i, l) in all.iter().enumerate() {
                if i == fence {
                    out.push(format!("routing:{default_end}"));
                    for (k, v) in &values {
                        out.push(format!("  {k}: {v}{default_end}"));
                    }
                }
                push_line(&mut out, l);
            }
        }
        Some(r) => {
            let inline = ROUTING_KEY
                .captures(all[r].content)
                .and_then(|c| c.get(1))
                .map_or("", |m| m.as_str());
            let inline_empty = inline.is_empty()
                || inline.starts_with('#')
                || matches!(inline, "null" | "Null" | "NULL" | "~" | "{}");
            if !inline_empty {
                return None;
            }
            // The block's lines: after `routing:` up to the next top-level line.
            let mut end = r + 1;
            while end < fence {
                let c = all[end].content;
                if c.trim().is_empty()
                    || c.starts_with([' ', '\t'])
                    || c.trim_start().starts_with('#')
                {
                    end += 1;
                } else {
                    break;
                }
            }
            let inline_value = !inline.is_empty() && !inline.starts_with('#');
            let is_content = |c: &str| !c.trim().is_empty() && !c.trim_start().starts_with('#');
            // `routing: null` with indented lines under it is not YAML we can reason about.
            if inline_value && (r + 1..end).any(|i| is_content(all[i].content)) {
                return None;
            }
            let indent = (r + 1..end)
                .map(|i| all[i].content)
                .find(|c| is_content(c))
                .map_or("  ".to_string(), |c| {
                    c[..c.len() - c.trim_start().len()].to_string()
                });
            let present: Vec<bool> = (0..3)
                .map(|k| has_child(&all, r + 1..end, &indent, values[k].0))
                .collect();
            // New keys go after the block's last non-blank line.
            let last_child = (r + 1..end)
                .rev()
                .find(|&i| !all[i].content.trim().is_empty())
                .unwrap_or(r);
            let mut seen = [false; 3];
            for (i, l) in all.iter().enumerate() {
                if i == r && inline_value {
                    out.push(format!("routing:{}", l.end));
                } else if (r + 1..end).contains(&i) {
                    match CHILD_KEY.captures(l.content) {
                        Some(c) if c[1] == *indent => {
                            let k = values.iter().position(|(k, _)| *k == &c[2]).expect("key");
                            if seen[k] {
                                // A duplicated key: PyYAML keeps the last, too subtle to splice.
                                return None;
                            }
                            seen[k] = true;
                            let (key, value) = &values[k];
                            out.push(format!("{indent}{key}: {value}{}", l.end));
                        }
                        _ => push_line(&mut out, l),
                    }
                } else {
                    push_line(&mut out, l);
                }
                if i == last_child {
                    if l.end.is_empty() {
                        out.last_mut().expect("pushed").push_str(default_end);
                    }
                    let end_here = if l.end.is_empty() { default_end } else { l.end };
                    for (k, (key, value)) in values.iter().enumerate() {
                        if !present[k] {
                            out.push(format!("{indent}{key}: {value}{end_here}"));
                        }
                    }
                }
            }
        }
    }
    let new_text = format!("{bom}{}", out.concat());
    // Prove the splice: the routing keys read back as written and nothing else changed.
    let after = frontmatter::parse(&new_text).ok()?;
    let routing = after.fields.get("routing");
    if routing.get("recommended_by_router").as_str() != Some(recommended)
        || routing.get("exploration") != &Value::Bool(exploration)
        || !matches!(
            routing.get("recommendation_score"),
            Value::Float(_) | Value::Int(_)
        )
    {
        return None;
    }
    let strip = |fields: &Value| -> Value {
        let mut m = fields.as_map().cloned().unwrap_or_default();
        if let Some(Value::Map(mut r)) = m.remove("routing") {
            for (k, _) in &values {
                r.remove(k);
            }
            m.insert(Value::Str("routing".into()), Value::Map(r));
        } else {
            m.insert(Value::Str("routing".into()), Value::Map(Default::default()));
        }
        Value::Map(m)
    };
    let same_rest = {
        let (a, b) = (strip(&before.fields), strip(&after.fields));
        // Key order may differ only by where `routing` sits; compare as lookups.
        let (ma, mb) = (a.as_map()?, b.as_map()?);
        ma.len() == mb.len()
            && ma.iter().all(|(k, v)| {
                k.as_str().is_some_and(|k| mb.get(k) == Some(v)) || k.as_str().is_none()
            })
    };
    if !same_rest || after.body != before.body {
        return None;
    }
    Some(new_text)
}

/// Whether the block's lines hold `key` at the block's indentation.
fn has_child(all: &[Line<'_>], block: std::ops::Range<usize>, indent: &str, key: &str) -> bool {
    block.into_iter().any(|i| {
        CHILD_KEY
            .captures(all[i].content)
            .is_some_and(|c| &c[1] == indent && &c[2] == key)
    })
}

// ---------------------------------------------------------------------------------------------
// Writing contracts as the reference's `polis contract` commands do

/// What `contract open` was asked for. Strings are as given; the caller has validated ids.
#[derive(Debug, Clone, PartialEq)]
pub struct NewContract {
    pub contract_id: String,
    pub title: String,
    pub opened_by: String,
    /// `YYYY-MM-DD HH:MM:SS` in the polis timezone.
    pub opened_at: String,
    pub stakes: String,
    pub required_tags: Vec<String>,
    pub deadline: Option<String>,
    pub cost_ceiling: String,
    /// The criteria given, then the inherited guardrails' (`[guardrail] <text>`).
    pub acceptance_criteria: Vec<String>,
}

/// The bytes of a new contract file: the reference's frontmatter keys in its order, dumped as
/// PyYAML's `safe_dump(sort_keys=False, allow_unicode=True)` does, and its body sections.
pub fn render_new(c: &NewContract) -> Result<String, yaml::EmitError> {
    let s = |v: &str| Value::Str(v.to_string());
    let strs = |v: &[String]| Value::Seq(v.iter().map(|x| s(x)).collect());
    let map = |pairs: Vec<(&str, Value)>| {
        let mut m = yaml::Mapping::new();
        for (k, v) in pairs {
            m.insert(s(k), v);
        }
        Value::Map(m)
    };
    let fields = map(vec![
        ("contract_id", s(&c.contract_id)),
        ("title", s(&c.title)),
        ("opened_by", s(&c.opened_by)),
        ("opened_at", s(&c.opened_at)),
        ("owner", Value::Null),
        ("status", s("proposed")),
        ("stakes", s(&c.stakes)),
        ("required_tags", strs(&c.required_tags)),
        ("deadline", c.deadline.as_deref().map_or(Value::Null, s)),
        ("cost_ceiling", s(&c.cost_ceiling)),
        ("acceptance_criteria", strs(&c.acceptance_criteria)),
        (
            "routing",
            map(vec![
                ("recommended_by_router", Value::Null),
                ("recommendation_score", Value::Null),
                ("exploration", Value::Null),
                ("override", Value::Null),
            ]),
        ),
        (
            "review",
            map(vec![
                ("required", Value::Bool(c.stakes == "high")),
                ("reviewer", Value::Null),
                ("status", Value::Null),
            ]),
        ),
        ("settled_at", Value::Null),
        ("quality_score", Value::Null),
        ("actual_minutes", Value::Null),
    ]);
    let yaml_text = yaml::dump(&fields, &crate::yaml::DumpOptions::FRONTMATTER)?;
    let criteria: String = if c.acceptance_criteria.is_empty() {
        "- <criterion>\n".to_string()
    } else {
        c.acceptance_criteria
            .iter()
            .map(|x| format!("- {x}\n"))
            .collect()
    };
    Ok(format!(
        "---\n{yaml_text}---\n\n# {title}\n\n## Intent\n\n### Goal\n<what and why>\n\n### Acceptance criteria\n{criteria}\n### Notes for the executor\n<context>\n",
        title = c.title
    ))
}

pub use crate::protocol::frontmatter::reference_scalar;

/// The stamp an ending (`settled_at`) writes: `now`, but never earlier than the contract's
/// `opened_at` or `claimed_at` (a clock behind the opener's, on another machine), so a record
/// never claims an order its history contradicts. Equal, not earlier, when they round alike.
pub fn ending_stamp(record: &Record, now_stamp: &str, zone: PolisZone) -> String {
    const FORMAT: &str = "%Y-%m-%d %H:%M:%S";
    let Ok(now) = NaiveDateTime::parse_from_str(now_stamp, FORMAT) else {
        return now_stamp.to_string();
    };
    let latest = ["opened_at", "claimed_at"]
        .iter()
        .filter_map(|k| instant_of(record.get(k), zone))
        .max();
    match latest {
        Some(t) if t > now => t.format(FORMAT).to_string(),
        _ => now_stamp.to_string(),
    }
}

/// Sets top-level scalars in a contract's frontmatter as the reference's claim, settle and
/// abandon do: each `key:` line is replaced, a missing key is added before the closing fence,
/// in the order given. Every other byte is kept. `None` when the text has no frontmatter.
pub fn set_fields(text: &str, updates: &[(&str, Value)]) -> Option<String> {
    let mut out = text.to_string();
    for (key, value) in updates {
        out = frontmatter::splice_field(&out, key, &reference_scalar(value), None)?;
    }
    Some(out)
}

/// Records a claim against the router's recommendation in `routing.override` as
/// `{by, overrode, why}` (`why: null` when none was given), keeping every other byte. `None`
/// when the block cannot be spliced so that it reads back exactly so.
pub fn set_override(text: &str, by: &str, overrode: &str, why: Option<&str>) -> Option<String> {
    let s = |v: &str| Value::Str(v.to_string());
    let why_value = why.map_or(Value::Null, s);
    let value = format!(
        "{{by: {}, overrode: {}, why: {}}}",
        reference_scalar(&s(by)),
        reference_scalar(&s(overrode)),
        reference_scalar(&why_value)
    );
    let out = frontmatter::splice_block_field(text, "routing", "override", &value)?;
    let back = Contract::parse(&out).ok()?;
    let o = &back.routing.override_;
    let ok = o.get("by").as_str() == Some(by)
        && o.get("overrode").as_str() == Some(overrode)
        && o.get("why").as_str() == why
        && frontmatter::parse(&out).ok()?.body == frontmatter::parse(text).ok()?.body;
    ok.then_some(out)
}

/// The `## Settlement` section `contract settle` adds when the body has none: the quality and
/// minutes in the lines the reconcile rules read back (SPEC §6), then the outcome.
pub fn settlement_section(
    by: &str,
    at: &str,
    quality: u8,
    minutes: Option<u32>,
    outcome: Option<&str>,
) -> String {
    let mut s =
        format!("\n## Settlement\n\nSettled by {by} at {at}.\n\nQuality self-score: {quality}\n");
    if let Some(m) = minutes {
        s.push_str(&format!("actual_minutes: {m}\n"));
    }
    if let Some(o) = outcome.map(str::trim).filter(|o| !o.is_empty()) {
        s.push_str(&format!("\n### Outcome\n{o}\n"));
    }
    s
}

/// Whether a body already has a `## Settlement` heading.
pub fn has_settlement_section(text: &str) -> bool {
    text.lines().any(|l| l.trim_end() == "## Settlement")
}

/// Appends `section` to a file's text, after exactly one newline at its end.
pub fn append_section(text: &str, section: &str) -> String {
    // A file an agent keeps in CRLF gets its added lines in CRLF too, not a mix.
    let crlf = text.contains("\r\n");
    let mut out = text.to_string();
    if !out.ends_with('\n') {
        out.push_str(if crlf { "\r\n" } else { "\n" });
    }
    if crlf {
        out.push_str(&section.replace("\r\n", "\n").replace('\n', "\r\n"));
    } else {
        out.push_str(section);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(body: &str) -> (u8, QualitySource) {
        extract_quality(&Value::Map(Default::default()), body)
    }

    #[test]
    fn a_section_is_appended_in_the_file_s_own_line_ends() {
        assert_eq!(append_section("a\nb", "\n## S\nx\n"), "a\nb\n\n## S\nx\n");
        assert_eq!(
            append_section("a\r\nb", "\n## S\nx\n"),
            "a\r\nb\r\n\r\n## S\r\nx\r\n"
        );
        assert_eq!(
            append_section("a\r\n", "\n## S\r\nx\n"),
            "a\r\n\r\n## S\r\nx\r\n"
        );
    }

    #[test]
    fn settled_at_is_never_before_opened_at_or_claimed_at() {
        let zone = PolisZone::default();
        let rec = |fm: &str| frontmatter::parse(&format!("---\n{fm}---\nbody\n")).unwrap();
        let opened = rec("opened_at: 2026-03-01 10:00:30\n");
        // A clock behind the opener's (another machine) writes the opening moment, not earlier.
        assert_eq!(
            ending_stamp(&opened, "2026-03-01 10:00:10", zone),
            "2026-03-01 10:00:30"
        );
        assert_eq!(
            ending_stamp(&opened, "2026-03-01 11:00:00", zone),
            "2026-03-01 11:00:00"
        );
        let claimed = rec("opened_at: '2026-03-01 10:00'\nclaimed_at: 2026-03-01 10:20:00\n");
        assert_eq!(
            ending_stamp(&claimed, "2026-03-01 10:10:00", zone),
            "2026-03-01 10:20:00"
        );
        assert_eq!(
            ending_stamp(&rec(""), "2026-03-01 10:10:00", zone),
            "2026-03-01 10:10:00"
        );
    }

    #[test]
    fn quality_forms() {
        assert_eq!(q("Quality self-score: 4\n"), (4, QualitySource::BodyLine));
        assert_eq!(
            q("### quality self_score : 2  \n"),
            (2, QualitySource::BodyLine)
        );
        assert_eq!(
            q("## Quality self-score\n\n5\n"),
            (5, QualitySource::BodyHeading)
        );
        assert_eq!(
            q("I scored 5/5 in usability\n"),
            (3, QualitySource::Default)
        );
        assert_eq!(q("Quality self-score: ٤\n"), (4, QualitySource::BodyLine));
        // Python's `re` semantics, checked with CPython 3.11.
        assert_eq!(q("QUALİTY self-score: 4\n").0, 4);
        assert_eq!(q("Qualıty ſelf-score: 4\n").0, 4);
        assert_eq!(q("\x1cQuality self-score: 2\x1f\n").0, 2);
        assert_eq!(q("Quality self-score: ４\n").0, 4);
    }

    #[test]
    fn body_quality_outside_1_to_5_is_clamped() {
        assert_eq!(q("Quality self-score: 9\n").0, 5);
        assert_eq!(q("Quality self-score: 0\n").0, 1);
        assert_eq!(q("Quality self-score: 99999999999999999999999\n").0, 5);
    }

    #[test]
    fn frontmatter_quality_is_clamped_and_wins() {
        let r = frontmatter::parse("---\nquality_score: 7\n---\nQuality self-score: 2\n").unwrap();
        assert_eq!(
            extract_quality(&r.fields, &r.body),
            (5, QualitySource::Frontmatter)
        );
        let r =
            frontmatter::parse("---\nquality_score: '4'\n---\nQuality self-score: 2\n").unwrap();
        assert_eq!(
            extract_quality(&r.fields, &r.body),
            (2, QualitySource::BodyLine)
        );
    }

    #[test]
    fn minutes_forms() {
        let m = |fm: &str, body: &str| {
            let r = frontmatter::parse(&format!("---\n{fm}\n---\n{body}")).unwrap();
            extract_minutes(&r.fields, &r.body)
        };
        assert_eq!(m("actual_minutes: 0", ""), 1.0);
        assert_eq!(m("actual_minutes: 45", "actual_minutes: 9\n"), 45.0);
        assert_eq!(m("a: 1", "- Actual Minutes: 12\n"), 12.0);
        assert_eq!(m("a: 1", "ACTUAL MİNUTES: 7\n"), 7.0);
        assert_eq!(m("a: 1", "took 6 actual_minutes per paper\n"), 30.0);
        assert_eq!(m("a: 1", "actual_minutes: 0\n"), 0.0);
    }

    #[test]
    fn instants_from_every_style() {
        let z = PolisZone::default();
        let dt = |s| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap();
        assert_eq!(
            instant_of(&yaml::load("2026-03-02").unwrap(), z),
            Some(dt("2026-03-02 00:00:00"))
        );
        assert_eq!(
            instant_of(&yaml::load("2026-03-02 10:11:12").unwrap(), z),
            Some(dt("2026-03-02 10:11:12"))
        );
        assert_eq!(
            instant_of(&Value::Str("2026-03-02 10:11".into()), z),
            Some(dt("2026-03-02 10:11:00"))
        );
        assert_eq!(
            instant_of(&Value::Str("2026-03-02T10:11:00+02:00".into()), z),
            Some(dt("2026-03-02 08:11:00"))
        );
        assert_eq!(
            instant_of(&yaml::load("2026-03-02 10:11:12+01:00").unwrap(), z),
            Some(dt("2026-03-02 09:11:12"))
        );
        assert_eq!(instant_of(&Value::Str("yesterday".into()), z), None);
    }

    proptest::proptest! {
        /// The common layouts read without the pattern give what the pattern gives: a space
        /// around the text sends it through the pattern, which allows one.
        #[test]
        fn common_time_text_agrees_with_the_pattern(
            y in 0u32..10000, mo in 0u32..14, d in 0u32..33, h in 0u32..26, mi in 0u32..62, sec in 0u32..62,
            sep in "[ Tt]", with_time in proptest::bool::ANY
        ) {
            let text = if with_time {
                format!("{y:04}-{mo:02}-{d:02}{sep}{h:02}:{mi:02}:{sec:02}")
            } else {
                format!("{y:04}-{mo:02}-{d:02}")
            };
            let z = PolisZone::default();
            proptest::prop_assert!(crate::yaml::common_timestamp(text.as_bytes()).is_some());
            proptest::prop_assert_eq!(
                instant_of(&Value::Str(text.clone()), z),
                instant_of(&Value::Str(format!(" {text}")), z),
                "{}", text
            );
        }
    }

    #[test]
    fn string_required_tags_is_one_tag_and_duplicates_count_once() {
        assert_eq!(tags_of(&Value::Str("python".into())).0, ["python"]);
        let v = yaml::load("[a, b, a, 3]").unwrap();
        let (tags, bad) = tags_of(&v);
        assert_eq!(tags, ["a", "b"]);
        assert_eq!(bad, [Value::Int(3)]);
    }

    /// Regression: each tag was compared with every tag before it, so a settled contract with
    /// 100,000 `required_tags` (1 MB) kept `polisd check` and `reconcile` busy for minutes. No
    /// clock here (timings belong to benches): sized so that pairwise work would run for minutes.
    #[test]
    fn many_required_tags_are_deduplicated_in_linear_time() {
        let mut items: Vec<Value> = (0..200_000).map(|i| Value::Str(format!("t{i}"))).collect();
        items.push(Value::Str("t7".into()));
        let (tags, bad) = tags_of(&Value::Seq(items));
        assert_eq!(tags.len(), 200_000);
        assert_eq!((tags[7].as_str(), bad.len()), ("t7", 0));
    }

    #[test]
    fn read_settled_with_bom_and_crlf() {
        let raw = "\u{feff}---\r\nstatus: settled\r\nowner: alice-agent\r\nrequired_tags: [py]\r\nsettled_at: 2026-03-02 10:00:00\r\n---\r\n## Quality self-score\r\n\r\n4\r\nactual_minutes: 12\r\n";
        let r = read_settled("contracts/settled/x.md", raw, PolisZone::default());
        let s = r.settlement.unwrap();
        assert_eq!((s.quality, s.minutes), (4, 12.0));
        assert_eq!(s.last_completed.as_deref(), Some("2026-03-02"));
        assert!(r.findings.is_empty());
    }

    #[test]
    fn read_settled_reports_defaulted_quality_and_bad_files() {
        let r = read_settled(
            "s/a.md",
            "---\nstatus: settled\nowner: alice-agent\n---\n",
            PolisZone::default(),
        );
        assert!(r.settlement.unwrap().quality_defaulted);
        assert_eq!(r.findings[0].code, Code::QualityDefaulted);
        let r = read_settled(
            "s/b.md",
            "---\nstatus: settled\nowner: [\n---\n",
            PolisZone::default(),
        );
        assert!(r.settlement.is_none());
        assert_eq!(r.findings[0].code, Code::BadYaml);
        let r = read_settled(
            "s/c.md",
            "---\nstatus: claimed\n---\n",
            PolisZone::default(),
        );
        assert!(r.settlement.is_none() && r.findings.is_empty());
    }

    const OPEN: &str = "---\ncontract_id: x\nowner: null\nrouting:\n  recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\nreview:\n  required: false\n---\n\n# X\n";

    #[test]
    fn splice_fills_existing_keys() {
        let out = splice_routing(OPEN, "alice-agent", 0.71234, false).unwrap();
        assert_eq!(
            out,
            OPEN.replace(
                "recommended_by_router: null",
                "recommended_by_router: alice-agent"
            )
            .replace("recommendation_score: null", "recommendation_score: 0.712")
            .replace("exploration: null", "exploration: false")
        );
    }

    #[test]
    fn splice_keeps_crlf_and_bom() {
        let crlf = format!("\u{feff}{}", OPEN.replace('\n', "\r\n"));
        let out = splice_routing(&crlf, "alice-agent", 0.5, true).unwrap();
        assert!(out.starts_with('\u{feff}'));
        assert!(!out.replace("\r\n", "").contains('\n'));
        assert!(out.contains("  exploration: true\r\n"));
    }

    #[test]
    fn splice_adds_missing_keys_and_block() {
        let text = "---\nowner: null\nrouting:\n  override: null\ntitle: t\n---\nbody\n";
        let out = splice_routing(text, "alice-agent", 1.0, false).unwrap();
        assert_eq!(out, "---\nowner: null\nrouting:\n  override: null\n  recommended_by_router: alice-agent\n  recommendation_score: 1.000\n  exploration: false\ntitle: t\n---\nbody\n");
        let text = "---\nowner: null\n---\nbody\n";
        let out = splice_routing(text, "alice-agent", 0.25, false).unwrap();
        assert_eq!(out, "---\nowner: null\nrouting:\n  recommended_by_router: alice-agent\n  recommendation_score: 0.250\n  exploration: false\n---\nbody\n");
        let text = "---\nowner: null\nrouting: null\n---\nbody\n";
        let out = splice_routing(text, "alice-agent", 0.25, true).unwrap();
        assert_eq!(out, "---\nowner: null\nrouting:\n  recommended_by_router: alice-agent\n  recommendation_score: 0.250\n  exploration: true\n---\nbody\n");
    }

    #[test]
    fn splice_refuses_what_it_cannot_do_safely() {
        assert_eq!(
            splice_routing("no frontmatter\n", "alice-agent", 0.5, false),
            None
        );
        assert_eq!(
            splice_routing(
                "---\nrouting: {override: x}\n---\n",
                "alice-agent",
                0.5,
                false
            ),
            None
        );
    }

    proptest::proptest! {
        #[test]
        fn splice_and_read_never_panic(body in "(---\r?\n)?([a-z_]{0,12}:? ?(null|\\{\\}|x)?\r?\n|  [a-z_]{0,22}: ?[0-9a-z]{0,3}\r?\n|---\n|\\PC{0,8}\n){0,12}") {
            let _ = splice_routing(&body, "alice-agent", 0.5, true);
            let _ = read_settled("x.md", &body, PolisZone::default());
        }

        #[test]
        fn splice_keeps_every_other_line(keys in proptest::collection::vec("[a-q]{1,8}", 0..6), crlf in proptest::bool::ANY) {
            let mut text = String::from("---\n");
            for k in &keys {
                text.push_str(&format!("{k}: v\n"));
            }
            text.push_str("routing:\n  override: null\n---\nbody\n");
            if crlf {
                text = text.replace('\n', "\r\n");
            }
            let out = splice_routing(&text, "alice-agent", 0.25, false).expect("plain block splices");
            let old: Vec<&str> = text.split_inclusive('\n').collect();
            let new: Vec<&str> = out.split_inclusive('\n').collect();
            proptest::prop_assert_eq!(new.len(), old.len() + 3);
            proptest::prop_assert!(old.iter().all(|l| new.contains(l)));
        }
    }
}
