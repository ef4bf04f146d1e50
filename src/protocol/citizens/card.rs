//! Capability cards (SPEC §4): reading `citizens/<id>/capability_card.yml`, its `content_hash`
//! (SHA-256 of PyYAML's canonical dump of the card), verification, and the stamped file text.
//!
//! Pure: text and values in, results out. It never reports `mismatch` unless it reproduced
//! PyYAML's bytes with certainty; anything it cannot reproduce is `unverifiable`. A card that
//! does not parse is an error value for the caller to turn into a finding, never a panic.

use crate::protocol::finding::quoted;
use crate::yaml::{self, dump, DumpOptions, EmitError, Mapping, Value, YamlError};
use std::collections::HashMap;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// Top-level keys that are not part of the hashed content.
const EXCLUDED: [&str; 2] = ["content_hash", "signature"];

/// A parsed capability card. Fields are read the way the reference reads them (`dict.get`),
/// so a card with odd types still loads; `raw` keeps everything.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub agent_id: Option<String>,
    pub vendor: Option<String>,
    pub model: Option<String>,
    /// `capability_tags`, in file order. Entries with non-string tags are left out (no
    /// contract can require them).
    pub capability_tags: Vec<(String, TagClaim)>,
    /// `cost_envelope.relative`: `medium` when absent (as the reference defaults it), `None`
    /// when present but not a string.
    pub cost_relative: Option<String>,
    /// The whole card as parsed (`Null` for an empty file).
    pub raw: Value,
    /// Why polisd cannot be sure of this card's `content_hash`, if it cannot: the text repeats a
    /// collection or timestamp through an alias (PyYAML would dump `&id001` anchors a [`Value`]
    /// cannot show), or holds a raw NEL/LS/PS character (PyYAML reads those as line breaks).
    pub unverifiable: Option<&'static str>,
}

/// One `capability_tags` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct TagClaim {
    /// `self_rating` as Python would divide it (ints, floats; booleans count as 0/1); `None`
    /// when absent or not a number.
    pub self_rating: Option<f64>,
    /// `evidence` as written (usually a string).
    pub evidence: Value,
    /// The entry itself.
    pub raw: Value,
}

/// Why a card's text could not be read as a card.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CardError {
    #[error("the card is not valid YAML: {0}")]
    Yaml(#[from] YamlError),
    #[error("the card is {0}, not a mapping of fields")]
    NotAMapping(&'static str),
}

impl CardError {
    /// The 1-based line a finding should name, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            CardError::Yaml(e) => Some(e.line),
            CardError::NotAMapping(_) => None,
        }
    }
}

/// Why a card could not be stamped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StampError {
    #[error(transparent)]
    Card(#[from] CardError),
    #[error("cannot compute this card's content_hash exactly: {0}")]
    Unverifiable(String),
    /// The reference's line-based stamping would also remove or split other lines (an indented
    /// `content_hash:`/`signature:` key, a line inside a multi-line value), leaving a card that
    /// fails its own check. The reference writes it anyway; polisd refuses (SPEC §4: only the
    /// integrity line is touched).
    #[error("stamping would change the card's content (a `content_hash:` or `signature:` line that is not the top-level field, or an unusual line break); edit the card so those fields are single top-level lines")]
    WouldChangeContent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyState {
    Ok,
    Mismatch,
    /// Only the old `signature:` field.
    Legacy,
    /// No integrity field at all.
    Unstamped,
    /// A `content_hash` is stored but polisd cannot reproduce PyYAML's bytes for this card.
    Unverifiable,
}

impl VerifyState {
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyState::Ok => "ok",
            VerifyState::Mismatch => "mismatch",
            VerifyState::Legacy => "legacy",
            VerifyState::Unstamped => "unstamped",
            VerifyState::Unverifiable => "unverifiable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub state: VerifyState,
    /// The digest polisd computed (64 hex), when it could.
    pub computed: Option<String>,
    /// The stored digest with any `sha256:` prefix removed, when there is one.
    pub stored: Option<String>,
}

/// Reads a card's text (the file decoded as UTF-8). An empty file is an empty card, as the
/// reference's `safe_load(...) or {}`.
pub fn parse(text: &str) -> Result<Card, CardError> {
    let text = &universal_newlines(text);
    check_printable(text)?;
    // PyYAML skips a byte-order mark at the start of the stream; yaml::load does not.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let raw = yaml::load(text)?;
    let unverifiable = if text.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        Some("the card holds a NEL, LS or PS character, which PyYAML reads as a line break")
    } else if shares_nodes(text) {
        Some("the card repeats a list, mapping or date through a YAML alias")
    } else {
        None
    };
    if !matches!(raw, Value::Map(_)) && raw.is_truthy() {
        return Err(CardError::NotAMapping(kind_name(&raw)));
    }
    let string = |key: &str| raw.get(key).as_str().map(str::to_string);
    let capability_tags = match raw.get("capability_tags") {
        Value::Map(tags) => tags
            .iter()
            .filter_map(|(tag, entry)| {
                let tag = tag.as_str()?.to_string();
                let self_rating = match entry.get("self_rating") {
                    v @ (Value::Int(_) | Value::Float(_) | Value::Bool(_)) => v.as_f64(),
                    _ => None,
                };
                Some((
                    tag,
                    TagClaim {
                        self_rating,
                        evidence: entry.get("evidence").clone(),
                        raw: entry.clone(),
                    },
                ))
            })
            .collect(),
        _ => Vec::new(),
    };
    let cost_relative = match raw.get("cost_envelope") {
        Value::Map(env) => match env.get("relative") {
            None => Some("medium".to_string()),
            Some(v) => v.as_str().map(str::to_string),
        },
        v if !v.is_truthy() => Some("medium".to_string()),
        _ => None,
    };
    Ok(Card {
        agent_id: string("agent_id"),
        vendor: string("vendor"),
        model: string("model"),
        capability_tags,
        cost_relative,
        raw,
        unverifiable,
    })
}

/// The scale of a `self_rating` (SPEC §4). The router counts a rating above it as its top: a
/// card claiming 99 would otherwise outweigh any record (its prior mean 99 against qualities of
/// 1–5) and win every routing on its tags.
pub const SELF_RATING_MAX: f64 = 5.0;

/// A rating as the router counts it: within 0 (a missing rating) and [`SELF_RATING_MAX`].
pub fn counted_rating(rating: f64) -> f64 {
    if rating.is_nan() {
        0.0
    } else {
        rating.clamp(0.0, SELF_RATING_MAX)
    }
}

impl Card {
    /// What in the card is outside its schema's values (SPEC §4): a `self_rating` that is not a
    /// number from 1 to 5, a `cost_envelope.relative` that is not low, medium or high. Each is a
    /// message naming the key and what the router makes of it.
    pub fn value_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (tag, claim) in &self.capability_tags {
            let written = claim.raw.get("self_rating");
            let tag = || quoted(tag);
            let shown = || quoted(&written.python_str());
            match claim.self_rating {
                Some(r) if (1.0..=SELF_RATING_MAX).contains(&r) => {}
                Some(r) => out.push(format!(
                    "`capability_tags.{}.self_rating: {}` is outside 1–5; the router counts it as {}; write a rating from 1 to 5",
                    tag(),
                    shown(),
                    counted_rating(r)
                )),
                None if matches!(written, Value::Null) => out.push(format!(
                    "`capability_tags.{}` has no `self_rating`; the router counts 0; write a rating from 1 to 5",
                    tag()
                )),
                None => out.push(format!(
                    "`capability_tags.{}.self_rating: {}` is not a number; the router counts 0; write a rating from 1 to 5",
                    tag(),
                    shown()
                )),
            }
        }
        if let Some(r) = &self.cost_relative {
            if !crate::protocol::contracts::record_check::TIERS.contains(&r.as_str()) {
                out.push(format!(
                    "`cost_envelope.relative: {}` is not low, medium or high; the router's cost fit counts it as neither cheap nor dear (0.5)",
                    quoted(r)
                ));
            }
        }
        out
    }

    /// [`verify`], and `unverifiable` when the text has a construct polisd cannot hash exactly.
    pub fn verify(&self) -> Verification {
        let mut v = verify(&self.raw);
        if self.unverifiable.is_some() {
            v.computed = None;
            if v.stored.is_some() {
                v.state = VerifyState::Unverifiable;
            }
        }
        v
    }
}

/// SHA-256 (64 lowercase hex) of PyYAML's `safe_dump(card minus content_hash/signature,
/// sort_keys=True, default_flow_style=False, allow_unicode=True)`.
pub fn content_hash(card: &Value) -> Result<String, EmitError> {
    let payload: Mapping = match card {
        Value::Map(m) => m
            .iter()
            .filter(|(k, _)| !k.as_str().is_some_and(|k| EXCLUDED.contains(&k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        v if !v.is_truthy() => Mapping::new(),
        v => {
            return Err(EmitError::Unrepresentable(format!(
                "a card that is {}",
                kind_name(v)
            )))
        }
    };
    let canonical = dump(&Value::Map(payload), &DumpOptions::CARD)?;
    Ok(crate::protocol::digest::sha256_hex(canonical.as_bytes()))
}

/// The card's integrity state, as the reference's `verify_card` decides it. A stored hash is
/// compared only with a digest polisd is sure of; otherwise the state is `unverifiable`.
/// Without a stored hash the state (`legacy`/`unstamped`) needs no digest.
pub fn verify(card: &Value) -> Verification {
    let computed = content_hash(card).ok();
    let stored_raw = card.get("content_hash");
    if stored_raw.is_truthy() {
        // `str(raw).split(":")[-1]`: tolerate an optional `sha256:` prefix.
        let text = stored_raw.python_str();
        let stored = text.rsplit(':').next().unwrap_or_default().to_string();
        let state = match &computed {
            Some(c) if *c == stored => VerifyState::Ok,
            Some(_) => VerifyState::Mismatch,
            None => VerifyState::Unverifiable,
        };
        return Verification {
            state,
            computed,
            stored: Some(stored),
        };
    }
    let state = if card.get("signature").is_truthy() {
        VerifyState::Legacy
    } else {
        VerifyState::Unstamped
    };
    Verification {
        state,
        computed,
        stored: None,
    }
}

/// The new text of a card file after stamping, as the reference's `stamp_card_file` writes it:
/// every line whose first non-blank text is `content_hash:` or `signature:` is dropped, trailing
/// whitespace trimmed, and `content_hash: "sha256:<hex>"` appended. `text` is the file decoded
/// as UTF-8 (a byte-order mark, if any, kept). Refuses when the result would not verify.
pub fn stamp(text: &str) -> Result<String, StampError> {
    let text = universal_newlines(text);
    let card = parse(&text)?;
    if let Some(reason) = card.unverifiable {
        return Err(StampError::Unverifiable(reason.to_string()));
    }
    let digest = content_hash(&card.raw).map_err(|e| StampError::Unverifiable(e.to_string()))?;
    let kept: Vec<&str> = python_splitlines(&text)
        .into_iter()
        .filter(|line| !is_integrity_line(line))
        .collect();
    let body = kept.join("\n");
    let body = body.trim_end_matches(is_python_space);
    let stamped = format!("{body}\ncontent_hash: \"sha256:{digest}\"\n");
    // The line filter is blind to YAML structure; make sure it only removed the integrity
    // fields (the reference does not check, and can write a card that fails verification).
    let check = parse(&stamped).map(|back| back.verify());
    match check {
        Ok(v) if v.state == VerifyState::Ok && v.stored.as_deref() == Some(digest.as_str()) => {
            Ok(stamped)
        }
        _ => Err(StampError::WouldChangeContent),
    }
}

/// PyYAML refuses a stream holding characters outside YAML's printable set; so does polisd,
/// rather than hash a card the reference cannot read.
fn check_printable(text: &str) -> Result<(), CardError> {
    let printable = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
            || c >= '\u{10000}'
    };
    match text.char_indices().find(|(_, c)| !printable(*c)) {
        None => Ok(()),
        Some((at, c)) => Err(CardError::Yaml(YamlError {
            line: text[..at].matches('\n').count() + 1,
            message: format!(
                "unacceptable character #x{:04x}: special characters are not allowed",
                c as u32
            ),
        })),
    }
}

/// What Python's `read_text` hands the reference: `\r\n` and `\r` read as `\n`.
fn universal_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// `re.match(r"^\s*(content_hash|signature)\s*:", line)`.
fn is_integrity_line(line: &str) -> bool {
    let rest = line.trim_start_matches(is_python_space);
    let Some(rest) = rest
        .strip_prefix("content_hash")
        .or_else(|| rest.strip_prefix("signature"))
    else {
        return false;
    };
    rest.trim_start_matches(is_python_space).starts_with(':')
}

/// `str.isspace()`: Unicode White_Space plus the ASCII separators U+001C–U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.splitlines()` (without keepends).
fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        lines.push(&text[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|(_, n)| *n == '\n') {
            chars.next();
            end += 1;
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Whether PyYAML's dump of this text's data would contain anchors: an alias that repeats a
/// collection or a timestamp (the only objects its safe representer does not copy), directly or
/// through a `<<` merge. Conservative: a doubt counts as sharing.
fn shares_nodes(text: &str) -> bool {
    #[derive(Clone, Copy, Default)]
    struct Anchored {
        /// A collection or timestamp: repeating it repeats one Python object.
        heavy: bool,
        /// A mapping with a heavy key or value: merging it repeats those objects.
        heavy_inside: bool,
    }
    struct Frame {
        anchor: usize,
        is_map: bool,
        /// Items seen so far (a mapping alternates key, value).
        items: usize,
        heavy_inside: bool,
        /// This mapping's current key is `<<`, or this sequence is the value of one.
        merging: bool,
    }
    let result = std::panic::catch_unwind(|| {
        let mut parser = Parser::new_from_str(text);
        let mut anchors: HashMap<usize, Anchored> = HashMap::new();
        let mut stack: Vec<Frame> = Vec::new();
        let mut pending_merge = false;
        loop {
            let Ok((event, _)) = parser.next_token() else {
                return true;
            };
            // Whether this node is heavy, and the anchor id to record it under.
            let (heavy, anchor) = match event {
                Event::StreamEnd => return false,
                Event::Scalar(ref value, style, anchor, ref tag) => {
                    let heavy = tag.is_some()
                        || (style == TScalarStyle::Plain && looks_like_timestamp(value));
                    let is_merge_key = style == TScalarStyle::Plain
                        && tag.is_none()
                        && value == "<<"
                        && stack.last().is_some_and(|f| f.is_map && f.items % 2 == 0);
                    if is_merge_key {
                        pending_merge = true;
                    }
                    (heavy, anchor)
                }
                Event::Alias(id) => {
                    let info = anchors.get(&id).copied().unwrap_or(Anchored {
                        heavy: true,
                        heavy_inside: true,
                    });
                    let in_merge = stack.last().is_some_and(|f| f.merging);
                    if (in_merge && info.heavy_inside) || (!in_merge && info.heavy) {
                        return true;
                    }
                    (info.heavy, 0)
                }
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    let is_map = matches!(event, Event::MappingStart(..));
                    let merging = !is_map && is_merge_value(&stack);
                    if let Some(parent) = stack.last_mut() {
                        parent.heavy_inside = true;
                    }
                    stack.push(Frame {
                        anchor,
                        is_map,
                        items: 0,
                        heavy_inside: false,
                        merging,
                    });
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(frame) = stack.pop() else {
                        return true;
                    };
                    if frame.anchor > 0 {
                        anchors.insert(
                            frame.anchor,
                            Anchored {
                                heavy: true,
                                heavy_inside: frame.heavy_inside,
                            },
                        );
                    }
                    after_item(&mut stack, &mut pending_merge);
                    continue;
                }
                _ => continue,
            };
            if anchor > 0 {
                anchors.insert(
                    anchor,
                    Anchored {
                        heavy,
                        heavy_inside: false,
                    },
                );
            }
            if let Some(parent) = stack.last_mut() {
                parent.heavy_inside |= heavy;
            }
            after_item(&mut stack, &mut pending_merge);
        }

        fn is_merge_value(stack: &[Frame]) -> bool {
            stack
                .last()
                .is_some_and(|f| f.is_map && f.items % 2 == 1 && f.merging)
        }

        fn after_item(stack: &mut [Frame], pending_merge: &mut bool) {
            if let Some(frame) = stack.last_mut() {
                frame.items += 1;
                if frame.is_map {
                    // A `<<` key just ended: its value is a merge source.
                    frame.merging = frame.items % 2 == 1 && std::mem::take(pending_merge);
                }
            }
        }
    });
    result.unwrap_or(true)
}

/// A plain scalar PyYAML may read as a date or datetime (a superset is fine here).
fn looks_like_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 8 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::BigInt(_) => "a number",
        Value::Float(_) => "a number",
        Value::Str(_) => "a string",
        Value::Date(_) | Value::DateTime(_) => "a date",
        Value::Seq(_) => "a list",
        Value::Map(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "agent_id: a\ncapability_tags: {py: {self_rating: 4}}\n";

    #[test]
    fn ratings_outside_the_scale_and_unknown_cost_tiers_are_problems() {
        let card = parse(
            "agent_id: a\ncapability_tags:\n  py: {self_rating: 99}\n  go: {self_rating: 3}\n  sql: {self_rating: high}\n  c: {evidence: x}\n  js: {self_rating: -2}\ncost_envelope: {relative: free}\n",
        )
        .unwrap();
        let problems = card.value_problems();
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(
            problems[0].contains("py.self_rating: 99` is outside 1–5; the router counts it as 5")
        );
        assert!(problems[1].contains("sql.self_rating: high` is not a number"));
        assert!(problems[2].contains("`capability_tags.c` has no `self_rating`"));
        assert!(
            problems[3].contains("js.self_rating: -2` is outside 1–5; the router counts it as 0")
        );
        assert!(problems[4].contains("relative: free"));
        assert!(parse(MINIMAL).unwrap().value_problems().is_empty());
        assert_eq!(counted_rating(f64::NAN), 0.0);
    }
    const MINIMAL_HASH: &str = "6d7123d79f8a5d066dcfa51be52aad587f88488a3c605881f7fc2e63d6fdcf30";

    #[test]
    fn spec4_test_vector() {
        let card = parse(MINIMAL).unwrap();
        assert_eq!(content_hash(&card.raw).unwrap(), MINIMAL_HASH);
        assert_eq!(card.capability_tags[0].0, "py");
        assert_eq!(card.capability_tags[0].1.self_rating, Some(4.0));
        assert_eq!(card.cost_relative.as_deref(), Some("medium"));
    }

    #[test]
    fn verify_states() {
        let ok = parse(&format!(
            "{MINIMAL}content_hash: \"sha256:{MINIMAL_HASH}\"\n"
        ))
        .unwrap();
        assert_eq!(ok.verify().state, VerifyState::Ok);
        let bare = parse(&format!("{MINIMAL}content_hash: {MINIMAL_HASH}\n")).unwrap();
        assert_eq!(bare.verify().state, VerifyState::Ok);
        let edited = parse(&format!(
            "agent_id: b\ncapability_tags: {{py: {{self_rating: 4}}}}\ncontent_hash: \"sha256:{MINIMAL_HASH}\"\n"
        ))
        .unwrap();
        let v = edited.verify();
        assert_eq!(v.state, VerifyState::Mismatch);
        assert_eq!(v.stored.as_deref(), Some(MINIMAL_HASH));
        let legacy = parse(&format!("{MINIMAL}signature: abc\n")).unwrap();
        assert_eq!(legacy.verify().state, VerifyState::Legacy);
        assert_eq!(
            parse(MINIMAL).unwrap().verify().state,
            VerifyState::Unstamped
        );
        // The signature field is not hashed either.
        assert_eq!(legacy.verify().computed.as_deref(), Some(MINIMAL_HASH));
    }

    #[test]
    fn aliased_collection_is_unverifiable_not_mismatch() {
        let text = format!("agent_id: a\nx: &l [1]\ny: *l\ncontent_hash: {MINIMAL_HASH}\n");
        assert_eq!(
            parse(&text).unwrap().verify().state,
            VerifyState::Unverifiable
        );
        assert!(matches!(stamp(&text), Err(StampError::Unverifiable(_))));
        // Repeating a string or number through an alias makes no anchors in PyYAML's dump.
        assert!(!shares_nodes("a: &s text\nb: *s\nc: &n 3\nd: *n\n"));
        assert!(shares_nodes("a: &d 2026-01-01\nb: *d\n"));
        assert!(!shares_nodes("base: &b {k: 1}\nx:\n  <<: *b\n  z: 2\n"));
        assert!(shares_nodes("base: &b {k: [1]}\nx:\n  <<: *b\n"));
        assert!(shares_nodes("base: &b {k: [1]}\nx:\n  <<: [*b]\n"));
        assert!(!shares_nodes("base: &b {k: 1}\nx:\n  <<: [*b]\n  y: [2]\n"));
    }

    #[test]
    fn stamp_replaces_integrity_lines_and_appends() {
        let text = "agent_id: a\nsignature: old\ncapability_tags: {py: {self_rating: 4}}\n  \ncontent_hash: x\n\n";
        assert_eq!(
            stamp(text).unwrap(),
            format!("agent_id: a\ncapability_tags: {{py: {{self_rating: 4}}}}\ncontent_hash: \"sha256:{MINIMAL_HASH}\"\n")
        );
        // Idempotent.
        let once = stamp(MINIMAL).unwrap();
        assert_eq!(stamp(&once).unwrap(), once);
    }

    #[test]
    fn stamp_refuses_to_drop_a_nested_content_hash_key() {
        // The reference would drop the nested line too, and write a card that fails its check.
        let text = "agent_id: a\nnotes:\n  content_hash: mine\n  other: 1\n";
        assert_eq!(stamp(text), Err(StampError::WouldChangeContent));
    }

    #[test]
    fn non_mapping_card_is_an_error_value() {
        assert_eq!(parse("- a\n- b\n"), Err(CardError::NotAMapping("a list")));
        assert!(matches!(parse("a: [\n"), Err(CardError::Yaml(_))));
        let empty = parse("").unwrap();
        assert_eq!(empty.raw, Value::Null);
        assert_eq!(verify(&empty.raw).state, VerifyState::Unstamped);
    }

    #[test]
    fn python_line_splitting() {
        assert_eq!(
            python_splitlines("a\nb\r\nc\u{2028}d\u{c}e"),
            ["a", "b", "c", "d", "e"]
        );
        assert_eq!(python_splitlines("a\n\n"), ["a", ""]);
        assert!(is_integrity_line("  content_hash :x"));
        assert!(is_integrity_line("signature:"));
        assert!(!is_integrity_line("content_hashes: x"));
        assert!(!is_integrity_line("# content_hash: x"));
    }
}
