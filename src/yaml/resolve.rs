//! PyYAML's implicit resolver (YAML 1.1): what type a plain scalar's text has. Both readers
//! (the event-driven one in `load` and the shortcut in `plain`) and the emitter's quoting ask
//! it, so all three agree on every scalar.

use super::quote::quoted;
use super::value::{Timestamp, Value};
use chrono::{NaiveDate, NaiveTime};
use regex::Regex;
use std::sync::LazyLock;

/// A `<<` key is held as this marker string until the mapping closes.
pub const MERGE_KEY: &str = "\u{0}<<merge>>";

/// Whether `value` is the plain `<<` ([`MERGE_KEY`]), which only a mapping's key may be.
pub fn is_merge_marker(value: &Value) -> bool {
    matches!(value, Value::Str(s) if s == MERGE_KEY)
}
// PyYAML's implicit resolvers (resolver.py), YAML 1.1.
pub(super) static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    )
    .unwrap()
});
pub(super) static INT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    )
    .unwrap()
});
pub static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<year>[0-9][0-9][0-9][0-9])-(?P<month>[0-9][0-9]?)-(?P<day>[0-9][0-9]?)(?:(?:[Tt]|[ \t]+)(?P<hour>[0-9][0-9]?):(?P<minute>[0-9][0-9]):(?P<second>[0-9][0-9])(?:\.(?P<fraction>[0-9]*))?(?:[ \t]*(?P<tz>Z|(?P<tz_sign>[-+])(?P<tz_hour>[0-9][0-9]?)(?::(?P<tz_minute>[0-9][0-9]))?))?)?$",
    )
    .unwrap()
});
pub(super) static DATE_ONLY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$").unwrap());

/// What a plain scalar's text means, as PyYAML's resolver decides.
pub fn resolve_plain(text: &str) -> Result<Value, String> {
    // The resolver picks candidates by first character; the order below mirrors that. Every
    // pattern is anchored at the start, so a scalar whose first character starts none of them
    // is a string: most text (titles, ids, tags) takes this exit without a regex.
    match text.as_bytes().first() {
        None => return Ok(Value::Null),
        Some(
            b'y'
            | b'Y'
            | b'n'
            | b'N'
            | b't'
            | b'T'
            | b'f'
            | b'F'
            | b'o'
            | b'O'
            | b'~'
            | b'-'
            | b'+'
            | b'.'
            | b'0'..=b'9'
            | b'<'
            | b'=',
        ) => {}
        Some(_) => return Ok(Value::Str(text.to_string())),
    }
    // BOOL and NULL match a fixed list of words; comparing them is the same test, cheaper.
    if matches!(
        text,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON"
    ) {
        return Ok(Value::Bool(true));
    }
    if matches!(
        text,
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF"
    ) {
        return Ok(Value::Bool(false));
    }
    if matches!(text, "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    if text == "<<" {
        return Ok(Value::Str(MERGE_KEY.to_string()));
    }
    if text == "=" {
        return Err(
            "could not determine a constructor for the tag 'tag:yaml.org,2002:value'".into(),
        );
    }
    // Every number and timestamp starts with one of these: a word of the first group that is
    // not one of the words above is a string, without asking the patterns.
    if !matches!(text.as_bytes()[0], b'-' | b'+' | b'.' | b'0'..=b'9') {
        return Ok(Value::Str(text.to_string()));
    }
    // A decimal without sign, underscore or leading zero (a count, a score) is what INT's
    // `[1-9][0-9_]*` (or `0`) matches, and INT is asked first.
    if let Some(v) = plain_decimal(text) {
        return Ok(Value::Int(v));
    }
    // Digits, a point, digits (a rate, a weight, a version): INT never matches a point, and
    // FLOAT's first branch matches this.
    if is_point_decimal(text) {
        return Ok(Value::Float(construct_float(text)?));
    }
    if may_be_number(text) {
        if INT.is_match(text) {
            return construct_int(text);
        }
        if FLOAT.is_match(text) {
            return Ok(Value::Float(construct_float(text)?));
        }
    }
    if is_timestamp(text) {
        return construct_timestamp(text);
    }
    Ok(Value::Str(text.to_string()))
}

/// `text` as an `i64` when it is digits only, without a leading zero (or `0` itself), short
/// enough that it cannot overflow.
pub(super) fn plain_decimal(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.is_empty() || b.len() > 18 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b[0] == b'0' && b.len() > 1 {
        return None;
    }
    Some(b.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
}

/// `text` is ASCII digits, one `.`, ASCII digits (both runs non-empty).
pub(super) fn is_point_decimal(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    text.split_once('.')
        .is_some_and(|(whole, fraction)| digits(whole) && digits(fraction))
}

/// Whether INT or FLOAT could match `text` (`false` is certain; `true` asks the patterns):
/// they hold only digits, `_ . :`, the letters of `0b`, `0x`, hex digits, `e`, `.inf` and
/// `.nan`, and a sign only first or after an exponent's `e`. A timestamp or a date fails it,
/// so emitting or loading one compiles neither pattern.
pub(super) fn may_be_number(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().all(|(i, &c)| match c {
        b'+' | b'-' => i == 0 || matches!(b[i - 1], b'e' | b'E'),
        b'0'..=b'9' | b'_' | b'.' | b':' => true,
        b'a'..=b'f' | b'A'..=b'F' | b'x' | b'i' | b'n' | b'I' | b'N' => true,
        _ => false,
    })
}

/// Hour, minute and second.
pub type Hms = (u32, u32, u32);

/// The fields of the two layouts nearly every timestamp is written in, `YYYY-MM-DD` and
/// `YYYY-MM-DD HH:MM:SS` (the separator also `T` or `t`), read without the regex: TIMESTAMP
/// matches both, with no fraction and no zone.
pub fn common_timestamp(b: &[u8]) -> Option<(u32, u32, u32, Option<Hms>)> {
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    if !(b.len() == 10 || b.len() == 19) || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let date = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    if b.len() == 10 {
        return Some((date.0, date.1, date.2, None));
    }
    if !matches!(b[10], b' ' | b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let time = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    Some((date.0, date.1, date.2, Some(time)))
}

pub(super) fn is_timestamp(text: &str) -> bool {
    // Every timestamp starts with four digits and a dash; most numbers and strings do not,
    // and the capturing search below is the resolver's most expensive step.
    let b = text.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    common_timestamp(b).is_some() || is_timestamp_by_regex(text)
}

pub(super) fn is_timestamp_by_regex(text: &str) -> bool {
    // The date-only form needs two-digit month and day; the datetime form does not.
    match TIMESTAMP.captures(text) {
        Some(c) => c.name("hour").is_some() || DATE_ONLY.is_match(text),
        None => false,
    }
}

pub fn construct_int(text: &str) -> Result<Value, String> {
    let cleaned: String = text.chars().filter(|c| *c != '_').collect();
    let (negative, digits) = match cleaned.as_bytes().first() {
        Some(b'-') => (true, &cleaned[1..]),
        Some(b'+') => (false, &cleaned[1..]),
        _ => (false, cleaned.as_str()),
    };
    let parsed: Option<i128> = if digits == "0" {
        Some(0)
    } else if let Some(bin) = digits.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()
    } else if let Some(hex) = digits.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()
    } else if digits.starts_with('0') {
        i128::from_str_radix(digits, 8).ok()
    } else if digits.contains(':') {
        digits.split(':').try_fold(0i128, |acc, part| {
            acc.checked_mul(60)?.checked_add(part.parse::<i128>().ok()?)
        })
    } else {
        digits.parse::<i128>().ok()
    };
    let magnitude = match parsed {
        Some(v) => v,
        None if digits.bytes().all(|b| b.is_ascii_digit()) => {
            let digits = digits.trim_start_matches('0');
            let sign = if negative { "-" } else { "" };
            return Ok(Value::BigInt(format!("{sign}{digits}")));
        }
        None => {
            return Err(format!(
                "'{}' is not an integer this reader can hold",
                quoted(text)
            ))
        }
    };
    let value = if negative { -magnitude } else { magnitude };
    Ok(match i64::try_from(value) {
        Ok(v) => Value::Int(v),
        Err(_) => Value::BigInt(value.to_string()),
    })
}

pub fn construct_float(text: &str) -> Result<f64, String> {
    let cleaned: String = text
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    let (sign, body) = match cleaned.as_bytes().first() {
        Some(b'-') => (-1.0, &cleaned[1..]),
        Some(b'+') => (1.0, &cleaned[1..]),
        _ => (1.0, cleaned.as_str()),
    };
    if body == ".inf" {
        return Ok(sign * f64::INFINITY);
    }
    if body == ".nan" {
        return Ok(f64::NAN);
    }
    if body.contains(':') {
        let mut value = 0.0;
        for part in body.split(':') {
            value = value * 60.0 + part.parse::<f64>().map_err(|e| e.to_string())?;
        }
        return Ok(sign * value);
    }
    // Python's float() takes "1." and "1.e+5"; Rust's parser wants a digit after the point.
    let normalised = body.replace(".e", ".0e");
    let normalised = if normalised.ends_with('.') {
        format!("{normalised}0")
    } else {
        normalised
    };
    normalised
        .parse::<f64>()
        .map(|v| sign * v)
        .map_err(|_| format!("'{}' is not a float", quoted(text)))
}

pub fn construct_timestamp(text: &str) -> Result<Value, String> {
    let bad = || format!("'{}' is not a real date or time", quoted(text));
    if let Some((year, month, day, time)) = common_timestamp(text.as_bytes()) {
        let date = NaiveDate::from_ymd_opt(year as i32, month, day).ok_or_else(bad)?;
        let Some((hour, minute, second)) = time else {
            return Ok(Value::Date(date));
        };
        let time = NaiveTime::from_hms_micro_opt(hour, minute, second, 0).ok_or_else(bad)?;
        return Ok(Value::DateTime(Timestamp {
            local: date.and_time(time),
            offset_seconds: None,
        }));
    }
    construct_timestamp_by_regex(text)
}

pub fn construct_timestamp_by_regex(text: &str) -> Result<Value, String> {
    let bad = || format!("'{}' is not a real date or time", quoted(text));
    let c = TIMESTAMP
        .captures(text)
        .ok_or_else(|| format!("'{}' is not a timestamp", quoted(text)))?;
    let num = |name: &str| -> u32 {
        c.name(name)
            .and_then(|m| m.as_str().parse().ok())
            .unwrap_or(0)
    };
    let date =
        NaiveDate::from_ymd_opt(num("year") as i32, num("month"), num("day")).ok_or_else(bad)?;
    if c.name("hour").is_none() {
        return Ok(Value::Date(date));
    }
    let micros = c.name("fraction").map_or(0, |f| {
        let mut digits: String = f.as_str().chars().take(6).collect();
        while digits.len() < 6 {
            digits.push('0');
        }
        digits.parse::<u32>().unwrap_or(0)
    });
    let time = NaiveTime::from_hms_micro_opt(num("hour"), num("minute"), num("second"), micros)
        .ok_or_else(bad)?;
    let offset_seconds = if let Some(sign) = c.name("tz_sign") {
        let magnitude = (num("tz_hour") * 3600 + num("tz_minute") * 60) as i32;
        // Python's timezone takes an offset strictly within a day, so PyYAML's load fails.
        if magnitude >= 86_400 {
            return Err(format!(
                "'{}' has a UTC offset of a day or more; write one between -23:59 and +23:59",
                quoted(text)
            ));
        }
        Some(if sign.as_str() == "-" {
            -magnitude
        } else {
            magnitude
        })
    } else if c.name("tz").is_some() {
        Some(0)
    } else {
        None
    };
    Ok(Value::DateTime(Timestamp {
        local: date.and_time(time),
        offset_seconds,
    }))
}
