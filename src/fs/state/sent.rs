//! The notifications polisd sent, as the state keeps them: each kind once, and each id of 16
//! lowercase hex digits (every id polisd makes) as its 64 bits. A set of two strings cost about
//! 130 bytes an entry; this about 20, which matters where a polis has a notice per settled file
//! (an old polis whose million settled files each have a finding). `state.json` holds the same
//! list of `{kind, id}` as before, in the same order.

use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeSet;

/// A notification polisd sent: its kind (`contract-routed`, …) and 16-hex id, as `state.json`
/// spells it.
#[derive(Serialize, Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    id: Cow<'a, str>,
}

/// The set of (kind, id) pairs already sent.
#[derive(Debug, Clone, Default)]
pub struct SentNotifications {
    /// Each kind once, in the order first seen (an index into it never moves).
    kinds: Vec<String>,
    /// (kind, id) of ids that are 16 lowercase hex digits.
    hex: BTreeSet<(u16, u64)>,
    /// Any other id, as text (a hand-edited or foreign state).
    other: BTreeSet<(u16, String)>,
}

/// `id` as the number it spells, when it is exactly 16 lowercase hex digits (so formatting the
/// number gives `id` back).
fn hex_id(id: &str) -> Option<u64> {
    let lower_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    (id.len() == 16 && id.bytes().all(|b| lower_hex(&b)))
        .then(|| u64::from_str_radix(id, 16).ok())
        .flatten()
}

impl SentNotifications {
    fn kind_at(&self, kind: &str) -> Option<u16> {
        self.kinds
            .iter()
            .position(|k| k == kind)
            .map(|at| at as u16)
    }

    pub fn contains(&self, kind: &str, id: &str) -> bool {
        let Some(k) = self.kind_at(kind) else {
            return false;
        };
        match hex_id(id) {
            Some(n) => self.hex.contains(&(k, n)),
            None => self.other.contains(&(k, id.to_string())),
        }
    }

    /// Records (kind, id); false if it was already there.
    pub fn insert(&mut self, kind: &str, id: &str) -> bool {
        let k = match self.kind_at(kind) {
            Some(k) => k,
            None => {
                self.kinds.push(kind.to_string());
                (self.kinds.len() - 1) as u16
            }
        };
        match hex_id(id) {
            Some(n) => self.hex.insert((k, n)),
            None => self.other.insert((k, id.to_string())),
        }
    }

    /// Forgets (kind, id); false if it was not there.
    pub fn remove(&mut self, kind: &str, id: &str) -> bool {
        let Some(k) = self.kind_at(kind) else {
            return false;
        };
        match hex_id(id) {
            Some(n) => self.hex.remove(&(k, n)),
            None => self.other.remove(&(k, id.to_string())),
        }
    }

    pub fn len(&self) -> usize {
        self.hex.len() + self.other.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every (kind, id), sorted as text.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Cow<'_, str>)> {
        let mut kinds: Vec<u16> = (0..self.kinds.len() as u16).collect();
        kinds.sort_by_key(|&k| &self.kinds[k as usize]);
        kinds.into_iter().flat_map(move |k| {
            let kind = self.kinds[k as usize].as_str();
            let hex = self
                .hex
                .range((k, 0)..=(k, u64::MAX))
                .map(|(_, n)| Cow::Owned(format!("{n:016x}")));
            let other = self
                .other
                .range((k, String::new())..)
                .take_while(move |(at, _)| *at == k)
                .map(|(_, id)| Cow::Borrowed(id.as_str()));
            merge_sorted(hex, other).map(move |id| (kind, id))
        })
    }
}

/// Two sorted sequences as one.
fn merge_sorted<'a>(
    a: impl Iterator<Item = Cow<'a, str>>,
    b: impl Iterator<Item = Cow<'a, str>>,
) -> impl Iterator<Item = Cow<'a, str>> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if y < x => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}

impl PartialEq for SentNotifications {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for SentNotifications {}

impl Serialize for SentNotifications {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for (kind, id) in self.iter() {
            seq.serialize_element(&Entry {
                kind: Cow::Borrowed(kind),
                id,
            })?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for SentNotifications {
    /// Entry by entry, so a long list is never held twice.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = SentNotifications;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of {kind, id}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut sent = SentNotifications::default();
                while let Some(e) = seq.next_element::<Entry<'de>>()? {
                    sent.insert(&e.kind, &e.id);
                }
                Ok(sent)
            }
        }
        deserializer.deserialize_seq(Entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_the_list_it_replaced_in_the_same_order() {
        let text = r#"[
  {"kind": "b-kind", "id": "00000000000000ff"},
  {"kind": "a-kind", "id": "ffffffffffffffff"},
  {"kind": "a-kind", "id": "0123456789abcdef"},
  {"kind": "a-kind", "id": "0123456789ABCDEF"},
  {"kind": "a-kind", "id": "short"},
  {"kind": "a-kind", "id": "0123456789abcdef"}
]"#;
        let sent: SentNotifications = serde_json::from_str(text).unwrap();
        assert_eq!(sent.len(), 5);
        let mut expected: Vec<(String, String)> = serde_json::from_str::<Vec<Entry>>(text)
            .unwrap()
            .into_iter()
            .map(|e| (e.kind.into_owned(), e.id.into_owned()))
            .collect();
        expected.sort();
        expected.dedup();
        let got: Vec<(String, String)> = sent
            .iter()
            .map(|(k, id)| (k.to_string(), id.into_owned()))
            .collect();
        assert_eq!(got, expected);
        let written = serde_json::to_string(&sent).unwrap();
        let again: SentNotifications = serde_json::from_str(&written).unwrap();
        assert_eq!(again, sent);
        assert!(sent.contains("a-kind", "0123456789ABCDEF"));
        assert!(sent.contains("a-kind", "short"));
        assert!(sent.contains("b-kind", "00000000000000ff"));
        assert!(!sent.contains("b-kind", "ffffffffffffffff"));
        assert!(!sent.contains("c-kind", "00000000000000ff"));
    }

    #[test]
    fn an_id_is_recorded_once_whatever_its_spelling_class() {
        let mut sent = SentNotifications::default();
        assert!(sent.insert("k", "00000000000000aa"));
        assert!(!sent.insert("k", "00000000000000aa"));
        assert!(sent.insert("k", "00000000000000AA"));
        assert!(sent.insert("j", "00000000000000aa"));
        assert_eq!(sent.len(), 3);
        assert_eq!(hex_id("00000000000000aa"), Some(0xaa));
        assert_eq!(hex_id("+0000000000000aa"), None);
        assert_eq!(hex_id("00000000000000a"), None);
    }

    #[test]
    fn a_removed_id_is_no_longer_sent_and_can_be_recorded_again() {
        let mut sent = SentNotifications::default();
        sent.insert("k", "00000000000000aa");
        sent.insert("k", "short");
        assert!(sent.remove("k", "00000000000000aa"));
        assert!(!sent.remove("k", "00000000000000aa"));
        assert!(!sent.remove("j", "short"));
        assert!(sent.remove("k", "short"));
        assert!(!sent.contains("k", "00000000000000aa"));
        assert!(sent.is_empty());
        assert!(sent.insert("k", "00000000000000aa"));
    }
}
