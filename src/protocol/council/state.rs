//! `reviews/<cid>/council.md`, the council's state file (owned by polisd): its frontmatter is
//! everything the daemon needs to go on after a restart (the seats and their labels, every
//! round's opening and closing, the phase, the outcome), and its body says the same for a
//! person. It is rendered from a [`Council`] and parsed back; nothing about a council lives in
//! memory or in file times.

use super::{Choice, Mode, Request};
use crate::protocol::clock::PolisTime;
use crate::yaml::{self, Mapping, Value};
use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};

/// What stage a council is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// A round is open.
    Rounds,
    /// Every round closed; the chairman is asked for `verdict.md`.
    Verdict,
    /// The verdict was valid and applied.
    Done,
    /// Fewer than 2 seats were live: a chavruta review by the best live seat instead.
    Fallback,
}

impl Phase {
    /// As `council.md` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Rounds => "rounds",
            Phase::Verdict => "verdict",
            Phase::Done => "done",
            Phase::Fallback => "fallback",
        }
    }
}

/// One seat: its stable label and why it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seat {
    pub id: String,
    pub label: String,
    pub vendor: String,
    pub why: String,
}

/// One round as it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub n: usize,
    pub opened_at: String,
    pub closes_at: String,
    #[serde(default)]
    pub closed_at: Option<String>,
    /// Seats that wrote (when closed).
    #[serde(default)]
    pub wrote: Vec<String>,
    /// Seats that did not write (`no response` in the packet).
    #[serde(default)]
    pub missing: Vec<String>,
    /// Seats whose contribution was over the limit and cut in the packet.
    #[serde(default)]
    pub cut: Vec<String>,
}

/// The fallback to a chavruta review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fallback {
    /// The best live seat, who reviews alone; `None` when no seat wrote at all.
    pub reviewer: Option<String>,
    pub why: String,
}

/// The metadata block written when the verdict is applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub decision: String,
    pub mode: Mode,
    pub panel_size: usize,
    pub rounds_run: usize,
    pub live: Vec<String>,
    pub degraded: Vec<String>,
    pub offline: Vec<String>,
    pub duration_minutes: i64,
}

/// The whole state of one council.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Council {
    pub file_type: String,
    pub contract: String,
    pub mode: Mode,
    pub owner: Option<String>,
    pub round_hours: f64,
    pub started_at: String,
    /// Who asked: `contract` (its frontmatter) or the citizen who ran `council start`.
    pub started_by: String,
    pub seats: Vec<Seat>,
    pub chairman: String,
    /// Nobody was left for the chair: the owner writes the verdict.
    pub chairman_is_owner: bool,
    pub chairman_why: String,
    pub rounds: Vec<Round>,
    pub phase: Phase,
    #[serde(default)]
    pub verdict_asked_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub fallback: Option<Fallback>,
    #[serde(default)]
    pub outcome: Option<Outcome>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Paths of a council's files, relative to `_polis/`.
pub fn dir(cid: &str) -> String {
    format!("{}/{cid}", crate::protocol::layout::REVIEWS_DIR)
}
pub fn state_path(cid: &str) -> String {
    format!("{}/council.md", dir(cid))
}
pub fn round_dir(cid: &str, n: usize) -> String {
    format!("{}/round-{n}", dir(cid))
}
pub fn seat_path(cid: &str, n: usize, id: &str) -> String {
    format!("{}/{id}.md", round_dir(cid, n))
}
pub fn packet_path(cid: &str, n: usize) -> String {
    format!("{}/round-{n}-packet.md", dir(cid))
}
pub fn verdict_path(cid: &str) -> String {
    format!("{}/verdict.md", dir(cid))
}

const STAMP: &str = "%Y-%m-%d %H:%M:%S";

pub fn parse_stamp(s: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(s.trim(), STAMP).ok()
}

fn add_hours(at: NaiveDateTime, hours: f64) -> NaiveDateTime {
    at + chrono::Duration::milliseconds((hours * 3_600_000.0).round() as i64)
}

fn stamp(at: NaiveDateTime) -> String {
    at.format(STAMP).to_string()
}

/// Why a state file cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {why}; polisd owns this file: restore it from version control, or delete the council's folder to start over")]
pub struct StateError {
    pub path: String,
    pub why: String,
}

impl Council {
    /// A new council, round 1 open from `now`.
    pub fn new(
        cid: &str,
        owner: Option<&str>,
        request: &Request,
        choice: &Choice,
        started_by: &str,
        now: &PolisTime,
    ) -> Council {
        let seats = choice
            .panel
            .iter()
            .enumerate()
            .map(|(i, c)| Seat {
                id: c.id.clone(),
                label: super::label(i),
                vendor: c.vendor.clone(),
                why: c.why.clone(),
            })
            .collect();
        let (chairman, chairman_is_owner, chairman_why) = match &choice.chairman {
            Some(c) => (c.id.clone(), false, c.why.clone()),
            None => (
                owner.unwrap_or_default().to_string(),
                true,
                "no citizen is left off the panel to chair: the owner writes the verdict".into(),
            ),
        };
        let mut council = Council {
            file_type: "council".into(),
            contract: cid.to_string(),
            mode: request.mode,
            owner: owner.map(str::to_string),
            round_hours: request.round_hours(),
            started_at: now.second_stamp(),
            started_by: started_by.to_string(),
            seats,
            chairman,
            chairman_is_owner,
            chairman_why,
            rounds: Vec::new(),
            phase: Phase::Rounds,
            verdict_asked_at: None,
            finished_at: None,
            fallback: None,
            outcome: None,
            notes: choice.notes.clone(),
        };
        council.open_round(1, now.now);
        council
    }

    fn open_round(&mut self, n: usize, at: NaiveDateTime) {
        self.rounds.push(Round {
            n,
            opened_at: stamp(at),
            closes_at: stamp(add_hours(at, self.round_hours)),
            closed_at: None,
            wrote: Vec::new(),
            missing: Vec::new(),
            cut: Vec::new(),
        });
    }

    pub fn seat(&self, id: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.id == id)
    }

    pub fn ids(&self) -> Vec<String> {
        self.seats.iter().map(|s| s.id.clone()).collect()
    }

    /// The open round, if the council is in its rounds.
    pub fn open(&self) -> Option<&Round> {
        if self.phase != Phase::Rounds {
            return None;
        }
        self.rounds.last().filter(|r| r.closed_at.is_none())
    }

    /// When the open round closes by time.
    pub fn deadline(&self) -> Option<NaiveDateTime> {
        self.open().and_then(|r| parse_stamp(&r.closes_at))
    }

    /// Whether the open round closes now: every seat wrote, or its time is up.
    pub fn round_due(&self, written: &[String], now: &PolisTime) -> bool {
        let Some(_) = self.open() else {
            return false;
        };
        let all = self.seats.iter().all(|s| written.contains(&s.id));
        all || self.deadline().is_some_and(|d| now.now >= d)
    }

    pub fn is_last_round(&self, n: usize) -> bool {
        n >= self.mode.rounds()
    }

    /// Closes the open round with what was written (`wrote`) and cut; opens the next, asks
    /// for the verdict, or falls back when fewer than 2 seats wrote. Returns the closed
    /// round's number.
    pub fn close_round(&mut self, wrote: &[String], cut: &[String], now: &PolisTime) -> usize {
        let ids = self.ids();
        let n = {
            let Some(round) = self.rounds.last_mut() else {
                return 0;
            };
            round.closed_at = Some(now.second_stamp());
            round.wrote = ids
                .iter()
                .filter(|id| wrote.contains(id))
                .cloned()
                .collect();
            round.missing = ids
                .iter()
                .filter(|id| !wrote.contains(id))
                .cloned()
                .collect();
            round.cut = ids.iter().filter(|id| cut.contains(id)).cloned().collect();
            round.n
        };
        let live: Vec<&String> = ids.iter().filter(|id| wrote.contains(id)).collect();
        if live.len() < 2 {
            let reviewer = live.first().map(|s| s.to_string());
            let why = match &reviewer {
                Some(r) => format!(
                    "only {r} wrote in round {n}; a council needs at least 2 live seats, so a chavruta review by {r} replaces it"
                ),
                None => format!(
                    "no seat wrote in round {n}; a council needs at least 2 live seats, and there is no live seat to review alone"
                ),
            };
            self.fallback = Some(Fallback { reviewer, why });
            self.phase = Phase::Fallback;
            self.finished_at = Some(now.second_stamp());
        } else if self.is_last_round(n) {
            self.phase = Phase::Verdict;
            self.verdict_asked_at = Some(now.second_stamp());
        } else {
            self.open_round(n + 1, now.now);
        }
        n
    }

    /// Seat states over the closed rounds: `live` wrote in every one; `degraded` missed at
    /// least one; `offline`, once the council is over, wrote in none.
    pub fn seat_states(&self) -> Vec<(String, &'static str)> {
        let closed: Vec<&Round> = self
            .rounds
            .iter()
            .filter(|r| r.closed_at.is_some())
            .collect();
        let over = matches!(self.phase, Phase::Done | Phase::Fallback);
        self.seats
            .iter()
            .map(|s| {
                let missed = closed.iter().filter(|r| r.missing.contains(&s.id)).count();
                let state = if missed == 0 {
                    "live"
                } else if over && missed == closed.len() {
                    "offline"
                } else {
                    "degraded"
                };
                (s.id.clone(), state)
            })
            .collect()
    }

    /// Records the applied verdict and the metadata block.
    pub fn finish(&mut self, decision: &str, now: &PolisTime) {
        self.phase = Phase::Done;
        let states = self.seat_states();
        let of = |want: &str| -> Vec<String> {
            states
                .iter()
                .filter(|(_, s)| *s == want)
                .map(|(id, _)| id.clone())
                .collect()
        };
        let duration = parse_stamp(&self.started_at)
            .map(|s| (now.now - s).num_minutes().max(0))
            .unwrap_or(0);
        self.outcome = Some(Outcome {
            decision: decision.to_string(),
            mode: self.mode,
            panel_size: self.seats.len(),
            rounds_run: self.rounds.iter().filter(|r| r.closed_at.is_some()).count(),
            live: of("live"),
            degraded: of("degraded"),
            offline: of("offline"),
            duration_minutes: duration,
        });
        self.finished_at = Some(now.second_stamp());
    }

    /// The file's bytes: the state as YAML frontmatter, then the same for a person.
    pub fn render(&self) -> Result<String, yaml::EmitError> {
        let json = serde_json::to_value(self).expect("a council serialises");
        let head = yaml::dump(&to_yaml(&json), &crate::yaml::DumpOptions::FRONTMATTER)?;
        Ok(format!("---\n{head}---\n\n{}", self.body()))
    }

    fn body(&self) -> String {
        let cid = &self.contract;
        let limits = self
            .mode
            .word_limits()
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(" / ");
        let mut b = format!(
            "# Council on `{cid}`\n\npolisd keeps this file: it is the council's state and is rewritten as the council moves on. Do not edit it; `polisd council status {cid}` reads it.\n\nMode: {} ({} rounds, word limits {limits}; {}), each round open {} h. Started {} by {}.\n",
            self.mode.as_str(),
            self.mode.rounds(),
            if self.mode.anonymised() {
                "packets anonymised until the last"
            } else {
                "not anonymised"
            },
            crate::yaml::python_float_repr(self.round_hours),
            self.started_at,
            self.started_by,
        );
        b.push_str("\n## Panel\n\nThe labels are stable for the whole council; this table is the only place that maps them to citizens.\n\n| label | member | vendor | chosen because | state |\n|---|---|---|---|---|\n");
        let states = self.seat_states();
        for s in &self.seats {
            let state = states
                .iter()
                .find(|(id, _)| *id == s.id)
                .map_or("live", |(_, st)| *st);
            b.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                s.label,
                s.id,
                s.vendor,
                s.why.replace('|', "/"),
                state
            ));
        }
        b.push_str("\n## Chairman\n\n");
        if self.chairman_is_owner {
            b.push_str(&format!(
                "Nobody is left off the panel to chair: the owner, {}, writes the verdict, and it is marked as the owner's.\n",
                self.chairman
            ));
        } else {
            b.push_str(&format!("{}: {}.\n", self.chairman, self.chairman_why));
        }
        for n in &self.notes {
            b.push_str(&format!("\nNote: {n}.\n"));
        }
        b.push_str("\n## Rounds\n\n| round | words | opened | closes | closed | wrote | no response | cut |\n|---|---|---|---|---|---|---|---|\n");
        let list = |v: &[String]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(", ")
            }
        };
        for r in &self.rounds {
            b.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.n,
                self.mode.word_limit(r.n),
                r.opened_at,
                r.closes_at,
                r.closed_at.as_deref().unwrap_or("open"),
                if r.closed_at.is_some() {
                    list(&r.wrote)
                } else {
                    "-".into()
                },
                list(&r.missing),
                list(&r.cut),
            ));
        }
        b.push_str("\n## Verdict\n\n");
        match self.phase {
            Phase::Rounds => b.push_str("Not asked yet: the rounds are still open.\n"),
            Phase::Verdict => b.push_str(&format!(
                "Asked of {} at {}: `{}`.\n",
                self.chairman,
                self.verdict_asked_at.as_deref().unwrap_or("-"),
                verdict_path(cid)
            )),
            Phase::Done => b.push_str(&format!(
                "Applied at {}: [[{}]].\n",
                self.finished_at.as_deref().unwrap_or("-"),
                verdict_path(cid).trim_end_matches(".md")
            )),
            Phase::Fallback => b.push_str(&format!(
                "None: the council stopped at {}. {}.\n",
                self.finished_at.as_deref().unwrap_or("-"),
                self.fallback.as_ref().map_or("", |f| f.why.as_str())
            )),
        }
        if let Some(o) = &self.outcome {
            b.push_str(&format!(
                "\n## Outcome\n\n- decision: {}\n- mode: {}\n- panel size: {}\n- rounds run: {}\n- live seats: {}\n- degraded seats: {}\n- offline seats: {}\n- duration: {} min\n",
                o.decision,
                o.mode.as_str(),
                o.panel_size,
                o.rounds_run,
                list(&o.live),
                list(&o.degraded),
                list(&o.offline),
                o.duration_minutes
            ));
        }
        b
    }

    /// Reads a state file back.
    pub fn parse(path: &str, text: &str) -> Result<Council, StateError> {
        let err = |why: String| StateError {
            path: path.to_string(),
            why,
        };
        let record = crate::protocol::frontmatter::parse(text).map_err(|e| err(e.to_string()))?;
        let json = from_yaml(&record.fields);
        let council: Council =
            serde_json::from_value(json).map_err(|e| err(format!("not a council state: {e}")))?;
        if council.file_type != "council" {
            return Err(err("`file_type` is not `council`".into()));
        }
        // Ids become paths: nothing but valid ids, however the file was edited.
        let layout_ok = crate::protocol::layout::is_slug(&council.contract)
            && crate::protocol::layout::is_agent_id(&council.chairman)
            && council
                .seats
                .iter()
                .all(|s| crate::protocol::layout::is_agent_id(&s.id))
            && council.seats.len() >= 2;
        if !layout_ok {
            return Err(err(
                "a contract id, seat id or chairman id is not a valid id, or fewer than 2 seats"
                    .into(),
            ));
        }
        Ok(council)
    }
}

/// A JSON value (from serde) as a YAML value, keys in order.
fn to_yaml(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Array(a) => Value::Seq(a.iter().map(to_yaml).collect()),
        serde_json::Value::Object(o) => Value::Map(
            o.iter()
                .map(|(k, v)| (Value::Str(k.clone()), to_yaml(v)))
                .collect::<Mapping>(),
        ),
    }
}

/// A YAML value as JSON for serde; dates and times become their text.
fn from_yaml(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Seq(s) => serde_json::Value::Array(s.iter().map(from_yaml).collect()),
        Value::Map(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, v)| (k.python_str(), from_yaml(v)))
                .collect(),
        ),
        other => serde_json::Value::String(other.python_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Chosen, Request};
    use super::*;
    use crate::protocol::clock::PolisZone;

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(PolisZone::default(), stamp).unwrap()
    }

    #[test]
    fn phase_names_are_the_files_spelling() {
        for phase in [Phase::Rounds, Phase::Verdict, Phase::Done, Phase::Fallback] {
            let written = serde_json::to_string(&phase).unwrap();
            assert_eq!(written, format!("\"{}\"", phase.as_str()));
        }
    }

    fn council(mode: Mode) -> Council {
        let choice = Choice {
            panel: ["claude-seat-aaaa", "codex-seat-bbbb", "gemini-seat-cccc"]
                .iter()
                .map(|id| Chosen {
                    id: id.to_string(),
                    vendor: id.split('-').next().unwrap().into(),
                    why: "picked: score 0.5".into(),
                })
                .collect(),
            chairman: Some(Chosen {
                id: "claude-chair-dddd".into(),
                vendor: "claude".into(),
                why: "not on the panel".into(),
            }),
            notes: vec![],
        };
        let request = Request {
            mode,
            round_hours: Some(1.5),
            ..Request::default()
        };
        Council::new(
            "big-change",
            Some("codex-owner-eeee"),
            &request,
            &choice,
            "contract",
            &at("2026-12-01 10:00"),
        )
    }

    #[test]
    fn render_then_parse_is_identity_at_every_phase() {
        let mut c = council(Mode::Full);
        let ids = c.ids();
        for step in 0..5 {
            let text = c.render().unwrap();
            let back = Council::parse("reviews/big-change/council.md", &text).unwrap();
            assert_eq!(back, c, "step {step}:\n{text}");
            assert_eq!(back.render().unwrap(), text);
            match step {
                0 => {
                    c.close_round(&ids[..2], &ids[..1], &at("2026-12-01 11:30"));
                    assert_eq!(c.seat_states()[2].1, "degraded", "a silent seat");
                }
                1 | 2 => {
                    c.close_round(&ids, &[], &at("2026-12-01 12:00"));
                }
                _ => c.finish("signed_off", &at("2026-12-01 14:00")),
            }
        }
        assert_eq!(c.phase, Phase::Done);
        let o = c.outcome.clone().unwrap();
        assert_eq!(o.rounds_run, 3);
        assert_eq!(o.degraded, vec!["gemini-seat-cccc".to_string()]);
        assert_eq!(o.live.len(), 2);
        assert_eq!(o.duration_minutes, 240);
        let text = c.render().unwrap();
        assert!(text.contains("## Outcome"), "{text}");
        assert!(text.contains("| Member C | gemini-seat-cccc |"), "{text}");
    }

    #[test]
    fn a_round_is_due_when_every_seat_wrote_or_its_time_is_up() {
        let c = council(Mode::Quick);
        assert_eq!(c.deadline(), parse_stamp("2026-12-01 11:30:00"));
        let ids = c.ids();
        assert!(!c.round_due(&ids[..2], &at("2026-12-01 11:29")));
        assert!(c.round_due(&ids, &at("2026-12-01 10:01")));
        assert!(c.round_due(&[], &at("2026-12-01 11:30")));
    }

    #[test]
    fn fewer_than_two_live_seats_fall_back_to_the_best_live_seat() {
        let mut c = council(Mode::Full);
        let ids = c.ids();
        c.close_round(&ids[1..2], &[], &at("2026-12-01 12:00"));
        assert_eq!(c.phase, Phase::Fallback);
        assert_eq!(
            c.fallback.as_ref().unwrap().reviewer.as_deref(),
            Some("codex-seat-bbbb")
        );
        assert!(c.open().is_none());
        let states = c.seat_states();
        assert_eq!(states[0].1, "offline", "{states:?}");
        assert_eq!(states[1].1, "live", "{states:?}");
    }

    #[test]
    fn quick_asks_for_the_verdict_after_two_rounds() {
        let mut c = council(Mode::Quick);
        let ids = c.ids();
        c.close_round(&ids, &[], &at("2026-12-01 10:30"));
        assert_eq!(c.open().unwrap().n, 2);
        c.close_round(&ids, &[], &at("2026-12-01 10:40"));
        assert_eq!(c.phase, Phase::Verdict);
        assert!(c.open().is_none());
    }

    #[test]
    fn a_damaged_state_file_is_an_error_naming_it() {
        let e =
            Council::parse("reviews/x/council.md", "---\nfile_type: council\n---\n").unwrap_err();
        assert!(e.to_string().contains("reviews/x/council.md"), "{e}");
        assert!(Council::parse("p", "no frontmatter").is_err());
        let good = council(Mode::Full).render().unwrap();
        let bad = good.replace("- id: codex-seat-bbbb", "- id: ../../../etc");
        assert!(
            Council::parse("p", &bad).is_err(),
            "an id that would escape as a path"
        );
    }
}
