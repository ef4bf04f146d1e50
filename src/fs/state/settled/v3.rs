use super::{Fingerprint, Named};
use serde::Deserialize;

#[derive(Deserialize, Clone, Copy)]
#[cfg_attr(test, derive(serde::Serialize))]
#[allow(dead_code)] // Read past, never used.
struct WireSettlement {
    owner: u32,
    tags: u32,
    instant_us: Option<i64>,
    when_text: u32,
    last_completed: Option<u32>,
    quality: u8,
    minutes: f64,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[allow(dead_code)] // Only the path and flags are used.
struct WireRecord<'a> {
    path: &'a str,
    fingerprint: Fingerprint,
    flags: u8,
    settlement: Option<WireSettlement>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[allow(dead_code)] // Read past, never used.
struct JournalSettlement<'a> {
    owner: &'a str,
    #[serde(borrow)]
    tags: Vec<&'a str>,
    instant_us: Option<i64>,
    when_text: &'a str,
    last_completed: Option<&'a str>,
    quality: u8,
    minutes: f64,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[allow(dead_code)] // Only the path and flags are used.
struct JournalRecord<'a> {
    path: &'a str,
    fingerprint: Fingerprint,
    flags: u8,
    #[serde(borrow)]
    settlement: Option<JournalSettlement<'a>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
enum Op<'a> {
    #[serde(borrow)]
    Put(JournalRecord<'a>),
    Del(&'a str),
}

pub(super) fn record_path(bytes: &[u8]) -> Option<(&str, u8, &[u8])> {
    let (r, more) = postcard::take_from_bytes::<WireRecord<'_>>(bytes).ok()?;
    Some((r.path, r.flags, more))
}

pub(super) fn frame_path(payload: &[u8]) -> Option<Named<'_>> {
    match postcard::from_bytes::<Op<'_>>(payload).ok()? {
        Op::Put(r) => Some(Named::Put(r.path, r.flags)),
        Op::Del(p) => Some(Named::Del(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{decode, fingerprint_fields, sha256, Header, Restored};
    use super::super::{FRAME_SUM, MAGIC, UNANNOUNCED};
    use super::*;

    fn frame(op: &Op<'_>) -> Vec<u8> {
        let payload = postcard::to_allocvec(op).unwrap();
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend(&sha256(&payload)[..FRAME_SUM]);
        out.extend(payload);
        out
    }

    /// A file as polisd wrote it before this format: two snapshot records (one a
    /// command's, not yet announced), then a put and a removal in the journal.
    #[test]
    fn a_file_of_format_3_is_untrusted_and_names_the_paths_it_had_counted() {
        let settlement = WireSettlement {
            owner: 0,
            tags: 0,
            instant_us: Some(1_700_000_000_000_000),
            when_text: 1,
            last_completed: None,
            quality: 4,
            minutes: 2.5,
        };
        let mut body = postcard::to_allocvec(&vec!["alice-agent", ""]).unwrap();
        body.extend(postcard::to_allocvec(&vec![vec![0u32]]).unwrap());
        body.extend(postcard::to_allocvec(&3u64).unwrap());
        for (path, flags) in [("a", 0), ("b", UNANNOUNCED), ("c", 0)] {
            body.extend(
                postcard::to_allocvec(&WireRecord {
                    path: &format!("contracts/settled/{path}.md"),
                    fingerprint: Fingerprint::default(),
                    flags,
                    settlement: Some(settlement),
                })
                .unwrap(),
            );
        }
        let fields = fingerprint_fields();
        let header = postcard::to_allocvec(&Header {
            polisd: env!("CARGO_PKG_VERSION"),
            fingerprint: fields.iter().map(String::as_str).collect(),
            zone_seconds: 0,
            records: 3,
            body_len: body.len() as u64,
            sha256: sha256(&body),
        })
        .unwrap();
        let mut file = MAGIC.to_vec();
        file.extend(3u32.to_le_bytes());
        file.extend((header.len() as u32).to_le_bytes());
        file.extend(header);
        file.extend(body);
        file.extend(frame(&Op::Put(JournalRecord {
            path: "contracts/settled/d.md",
            fingerprint: Fingerprint::default(),
            flags: 0,
            settlement: Some(JournalSettlement {
                owner: "bob-agent",
                tags: vec!["ml"],
                instant_us: None,
                when_text: "soon",
                last_completed: Some("2026-03-01"),
                quality: 2,
                minutes: 1.0,
            }),
        })));
        file.extend(frame(&Op::Del("contracts/settled/c.md")));
        match decode(&file).0 {
            Restored::Untrusted { reason, recorded } => {
                assert!(reason.contains("v3"), "{reason}");
                assert_eq!(
                    recorded,
                    ["contracts/settled/a.md", "contracts/settled/d.md"]
                );
            }
            other => panic!("trusted: {other:?}"),
        }
    }
}
