//! A tool call's arguments checked against the tool's own input schema, for every tool, before
//! it runs; and the bounds on what an answer quotes back.
//!
//! The schemas use a small part of JSON Schema (`type` string, integer, boolean or array of
//! strings; `enum`, `minimum`, `maximum`, `maxLength`, `maxItems`, a string's `pattern`, whose
//! `description` says the rule in words; `required`; `additionalProperties: false`), and this
//! checks exactly that part, so a tool can never accept what its schema says it rejects. `null`
//! counts as absent, as JSON Schema clients send it, and `4.0` is the integer 4, as JSON Schema
//! has it ([`whole_numbers`]).
//! Every string (and string in an array) also passes the command line's edge checks: no
//! control or bidi characters, and an acting id (`citizen`, `by`, `opened_by`) that may act.

use crate::protocol::input;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The arguments that name the citizen a call acts as: never a system identity.
const ACTING_KEYS: [&str; 3] = ["citizen", "by", "opened_by"];

/// How much of a value an error message quotes.
const QUOTE_CHARS: usize = 60;

/// The most an error text says before it is cut.
const MAX_ERROR_CHARS: usize = 2_000;

/// `value`'s JSON type, for people.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(n) if n.is_i64() || n.is_u64() => "a whole number",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short prefix of `text`, in backticks, with how long the whole was when it was cut.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => format!("`{text}`"),
        Some((cut, _)) => format!("`{}…` ({} bytes)", &text[..cut], text.len()),
    }
}

/// An error text cut to a bounded length (an operation's message may carry an input).
pub fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… (cut; {} bytes in all)", &text[..cut], text.len()),
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        other => quote(&other.to_string()),
    }
}

/// Checks `args` against `schema` (an object schema); the error names the key and what it
/// must be, and quotes at most a short prefix of what was given.
pub fn check(schema: &Map<String, Value>, args: &Map<String, Value>) -> Result<(), String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let known = || {
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        if names.is_empty() {
            "it takes no arguments".to_string()
        } else {
            format!("it takes {}", names.join(", "))
        }
    };
    for (key, value) in args {
        let Some(property) = properties.get(key).and_then(Value::as_object) else {
            return Err(format!(
                "unknown argument {}; {}; nothing was done",
                quote(key),
                known()
            ));
        };
        if !value.is_null() {
            check_value(key, property, value)?;
        }
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if args.get(required).is_none_or(Value::is_null) {
            return Err(format!(
                "missing required argument `{required}`; nothing was done"
            ));
        }
    }
    Ok(())
}

/// `args` with each whole number written with a zero fraction (`4.0`) where the schema wants
/// an integer made that integer: JSON Schema counts it one, and some clients write every number
/// so. Anything else is left as given, for [`check`] to judge.
pub fn whole_numbers<'a>(
    schema: &Map<String, Value>,
    args: &'a Map<String, Value>,
) -> Cow<'a, Map<String, Value>> {
    let integer = |key: &str| {
        schema
            .get("properties")
            .and_then(|p| p.get(key))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            == Some("integer")
    };
    // Below 2^63 in size, a whole f64 is an i64 exactly.
    let whole = |value: &Value| {
        value
            .as_f64()
            .filter(|f| value.is_f64() && f.fract() == 0.0 && f.abs() < 2f64.powi(63))
            .map(|f| f as i64)
    };
    if !args.iter().any(|(k, v)| integer(k) && whole(v).is_some()) {
        return Cow::Borrowed(args);
    }
    let mut out = args.clone();
    for (key, value) in out.iter_mut() {
        if let Some(n) = whole(value).filter(|_| integer(key)) {
            *value = Value::from(n);
        }
    }
    Cow::Owned(out)
}

fn checked_text(key: &str, text: &str) -> Result<(), String> {
    input::check_text(&format!("`{key}`"), text).map_err(|e| format!("{e}; nothing was done"))
}

fn check_value(key: &str, property: &Map<String, Value>, value: &Value) -> Result<(), String> {
    let wrong = |what: &str| {
        Err(format!(
            "`{key}` must be {what}, not {} {}; nothing was done",
            type_name(value),
            shown(value)
        ))
    };
    match property.get("type").and_then(Value::as_str) {
        Some("string") => {
            let Some(text) = value.as_str() else {
                return wrong("a string");
            };
            checked_text(key, text)?;
            if ACTING_KEYS.contains(&key) {
                input::check_acting_id(text)
                    .map_err(|e| format!("`{key}`: {e}; nothing was done"))?;
            }
            if let Some(max) = property.get("maxLength").and_then(Value::as_u64) {
                if text.chars().count() as u64 > max {
                    return Err(format!(
                        "`{key}` is longer than {max} characters ({} bytes: {}); nothing was done",
                        text.len(),
                        quote(text)
                    ));
                }
            }
            if let Some(pattern) = property.get("pattern").and_then(Value::as_str) {
                // Our own schemas' patterns, anchored; one that does not compile refuses all.
                if !regex::Regex::new(pattern).is_ok_and(|r| r.is_match(text)) {
                    let rule = property
                        .get("description")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("of the form {pattern}"), str::to_string);
                    return Err(format!(
                        "`{key}` must be {rule}, not {}; nothing was done",
                        quote(text)
                    ));
                }
            }
        }
        Some("boolean") if !value.is_boolean() => return wrong("true or false"),
        Some("integer") => {
            let Some(n) = value
                .as_i64()
                .map(i128::from)
                .or_else(|| value.as_u64().map(i128::from))
            else {
                return wrong("a whole number");
            };
            let min = property.get("minimum").and_then(Value::as_i64);
            let max = property.get("maximum").and_then(Value::as_i64);
            if min.is_some_and(|m| n < i128::from(m)) || max.is_some_and(|m| n > i128::from(m)) {
                let range = match (min, max) {
                    (Some(lo), Some(hi)) => format!("from {lo} to {hi}"),
                    (Some(lo), None) => format!("at least {lo}"),
                    (None, Some(hi)) => format!("at most {hi}"),
                    (None, None) => unreachable!("a bound was broken"),
                };
                return Err(format!(
                    "`{key}` must be a whole number {range}, not {n}; nothing was done"
                ));
            }
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                return wrong("an array of strings");
            };
            if let Some(max) = property.get("maxItems").and_then(Value::as_u64) {
                if items.len() as u64 > max {
                    return Err(format!(
                        "`{key}` has {} items; at most {max}; nothing was done",
                        items.len()
                    ));
                }
            }
            if let Some(bad) = items.iter().find(|i| !i.is_string()) {
                return Err(format!(
                    "`{key}` must be an array of strings; it holds {} {}; nothing was done",
                    type_name(bad),
                    shown(bad)
                ));
            }
            for item in items.iter().filter_map(Value::as_str) {
                checked_text(key, item)?;
            }
        }
        _ => {}
    }
    if let Some(allowed) = property.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let names: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            return Err(format!(
                "`{key}` must be one of {}, not {}; nothing was done",
                names.join(", "),
                shown(value)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        json!({"type": "object", "additionalProperties": false,
               "properties": {"dry_run": {"type": "boolean"},
                              "day": {"type": "string", "pattern": "^[0-9]{2}$",
                                      "description": "two digits"},
                              "code": {"type": "string", "pattern": "^[a-z]$"},
                              "quality": {"type": "integer", "minimum": 1, "maximum": 5},
                              "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                              "id": {"type": "string", "maxLength": 10},
                              "state": {"type": "string", "enum": ["open", "settled"]}},
               "required": ["id"]})
        .as_object()
        .unwrap()
        .clone()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_keys_the_tool_takes() {
        let e = check(&schema(), &args(json!({"id": "a", "dryRun": true}))).unwrap_err();
        assert!(e.contains("unknown argument `dryRun`"), "{e}");
        assert!(
            e.contains("code, day, dry_run, id, quality, state, tags"),
            "{e}"
        );
    }

    #[test]
    fn wrong_types_ranges_lengths_and_enums_are_refused_naming_the_key() {
        let s = schema();
        for (given, says) in [
            (
                json!({"id": "a", "dry_run": "true"}),
                "`dry_run` must be true or false",
            ),
            (
                json!({"id": "a", "quality": "4"}),
                "`quality` must be a whole number",
            ),
            (
                json!({"id": "a", "quality": 9}),
                "`quality` must be a whole number from 1 to 5",
            ),
            (
                json!({"id": "a", "quality": 2.5}),
                "`quality` must be a whole number",
            ),
            (
                json!({"id": "a", "tags": "rust"}),
                "`tags` must be an array of strings",
            ),
            (
                json!({"id": "a", "tags": ["a", 3]}),
                "`tags` must be an array of strings",
            ),
            (
                json!({"id": "a", "tags": ["a", "b", "c", "d"]}),
                "`tags` has 4 items",
            ),
            (
                json!({"id": "a", "state": "closed"}),
                "`state` must be one of",
            ),
            (json!({"id": "abcdefghijk"}), "`id` is longer than 10"),
            (
                json!({"id": "a", "day": "7"}),
                "`day` must be two digits, not `7`",
            ),
            (
                json!({"id": "a", "code": "ab"}),
                "`code` must be of the form ^[a-z]$, not `ab`",
            ),
            (json!({"id": null}), "missing required argument `id`"),
            (json!({}), "missing required argument `id`"),
        ] {
            let e = check(&s, &args(given.clone())).unwrap_err();
            assert!(e.contains(says), "{given}: {e}");
        }
        assert_eq!(
            check(&s, &args(json!({"id": "a", "dry_run": null}))),
            Ok(())
        );
        assert_eq!(
            check(
                &s,
                &args(
                    json!({"id": "a", "quality": 5, "tags": ["x"], "state": "open",
                             "day": "07", "code": "b"})
                )
            ),
            Ok(())
        );
    }

    #[test]
    fn a_huge_input_is_quoted_by_a_short_prefix() {
        let huge = "x".repeat(100_000);
        let e = check(&schema(), &args(json!({"id": huge.clone()}))).unwrap_err();
        assert!(e.len() < 300, "{} bytes", e.len());
        let e = check(&schema(), &args(json!({"id": "a", huge.clone(): 1}))).unwrap_err();
        assert!(e.len() < 300, "{} bytes", e.len());
        assert!(bounded(&huge).len() < 2_100);
        assert_eq!(quote("short"), "`short`");
    }
}
