use super::Restored;
use serde::Deserialize;
use std::collections::BTreeSet;

/// A line of the first format (fingerprints only).
#[derive(Deserialize)]
enum OldOp {
    #[serde(rename = "put")]
    Put(String, serde::de::IgnoredAny),
    #[serde(rename = "del")]
    Del(String),
}

/// A snapshot record of the second format, for its path.
#[derive(Deserialize)]
struct PathOnly {
    p: String,
    #[serde(default)]
    n: bool,
}

/// A journal line of the second format (after 17 characters of checksum).
#[derive(Deserialize)]
enum Op {
    #[serde(rename = "put")]
    Put(PathOnly),
    #[serde(rename = "del")]
    Del(String),
}

pub(super) fn decode(bytes: &[u8]) -> Restored {
    let mut recorded: BTreeSet<String> = BTreeSet::new();
    for line in bytes.split(|b| *b == b'\n') {
        if let Ok(op) = serde_json::from_slice::<OldOp>(line) {
            match op {
                OldOp::Put(path, _) => recorded.insert(path),
                OldOp::Del(path) => recorded.remove(&path),
            };
        } else if let Ok(r) = serde_json::from_slice::<PathOnly>(line) {
            if r.n {
                recorded.remove(&r.p);
            } else {
                recorded.insert(r.p);
            }
        } else if let Some(json) = line.get(17..) {
            match serde_json::from_slice::<Op>(json) {
                Ok(Op::Put(r)) if r.n => {
                    recorded.remove(&r.p);
                }
                Ok(Op::Put(r)) => {
                    recorded.insert(r.p);
                }
                Ok(Op::Del(p)) => {
                    recorded.remove(&p);
                }
                Err(_) => {}
            }
        }
    }
    Restored::Untrusted {
        reason: "it was written by an older polisd, in JSON".to_string(),
        recorded: recorded.into_iter().collect(),
    }
}
