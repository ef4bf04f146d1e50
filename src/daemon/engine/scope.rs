//! Which rules a pass runs, from the paths that changed.

use crate::protocol::layout::{self};

/// Which rules a pass must run, from the paths that changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scope {
    pub chronicle: bool,
    pub settled: bool,
    pub open: bool,
    pub tally: bool,
    /// Notices derived from the whole folder (cards, lessons, reviews, staleness).
    pub derive: bool,
    /// Sync conflict copies and copies of the polis elsewhere (worktrees): merged or reported.
    pub sync: bool,
    /// `reservations.yml`: expiry, release when work ends, overlap notices.
    pub reservations: bool,
    /// Councils: starts on claim, seat files, verdicts, rounds running out.
    pub council: bool,
    /// `reviews/`: suggestions written in review files.
    pub reviews: bool,
}

impl Scope {
    pub fn all() -> Scope {
        Scope {
            chronicle: true,
            settled: true,
            open: true,
            tally: true,
            derive: true,
            sync: true,
            reservations: true,
            council: true,
            reviews: true,
        }
    }

    /// Only the notices derived from the whole folder: what a pass of its own runs when
    /// nothing changed but the clock (the day's reflection, which every pass that writes runs).
    pub fn derive_only() -> Scope {
        Scope {
            derive: true,
            ..Scope::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Scope::default()
    }

    /// What a change to `rel` concerns.
    pub fn of_path(rel: &str) -> Scope {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if layout::is_conflict_copy(name) {
            return Scope {
                sync: true,
                ..Scope::of_path(&layout::conflict_original_path(rel).unwrap_or_default())
            };
        }
        let derive_only = Scope::derive_only();
        // A migration's backups are copies for `migrate --rollback`, not records.
        if rel.split('/').next() == Some(crate::protocol::migration::BACKUP_DIR) {
            return Scope::default();
        }
        if rel.is_empty() || rel == layout::POLIS_YML || rel == layout::INDEX {
            return Scope::all();
        }
        if rel == crate::protocol::contracts::reservation::FILE {
            return Scope {
                reservations: true,
                derive: true,
                ..Scope::default()
            };
        }
        if !rel.contains('/') && name.starts_with("chronicle") {
            return Scope {
                chronicle: true,
                tally: true,
                derive: true,
                // A `left polis` line releases what its citizen held.
                reservations: true,
                ..Scope::default()
            };
        }
        if rel == layout::ROUTING_STATS {
            // Generated: re-read only to put it back if someone edited it. Routing runs again
            // on the settlements themselves, not on this file.
            return Scope {
                settled: true,
                derive: true,
                ..Scope::default()
            };
        }
        // The end of a contract (settled, abandoned) and a change of owner release
        // reservations. A council's verdict is applied to its contract in whichever folder it
        // is, and waits for a file that just arrived there to be quiet: the wake-up for it
        // must reach the council.
        if rel.starts_with("contracts/settled") {
            return Scope {
                settled: true,
                derive: true,
                reservations: true,
                council: true,
                ..Scope::default()
            };
        }
        if rel.starts_with("contracts/open") || rel == "contracts" {
            return Scope {
                open: true,
                derive: true,
                reservations: true,
                // A claim starts the council a contract asks for.
                council: true,
                ..Scope::default()
            };
        }
        if rel.starts_with("contracts/abandoned") {
            return Scope {
                derive: true,
                reservations: true,
                council: true,
                ..Scope::default()
            };
        }
        if rel.starts_with("amendments") {
            return Scope {
                tally: true,
                derive: true,
                ..Scope::default()
            };
        }
        if let Some(rest) = rel.strip_prefix("citizens/") {
            return match rest.split('/').nth(1) {
                // Inboxes and journals change nothing polisd decides.
                Some(f) if f.starts_with("inbox") || f == "journal.md" => Scope::default(),
                Some("capability_card.yml") => Scope {
                    chronicle: true, // C002 depends on who is registered
                    tally: true,
                    open: true,
                    derive: true,
                    ..Scope::default()
                },
                Some("status.md") => Scope {
                    tally: true,
                    derive: true,
                    ..Scope::default()
                },
                _ => Scope::all(),
            };
        }
        if rel.starts_with(layout::REVIEWS_DIR) {
            // Review files (suggestions); seat files, verdicts and council.md
            // live in `reviews/<cid>/`.
            return Scope {
                derive: true,
                reviews: true,
                council: rel.contains('/') || rel == layout::REVIEWS_DIR,
                ..Scope::default()
            };
        }
        if rel.starts_with(layout::LESSONS_DIR) {
            return derive_only;
        }
        if rel.contains('/') {
            derive_only
        } else {
            Scope::default()
        }
    }

    pub(super) fn union(self, other: Scope) -> Scope {
        Scope {
            chronicle: self.chronicle || other.chronicle,
            settled: self.settled || other.settled,
            open: self.open || other.open,
            tally: self.tally || other.tally,
            derive: self.derive || other.derive,
            sync: self.sync || other.sync,
            reservations: self.reservations || other.reservations,
            council: self.council || other.council,
            reviews: self.reviews || other.reviews,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Scope;

    #[test]
    fn a_migrations_backup_concerns_no_pass() {
        let copy = ".polis-backups/20260605-090807/citizens/claude-code-one/capability_card.yml";
        assert!(Scope::of_path(copy).is_empty());
        assert!(Scope::of_path(".polis-backups/20260605-090807/MANIFEST.yml").is_empty());
        assert!(!Scope::of_path("citizens/claude-code-one/capability_card.yml").is_empty());
    }
}
