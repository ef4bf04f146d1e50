//! The coordinator's fallback verdict: what polisd writes when the chairman's time is up with
//! no valid verdict (the council seed's "synthesized by coordinator fallback"). It is built
//! from the council's state and the members' final texts only; it judges nothing.

/// The verdict polisd writes when the chairman's time is up with no valid verdict (the
/// seed's coordinator fallback). It judges nothing: the decision is `requested_changes` (no
/// sign-off without a chair), the chairman is marked failed, and every member's final
/// position is kept verbatim under Key disagreements so no dissent is flattened. `finals` is
/// each seat's last-round text (`None`: no response; `true`: a stub polisd wrote);
/// `review_by` is the date the kill criterion names.
pub fn synthesize(
    council: &super::state::Council,
    finals: &[(String, Option<String>, bool)],
    review_by: &str,
) -> String {
    let cid = &council.contract;
    let states = council.seat_states();
    let count = |want: &str| states.iter().filter(|(_, s)| *s == want).count();
    let mut out = format!(
        "---\ndecision: requested_changes\nsynthesized_by: {}\n---\n\n# Council verdict on `{cid}` (FAILED — synthesized by coordinator fallback)\n\npolisd wrote this file because the chairman wrote no valid verdict by {}. It is assembled from the packets and takes no side.\n\n## Selected panel\n\n",
        crate::protocol::layout::DAEMON_ID,
        council.verdict_due_at.as_deref().unwrap_or("-"),
    );
    for s in &council.seats {
        out.push_str(&format!(
            "- {} ({}, {}{})\n",
            s.label,
            s.id,
            s.vendor,
            s.lens
                .as_deref()
                .map_or(String::new(), |l| format!(", lens {l}"))
        ));
    }
    out.push_str(&format!("- mode: {}\n", council.mode.as_str()));
    out.push_str(&format!(
        "\n## Chairman\n\n{} (FAILED — synthesized by coordinator fallback)\n",
        council.chairman
    ));
    out.push_str("\n## Acceptable compromises\n\n- No chairman weighed the positions: this verdict gives up a judged decision to keep every position whole.\n");
    out.push_str(&format!(
        "\n## Kill criteria\n\n- If the owner or a new chairman has not written a judged verdict on {cid} by {review_by}, invalidated → start a new council on {cid}\n"
    ));
    out.push_str(&format!(
        "\n## Concrete next step\n\n- Write a judged verdict on {cid} from the last packet, `{}`.\n",
        super::state::packet_path(cid, council.mode.rounds())
    ));
    out.push_str("\n## Unresolved questions\n\n- Which position holds: polisd does not judge between them.\n");
    out.push_str("\n## Key agreements\n\nNot judged: polisd does not decide where members agree. Read the final positions below side by side.\n");
    out.push_str("\n## Key disagreements\n\nEvery member's final position, verbatim, so no dissent is lost.\n");
    for s in &council.seats {
        out.push_str(&format!("\n### {} ({})\n\n", s.label, s.id));
        match finals.iter().find(|(id, _, _)| *id == s.id) {
            Some((_, Some(text), simulated)) => {
                if *simulated {
                    out.push_str(&format!("{}\n\n", super::packet::SIMULATED_MARK));
                }
                for line in super::packet::body(text).trim().lines() {
                    out.push_str(&format!("> {line}\n"));
                }
            }
            _ => out.push_str("*no response*\n"),
        }
    }
    out.push_str("\n## Decision options\n\n- Follow the majority of the final positions: quick, but nobody weighed the dissent.\n- Ask the owner or a new chairman to judge: slower, and a decision someone answers for.\n");
    out.push_str("\n## Recommended next steps\n\n1. Read the final positions above.\n2. Record the judged decision with `polisd review` or a new council.\n");
    out.push_str(&format!(
        "\n## Confidence\n\nlow, because no chairman synthesized the rounds{}.\n",
        if council.simulated.is_some() {
            " and the council ran simulated"
        } else {
            ""
        }
    ));
    out.push_str(&format!(
        "\n## Execution reliability\n\n- live seats: {}, degraded: {}, offline: {}\n- chairman: timed out at {}\n",
        count("live"),
        count("degraded"),
        count("offline"),
        council.verdict_due_at.as_deref().unwrap_or("-"),
    ));
    if let Some(why) = &council.simulated {
        out.push_str(&format!("- simulated mode: {why}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::state::Council;
    use super::super::{lens::Library, verdict, Choice, Chosen, Mode, Request};
    use super::*;
    use crate::protocol::clock::{PolisTime, PolisZone};

    #[test]
    fn the_fallback_keeps_every_final_position_verbatim_and_passes_every_mode_s_check() {
        let now = PolisTime::at_stamp(PolisZone::default(), "2026-12-01 10:00").unwrap();
        for mode in Mode::ALL {
            let choice = Choice {
                mode,
                panel: ["claude-seat-aaaa", "codex-seat-bbbb"]
                    .iter()
                    .map(|id| Chosen {
                        id: id.to_string(),
                        vendor: "v".into(),
                        why: "w".into(),
                        lens: Some("feynman".into()),
                    })
                    .collect(),
                chairman: None,
                notes: vec![],
            };
            let request = Request {
                mode,
                ..Request::default()
            };
            let c = Council::new(
                "x",
                Some("codex-owner-eeee"),
                &request,
                &choice,
                "test",
                &Library::with(vec![]),
                &now,
            );
            let finals = vec![
                (
                    "claude-seat-aaaa".to_string(),
                    Some("Keep it.\nReally.".to_string()),
                    false,
                ),
                ("codex-seat-bbbb".to_string(), None, false),
            ];
            let text = synthesize(&c, &finals, "2026-12-15");
            assert!(text.contains("> Keep it.\n> Really.\n"), "{text}");
            assert!(
                text.contains("### Member B (codex-seat-bbbb)\n\n*no response*"),
                "{text}"
            );
            assert!(text.contains("(FAILED — synthesized by coordinator fallback)"));
            assert!(
                verdict::check(&text, Mode::Full).is_ok(),
                "{mode:?}: {text}"
            );
        }
    }
}
