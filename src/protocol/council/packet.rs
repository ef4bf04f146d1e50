//! What members write and read: word counts and limits, the anonymised packet of a closed
//! round, and the prompts polisd sends (in this project's words; see `docs/council.md`).
//!
//! Anonymity is by text substitution: every seat's id in any contribution becomes its label
//! (a member's own id becomes `[self]`), so no packet before the last names a member. Each
//! contribution is quoted (`> `), so nothing in it can pose as a heading of the packet.

use super::state::{self, Council};

/// The words of a contribution: its body (a frontmatter, if any, is not counted), split on
/// whitespace. A byte-order mark (an editor on Windows saves one) is not part of the text:
/// left in, it hides the frontmatter from the split, which then reaches the packet.
pub fn body(text: &str) -> &str {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    crate::protocol::frontmatter::split(text).body
}

pub fn word_count(text: &str) -> usize {
    body(text).split_whitespace().count()
}

/// The first `limit` words of `text`, with the text between them kept as written; `None`
/// when it is within the limit.
pub fn cut(text: &str, limit: usize) -> Option<String> {
    let mut count = 0;
    let mut in_word = false;
    let mut end = 0;
    for (i, ch) in text.char_indices() {
        if ch.is_whitespace() {
            in_word = false;
        } else {
            if !in_word {
                count += 1;
                if count > limit {
                    return Some(text[..end].to_string());
                }
            }
            in_word = true;
            end = i + ch.len_utf8();
        }
    }
    None
}

/// Replaces every whole-word, case-insensitive occurrence of each `(id, with)` in `text`.
/// A word character is an ASCII letter, digit or `-` (agent ids are made of these).
pub fn replace_ids(text: &str, pairs: &[(String, String)]) -> String {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    'scan: while i < bytes.len() {
        if i == 0 || !is_word(bytes[i - 1]) {
            for (id, with) in pairs {
                let end = i + id.len();
                if lower.as_bytes().get(i..end) == Some(id.as_bytes())
                    && bytes.get(end).is_none_or(|b| !is_word(*b))
                {
                    out.push_str(with);
                    i = end;
                    continue 'scan;
                }
            }
        }
        // Copy one whole character.
        let ch = text[i..].chars().next().expect("inside the text");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The council seed's anti-conformity directive, which the seed says to include verbatim in
/// every round 2 prompt. Copied byte for byte from the council seed, "SKILL.codex.md"
/// (Step 4, "Anti-conformity directive"); the only text polisd takes from it as written.
pub const ANTI_CONFORMITY_DIRECTIVE: &str = "Anti-conformity directive. If your Round 1 position was correct, defend it. Do not update merely because peers disagree, because consensus is forming, or because a position is repeated by multiple members. Update only when presented with sound, validity-aligned reasoning that exposes a specific flaw in your earlier argument. Naming that flaw is required when you update; if you cannot name it, you should not update.";

/// One seat's contribution to a closed round: its text, or `None` for no response.
/// `simulated`: the text is a stub polisd wrote ([`stub`]), never the member's.
pub struct Contribution<'a> {
    pub id: &'a str,
    pub text: Option<&'a str>,
    pub simulated: bool,
}

/// The mark above every stub in a packet, so no reader takes it for the member's words.
pub const SIMULATED_MARK: &str = "*[Simulated — written by polisd, not by this member]*";

/// The stand-in for a seat that did not answer round `n` (or for every seat once the council
/// is simulated): what the seat's lens asks and the seat's own last words, quoted. It speaks
/// about the seat, never as it.
pub fn stub(
    council: &Council,
    id: &str,
    n: usize,
    simulated_mode: bool,
    earlier: Option<(usize, &str)>,
) -> String {
    let seat = council.seat(id);
    let why = if simulated_mode {
        "the council is in simulated mode (too few seats answered)".to_string()
    } else {
        format!(
            "this seat did not answer {}, even after {} retries",
            council.round_words(n),
            super::RETRIES
        )
    };
    let lens = match seat.and_then(|s| s.lens.as_deref().zip(s.lens_prompt.as_deref())) {
        Some((name, prompt)) => format!("Its lens, `{name}`, would look at this: {prompt}"),
        None => "It took no lens.".to_string(),
    };
    let last = match earlier {
        Some((k, text)) => {
            let full = body(text).trim();
            let shown =
                cut(full, 40).map_or_else(|| full.to_string(), |short| format!("{short} …"));
            format!(
                "Its own last words ({}), quoted: \"{}\"",
                council.round_words(k),
                shown.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        }
        None => "It has written nothing in this council.".to_string(),
    };
    format!("polisd wrote this stub because {why}. {lens} {last} Treat it as a reminder of the seat's angle, not as its position.")
}

/// A contribution as shown in a packet: anonymised where the packet is, quoted, cut at the
/// limit (stubs are not cut: they are polisd's). Returns whether it was cut.
fn show(
    council: &Council,
    seat_id: &str,
    c: Option<&Contribution<'_>>,
    limit: usize,
    anonymous: bool,
    out: &mut String,
) -> bool {
    let Some(c) = c.filter(|c| c.text.is_some()) else {
        out.push_str("*no response*\n");
        return false;
    };
    let body = body(c.text.unwrap_or_default()).trim();
    let words = body.split_whitespace().count();
    let (shown, was_cut) = match cut(body, limit).filter(|_| !c.simulated) {
        Some(short) => (short, true),
        None => (body.to_string(), false),
    };
    let shown = if anonymous {
        let mut pairs: Vec<(String, String)> = council
            .seats
            .iter()
            .map(|s| {
                let with = if s.id == seat_id {
                    "[self]".to_string()
                } else {
                    s.label.clone()
                };
                (s.id.clone(), with)
            })
            .collect();
        // Longer ids first, so one id that is a prefix of another cannot split it.
        pairs.sort_by_key(|(id, _)| std::cmp::Reverse(id.len()));
        replace_ids(&shown, &pairs)
    } else {
        shown
    };
    if c.simulated {
        out.push_str(&format!("{SIMULATED_MARK}\n\n"));
    }
    if shown.trim().is_empty() {
        out.push_str("*an empty file*\n");
    } else {
        for line in shown.lines() {
            if line.trim().is_empty() {
                out.push_str(">\n");
            } else {
                out.push_str(&format!("> {line}\n"));
            }
        }
    }
    if was_cut {
        out.push_str(&format!(
            "\n*[cut at {limit} words: the contribution had {words}]*\n"
        ));
    }
    was_cut
}

fn heading(council: &Council, seat: &state::Seat, anonymous: bool) -> String {
    if anonymous {
        seat.label.clone()
    } else if council.mode.anonymised() {
        format!("{} ({})", seat.label, seat.id)
    } else {
        seat.id.clone()
    }
}

/// The packet of round `n` and which seats were cut. Every packet but the last is anonymised
/// (except in duo); the last restores names. Round 1's packet opens with the restatement
/// gate's answers (round 0), so the gate is published without breaking round 1's blindness.
pub fn render(
    council: &Council,
    n: usize,
    contributions: &[Contribution<'_>],
    restatements: &[Contribution<'_>],
) -> (String, Vec<String>) {
    let cid = &council.contract;
    let limit = council.mode.word_limit(n);
    let last = council.is_last_round(n);
    let anonymous = council.mode.anonymised() && !last;
    let mut cut_ids = Vec::new();
    let mut out = format!(
        "---\nfile_type: council-packet\ncontract: {cid}\nround: {n}\nanonymised: {anonymous}\n---\n\n# Council packet: round {n} of {}\n\n",
        council.mode.rounds()
    );
    out.push_str(&if anonymous {
        format!("What each member wrote in round {n} of the council on [[contracts/open/{cid}]], under a stable label. Who holds which label is not part of this packet; polisd restores names in the last round's packet. Contributions over {limit} words are cut at the limit.\n")
    } else if council.mode.anonymised() {
        format!("What each member wrote in round {n}, the last round, of the council on [[contracts/open/{cid}]], with names restored. Contributions over {limit} words are cut at the limit.\n")
    } else {
        format!("What each member wrote in round {n} of the duo on [[contracts/open/{cid}]] (a duo is not anonymised). Contributions over {limit} words are cut at the limit.\n")
    });
    if council.simulated.is_some() {
        out.push_str(&format!(
            "\n**Simulated:** {}. Stubs are marked; none is a member's text.\n",
            council.simulated.as_deref().unwrap_or_default()
        ));
    }
    if !restatements.is_empty() {
        out.push_str(&format!(
            "\n## {}\n\nEach member's one-sentence restatement and alternative framing, written before round 1 (at most {} words).\n",
            capitalised(&council.round_words(0)),
            council.mode.word_limit(0)
        ));
        for seat in &council.seats {
            out.push_str(&format!("\n### {}\n\n", heading(council, seat, anonymous)));
            let c = restatements.iter().find(|c| c.id == seat.id);
            show(
                council,
                &seat.id,
                c,
                council.mode.word_limit(0),
                anonymous,
                &mut out,
            );
        }
        out.push_str(&format!("\n## {}\n", capitalised(&council.round_words(n))));
    }
    for seat in &council.seats {
        out.push_str(&format!("\n## {}\n\n", heading(council, seat, anonymous)));
        let c = contributions.iter().find(|c| c.id == seat.id);
        if show(council, &seat.id, c, limit, anonymous, &mut out) {
            cut_ids.push(seat.id.clone());
        }
    }
    (out, cut_ids)
}

fn closes_at(council: &Council, n: usize) -> &str {
    council
        .rounds
        .iter()
        .find(|r| r.n == n)
        .map_or("-", state::Round::closes)
}

fn write_hint(council: &Council, n: usize, id: &str) -> String {
    let cid = &council.contract;
    format!(
        "Write at most {} words to `{}` (or run `polisd council write {cid} --as {id} FILE`) before {}; it closes when every seat has written or then. A seat still silent is asked twice more, then marked degraded, and the packet shows a stub polisd writes, labelled as such.",
        council.mode.word_limit(n),
        state::seat_path(cid, n, id),
        closes_at(council, n),
    )
}

/// The lens sentence of a seat's prompts (empty without a lens).
fn lens_line(council: &Council, id: &str) -> String {
    match council
        .seat(id)
        .and_then(|s| s.lens.as_deref().zip(s.lens_prompt.as_deref()))
    {
        Some((name, prompt)) => format!(
            " Your lens for this council is `{name}`: {prompt} Take it as your angle; you are still yourself, and you speak for yourself."
        ),
        None => String::new(),
    }
}

/// `text` with its first letter in upper case, for a heading.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// The prompt to seat `id` for round `n` (the link is the contract for rounds 0 and 1, else
/// the previous packet). Round 2 carries the seed's directive verbatim, in every mode.
pub fn round_prompt(council: &Council, n: usize, id: &str, title: &str) -> String {
    let cid = &council.contract;
    let rounds = council.mode.rounds();
    let seat = council.seat(id);
    let label = seat.map_or("-", |s| s.label.as_str());
    let who = if council.mode.anonymised() {
        format!(" as {label} (peers see only this label until the last round)")
    } else {
        String::new()
    };
    let lens = lens_line(council, id);
    if n == 0 {
        return format!(
            "You sit on the {} council reviewing `{cid}` ({title}){who}. It starts by {}, before its {rounds} rounds: read the contract, then answer in at most {} words with exactly two numbered sentences: 1) the problem restated in your own words; 2) a different way to frame it. Nothing else.{lens} {}",
            council.mode.as_str(),
            council.round_words(0),
            council.mode.word_limit(0),
            write_hint(council, n, id)
        );
    }
    if n == 1 {
        return format!(
            "Round 1 of {rounds} of the {} council reviewing `{cid}` ({title}) is open{who}. Round 1 is blind: read the contract and give your own assessment (what is right, what is wrong, what you would change) without reading other members' files; polisd publishes nothing of this round until it closes, and then with everyone's restatements.{lens} {}",
            council.mode.as_str(),
            write_hint(council, n, id)
        );
    }
    let engage = if council.mode.anonymised() {
        let others: Vec<&str> = council
            .seats
            .iter()
            .filter(|s| s.id != id)
            .map(|s| s.label.as_str())
            .collect();
        let at_least = others.len().min(2);
        format!(
            "Engage at least {at_least} peers by label ({}): say what you accept from each and what you contest, and why.",
            others.join(", ")
        )
    } else {
        "Engage your peer by name on each point: say what you accept and what you contest, and why."
            .to_string()
    };
    let last = if council.is_last_round(n) {
        " This is the last round: state your final position briefly."
    } else {
        ""
    };
    let hold = if n == 2 {
        format!(" {ANTI_CONFORMITY_DIRECTIVE}")
    } else {
        " Hold the position you took unless you can name the specific flaw in it that a peer exposed, and name it; that others disagree, or that they are many, is no reason to move.".to_string()
    };
    format!(
        "Round {n} of {rounds} of the council on `{cid}` is open{who}. Read the packet of round {} first.{hold} {engage}{last}{lens} {}",
        n - 1,
        write_hint(council, n, id)
    )
}

/// The stricter prompt to a seat still silent at round `n`'s deadline (retry `k`, 1-based).
pub fn retry_prompt(council: &Council, n: usize, id: &str, k: usize) -> String {
    let cid = &council.contract;
    let limit = council.mode.word_limit(n);
    // Every silent seat gets this prompt; "only for you" must be true for the one who reads it.
    let others = council
        .rounds
        .iter()
        .find(|r| r.n == n)
        .and_then(|r| r.retries.get(k.wrapping_sub(1)))
        .map_or(0, |r| r.seats.iter().filter(|s| *s != id).count());
    let waiting = match others {
        0 => "waiting only for you".to_string(),
        1 => "waiting for you and 1 other seat".to_string(),
        n => format!("waiting for you and {n} other seats"),
    };
    format!(
        "The council on `{cid}` is {waiting}: your contribution to {} (retry {k} of {}). Answer now, in {limit} words or fewer, to `{}` before {}: a short answer in time beats a long one too late. After the last retry polisd marks your seat degraded and the packet carries a labelled stub in your place.",
        council.round_words(n),
        super::RETRIES,
        state::seat_path(cid, n, id),
        closes_at(council, n),
    )
}

/// The chairman's request for the verdict.
pub fn verdict_prompt(council: &Council) -> String {
    let cid = &council.contract;
    let role = if council.chairman_is_owner {
        "No citizen was left off the panel to chair, so you, the owner, write the verdict (it is marked as the owner's)."
    } else {
        "You chair it and did not sit on the panel."
    };
    let simulated = if council.simulated.is_some() {
        " The council went simulated (too few seats answered): say so in Execution reliability and lower your confidence."
    } else {
        ""
    };
    format!(
        "The council on `{cid}` has closed its {} rounds. {role}{simulated} Read every packet (the last one names the members), then write `{}` before {} with frontmatter `decision: signed_off`, `requested_changes` or `rejected`, and these sections as `##` headings, in this order: {}. A {} council requires {}; the others are expected but not checked. Each kill criterion is one list item of the form `If <condition> by <YYYY-MM-DD>, invalidated → <consequence>`; Concrete next step is exactly one action that starts with a verb producing an artifact (write, open, merge, ship, file, measure…), never a deferral; Decision options lists 2 to 4 options with their trade-offs; Confidence starts with high, medium or low and says why. Keep the dissent in Key disagreements; do not flatten it. polisd checks the file and tells you what is missing; when it is valid it sets the contract's `review.status`. If no valid verdict is there by the deadline, polisd synthesizes one from the packets and marks your seat as failed.",
        council.mode.rounds(),
        state::verdict_path(cid),
        council.verdict_due_at.as_deref().unwrap_or("-"),
        super::verdict::SECTIONS.join("; "),
        council.mode.as_str(),
        super::verdict::required(council.mode).join(", "),
    )
}

/// The notice to a seat whose contribution is over the limit.
pub fn over_limit_text(council: &Council, n: usize, words: usize) -> String {
    let limit = council.mode.word_limit(n);
    format!(
        "On the council on `{}`, your contribution to {} has {words} words, over the limit of {limit}: the packet will show only its first {limit} words, marked as cut. Shorten it before it closes ({}) if the rest matters.",
        council.contract,
        council.round_words(n),
        closes_at(council, n)
    )
}

#[cfg(test)]
mod tests {
    use super::super::state::Council;
    use super::super::{Choice, Chosen, Mode, Request};
    use super::*;
    use crate::protocol::clock::{PolisTime, PolisZone};

    const IDS: [&str; 3] = ["claude-seat-aaaa", "codex-seat-bbbb", "gemini-seat-cccc"];

    fn council(mode: Mode) -> Council {
        let n = if mode == Mode::Duo { 2 } else { 3 };
        let choice = Choice {
            mode,
            panel: IDS[..n]
                .iter()
                .map(|id| Chosen {
                    id: id.to_string(),
                    vendor: "v".into(),
                    why: "w".into(),
                    lens: None,
                })
                .collect(),
            chairman: None,
            notes: vec![],
        };
        let now = PolisTime::at_stamp(PolisZone::default(), "2026-12-01 10:00").unwrap();
        Council::new(
            "big-change",
            Some("codex-owner-eeee"),
            &Request {
                mode,
                ..Request::default()
            },
            &choice,
            "contract",
            &crate::protocol::council::lens::Library::default(),
            &now,
        )
    }

    #[test]
    fn counts_and_cuts_words_keeping_the_text_between_them() {
        assert_eq!(word_count("---\nx: 1\n---\none two\nthree\n"), 3);
        assert_eq!(
            cut("one  two\nthree four", 3).as_deref(),
            Some("one  two\nthree")
        );
        assert_eq!(cut("one two three", 3), None);
        assert_eq!(cut("one two three ", 3), None);
        assert_eq!(cut("a b c d", 2).as_deref(), Some("a b"));
    }

    #[test]
    fn a_seat_file_saved_with_a_bom_and_crlf_keeps_its_frontmatter_out_of_the_packet() {
        let text = "\u{feff}---\r\nvendor: anthropic\r\nmodel: opus\r\n---\r\nKeep the cache.\r\n";
        assert_eq!(word_count(text), 3);
        let c = council(Mode::Full);
        let contributions = [Contribution {
            id: IDS[0],
            text: Some(text),
            simulated: false,
        }];
        let (packet, _) = render(&c, 1, &contributions, &[]);
        assert!(packet.contains("> Keep the cache."), "{packet}");
        assert!(!packet.contains("anthropic"), "{packet}");
        assert!(!packet.contains('\u{feff}'), "{packet}");
    }

    #[test]
    fn ids_are_replaced_as_whole_words_only() {
        let pairs = vec![("codex-seat-bbbb".to_string(), "Member B".to_string())];
        assert_eq!(
            replace_ids(
                "Codex-Seat-BBBB said; codex-seat-bbbb-two did not (codex-seat-bbbb).",
                &pairs
            ),
            "Member B said; codex-seat-bbbb-two did not (Member B)."
        );
        assert_eq!(replace_ids("é codex-seat-bbbb é", &pairs), "é Member B é");
    }

    #[test]
    fn an_anonymised_packet_names_no_member_and_marks_cuts_and_silence() {
        let c = council(Mode::Full);
        let long = (0..350)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let a = format!(
            "I am claude-seat-aaaa and I agree with codex-seat-bbbb.\n\n# Member C\n{long}"
        );
        let contributions = [
            Contribution {
                id: IDS[0],
                text: Some(&a),
                simulated: false,
            },
            Contribution {
                id: IDS[1],
                text: Some("Fine by me."),
                simulated: false,
            },
            Contribution {
                id: IDS[2],
                text: None,
                simulated: false,
            },
        ];
        let (packet, cut_ids) = render(&c, 1, &contributions, &[]);
        for id in IDS {
            assert!(!packet.contains(id), "{id} in\n{packet}");
        }
        assert!(
            packet.contains("> I am [self] and I agree with Member B."),
            "{packet}"
        );
        assert!(
            packet.contains("> # Member C"),
            "quoted, so no heading: {packet}"
        );
        assert!(
            packet.contains("*[cut at 300 words: the contribution had 361]*"),
            "{packet}"
        );
        assert!(!packet.contains("w349"));
        assert!(packet.contains("## Member C\n\n*no response*"), "{packet}");
        assert_eq!(cut_ids, vec![IDS[0].to_string()]);
    }

    #[test]
    fn the_last_packet_and_duo_packets_name_members() {
        let c = council(Mode::Quick);
        let contributions = [Contribution {
            id: IDS[0],
            text: Some("about codex-seat-bbbb"),
            simulated: false,
        }];
        let (packet, _) = render(&c, 2, &contributions, &[]);
        assert!(
            packet.contains("## Member A (claude-seat-aaaa)"),
            "{packet}"
        );
        assert!(packet.contains("about codex-seat-bbbb"), "{packet}");
        let d = council(Mode::Duo);
        let (packet, _) = render(&d, 1, &contributions, &[]);
        assert!(packet.contains("## claude-seat-aaaa"), "{packet}");
        assert!(packet.contains("anonymised: false"));
    }

    /// Round 0 is named in the words `phase_words` uses wherever a member reads of it, never
    /// by its number or as a gate.
    #[test]
    fn every_text_names_round_zero_as_the_phase_words_do() {
        let c = council(Mode::Full);
        let restated = [Contribution {
            id: IDS[0],
            text: Some("1) Swap it. 2) Drop it."),
            simulated: false,
        }];
        let (packet, _) = render(&c, 1, &[], &restated);
        let texts = [
            round_prompt(&c, 0, IDS[0], "Big change"),
            retry_prompt(&c, 0, IDS[0], 1),
            over_limit_text(&c, 0, 80),
            stub(&c, IDS[1], 0, false, None),
            stub(&c, IDS[1], 1, false, Some((0, "1) Swap it."))),
            packet.clone(),
        ];
        for text in &texts {
            let lower = text.to_lowercase();
            assert!(
                lower.contains("restating the question"),
                "not named as the phase words name it: {text}"
            );
            assert!(
                !lower.contains("round 0") && !lower.contains("gate"),
                "named by its number or as a gate: {text}"
            );
        }
        assert!(
            packet.contains("## Restating the question\n") && packet.contains("## Round 1 of 3\n"),
            "{packet}"
        );
        assert!(
            stub(&c, IDS[1], 1, false, None).contains("did not answer round 1 of 3,"),
            "the later rounds as `phase_words` names them"
        );
    }

    #[test]
    fn a_retry_says_only_you_only_when_one_seat_is_silent() {
        let mut c = council(Mode::Full);
        let late = |t: &str| PolisTime::at_stamp(PolisZone::default(), t).unwrap();
        let asked = c.retry_silent(&[], &late("2026-12-01 17:00"));
        assert_eq!(asked.len(), 3);
        let shared = retry_prompt(&c, 0, IDS[0], 1);
        assert!(!shared.contains("only for you"), "{shared}");
        assert!(shared.contains("for you and 2 other seats"), "{shared}");
        let written = [IDS[1].to_string(), IDS[2].to_string()];
        assert_eq!(
            c.retry_silent(&written, &late("2026-12-01 21:00")),
            [IDS[0]]
        );
        let alone = retry_prompt(&c, 0, IDS[0], 2);
        assert!(alone.contains("waiting only for you"), "{alone}");
    }

    #[test]
    fn prompts_say_hold_your_position_and_engage_two_peers() {
        let c = council(Mode::Full);
        let p1 = round_prompt(&c, 1, IDS[0], "Big change");
        assert!(p1.contains("blind"), "{p1}");
        assert!(
            p1.contains("reviews/big-change/round-1/claude-seat-aaaa.md"),
            "{p1}"
        );
        assert!(p1.contains("300 words"), "{p1}");
        let p0 = round_prompt(&c, 0, IDS[0], "Big change");
        assert!(
            p0.contains("It starts by restating the question, before its 3 rounds")
                && p0.contains("at most 50 words"),
            "{p0}"
        );
        let mut c2 = c.clone();
        let ids = c2.ids();
        for _ in 0..2 {
            c2.close_round(
                &ids,
                &[],
                &PolisTime::at_stamp(PolisZone::default(), "2026-12-01 11:00").unwrap(),
            );
        }
        let p2 = round_prompt(&c2, 2, IDS[0], "Big change");
        assert!(
            p2.contains(&format!(" {ANTI_CONFORMITY_DIRECTIVE} ")),
            "{p2}"
        );
        assert!(
            !p2.contains("unless you can name the specific flaw"),
            "{p2}"
        );
        let p3 = round_prompt(&c2, 3, IDS[0], "Big change");
        assert!(p3.contains("unless you can name the specific flaw"), "{p3}");
        assert!(
            p2.contains("at least 2 peers by label (Member B, Member C)"),
            "{p2}"
        );
        assert!(p2.contains("220 words"), "{p2}");
        let v = verdict_prompt(&c2);
        assert!(v.contains("owner"), "{v}");
        assert!(v.contains("Kill criteria"), "{v}");
    }
}
