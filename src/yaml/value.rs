//! The YAML value model, typed the way PyYAML's safe loader types a document (YAML 1.1).
//!
//! It keeps the distinctions the protocol depends on: a date is not a datetime, a quoted
//! `'2026-03-02'` is a string, `yes` is a boolean. Mappings keep insertion order, as a Python
//! dict does, because the reference's output order follows it.

use chrono::{NaiveDate, NaiveDateTime};

/// A parsed YAML node.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`, kept as its canonical decimal digits (Python ints are unbounded).
    BigInt(String),
    Float(f64),
    Str(String),
    Date(NaiveDate),
    DateTime(Timestamp),
    Seq(Vec<Value>),
    Map(Mapping),
}

/// A YAML timestamp with a time part. PyYAML yields a naive `datetime` without a zone and an
/// aware one with it; `offset_seconds` keeps that difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    pub local: NaiveDateTime,
    pub offset_seconds: Option<i32>,
}

/// An insertion-ordered mapping. Duplicate keys keep the first position and the last value,
/// like assigning into a Python dict.
#[derive(Clone, Default)]
pub struct Mapping {
    entries: Vec<(Value, Value)>,
    /// Where each hashable key is, once the mapping is past [`INDEXED_FROM`] entries: without
    /// it every insert compared its key with every key before it, and a 1 MB file of 50,000
    /// keys took minutes to read. Small mappings (nearly all) scan, which is faster there.
    index: Option<std::collections::HashMap<IndexKey, usize>>,
}

/// Entries from which a mapping keeps an [`IndexKey`] index.
const INDEXED_FROM: usize = 64;

/// A key as its index sees it: equal exactly when the keys are equal as [`Value`]s. A float
/// is its bits with -0.0 as 0.0 (they are equal); a NaN (equal to nothing), a list and a
/// mapping have none and are found by scanning.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum IndexKey {
    Null,
    Bool(bool),
    Int(i64),
    BigInt(String),
    Float(u64),
    Str(String),
    Date(NaiveDate),
    DateTime(NaiveDateTime, Option<i32>),
}

impl IndexKey {
    fn of(key: &Value) -> Option<IndexKey> {
        Some(match key {
            Value::Null => IndexKey::Null,
            Value::Bool(b) => IndexKey::Bool(*b),
            Value::Int(i) => IndexKey::Int(*i),
            Value::BigInt(d) => IndexKey::BigInt(d.clone()),
            Value::Float(f) if f.is_nan() => return None,
            Value::Float(f) => IndexKey::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            Value::Str(t) => IndexKey::Str(t.clone()),
            Value::Date(d) => IndexKey::Date(*d),
            Value::DateTime(t) => IndexKey::DateTime(t.local, t.offset_seconds),
            Value::Seq(_) | Value::Map(_) => return None,
        })
    }
}

impl PartialEq for Mapping {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapping")
            .field("entries", &self.entries)
            .finish()
    }
}

impl Mapping {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty mapping with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        Mapping {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    pub fn insert(&mut self, key: Value, value: Value) {
        let Some(index) = &mut self.index else {
            if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
                slot.1 = value;
                return;
            }
            self.entries.push((key, value));
            if self.entries.len() >= INDEXED_FROM {
                self.reindex();
            }
            return;
        };
        match IndexKey::of(&key) {
            Some(ik) => match index.get(&ik) {
                Some(&at) => self.entries[at].1 = value,
                None => {
                    index.insert(ik, self.entries.len());
                    self.entries.push((key, value));
                }
            },
            None => {
                if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
                    slot.1 = value;
                } else {
                    self.entries.push((key, value));
                }
            }
        }
    }

    fn reindex(&mut self) {
        let mut index = std::collections::HashMap::with_capacity(self.entries.len() * 2);
        for (at, (k, _)) in self.entries.iter().enumerate() {
            if let Some(ik) = IndexKey::of(k) {
                index.entry(ik).or_insert(at);
            }
        }
        self.index = Some(index);
    }

    /// The value under a string key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        if let Some(index) = &self.index {
            let at = *index.get(&IndexKey::Str(key.to_string()))?;
            return Some(&self.entries[at].1);
        }
        self.entries
            .iter()
            .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
            .map(|(_, v)| v)
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self
            .entries
            .iter()
            .position(|(k, _)| matches!(k, Value::Str(s) if s == key))?;
        let (_, value) = self.entries.remove(at);
        if self.index.is_some() {
            self.reindex();
        }
        Some(value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<(Value, Value)> for Mapping {
    fn from_iter<I: IntoIterator<Item = (Value, Value)>>(iter: I) -> Self {
        let mut map = Mapping::new();
        for (k, v) in iter {
            map.insert(k, v);
        }
        map
    }
}

static NULL: Value = Value::Null;

impl Value {
    /// `value[key]` for a mapping, `Null` for anything else or a missing key — the
    /// `dict.get(key)` idiom the protocol's readers use everywhere.
    pub fn get(&self, key: &str) -> &Value {
        match self {
            Value::Map(m) => m.get(key).unwrap_or(&NULL),
            _ => &NULL,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A number as Python's `float(x)` would take it from a YAML int or float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Mapping> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// Python truthiness: what `if value:` decides.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::BigInt(_) => true,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Date(_) | Value::DateTime(_) => true,
            Value::Seq(s) => !s.is_empty(),
            Value::Map(m) => !m.is_empty(),
        }
    }

    /// Python's `str(value)`, used where the reference formats a value it read (e.g.
    /// `str(settled_at)[:10]`). A list or a mapping is written as Python writes it,
    /// `['a', None]`, so a message quoting an odd field reads as the reference's would.
    pub fn python_str(&self) -> String {
        match self {
            Value::Null => "None".to_string(),
            Value::Bool(true) => "True".to_string(),
            Value::Bool(false) => "False".to_string(),
            Value::Int(i) => i.to_string(),
            Value::BigInt(s) => s.clone(),
            Value::Float(f) => python_float_repr(*f),
            Value::Str(s) => s.clone(),
            Value::Date(d) => {
                let mut out = String::with_capacity(10);
                push_date(&mut out, *d);
                out
            }
            Value::DateTime(ts) => ts.python_str(' '),
            Value::Seq(_) | Value::Map(_) => self.python_repr(),
        }
    }

    /// Python's `repr(value)`: what `str` gives for the items of a list or a mapping.
    pub fn python_repr(&self) -> String {
        use chrono::{Datelike, Timelike};
        match self {
            Value::Str(s) => python_str_repr(s),
            Value::Date(d) => format!("datetime.date({}, {}, {})", d.year(), d.month(), d.day()),
            Value::DateTime(ts) => {
                let t = ts.local;
                let mut out = format!(
                    "datetime.datetime({}, {}, {}, {}, {}",
                    t.year(),
                    t.month(),
                    t.day(),
                    t.hour(),
                    t.minute()
                );
                let micros = t.nanosecond() / 1_000;
                if t.second() != 0 || micros != 0 {
                    out.push_str(&format!(", {}", t.second()));
                }
                if micros != 0 {
                    out.push_str(&format!(", {micros}"));
                }
                match ts.offset_seconds {
                    None => {}
                    Some(0) => out.push_str(", tzinfo=datetime.timezone.utc"),
                    // timedelta's repr keeps its seconds within a day, its days signed.
                    Some(off) => out.push_str(&format!(
                        ", tzinfo=datetime.timezone(datetime.timedelta({}seconds={}))",
                        if off < 0 { "days=-1, " } else { "" },
                        off.rem_euclid(86_400)
                    )),
                }
                out.push(')');
                out
            }
            Value::Seq(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(Value::python_repr)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Map(m) => format!(
                "{{{}}}",
                m.iter()
                    .map(|(k, v)| format!("{}: {}", k.python_repr(), v.python_repr()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => self.python_str(),
        }
    }
}

/// Python's `repr` of a `str`: single quotes unless the text holds a `'` and no `"`, with
/// backslash escapes for the quote, the backslash and the control characters.
fn python_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

impl Timestamp {
    /// `datetime.isoformat(sep)`, which is also what `str(datetime)` gives with `sep = ' '`.
    pub fn python_str(&self, sep: char) -> String {
        use chrono::Timelike;
        use std::fmt::Write;
        let mut out = String::with_capacity(19);
        push_date(&mut out, self.local.date());
        out.push(sep);
        let t = self.local.time();
        if t.nanosecond() < 1_000_000_000 {
            let _ = write!(out, "{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
        } else {
            // A leap second, which chrono writes as `:60`.
            out.push_str(&self.local.format("%H:%M:%S").to_string());
        }
        let micros = self.local.nanosecond() / 1_000;
        if micros != 0 {
            out.push_str(&format!(".{micros:06}"));
        }
        if let Some(off) = self.offset_seconds {
            let sign = if off < 0 { '-' } else { '+' };
            let off = off.unsigned_abs();
            out.push_str(&format!("{sign}{:02}:{:02}", off / 3600, (off % 3600) / 60));
            if off % 60 != 0 {
                out.push_str(&format!(":{:02}", off % 60));
            }
        }
        out
    }
}

/// `date.isoformat()`: chrono's `%Y-%m-%d`, written without parsing a format string for the
/// years Python's `date` holds (and year 0, which chrono writes the same way).
fn push_date(out: &mut String, d: NaiveDate) {
    use chrono::Datelike;
    use std::fmt::Write;
    if (0..=9999).contains(&d.year()) {
        let _ = write!(out, "{:04}-{:02}-{:02}", d.year(), d.month(), d.day());
    } else {
        let _ = write!(out, "{}", d.format("%Y-%m-%d"));
    }
}

/// Python's `repr(float)`: the shortest text that reads back to the same double, with `.0`
/// for integral values and exponent form outside [1e-4, 1e16).
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits; re-layout them the way Python does.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each expected text is what Python 3 printed for the same value.
    #[test]
    fn a_list_or_mapping_is_written_as_python_writes_it() {
        let s = |t: &str| Value::Str(t.to_string());
        let list = Value::Seq(vec![
            s("a"),
            Value::Null,
            Value::Bool(true),
            Value::Float(1.5),
            s("it's"),
            s("say \"hi\" it's"),
            s("a\\b\nc\u{1}"),
        ]);
        assert_eq!(
            list.python_str(),
            r#"['a', None, True, 1.5, "it's", 'say "hi" it\'s', 'a\\b\nc\x01']"#
        );
        let date = NaiveDate::from_ymd_opt(2026, 3, 2).unwrap();
        let at = |h, m, sec, micro| date.and_hms_micro_opt(h, m, sec, micro).unwrap();
        let mut inner = Mapping::new();
        inner.insert(s("x"), Value::Date(date));
        let mut map = Mapping::new();
        map.insert(s("k"), Value::Seq(vec![Value::Int(1), Value::Map(inner)]));
        map.insert(
            s("d"),
            Value::DateTime(Timestamp {
                local: at(10, 0, 0, 0),
                offset_seconds: None,
            }),
        );
        assert_eq!(
            Value::Map(map).python_str(),
            "{'k': [1, {'x': datetime.date(2026, 3, 2)}], 'd': datetime.datetime(2026, 3, 2, 10, 0)}"
        );
        let aware = |local, off| {
            Value::DateTime(Timestamp {
                local,
                offset_seconds: Some(off),
            })
        };
        assert_eq!(
            aware(at(10, 0, 5, 120), -5 * 3600).python_repr(),
            "datetime.datetime(2026, 3, 2, 10, 0, 5, 120, tzinfo=datetime.timezone(datetime.timedelta(days=-1, seconds=68400)))"
        );
        assert_eq!(
            aware(at(10, 0, 0, 0), 0).python_repr(),
            "datetime.datetime(2026, 3, 2, 10, 0, tzinfo=datetime.timezone.utc)"
        );
        assert_eq!(
            aware(at(10, 0, 0, 0), 7200).python_repr(),
            "datetime.datetime(2026, 3, 2, 10, 0, tzinfo=datetime.timezone(datetime.timedelta(seconds=7200)))"
        );
    }

    #[test]
    fn python_str_of_dates_and_times_is_chronos_format() {
        use chrono::{NaiveDate, NaiveTime};
        for (y, m, d) in [
            (0, 1, 1),
            (1, 2, 3),
            (999, 12, 31),
            (2026, 3, 2),
            (9999, 12, 31),
            (10000, 1, 1),
            (-1, 1, 1),
        ] {
            let date = NaiveDate::from_ymd_opt(y, m, d).unwrap();
            assert_eq!(
                Value::Date(date).python_str(),
                date.format("%Y-%m-%d").to_string()
            );
            for (h, mi, s, micro) in [
                (0, 0, 0, 0),
                (9, 5, 7, 1),
                (23, 59, 59, 999_999),
                (23, 59, 59, 1_500_000),
            ] {
                let local = date.and_time(NaiveTime::from_hms_micro_opt(h, mi, s, micro).unwrap());
                let text = Timestamp {
                    local,
                    offset_seconds: None,
                }
                .python_str(' ');
                assert!(
                    text.starts_with(&local.format("%Y-%m-%d %H:%M:%S").to_string()),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn float_repr_matches_python() {
        assert_eq!(python_float_repr(4.0), "4.0");
        assert_eq!(python_float_repr(4.333333333333333), "4.333333333333333");
        assert_eq!(python_float_repr(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(python_float_repr(1e16), "1e+16");
        assert_eq!(python_float_repr(1.5e-5), "1.5e-05");
        assert_eq!(python_float_repr(0.0001), "0.0001");
        assert_eq!(python_float_repr(123456789012345.0), "123456789012345.0");
        assert_eq!(python_float_repr(-2.5), "-2.5");
    }

    #[test]
    fn duplicate_keys_keep_first_position_and_last_value() {
        let mut m = Mapping::new();
        m.insert(Value::Str("a".into()), Value::Int(1));
        m.insert(Value::Str("b".into()), Value::Int(2));
        m.insert(Value::Str("a".into()), Value::Int(3));
        let keys: Vec<_> = m.iter().map(|(k, _)| k.python_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(m.get("a"), Some(&Value::Int(3)));
    }

    /// Regression: every insert compared the new key with every key before it, so a 1 MB card
    /// with 50,000 tags kept `polisd check` (and a daemon pass) busy for minutes. No clock
    /// here (timings belong to benches): sized so that pairwise work would run for minutes.
    #[test]
    fn a_mapping_of_many_keys_is_built_in_linear_time() {
        let n = 200_000;
        let mut m = Mapping::new();
        for i in 0..n {
            m.insert(Value::Str(format!("t{i}")), Value::Int(i));
            m.insert(Value::Int(i), Value::Null);
        }
        // Duplicates still keep the first position and the last value past the first few keys.
        m.insert(Value::Str("t7".into()), Value::Int(-1));
        m.insert(Value::Int(7), Value::Bool(true));
        assert_eq!(m.len(), 2 * n as usize);
        assert_eq!(m.get("t7"), Some(&Value::Int(-1)));
        assert_eq!(
            m.iter().nth(14),
            Some((&Value::Str("t7".into()), &Value::Int(-1)))
        );
        assert_eq!(m.iter().nth(15), Some((&Value::Int(7), &Value::Bool(true))));
        // Keys equal as values are one key, as before: 0.0 and -0.0; never a NaN.
        let mut f = Mapping::new();
        for i in 0..INDEXED_FROM as i64 {
            f.insert(Value::Int(i), Value::Null);
        }
        f.insert(Value::Float(0.0), Value::Int(1));
        f.insert(Value::Float(-0.0), Value::Int(2));
        f.insert(Value::Float(f64::NAN), Value::Int(3));
        f.insert(Value::Float(f64::NAN), Value::Int(4));
        assert_eq!(f.len(), INDEXED_FROM + 3);
        assert_eq!(
            f.iter().nth(INDEXED_FROM),
            Some((&Value::Float(0.0), &Value::Int(2)))
        );
        assert_eq!(f.remove("x"), None);
    }
}
