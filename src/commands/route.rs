//! `polisd route`: recommend a citizen for an open contract (SPEC §7), and explain why.

use crate::protocol::routing::Recommendation;

/// The text `route --explain` prints: every candidate's breakdown, sorted by total.
pub fn explain(rec: &Recommendation) -> String {
    let mut out = String::from("Score breakdown (sorted by total):\n");
    for s in &rec.scores {
        out.push_str(&format!(
            "  {:30}  total={:.3}  hist={:.2}  self={:.2}  cost={:.2}  avail={:.2}  lessons={:+.2}\n",
            s.citizen, s.total, s.historical, s.self_rating, s.cost_fit, s.availability, s.lessons
        ));
        if !s.applied_lessons.is_empty() {
            out.push_str(&format!(
                "  {:30}    lessons applied: {}\n",
                "",
                s.applied_lessons.join(", ")
            ));
        }
    }
    out.push_str(&format!("Explore rate: {:.2}\n", rec.explore_rate));
    out
}
