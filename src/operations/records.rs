//! The rules of hand-written records (contracts, amendments, lessons) over a read polis, each
//! finding with the citizen who should fix it. `polisd check` reports them; the daemon sends
//! each to its author once and does not route a contract with an error.

use crate::fs::snapshot::{ContractFile, Polis};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::record_check;
use crate::protocol::finding::{Finding, Severity};
use crate::protocol::frontmatter::Record;
use crate::protocol::layout::{self, ContractFolder};

/// A finding about a record and who wrote the record (as it says; maybe not a citizen).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordFinding {
    pub finding: Finding,
    pub author: Option<String>,
    /// The record's own stamp (`opened_at`, `proposed_at`, `filed_at`), the heading of the
    /// notice about it: a finding is caused by the file's bytes, and this is the time they hold.
    pub at: Option<String>,
}

/// The SPEC §6 findings of one contract file (of a settled one, [`settled_contract_findings`]).
pub fn contract_findings(file: &ContractFile, is_citizen: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    if file.folder == ContractFolder::Settled {
        return settled_contract_findings(
            &file.file.rel,
            &file.file.stem,
            &file.file.text,
            &file.file.record,
        );
    }
    record_check::check_contract(
        &file.file.rel,
        file.folder,
        &file.file.stem,
        &file.file.text,
        &file.file.record,
        is_citizen,
    )
}

/// The SPEC §6 findings of a settled contract's file, which its bytes alone decide: `check`
/// finds them in the polis it read, the daemon and a reader without one when they read the
/// file (`published::read_settled`), and both keep them until the file changes. So whether
/// the citizens it names still have a card (P019) is left out: a settled contract is history,
/// and a card added or removed changes no settled file. A missing `opened_by` is still one.
pub fn settled_contract_findings(
    rel: &str,
    stem: &str,
    text: &str,
    record: &Record,
) -> Vec<Finding> {
    record_check::check_contract(rel, ContractFolder::Settled, stem, text, record, &|_| true)
}

/// Whether a contract has an error a router must not guess around (no id, a status that does
/// not belong in its folder, tags no one can match).
pub fn contract_has_errors(polis: &Polis, file: &ContractFile) -> bool {
    let registered = polis.registered();
    let is_citizen = |id: &str| registered.contains(id);
    contract_findings(file, &is_citizen)
        .iter()
        .any(|f| f.severity == Severity::Error)
}

/// Every record finding in the polis: each contract the polis holds (the daemon's read leaves
/// settled ones out: it finds theirs as it reads them), each amendment, each lesson.
pub fn record_findings(polis: &Polis, now: &PolisTime) -> Vec<RecordFinding> {
    record_findings_with(polis, now, &mut super::Rechecks::once())
}

/// [`record_findings`], each amendment checked through `rechecks` (again only when its text
/// changed).
pub fn record_findings_with(
    polis: &Polis,
    now: &PolisTime,
    rechecks: &mut super::Rechecks,
) -> Vec<RecordFinding> {
    let registered = polis.registered();
    let is_citizen = |id: &str| registered.contains(id) || layout::is_system_citizen(id);
    let stamp = |v: &crate::yaml::Value| crate::protocol::delivery::inbox::value_stamp(v, now.zone);
    let mut out = Vec::new();
    for c in &polis.contracts {
        let author = c.contract.opened_by.clone();
        let at = stamp(&c.contract.opened_at);
        out.extend(
            contract_findings(c, &is_citizen)
                .into_iter()
                .map(|finding| RecordFinding {
                    finding,
                    author: author.clone(),
                    at: at.clone(),
                }),
        );
    }
    for a in polis.amendments.iter() {
        let author = a.amendment.proposed_by.clone();
        let at = stamp(&a.amendment.proposed_at);
        out.extend(
            rechecks
                .amendment(&a.rel, &a.text, now)
                .into_iter()
                .map(|finding| RecordFinding {
                    finding,
                    author: author.clone(),
                    at: at.clone(),
                }),
        );
    }
    for l in &polis.lessons {
        let author = l.lesson.filed_by.clone();
        let at = stamp(&l.lesson.filed_at);
        out.extend(
            record_check::check_lesson(&l.rel, &l.lesson.fields, &is_citizen)
                .into_iter()
                .map(|finding| RecordFinding {
                    finding,
                    author: author.clone(),
                    at: at.clone(),
                }),
        );
    }
    out
}
