//! Findings: what polisd reports about an agent's file. A finding is data, not an error — the
//! operation that found it goes on.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// `error` or `warning`: how JSON, the stored findings, the terminal and the pages name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem in one file. `path` is relative to `_polis/`; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    pub path: String,
    pub line: Option<usize>,
    pub message: String,
}

/// Every finding code polisd emits. C-codes are SPEC §3's chronicle rules; the others are
/// polisd's own checks of the rest of the polis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    C001,
    C002,
    C003,
    C004,
    C005,
    C006,
    C007,
    C008,
    C009,
    /// A file that cannot be read as UTF-8 text (or at all).
    Unreadable,
    /// YAML or frontmatter that does not parse.
    BadYaml,
    /// A capability card with no `capability_tags`.
    CardWithoutTags,
    /// A card whose `agent_id` differs from its folder, or an id that breaks SPEC §2.
    BadId,
    /// An amendment vote by an id that is not a registered citizen.
    UnknownVoter,
    /// The same contract id in two of open/settled/abandoned.
    ContractInTwoFolders,
    /// A settled contract whose quality cannot be read, so 3 is assumed.
    QualityDefaulted,
    /// A settled contract that reconcile cannot use (bad tags, no owner).
    BadSettlement,
    /// A sync-tool conflict copy that is not the chronicle's.
    ConflictCopy,
    /// A card whose `content_hash` does not match its content.
    CardMismatch,
    /// Two citizens claimed one contract with no release between.
    ClaimConflict,
    /// Two citizens' entries in `reservations.yml` hold overlapping paths.
    ReservationOverlap,
    /// A `depends_on` id that names no contract.
    UnknownDependency,
    /// Contracts whose `depends_on` form a cycle.
    DependencyCycle,
    /// A citizen folder that breaks the registry's shape (audit).
    Registry,
    /// A contract without `contract_id`, or whose id is not its file name.
    ContractId,
    /// A frontmatter key the protocol does not define (often a typo).
    UnknownKey,
    /// A contract whose `status` does not belong in its folder.
    StatusFolder,
    /// A record naming a citizen who is not registered (opener, owner, routing effect).
    UnknownCitizen,
    /// `required_tags` that is not a list of tags.
    BadTags,
    /// An amendment field with a value the tally cannot use.
    BadAmendment,
    /// A lesson field with a value the router cannot use.
    BadLesson,
    /// A file holding git conflict markers: never read as a record.
    ConflictMarkers,
    /// The same line or notice id twice (a duplicate that arrived through a sync).
    Duplicate,
    /// A clone whose `.gitattributes` names polisd's merge driver while its git config lacks it.
    DriverNotConfigured,
    /// Copies of one contract that differ between worktrees or machines.
    Diverged,
    /// A contract's council request that cannot be read: no council starts.
    BadCouncil,
    /// A council's `council.md` that cannot be read back: the council is stuck.
    CouncilState,
    /// An entry of `reservations.yml` written wrong by hand: it may guard nothing, or nobody
    /// may be able to release it.
    BadReservation,
    /// A council seat file written for a round that is not open yet: it would count as the
    /// seat's contribution the moment that round opens, before its author read the packet.
    SeatAhead,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::C001 => "C001",
            Code::C002 => "C002",
            Code::C003 => "C003",
            Code::C004 => "C004",
            Code::C005 => "C005",
            Code::C006 => "C006",
            Code::C007 => "C007",
            Code::C008 => "C008",
            Code::C009 => "C009",
            Code::Unreadable => "P001",
            Code::BadYaml => "P002",
            Code::CardWithoutTags => "P003",
            Code::BadId => "P004",
            Code::UnknownVoter => "P005",
            Code::ContractInTwoFolders => "P006",
            Code::QualityDefaulted => "P007",
            Code::BadSettlement => "P008",
            Code::ConflictCopy => "P009",
            Code::CardMismatch => "P010",
            Code::ClaimConflict => "P011",
            Code::ReservationOverlap => "P012",
            Code::UnknownDependency => "P013",
            Code::DependencyCycle => "P014",
            Code::Registry => "P015",
            Code::ContractId => "P016",
            Code::UnknownKey => "P017",
            Code::StatusFolder => "P018",
            Code::UnknownCitizen => "P019",
            Code::BadTags => "P020",
            Code::BadAmendment => "P021",
            Code::BadLesson => "P022",
            Code::ConflictMarkers => "P023",
            Code::Duplicate => "P024",
            Code::DriverNotConfigured => "P025",
            Code::Diverged => "P026",
            Code::BadCouncil => "P027",
            Code::CouncilState => "P028",
            Code::BadReservation => "P029",
            Code::SeatAhead => "P030",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `1 error`, `2 errors`: a count of findings of one severity as a person reads it.
pub fn counted(n: usize, severity: Severity) -> String {
    let word = severity.as_str();
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// An agent's text (a chronicle line, a field's value, an id) as a finding quotes it: whole up
/// to [`QUOTED_CHARS`] characters, else its start and its size, as a refusal quotes a runaway
/// value. Every finding that quotes agent text quotes it through this; it is defined in `yaml`,
/// the lowest layer, so YAML's load errors quote the same way.
pub use crate::yaml::{quoted, QUOTED_CHARS};

/// Control characters escaped (`\u{1b}`, `\0`, `\n`): messages quote agents' text (a chronicle
/// line, a file name), and a finding is printed to terminals, logs and inboxes, where an escape
/// sequence or a NUL must show as text, not act. Other text is kept as it is.
pub fn printable(text: String) -> String {
    if !text.chars().any(char::is_control) {
        return text;
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl Finding {
    pub fn error(
        code: Code,
        path: impl Into<String>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            code,
            severity: Severity::Error,
            path: path.into(),
            line,
            message: printable(message.into()),
        }
    }

    pub fn warning(
        code: Code,
        path: impl Into<String>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            code,
            severity: Severity::Warning,
            path: path.into(),
            line,
            message: printable(message.into()),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = self.severity.as_str();
        match self.line {
            Some(line) => write!(
                f,
                "{}:{line}: {sev} {}: {}",
                printable(self.path.clone()),
                self.code,
                self.message
            ),
            None => write!(
                f,
                "{}: {sev} {}: {}",
                printable(self.path.clone()),
                self.code,
                self.message
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_findings_reads_in_the_singular_only_for_one() {
        assert_eq!(counted(0, Severity::Error), "0 errors");
        assert_eq!(counted(1, Severity::Warning), "1 warning");
        assert_eq!(counted(2, Severity::Warning), "2 warnings");
    }

    #[test]
    fn finding_with_escape_sequence_and_nul_prints_as_text() {
        let f = Finding::error(
            Code::C002,
            "contracts/open/two\nlines.md",
            Some(6),
            "the author `agent\u{0}\u{1b}[31m` is not registered",
        );
        assert_eq!(
            f.message,
            "the author `agent\\0\\u{1b}[31m` is not registered"
        );
        let shown = f.to_string();
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(shown.starts_with("contracts/open/two\\nlines.md:6: error C002"));
        // Ordinary text, non-ASCII included, is untouched.
        assert_eq!(printable("café — ok".into()), "café — ok");
    }
}
