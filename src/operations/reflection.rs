//! Reflection over a polis (`polisd reflect` and the daemon's daily pass): gathering the
//! evidence the detectors of [`crate::protocol::amendments::reflection`] read, and filing the proposals
//! they make as amendments with their chronicle line.

use super::amendment::ProposeRequest;
use super::error::OpError;
use crate::fs::snapshot::{ContractFile, Polis};
use crate::fs::writer::Writer;
use crate::protocol::amendments::amendment::{read_when, When};
use crate::protocol::amendments::reflection::{
    self as rules, AmendmentEvidence, Evidence, FindingEvidence, Held, LessonEvidence, Proposal,
    SettledEvidence, StaleEvidence,
};
use crate::protocol::chronicle::{self, ChronicleContext};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout::{self, AmendmentFolder, ContractFolder};
use crate::protocol::routing::stats::{Settlement, SettlementView};
use crate::yaml::Value;
use chrono::{Duration, NaiveDateTime};
use std::collections::{BTreeSet, HashMap};

/// Which detectors a run feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything: `polisd reflect` and the daemon's daily run.
    All,
    /// Only the detectors that settled contracts feed (after a settlement).
    Settled,
}

/// One proposal and what became of it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reflected {
    pub amendment_id: String,
    /// When its evidence was complete (`YYYY-MM-DD HH:MM:SS`): its `proposed_at`, and the day
    /// its id names ([`rules::caused_at`]).
    pub proposed_at: String,
    #[serde(flatten)]
    pub proposal: Proposal,
    /// Why it is not filed, when it is not.
    pub held: Option<Held>,
    /// Whether this run wrote it.
    pub written: bool,
}

/// A settled contract's evidence, from its file and the settlement reconcile read from it.
pub fn settled_evidence(file: &ContractFile, settlement: &Settlement) -> SettledEvidence {
    let k = &file.contract;
    SettledEvidence {
        contract_id: k
            .contract_id
            .clone()
            .unwrap_or_else(|| file.file.stem.clone()),
        owner: Some(settlement.owner.clone()),
        tags: settlement.tags.clone(),
        quality: settlement.quality,
        recommended: k.routing.recommended_by_router.clone(),
        guarded: k.stakes.as_deref() == Some("high")
            || k.review.required == Some(true)
            || k.review.reviewer.is_some(),
        settled_at: settlement.instant,
    }
}

/// A settled contract's evidence from its settlement alone, as the ledger keeps it (what the
/// detectors read beside the settlement is kept with it: `recommended`, `guarded`). Equal to
/// [`settled_evidence`] of the file it was read from; `None` for a `renamed` one, whose
/// `contract_id` only its file gives.
pub fn settled_evidence_of(path: &str, s: &SettlementView<'_>) -> Option<SettledEvidence> {
    (!s.renamed).then(|| settled_evidence_named(layout::record_stem(path), s))
}

/// A settled contract's evidence from the ledger's view of it, with its `contract_id` known
/// (the file's name, or the id read from a renamed file).
pub fn settled_evidence_named(contract_id: &str, s: &SettlementView<'_>) -> SettledEvidence {
    SettledEvidence {
        contract_id: contract_id.to_string(),
        owner: Some(s.owner.to_string()),
        tags: s.tags.to_vec(),
        quality: s.quality,
        recommended: s.recommended.map(str::to_string),
        guarded: s.guarded,
        settled_at: s.instant,
    }
}

/// The evidence of a polis read with its settled contracts ([`Polis::read`]).
pub fn gather(polis: &Polis, scope: Scope, now: &PolisTime) -> Evidence {
    let by_path: HashMap<&str, &Settlement> = polis
        .settlements
        .iter()
        .map(|s| (s.path.as_str(), s))
        .collect();
    let mut settled: Vec<SettledEvidence> = polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Settled)
        .filter_map(|c| Some(settled_evidence(c, by_path.get(c.file.rel.as_str())?)))
        .collect();
    settled.sort_by(|a, b| a.contract_id.cmp(&b.contract_id));
    let mut evidence = gather_with(polis, settled, scope, now);
    evidence.clock = polis.newest_stamp(now);
    evidence
}

/// The evidence, with the settled contracts' part given (the daemon reads only the files of
/// the tags where a detector could fire). [`Evidence::clock`] is left to the caller (the
/// daemon keeps it without scanning the chronicle again).
pub fn gather_with(
    polis: &Polis,
    settled: Vec<SettledEvidence>,
    scope: Scope,
    now: &PolisTime,
) -> Evidence {
    let stats = super::current_stats(polis);
    let mut evidence = Evidence {
        settled,
        amendments: amendments(polis, now),
        lesson_impact_floor: polis.settings.lesson_impact_floor,
        explore_rate: crate::protocol::routing::score::explore_rate(&polis.settings, &stats),
        ..Evidence::default()
    };
    if scope == Scope::All {
        evidence.no_lessons = polis
            .chronicle_text()
            .map(crate::protocol::chronicle::activity::settled_without_lesson)
            .unwrap_or_default()
            .into_iter()
            .map(|(author, stamp, line)| FindingEvidence {
                code: "no-lesson".into(),
                author,
                stamp,
                line,
            })
            .collect();
        evidence.findings = recent_findings(polis, now);
        evidence.stale = stale(polis, now);
        evidence.lessons = polis
            .lessons
            .iter()
            .filter_map(|l| {
                Some(LessonEvidence {
                    lesson_id: l.lesson.lesson_id.clone(),
                    tags: l.lesson.capability_tags.clone(),
                    impact: l.lesson.quality_impact?,
                    filed_at: read_when(&l.lesson.filed_at, now).map(|w| match w {
                        When::Moment(t) => t,
                        When::Day(d) => d.and_hms_opt(0, 0, 0).unwrap_or_default(),
                    }),
                })
            })
            .collect();
    }
    evidence
}

/// Every amendment on file, with what [`rules::dedup`] compares.
fn amendments(polis: &Polis, now: &PolisTime) -> Vec<AmendmentEvidence> {
    let moment = |v: &Value| {
        read_when(v, now).map(|w| match w {
            When::Moment(t) => t,
            When::Day(d) => d.and_hms_opt(0, 0, 0).unwrap_or_default(),
        })
    };
    polis
        .amendments
        .iter()
        .map(|file| {
            let a = &file.amendment;
            let fields = crate::protocol::frontmatter::parse(&file.text)
                .map(|r| r.fields)
                .unwrap_or(Value::Null);
            let listed = |key: &str| match fields.get(key) {
                Value::Seq(items) => items.len(),
                _ => 0,
            };
            let evidence_count = match fields.get("evidence_count") {
                Value::Int(n) if *n >= 0 => *n as usize,
                _ => listed("evidence_contracts").max(listed("evidence_lines")),
            };
            AmendmentEvidence {
                id: a.id.clone(),
                status: a.status.clone().unwrap_or_default(),
                ratified: file.folder == AmendmentFolder::Ratified,
                reflect_slug: fields.get("reflect_slug").as_str().map(str::to_string),
                evidence_count,
                proposed_at: moment(&a.proposed_at),
                expires_at: moment(&a.expires_at),
            }
        })
        .collect()
}

/// Error findings of chronicle lines written in the detector's window, with their authors.
fn recent_findings(polis: &Polis, now: &PolisTime) -> Vec<FindingEvidence> {
    let since = now.now - Duration::days(rules::FINDING_WINDOW_DAYS);
    let registered = |id: &str| polis.cards.contains_key(id);
    let exists = |rel: &str| polis.exists(rel);
    let mut out = Vec::new();
    for text in polis.recent_chronicle() {
        // Each line's stamp and author read once; the lines keep their order (and numbers).
        let mut stamped = Vec::new();
        let lines: Vec<chronicle::Line> = chronicle::scan(text)
            .lines
            .into_iter()
            .filter(|l| match chronicle::stamp_and_author(&l.text) {
                Some((stamp, author)) if stamp >= since => {
                    stamped.push((stamp, author.to_string()));
                    true
                }
                _ => false,
            })
            .collect();
        let ctx = ChronicleContext {
            path: layout::CHRONICLE,
            is_registered: &registered,
            link_exists: &exists,
            newest_earlier: None,
            now: *now,
        };
        let (findings, _) = chronicle::validate_all(&lines, &ctx);
        for f in findings {
            let Some(at) = f
                .line
                .and_then(|n| lines.binary_search_by_key(&n, |l| l.number).ok())
            else {
                continue;
            };
            let (stamp, author) = &stamped[at];
            out.push(FindingEvidence {
                code: f.code.to_string(),
                author: author.clone(),
                stamp: *stamp,
                line: lines[at].text.clone(),
            });
        }
    }
    out
}

fn stale(polis: &Polis, now: &PolisTime) -> Vec<StaleEvidence> {
    let stale = super::stale_claims(polis, now);
    polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Open && stale.contains_key(&c.file.stem))
        .map(|c| StaleEvidence {
            contract_id: c.file.stem.clone(),
            tags: c.contract.required_tags.clone(),
            since: stale
                .get(&c.file.stem)
                .and_then(|last| chronicle::parse_stamp(last))
                .map(|t| t + Duration::days(chronicle::ACTIVITY_WINDOW_DAYS)),
        })
        .collect()
}

/// Detects, deduplicates and, with `writer`, files each new proposal through
/// [`super::amendment::propose`]: the amendment in `amendments/proposed/` under its dated slug,
/// then its `proposed amendment` line. Idempotent: an amendment file already there is not
/// written again, and its line is appended only when the chronicle lacks it, so a crash between
/// the two is finished by the next run.
pub fn reflect(
    evidence: &Evidence,
    min_evidence: usize,
    writer: Option<&Writer>,
    now: &PolisTime,
) -> Result<Vec<Reflected>, OpError> {
    let mut out = Vec::new();
    let mut filed_slugs: BTreeSet<String> = BTreeSet::new();
    for proposal in rules::detect(evidence, min_evidence, now) {
        // Dated by its evidence, not by this run: the same evidence is the same file on every
        // machine, whichever day each runs reflection (docs/sync.md).
        let at = rules::caused_at(&proposal, evidence).unwrap_or_default();
        let id = rules::amendment_id(&proposal, at.date());
        let mut held = rules::dedup(&proposal, &evidence.amendments, now);
        // The same proposal, already filed (in either folder, whatever its status now).
        if held.is_none() {
            held = evidence.amendments.iter().find(|a| a.id == id).map(|a| {
                let amendment = id.clone();
                match a.status.as_str() {
                    _ if a.ratified => Held::Ratified { amendment },
                    "ratified" => Held::Ratified { amendment },
                    "rejected" | "expired" => Held::Declined {
                        amendment,
                        evidence_then: a.evidence_count,
                    },
                    _ => Held::Pending { amendment },
                }
            });
        }
        if held.is_none() {
            held = rules::stale(at, now);
        }
        // The file of today's proposal is on disk but the listing above predates it.
        if held.is_none() && !filed_slugs.insert(proposal.slug.clone()) {
            held = Some(Held::Pending {
                amendment: id.clone(),
            });
        }
        let mut written = false;
        if let (Some(writer), None) = (writer, &held) {
            written = file(writer, &proposal, &id, at, now)?;
        }
        out.push(Reflected {
            amendment_id: id,
            proposed_at: at.format("%Y-%m-%d %H:%M:%S").to_string(),
            proposal,
            held,
            written,
        });
    }
    Ok(out)
}

/// Files one proposal through the amendment operations, under its exact id.
fn file(
    writer: &Writer,
    proposal: &Proposal,
    id: &str,
    at: NaiveDateTime,
    now: &PolisTime,
) -> Result<bool, OpError> {
    let draft = rules::draft(proposal, at);
    let filed = super::amendment::propose(
        writer,
        now,
        &ProposeRequest {
            title: draft.title,
            by: rules::REFLECTOR.to_string(),
            body: draft.body,
            expires: Some(draft.expires),
            quorum: Some(rules::PROPOSAL_QUORUM),
            id: Some(id.to_string()),
            extra: draft.extra,
            note: "evidence-mined by polisd reflect".to_string(),
            // When its evidence was complete, not when this run filed it: the same proposal
            // filed by two daemons on synced machines, on any days, is one file (docs/sync.md).
            proposed_at: Some(at.format("%Y-%m-%d %H:%M:%S").to_string()),
        },
    )?;
    Ok(filed.written)
}
