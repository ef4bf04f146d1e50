//! `reviews/<cid>/council.md`, the council's state file (owned by polisd): its frontmatter is
//! everything the daemon needs to go on after a restart (the seats and their labels, every
//! round's opening and closing, the phase, the outcome), and its body says the same for a
//! person. It is rendered from a [`Council`] and parsed back; nothing about a council lives in
//! memory or in file times.

use super::{Choice, Mode, Request};
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::quoted;
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
    /// Fewer than 2 seats were live (councils started before seat reliability existed): a
    /// chavruta review by the best live seat instead. New councils go simulated instead.
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
    /// The lens's name and its instruction as it was when the council started, so prompts
    /// and simulated stubs stay the same whatever happens to the lens file.
    #[serde(default)]
    pub lens: Option<String>,
    #[serde(default)]
    pub lens_prompt: Option<String>,
}

/// A silent seat asked again: when, until when, and which seats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retry {
    pub at: String,
    pub closes_at: String,
    pub seats: Vec<String>,
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
    /// Each retry of the seats still silent at the deadline (at most [`RETRIES`]).
    #[serde(default)]
    pub retries: Vec<Retry>,
    /// Closed in fully simulated mode: every seat is a stub, none was waited for.
    #[serde(default)]
    pub all_simulated: bool,
}

impl Round {
    /// When the round closes by time: its latest retry's deadline, else its own.
    pub fn closes(&self) -> &str {
        self.retries
            .last()
            .map_or(&self.closes_at, |t| &t.closes_at)
    }
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
    /// The seed's session metadata block.
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    #[serde(default)]
    pub tools_used: Vec<String>,
    #[serde(default)]
    pub provider_count: usize,
    #[serde(default)]
    pub fallbacks_triggered: usize,
    /// What each fallback was (a retry, a simulated seat, simulated mode, the chair's).
    #[serde(default)]
    pub fallbacks: Vec<String>,
    #[serde(default = "unknown")]
    pub input_tokens_estimate: String,
    #[serde(default = "unknown")]
    pub output_tokens_estimate: String,
    #[serde(default)]
    pub duration_seconds: i64,
}

fn schema_version() -> u32 {
    1
}
fn unknown() -> String {
    "~unknown".into()
}
fn default_hours() -> f64 {
    super::DEFAULT_ROUND_HOURS
}

/// The whole state of one council.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Council {
    pub file_type: String,
    pub contract: String,
    pub mode: Mode,
    pub owner: Option<String>,
    pub round_hours: f64,
    #[serde(default = "default_hours")]
    pub restatement_hours: f64,
    #[serde(default = "default_hours")]
    pub retry_hours: f64,
    #[serde(default = "default_hours")]
    pub verdict_hours: f64,
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
    /// Why the council went fully simulated (fewer than 2 live seats in a round).
    #[serde(default)]
    pub simulated: Option<String>,
    #[serde(default)]
    pub verdict_asked_at: Option<String>,
    /// When the chairman's time is up: then polisd writes the fallback verdict.
    #[serde(default)]
    pub verdict_due_at: Option<String>,
    #[serde(default)]
    pub chairman_failed: bool,
    /// The mode asked for, when the council runs in another (two seats make a duo).
    #[serde(default)]
    pub requested_mode: Option<Mode>,
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
/// The verdict polisd synthesises when the chairman's time is up (the chairman's own file,
/// if any, is left as it is).
pub fn fallback_verdict_path(cid: &str) -> String {
    format!("{}/verdict-fallback.md", dir(cid))
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
        lenses: &super::lens::Library,
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
                lens: c.lens.clone(),
                lens_prompt: c
                    .lens
                    .as_ref()
                    .and_then(|l| lenses.get(l))
                    .map(|l| l.instruction()),
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
            mode: choice.mode,
            owner: owner.map(str::to_string),
            round_hours: request.round_hours(),
            restatement_hours: request.restatement_hours(),
            retry_hours: request.retry_hours(),
            verdict_hours: request.verdict_hours(),
            started_at: now.second_stamp(),
            started_by: started_by.to_string(),
            seats,
            chairman,
            chairman_is_owner,
            chairman_why,
            rounds: Vec::new(),
            phase: Phase::Rounds,
            simulated: None,
            verdict_asked_at: None,
            verdict_due_at: None,
            chairman_failed: false,
            requested_mode: (choice.mode != request.mode).then_some(request.mode),
            finished_at: None,
            fallback: None,
            outcome: None,
            notes: choice.notes.clone(),
        };
        council.open_round(0, now.now);
        council
    }

    fn open_round(&mut self, n: usize, at: NaiveDateTime) {
        let hours = if n == 0 {
            self.restatement_hours
        } else {
            self.round_hours
        };
        self.rounds.push(Round {
            n,
            opened_at: stamp(at),
            closes_at: stamp(add_hours(at, hours)),
            closed_at: None,
            wrote: Vec::new(),
            missing: Vec::new(),
            cut: Vec::new(),
            retries: Vec::new(),
            all_simulated: false,
        });
    }

    pub fn seat(&self, id: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.id == id)
    }

    pub fn ids(&self) -> Vec<String> {
        self.seats.iter().map(|s| s.id.clone()).collect()
    }

    /// Where the council stands, in words for a person: the open round (the restatement before
    /// the rounds is none of them), when it closes (its latest retry's time) and its word limit,
    /// or what it waits for. Every page and `status` word it so, never as `council.md` spells
    /// the phase.
    pub fn phase_words(&self) -> String {
        match self.phase {
            Phase::Rounds => match self.open() {
                Some(r) => {
                    let closes = r.closes();
                    let limit = self.mode.word_limit(r.n);
                    let rounds = self.mode.rounds();
                    let before = if r.n == 0 {
                        format!(" (before {rounds} rounds)")
                    } else {
                        String::new()
                    };
                    format!(
                        "{}{before} open until {closes}, at most {limit} words",
                        self.round_words(r.n)
                    )
                }
                None => "between rounds".into(),
            },
            Phase::Verdict => "rounds closed; waiting for the chairman's verdict".into(),
            Phase::Done => "finished".into(),
            Phase::Fallback => "stopped".into(),
        }
    }

    /// Round `n` as every text a person or a member reads names it, as [`Council::phase_words`]
    /// does: round 0 restates the question before the deliberation rounds, which are "round n
    /// of N". (`council.md` and the seat files keep the number.)
    pub fn round_words(&self, n: usize) -> String {
        if n == 0 {
            "restating the question".into()
        } else {
            format!("round {n} of {}", self.mode.rounds())
        }
    }

    /// The open round, if the council is in its rounds.
    pub fn open(&self) -> Option<&Round> {
        if self.phase != Phase::Rounds {
            return None;
        }
        self.rounds.last().filter(|r| r.closed_at.is_none())
    }

    /// When the open round's time is up: its own deadline, or its latest retry's.
    pub fn deadline(&self) -> Option<NaiveDateTime> {
        self.open().and_then(|r| parse_stamp(r.closes()))
    }

    /// The next moment this council must be looked at without any file changing: the open
    /// round's deadline, or the chairman's.
    pub fn next_wake(&self) -> Option<NaiveDateTime> {
        match self.phase {
            Phase::Rounds => self.deadline(),
            Phase::Verdict => self.verdict_due_at.as_deref().and_then(parse_stamp),
            _ => None,
        }
    }

    /// Whether the open round closes now: every seat wrote, the council is simulated, or its
    /// time is up with every retry spent.
    pub fn round_due(&self, written: &[String], now: &PolisTime) -> bool {
        let Some(round) = self.open() else {
            return false;
        };
        let all = self.seats.iter().all(|s| written.contains(&s.id));
        let time_up = self.deadline().is_some_and(|d| now.now >= d);
        all || self.simulated.is_some() || (time_up && round.retries.len() >= super::RETRIES)
    }

    /// Asks the seats still silent at the deadline again (retry `k` of [`RETRIES`]), with a
    /// backoff: the second window is 2.5 times the first. Returns the seats asked; empty when
    /// no retry is due now.
    pub fn retry_silent(&mut self, written: &[String], now: &PolisTime) -> Vec<String> {
        if self.simulated.is_some() || self.deadline().is_none_or(|d| now.now < d) {
            return Vec::new();
        }
        let ids = self.ids();
        let retry_hours = self.retry_hours;
        let Some(round) = self.rounds.last_mut().filter(|r| r.closed_at.is_none()) else {
            return Vec::new();
        };
        let k = round.retries.len();
        if k >= super::RETRIES {
            return Vec::new();
        }
        let silent: Vec<String> = ids.into_iter().filter(|id| !written.contains(id)).collect();
        if silent.is_empty() {
            return silent;
        }
        let window = retry_hours * if k == 0 { 1.0 } else { 2.5 };
        round.retries.push(Retry {
            at: now.second_stamp(),
            closes_at: stamp(add_hours(now.now, window)),
            seats: silent.clone(),
        });
        silent
    }

    pub fn is_last_round(&self, n: usize) -> bool {
        n >= self.mode.rounds()
    }

    /// Closes the open round with what was written (`wrote`) and cut; every silent seat gets
    /// a labelled stub in the packet. Fewer than [`HARD_MIN_LIVE_SEATS`] live seats switch
    /// the council to fully simulated mode for the rounds left. Then opens the next round or
    /// asks for the verdict. Returns the closed round's number.
    pub fn close_round(&mut self, wrote: &[String], cut: &[String], now: &PolisTime) -> usize {
        let ids = self.ids();
        let simulated_before = self.simulated.is_some();
        let n = {
            let Some(round) = self.rounds.last_mut() else {
                return 0;
            };
            round.closed_at = Some(now.second_stamp());
            round.all_simulated = simulated_before;
            let wrote: Vec<String> = if simulated_before {
                Vec::new()
            } else {
                ids.iter()
                    .filter(|id| wrote.contains(id))
                    .cloned()
                    .collect()
            };
            round.missing = ids
                .iter()
                .filter(|id| !wrote.contains(id))
                .cloned()
                .collect();
            round.wrote = wrote;
            round.cut = ids.iter().filter(|id| cut.contains(id)).cloned().collect();
            round.n
        };
        let live = self.rounds.last().map_or(0, |r| r.wrote.len());
        if !simulated_before && live < super::HARD_MIN_LIVE_SEATS {
            self.simulated = Some(format!(
                "only {live} seat(s) wrote their contribution to {} after {} retries; a council needs at least {} live seats, so polisd completes the remaining rounds in simulated mode (every seat a labelled stub) and the verdict's confidence must be lower",
                self.round_words(n),
                super::RETRIES,
                super::HARD_MIN_LIVE_SEATS
            ));
        }
        if self.is_last_round(n) {
            self.phase = Phase::Verdict;
            self.verdict_asked_at = Some(now.second_stamp());
            self.verdict_due_at = Some(stamp(add_hours(now.now, self.verdict_hours)));
        } else {
            self.open_round(n + 1, now.now);
        }
        n
    }

    /// Deliberation rounds closed (the restatement gate is not counted).
    pub fn rounds_run(&self) -> usize {
        self.rounds
            .iter()
            .filter(|r| r.n >= 1 && r.closed_at.is_some())
            .count()
    }

    /// The chairman's time is up with no valid verdict: polisd's synthesis stands instead.
    pub fn chairman_due(&self, now: &PolisTime) -> bool {
        self.phase == Phase::Verdict
            && self
                .verdict_due_at
                .as_deref()
                .and_then(parse_stamp)
                .is_some_and(|d| now.now >= d)
    }

    /// The date the coordinator's fallback verdict names as its review-by: 14 days after the
    /// chair's verdict was due. Taken from the council's own record, not from the clock, so the
    /// fallback's bytes are the same whenever and wherever it is written again (a pass retried
    /// the next day, a second machine's daemon).
    pub fn fallback_review_by(&self, now: &PolisTime) -> String {
        let due = self
            .verdict_due_at
            .as_deref()
            .and_then(parse_stamp)
            .unwrap_or(now.now);
        (due + chrono::Duration::days(14))
            .format("%Y-%m-%d")
            .to_string()
    }

    /// Seat states over the closed rounds: `live` wrote in every one; `degraded` missed at
    /// least one; `offline`, once the council is over, wrote in none.
    pub fn seat_states(&self) -> Vec<(String, &'static str)> {
        let closed: Vec<&Round> = self
            .rounds
            .iter()
            .filter(|r| r.closed_at.is_some() && !r.all_simulated)
            .collect();
        let over = matches!(self.phase, Phase::Done | Phase::Fallback);
        self.seats
            .iter()
            .map(|s| {
                let missed = closed.iter().filter(|r| r.missing.contains(&s.id)).count();
                let state = if missed == 0 {
                    "live"
                } else if over && missed == closed.len() && !closed.is_empty() {
                    "offline"
                } else {
                    "degraded"
                };
                (s.id.clone(), state)
            })
            .collect()
    }

    /// Every fallback the council took, in order: retries, simulated seats, simulated mode,
    /// the chairman's.
    pub fn fallbacks(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in self.rounds.iter().filter(|r| r.closed_at.is_some()) {
            for (k, t) in r.retries.iter().enumerate() {
                out.push(format!(
                    "{}: retry {} of {} for {}",
                    self.round_words(r.n),
                    k + 1,
                    super::RETRIES,
                    t.seats.join(", ")
                ));
            }
            if r.all_simulated {
                out.push(format!("{}: fully simulated", self.round_words(r.n)));
            } else if !r.missing.is_empty() {
                out.push(format!(
                    "{}: degraded, simulated stub for {}",
                    self.round_words(r.n),
                    r.missing.join(", ")
                ));
            }
        }
        if self.chairman_failed {
            out.push(format!(
                "chairman {}: FAILED — synthesized by coordinator fallback",
                self.chairman
            ));
        }
        out
    }

    /// Records the applied verdict and the session metadata block; `output_words` is what
    /// the members wrote in all (for the token estimate).
    pub fn finish(&mut self, decision: &str, now: &PolisTime, output_words: Option<usize>) {
        self.phase = Phase::Done;
        let states = self.seat_states();
        let of = |want: &str| -> Vec<String> {
            states
                .iter()
                .filter(|(_, s)| *s == want)
                .map(|(id, _)| id.clone())
                .collect()
        };
        let elapsed = parse_stamp(&self.started_at).map(|s| (now.now - s).num_seconds().max(0));
        let duration = elapsed.map_or(0, |s| s / 60);
        let mut vendors: Vec<&str> = self.seats.iter().map(|s| s.vendor.as_str()).collect();
        vendors.sort();
        vendors.dedup();
        let fallbacks = self.fallbacks();
        self.outcome = Some(Outcome {
            decision: decision.to_string(),
            mode: self.mode,
            panel_size: self.seats.len(),
            rounds_run: self.rounds_run(),
            live: of("live"),
            degraded: of("degraded"),
            offline: of("offline"),
            duration_minutes: duration,
            schema_version: 1,
            tools_used: vec!["polisd council (files and inbox notices)".into()],
            provider_count: vendors.len(),
            fallbacks_triggered: fallbacks.len(),
            fallbacks,
            // What members read is not observable through files.
            input_tokens_estimate: unknown(),
            // About 4 tokens per 3 English words.
            output_tokens_estimate: output_words
                .map_or_else(unknown, |w| format!("~{}", (w * 4).div_ceil(3))),
            duration_seconds: elapsed.unwrap_or(0),
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
        b.push_str("\n## Panel\n\nThe labels are stable for the whole council; this table is the only place that maps them to citizens.\n\n| label | member | vendor | lens | chosen because | state |\n|---|---|---|---|---|---|\n");
        let states = self.seat_states();
        for s in &self.seats {
            let state = states
                .iter()
                .find(|(id, _)| *id == s.id)
                .map_or("live", |(_, st)| *st);
            b.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                s.label,
                s.id,
                s.vendor,
                s.lens.as_deref().unwrap_or("-"),
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
        if let Some(why) = &self.simulated {
            b.push_str(&format!("\n**Simulated mode:** {why}.\n"));
        }
        b.push_str(&format!("\n## Rounds\n\nRound 0 is {}, before the {} rounds. A seat still silent at a round's deadline is asked again twice (retries); then it is degraded and the packet shows a stub polisd wrote, labelled as such.\n\n| round | words | opened | closes | closed | wrote | no response | cut | retries |\n|---|---|---|---|---|---|---|---|---|\n", self.round_words(0), self.mode.rounds()));
        let list = |v: &[String]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(", ")
            }
        };
        for r in &self.rounds {
            let retries = r
                .retries
                .iter()
                .map(|t| format!("{} until {} ({})", t.at, t.closes_at, t.seats.join(", ")))
                .collect::<Vec<_>>();
            b.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
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
                if r.all_simulated {
                    "simulated mode".to_string()
                } else {
                    list(&retries)
                },
            ));
        }
        b.push_str("\n## Verdict\n\n");
        match self.phase {
            Phase::Rounds => b.push_str("Not asked yet: the rounds are still open.\n"),
            Phase::Verdict => b.push_str(&format!(
                "Asked of {} at {}: `{}`, due by {}; after that polisd synthesizes one from the packets.\n",
                self.chairman,
                self.verdict_asked_at.as_deref().unwrap_or("-"),
                verdict_path(cid),
                self.verdict_due_at.as_deref().unwrap_or("-"),
            )),
            Phase::Done if self.chairman_failed => b.push_str(&format!(
                "Chairman: {} (FAILED — synthesized by coordinator fallback). Applied at {}: [[{}]].\n",
                self.chairman,
                self.finished_at.as_deref().unwrap_or("-"),
                fallback_verdict_path(cid).trim_end_matches(".md")
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
            b.push_str(&format!(
                "\n## Session metadata\n\n---\nschema_version: {}\nmode: {}\npanel_size: {}\nrounds_run: {}\ntools_used: {}\nprovider_count: {}\nfallbacks_triggered: {}\ninput_tokens_estimate: {}\noutput_tokens_estimate: {}\nduration_seconds: {}\n---\n",
                o.schema_version,
                o.mode.as_str(),
                o.panel_size,
                o.rounds_run,
                o.tools_used.join(", "),
                o.provider_count,
                o.fallbacks_triggered,
                o.input_tokens_estimate,
                o.output_tokens_estimate,
                o.duration_seconds
            ));
            for f in &o.fallbacks {
                b.push_str(&format!("- fallback: {f}\n"));
            }
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
        let council: Council = serde_json::from_value(from_yaml(&record.fields)).map_err(|e| {
            // serde quotes the value it refused whole: read again with every text quoted short,
            // for the same error at a readable size.
            let shown = serde_json::from_value::<Council>(quoted_texts(from_yaml(&record.fields)))
                .err()
                .map_or_else(|| quoted(&e.to_string()), |short| short.to_string());
            err(format!("not a council state: {shown}"))
        })?;
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

/// `v` with every text and key as a finding quotes it ([`quoted`]); short ones are unchanged.
fn quoted_texts(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::String(s) => serde_json::Value::String(quoted(&s)),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(quoted_texts).collect())
        }
        serde_json::Value::Object(o) => serde_json::Value::Object(
            o.into_iter()
                .map(|(k, v)| (quoted(&k), quoted_texts(v)))
                .collect(),
        ),
        other => other,
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
            mode,
            panel: ["claude-seat-aaaa", "codex-seat-bbbb", "gemini-seat-cccc"]
                .iter()
                .map(|id| Chosen {
                    id: id.to_string(),
                    vendor: id.split('-').next().unwrap().into(),
                    why: "picked: score 0.5".into(),
                    lens: None,
                })
                .collect(),
            chairman: Some(Chosen {
                id: "claude-chair-dddd".into(),
                vendor: "claude".into(),
                why: "not on the panel".into(),
                lens: None,
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
            &crate::protocol::council::lens::Library::default(),
            &at("2026-12-01 10:00"),
        )
    }

    #[test]
    fn render_then_parse_is_identity_at_every_phase() {
        let mut c = council(Mode::Full);
        let ids = c.ids();
        assert_eq!(c.open().unwrap().n, 0, "restating the question comes first");
        for step in 0..6 {
            let text = c.render().unwrap();
            let back = Council::parse("reviews/big-change/council.md", &text).unwrap();
            assert_eq!(back, c, "step {step}:\n{text}");
            assert_eq!(back.render().unwrap(), text);
            match step {
                0 | 2 | 3 => {
                    c.close_round(&ids, &[], &at("2026-12-01 10:20"));
                }
                1 => {
                    c.close_round(&ids[..2], &ids[..1], &at("2026-12-01 11:30"));
                    assert_eq!(c.seat_states()[2].1, "degraded", "a silent seat");
                }
                _ => c.finish("signed_off", &at("2026-12-01 14:00"), Some(300)),
            }
        }
        assert_eq!(c.phase, Phase::Done);
        let o = c.outcome.clone().unwrap();
        assert_eq!(
            o.rounds_run, 3,
            "restating the question is not a deliberation round"
        );
        assert_eq!(o.degraded, vec!["gemini-seat-cccc".to_string()]);
        assert_eq!(o.live.len(), 2);
        assert_eq!(o.duration_minutes, 240);
        assert_eq!(o.duration_seconds, 14400);
        assert_eq!(o.provider_count, 3);
        assert_eq!(o.fallbacks_triggered, 1, "{:?}", o.fallbacks);
        let text = c.render().unwrap();
        assert!(text.contains("## Outcome"), "{text}");
        assert!(text.contains("| Member C | gemini-seat-cccc |"), "{text}");
        for line in [
            "\n---\nschema_version: 1\nmode: full\npanel_size: 3\nrounds_run: 3\n",
            "\nprovider_count: 3\nfallbacks_triggered: 1\ninput_tokens_estimate: ~unknown\noutput_tokens_estimate: ~400\nduration_seconds: 14400\n---\n",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn a_silent_seat_is_retried_twice_with_backoff_before_the_round_closes() {
        let mut c = council(Mode::Quick);
        // The gate: a quarter of the 1.5 h round.
        assert_eq!(c.deadline(), parse_stamp("2026-12-01 10:22:30"));
        let ids = c.ids();
        assert!(c.round_due(&ids, &at("2026-12-01 10:01")));
        let t = at("2026-12-01 10:23");
        assert!(!c.round_due(&ids[..2], &t), "not before the retries");
        assert!(c
            .retry_silent(&ids[..2], &at("2026-12-01 10:22"))
            .is_empty());
        assert_eq!(c.retry_silent(&ids[..2], &t), vec![ids[2].clone()]);
        // An eighth of a round (11 min 15 s), then 2.5 times that.
        assert_eq!(c.deadline(), parse_stamp("2026-12-01 10:34:15"));
        assert!(c
            .retry_silent(&ids[..2], &at("2026-12-01 10:34"))
            .is_empty());
        assert_eq!(c.retry_silent(&ids[..2], &at("2026-12-01 10:35")).len(), 1);
        assert_eq!(c.deadline(), parse_stamp("2026-12-01 11:03:07"));
        assert!(!c.round_due(&ids[..2], &at("2026-12-01 11:03")));
        assert!(c.round_due(&ids[..2], &at("2026-12-01 11:04")));
        assert!(
            c.retry_silent(&ids[..2], &at("2026-12-01 11:05"))
                .is_empty(),
            "two at most"
        );
        c.close_round(&ids[..2], &[], &at("2026-12-01 11:05"));
        assert!(c.simulated.is_none());
        assert_eq!(c.fallbacks().len(), 3, "{:?}", c.fallbacks());
        let back = Council::parse("p", &c.render().unwrap()).unwrap();
        assert_eq!(back, c);
    }

    /// Round 0 reads as `phase_words` says it, in the state file's prose and in the fallbacks a
    /// verdict lists, never by its number alone or as a gate.
    #[test]
    fn the_state_file_and_the_fallbacks_name_rounds_as_the_phase_words_do() {
        let mut c = council(Mode::Quick);
        assert!(
            c.phase_words()
                .starts_with("restating the question (before 2 rounds) open until"),
            "{}",
            c.phase_words()
        );
        let ids = c.ids();
        c.retry_silent(&ids[..2], &at("2026-12-01 10:23"));
        c.close_round(&ids[..2], &[], &at("2026-12-01 11:05"));
        assert_eq!(
            c.fallbacks(),
            [
                format!("restating the question: retry 1 of 2 for {}", ids[2]),
                format!(
                    "restating the question: degraded, simulated stub for {}",
                    ids[2]
                ),
            ]
        );
        assert!(c.phase_words().starts_with("round 1 of 2 open until"));
        let text = c.render().unwrap();
        assert!(
            text.contains("Round 0 is restating the question, before the 2 rounds."),
            "{text}"
        );
        assert!(!text.to_lowercase().contains("gate"), "{text}");
    }

    #[test]
    fn fewer_than_two_live_seats_make_the_rest_simulated() {
        let mut c = council(Mode::Full);
        let ids = c.ids();
        c.close_round(&ids[1..2], &[], &at("2026-12-01 12:00"));
        assert!(c.simulated.as_deref().unwrap().contains("simulated mode"));
        // The rounds left close at once, every seat a stub; no round waits.
        for n in 1..=3 {
            assert_eq!(c.open().unwrap().n, n);
            assert!(c.round_due(&[], &at("2026-12-01 12:00")));
            c.close_round(&ids, &[], &at("2026-12-01 12:00"));
        }
        assert_eq!(c.phase, Phase::Verdict);
        assert!(c.rounds[1..].iter().all(|r| r.all_simulated));
        let states = c.seat_states();
        assert_eq!(states[1].1, "live", "{states:?}");
        assert_eq!(states[0].1, "degraded", "{states:?}");
    }

    #[test]
    fn the_chairman_has_a_deadline() {
        let mut c = council(Mode::Quick);
        let ids = c.ids();
        for _ in 0..3 {
            c.close_round(&ids, &[], &at("2026-12-01 10:30"));
        }
        assert_eq!(c.phase, Phase::Verdict);
        assert!(c.open().is_none());
        assert_eq!(c.next_wake(), parse_stamp("2026-12-01 12:00:00"));
        assert!(!c.chairman_due(&at("2026-12-01 11:59")));
        assert!(c.chairman_due(&at("2026-12-01 12:00")));
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
