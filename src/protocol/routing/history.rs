//! What the polis has learned for routing: settled outcomes in settlement order, and per tag
//! and citizen the `contracts_completed` count (the numbers `routing_stats.yml` holds).

use crate::protocol::routing::stats::Settlement;
use std::collections::HashMap;

/// One settled contract as a policy sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub citizen: String,
    /// The contract's required tags, duplicates removed.
    pub tags: Vec<String>,
    /// The settled quality, 1–5 (SPEC §6 step 2).
    pub quality: f64,
}

/// What the polis has learned: settled outcomes in settlement order, and per tag and citizen
/// the `contracts_completed` count (the same numbers `routing_stats.yml` holds).
#[derive(Debug, Clone, Default)]
pub struct History {
    outcomes: Vec<Outcome>,
    completed: HashMap<(String, String), u64>,
    // citizen -> indexes into `outcomes` of its settlements with a tag, oldest first; keeps a
    // pick O(a citizen's settlements).
    by_citizen: HashMap<String, Vec<usize>>,
}

impl History {
    pub fn new() -> History {
        History::default()
    }

    /// Builds the history from settled outcomes already in settlement order (SPEC §6 step 4).
    pub fn from_outcomes(outcomes: impl IntoIterator<Item = Outcome>) -> History {
        let mut history = History::new();
        for outcome in outcomes {
            history.record(outcome);
        }
        history
    }

    /// Builds the history from the settlements reconcile reads (`contract::read_settled`),
    /// which must already be in replay order (SPEC §6 step 4), oldest first.
    pub fn from_settlements<'s>(settlements: impl IntoIterator<Item = &'s Settlement>) -> History {
        History::from_outcomes(settlements.into_iter().map(|s| Outcome {
            citizen: s.owner.clone(),
            tags: s.tags.clone(),
            quality: f64::from(s.quality),
        }))
    }

    /// Appends the newest settlement; counts it once per distinct tag, as reconcile does.
    pub fn record(&mut self, mut outcome: Outcome) {
        // First-seen order; a set answers "seen?", so a settlement of 100,000 tags is linear.
        let mut seen: std::collections::HashSet<String> =
            std::collections::HashSet::with_capacity(outcome.tags.len());
        outcome.tags.retain(|tag| seen.insert(tag.clone()));
        for tag in &outcome.tags {
            let key = (tag.clone(), outcome.citizen.clone());
            *self.completed.entry(key).or_insert(0) += 1;
        }
        if !outcome.tags.is_empty() {
            self.by_citizen
                .entry(outcome.citizen.clone())
                .or_default()
                .push(self.outcomes.len());
        }
        self.outcomes.push(outcome);
    }

    /// Replaces a `contracts_completed` count, for callers whose counts come from
    /// `routing_stats.yml` rather than from the outcomes they hold.
    pub fn set_completed(&mut self, tag: &str, citizen: &str, n: u64) {
        self.completed
            .insert((tag.to_string(), citizen.to_string()), n);
    }

    /// `contracts_completed` of `citizen` on `tag` (0 when never seen).
    pub fn completed(&self, tag: &str, citizen: &str) -> u64 {
        self.completed
            .get(&(tag.to_string(), citizen.to_string()))
            .copied()
            .unwrap_or(0)
    }

    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    /// Indexes into `outcomes` of every settlement of `citizen` with a tag, oldest first.
    pub(super) fn settled_by(&self, citizen: &str) -> &[usize] {
        self.by_citizen.get(citizen).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_distinct_tag_once() {
        let h = History::from_outcomes([Outcome {
            citizen: "agent-a".into(),
            tags: vec!["x".into(), "x".into(), "y".into()],
            quality: 4.0,
        }]);
        assert_eq!(h.completed("x", "agent-a"), 1);
        assert_eq!(h.completed("y", "agent-a"), 1);
        assert_eq!(h.completed("z", "agent-a"), 0);
    }

    #[test]
    fn a_citizens_settlements_are_listed_once_each_in_order() {
        let outcome = |citizen: &str, tags: &[&str]| Outcome {
            citizen: citizen.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            quality: 3.0,
        };
        let h = History::from_outcomes([
            outcome("agent-a", &["x", "y"]),
            outcome("agent-b", &["x"]),
            outcome("agent-a", &[]),
            outcome("agent-a", &["y"]),
        ]);
        assert_eq!(h.settled_by("agent-a"), [0, 3]);
        assert_eq!(h.settled_by("agent-b"), [1]);
        assert!(h.settled_by("agent-c").is_empty());
    }

    #[test]
    fn from_settlements_counts_like_reconcile() {
        let settled = [
            Settlement {
                owner: "agent-a".into(),
                tags: vec!["py".into(), "go".into()],
                quality: 4,
                ..Settlement::default()
            },
            Settlement {
                owner: "agent-a".into(),
                tags: vec!["py".into()],
                quality: 2,
                ..Settlement::default()
            },
        ];
        let h = History::from_settlements(&settled);
        let st = crate::protocol::routing::stats::reconcile(
            &settled,
            &crate::yaml::Value::Null,
            &crate::yaml::Value::Null,
        );
        for tag in ["py", "go"] {
            let n = st.citizen(tag, "agent-a").unwrap().contracts_completed;
            assert_eq!(h.completed(tag, "agent-a"), n);
        }
        assert_eq!(h.outcomes()[1].quality, 2.0);
    }
}
