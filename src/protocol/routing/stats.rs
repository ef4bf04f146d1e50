//! `contracts/routing_stats.yml` (SPEC §6 steps 4–7): replaying settlements into per-tag,
//! per-citizen averages, choosing each tag's leader, and the file's exact bytes.
//!
//! Pure: it takes settlements already read (see `contract::read_settled`) and returns values
//! and text. The float arithmetic follows the reference operation for operation, because the
//! file must be byte-identical to the reference's; never "simplify" a formula here.

use crate::yaml::{self, Mapping, Value};
use chrono::NaiveDateTime;
use std::cmp::Ordering;
use std::collections::HashMap;

mod ledger;
pub use ledger::{Ledger, LedgerSnapshot, Recorded};

/// `explore_rate` when neither the old file nor anything else gives one.
pub const DEFAULT_EXPLORE_RATE: f64 = 0.15;

/// What one settled contract contributes (SPEC §6 steps 1–3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settlement {
    /// The file, relative to `_polis/` (for findings and notices).
    pub path: String,
    pub owner: String,
    /// Deduplicated, first-seen order.
    pub tags: Vec<String>,
    /// The settlement time as polis-local wall time; `None` when there is no readable time.
    pub instant: Option<NaiveDateTime>,
    /// The time as Python's `str()` writes it, for a settlement without an instant: it orders
    /// those (SPEC §6 step 4). Empty when there is an instant, which orders instead.
    pub when_text: String,
    /// `str(settled_at)[:10]`, `None` when there is no time at all.
    pub last_completed: Option<String>,
    pub quality: u8,
    /// No quality was readable and 3 was assumed: the owner is told (SPEC §6 step 2, §9).
    pub quality_defaulted: bool,
    /// As the double the reference's arithmetic uses.
    pub minutes: f64,
    /// What reflection's detectors read beside the settlement (kept with it, so a daily run
    /// reads no settled file again): `routing.recommended_by_router`.
    pub recommended: Option<String>,
    /// High stakes, or a review required or assigned.
    pub guarded: bool,
    /// `contract_id` is given and is not the file's name: reflection reads the file for it.
    pub renamed: bool,
}

impl Settlement {
    /// The settlement borrowed, as a [`Ledger`] gives its own.
    pub fn view(&self) -> SettlementView<'_> {
        SettlementView {
            owner: &self.owner,
            tags: &self.tags,
            instant: self.instant,
            when_text: &self.when_text,
            last_completed: self.last_completed.as_deref(),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
            recommended: self.recommended.as_deref(),
            guarded: self.guarded,
            renamed: self.renamed,
        }
    }
}

/// One citizen's record on one tag.
#[derive(Debug, Clone, PartialEq)]
pub struct CitizenStats {
    pub citizen: String,
    pub contracts_completed: u64,
    pub avg_quality_score: f64,
    pub avg_actual_minutes: f64,
    pub last_completed: Option<String>,
}

impl CitizenStats {
    fn new(citizen: &str) -> CitizenStats {
        CitizenStats {
            citizen: citizen.to_string(),
            contracts_completed: 0,
            avg_quality_score: 0.0,
            avg_actual_minutes: 0.0,
            last_completed: None,
        }
    }

    /// Replays one settlement (SPEC §6 step 5): exactly the reference's operations,
    /// `(avg * n + x) / (n + 1)`, in this order, so the doubles are the reference's.
    fn record(&mut self, s: &SettlementView<'_>) {
        self.record_values(s.quality, s.minutes, s.last_completed);
    }

    fn record_values(&mut self, quality: u8, minutes: f64, last_completed: Option<&str>) {
        let n = self.contracts_completed as f64;
        self.avg_quality_score = (self.avg_quality_score * n + f64::from(quality)) / (n + 1.0);
        self.avg_actual_minutes = (self.avg_actual_minutes * n + minutes) / (n + 1.0);
        self.contracts_completed += 1;
        if self.last_completed.as_deref() != last_completed {
            self.last_completed = last_completed.map(str::to_string);
        }
    }
}

/// One tag: its citizens in first-seen order, and the leader.
#[derive(Debug, Clone, PartialEq)]
pub struct TagStats {
    pub tag: String,
    pub citizens: Vec<CitizenStats>,
    pub leader: Option<String>,
    pub leader_confidence: Option<f64>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingStats {
    /// Kept as read (or the newest settlement's `YYYY-MM-DD HH:MM:SS`); `Null` when unknown.
    pub last_updated: Value,
    /// Kept as read, so a hand-set rate survives a rebuild byte for byte.
    pub explore_rate: Value,
    pub tags: Vec<TagStats>,
}

impl Default for RoutingStats {
    fn default() -> Self {
        RoutingStats {
            last_updated: Value::Null,
            explore_rate: Value::Float(DEFAULT_EXPLORE_RATE),
            tags: Vec::new(),
        }
    }
}

impl RoutingStats {
    pub fn tag(&self, tag: &str) -> Option<&TagStats> {
        self.tags.iter().find(|t| t.tag == tag)
    }

    pub fn citizen(&self, tag: &str, citizen: &str) -> Option<&CitizenStats> {
        self.tag(tag)?
            .citizens
            .iter()
            .find(|c| c.citizen == citizen)
    }

    /// The rate as a number, for routing; `None` when the file holds something else.
    pub fn explore_rate_f64(&self) -> Option<f64> {
        match &self.explore_rate {
            Value::Null => Some(DEFAULT_EXPLORE_RATE),
            v => v.as_f64(),
        }
    }
}

/// The order settlements are replayed in (SPEC §6 step 4): by instant (none first), then owner,
/// tags, quality, minutes. Different time styles compare as instants instead of failing.
/// The replay order of SPEC §6 step 4 (instant, owner, tags, quality, minutes).
pub fn replay_order(a: &Settlement, b: &Settlement) -> Ordering {
    replay_order_of_views(&a.view(), &b.view())
}

/// [`replay_order`] of borrowed settlements.
pub fn replay_order_of_views(a: &SettlementView<'_>, b: &SettlementView<'_>) -> Ordering {
    let time = match (&a.instant, &b.instant) {
        (None, None) => a.when_text.cmp(b.when_text),
        (x, y) => x.cmp(y),
    };
    time.then_with(|| a.owner.cmp(b.owner))
        .then_with(|| a.tags.cmp(b.tags))
        .then_with(|| a.quality.cmp(&b.quality))
        .then_with(|| a.minutes.total_cmp(&b.minutes))
}

/// Rebuilds the stats (SPEC §6 steps 4–6). `explore_rate` and `previous_last_updated` are the
/// values of the file being replaced (`Null` when there is none): the rate is kept, and the
/// stamp is kept when no settlement has a time.
pub fn reconcile(
    settlements: &[Settlement],
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    let views: Vec<SettlementView<'_>> = settlements.iter().map(Settlement::view).collect();
    reconcile_views(&views, explore_rate, previous_last_updated)
}

/// [`reconcile`] over borrowed settlements, in the same order as the owned ones would be
/// given (ties in the replay order keep that order).
pub fn reconcile_views(
    settlements: &[SettlementView<'_>],
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    reconcile_each(
        settlements.len(),
        |i| replay_key(&settlements[i]),
        |i| settlements[i],
        explore_rate,
        previous_last_updated,
    )
}

/// The replay's first key (SPEC §6 step 4): the instant as microseconds, `i64::MIN` for none
/// (as `None` orders before any time).
pub fn replay_key(s: &SettlementView<'_>) -> i64 {
    s.instant
        .map_or(i64::MIN, |t| t.and_utc().timestamp_micros())
}

/// [`reconcile_views`] over `count` settlements given by `view(i)`, with no vector of them: a
/// one-shot command replays a ledger's records where they are. `view` is called again
/// whenever a settlement is needed, so it should be cheap; `key(i)` is [`replay_key`] of
/// `view(i)`, given apart so that sorting builds no view.
pub fn reconcile_each<'a>(
    count: usize,
    key: impl Fn(usize) -> i64,
    view: impl Fn(usize) -> SettlementView<'a>,
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    let mut replay = Replay::default();
    let mut lists = TagLists::default();
    for (_, at) in replay_places(count, key, &view) {
        replay.push(&view(at), &mut lists);
    }
    replay.finish(explore_rate, previous_last_updated)
}

/// The places `0..count` in replay order (SPEC §6 step 4), stable: by the instant as an
/// integer, then by the whole order, then by place; each with its [`replay_key`]. Sorted by
/// instant and place first; the runs of one instant (settled in the same minute or second,
/// as stamps are written) are then put in the whole order.
pub fn replay_places<'a>(
    count: usize,
    key: impl Fn(usize) -> i64,
    view: impl Fn(usize) -> SettlementView<'a>,
) -> Vec<(i64, usize)> {
    let mut order: Vec<(i64, usize)> = (0..count).map(|i| (key(i), i)).collect();
    order.sort_unstable();
    for run in order
        .chunk_by_mut(|a, b| a.0 == b.0)
        .filter(|run| run.len() > 1)
    {
        run.sort_by(|a, b| replay_order_of_views(&view(a.1), &view(b.1)).then(a.1.cmp(&b.1)));
    }
    order
}

type Fast = foldhash::fast::RandomState;

/// A replay under way (SPEC §6 steps 5–6): settlements pushed in replay order, each tag and
/// each tag's citizens kept in the order first met. It owns what it keeps, so one thread can
/// replay a ledger ahead and another push the rest and finish.
#[derive(Debug, Default)]
pub struct Replay {
    tags: Vec<TagStats>,
    tag_index: HashMap<String, usize, Fast>,
    citizen_index: Vec<HashMap<String, usize, Fast>>,
    newest: Option<NaiveDateTime>,
}

/// Each tag list's tags as [`Replay`] places them, found once per list: settlements that share
/// one list (a ledger keeps each distinct list once) are told apart by its address, which no
/// other list borrowed from one source can have; so one is kept per source, never across two.
/// Lists owned one per settlement never repeat: past a few thousand, no more are kept.
#[derive(Debug, Default)]
pub struct TagLists {
    slots_of_list: HashMap<(usize, usize), std::ops::Range<usize>, Fast>,
    slots: Vec<usize>,
    scratch: Vec<usize>,
}

impl Replay {
    /// Counts the next settlement in replay order.
    pub fn push(&mut self, s: &SettlementView<'_>, lists: &mut TagLists) {
        const LISTS_KEPT: usize = 4096;
        let list = (s.tags.as_ptr() as usize, s.tags.len());
        let resolved: &[usize] = match lists.slots_of_list.get(&list) {
            Some(range) => &lists.slots[range.clone()],
            None => {
                let full = lists.slots_of_list.len() >= LISTS_KEPT;
                let buf = if full {
                    lists.scratch.clear();
                    &mut lists.scratch
                } else {
                    &mut lists.slots
                };
                let from = buf.len();
                for tag in s.tags {
                    let t = match self.tag_index.get(tag.as_str()) {
                        Some(&t) => t,
                        None => {
                            self.tags.push(TagStats {
                                tag: tag.clone(),
                                citizens: Vec::new(),
                                leader: None,
                                leader_confidence: None,
                            });
                            self.citizen_index.push(HashMap::default());
                            self.tag_index.insert(tag.clone(), self.tags.len() - 1);
                            self.tags.len() - 1
                        }
                    };
                    buf.push(t);
                }
                if !full {
                    lists.slots_of_list.insert(list, from..buf.len());
                }
                &buf[from..]
            }
        };
        for &t in resolved {
            let citizens = &mut self.tags[t].citizens;
            let index = &mut self.citizen_index[t];
            let c = match index.get(s.owner) {
                Some(&c) => c,
                None => {
                    citizens.push(CitizenStats::new(s.owner));
                    index.insert(s.owner.to_string(), citizens.len() - 1);
                    citizens.len() - 1
                }
            };
            citizens[c].record(s);
        }
        // The newest is the last one with a time: those without one are first in the order.
        if s.instant.is_some() {
            self.newest = s.instant;
        }
    }

    /// The stats of everything pushed, with the two values kept from the file replaced.
    pub fn finish(mut self, explore_rate: &Value, previous_last_updated: &Value) -> RoutingStats {
        for t in &mut self.tags {
            let (leader, confidence) = leader_of(&t.citizens);
            t.leader = leader;
            t.leader_confidence = confidence;
        }
        assemble(self.tags, self.newest, explore_rate, previous_last_updated)
    }
}

/// The stats file's values around the tags: `last_updated` is the newest settlement's time
/// (the file's previous value when none has one), `explore_rate` is kept or defaulted.
fn assemble(
    tags: Vec<TagStats>,
    newest: Option<NaiveDateTime>,
    explore_rate: &Value,
    previous_last_updated: &Value,
) -> RoutingStats {
    let last_updated = newest
        .map(|i| Value::Str(i.format("%Y-%m-%d %H:%M:%S").to_string()))
        .unwrap_or_else(|| previous_last_updated.clone());
    let explore_rate = match explore_rate {
        Value::Null => Value::Float(DEFAULT_EXPLORE_RATE),
        v => v.clone(),
    };
    RoutingStats {
        last_updated,
        explore_rate,
        tags,
    }
}

/// A settlement kept by a [`Ledger`], borrowed (for writing it elsewhere without a copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettlementView<'a> {
    pub owner: &'a str,
    pub tags: &'a [String],
    pub instant: Option<NaiveDateTime>,
    pub when_text: &'a str,
    pub last_completed: Option<&'a str>,
    pub quality: u8,
    pub quality_defaulted: bool,
    pub minutes: f64,
    /// See [`Settlement::recommended`], [`Settlement::guarded`], [`Settlement::renamed`].
    pub recommended: Option<&'a str>,
    pub guarded: bool,
    pub renamed: bool,
}

impl SettlementView<'_> {
    /// The settlement owned, with its path.
    pub fn to_settlement(&self, path: &str) -> Settlement {
        Settlement {
            path: path.to_string(),
            owner: self.owner.to_string(),
            tags: self.tags.to_vec(),
            instant: self.instant,
            when_text: self.when_text.to_string(),
            last_completed: self.last_completed.map(str::to_string),
            quality: self.quality,
            quality_defaulted: self.quality_defaulted,
            minutes: self.minutes,
            recommended: self.recommended.map(str::to_string),
            guarded: self.guarded,
            renamed: self.renamed,
        }
    }
}

/// A settlement's tags without repeats (they are deduplicated when read; this keeps a
/// hand-built settlement from counting twice on one tag).
fn dedup(tags: &[String]) -> Vec<&String> {
    // A set answers "seen?", so a settlement listing 100,000 tags is not quadratic.
    let mut seen = std::collections::HashSet::with_capacity(tags.len());
    tags.iter().filter(|t| seen.insert(t.as_str())).collect()
}

/// [`reconcile`] over the file being replaced (`None` when there is none): keeps its
/// `explore_rate`, and its `last_updated` when no settlement has a time.
pub fn reconcile_over(settlements: &[Settlement], previous: Option<&RoutingStats>) -> RoutingStats {
    match previous {
        Some(p) => reconcile(settlements, &p.explore_rate, &p.last_updated),
        None => reconcile(settlements, &Value::Null, &Value::Null),
    }
}

/// SPEC §6 step 6: the leader (ties: first seen) and `leader_confidence`.
fn leader_of(citizens: &[CitizenStats]) -> (Option<String>, Option<f64>) {
    if citizens.is_empty() {
        return (None, None);
    }
    // A stable sort, descending, as the reference's `sorted(..., reverse=True)`.
    let mut ranked: Vec<&CitizenStats> = citizens.iter().collect();
    ranked.sort_by(|a, b| {
        b.avg_quality_score
            .partial_cmp(&a.avg_quality_score)
            .unwrap_or(Ordering::Equal)
    });
    let gap = match ranked.get(1) {
        Some(second) => ranked[0].avg_quality_score - second.avg_quality_score,
        None => ranked[0].avg_quality_score / 5.0,
    };
    let total_n: u64 = citizens.iter().map(|c| c.contracts_completed).sum();
    let confidence = 1.0 / (1.0 + (-(gap * (total_n as f64).sqrt() / 3.0)).exp());
    (
        Some(ranked[0].citizen.clone()),
        Some(round_half_even(confidence, 3)),
    )
}

/// Python's `round(x, ndigits)` for small `ndigits`: the exact binary value rounded to the
/// nearest decimal, ties to even.
pub fn round_half_even(x: f64, ndigits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // `{:.N}` formats the exact binary value correctly rounded; only an exact tie needs care.
    // A double is exactly halfway at N decimals iff x * 10^N * 2 is an odd integer, which we
    // detect on the exact decimal expansion (binary fractions terminate).
    let exact = exact_decimal(x);
    let (int_part, frac) = exact.split_once('.').unwrap_or((&exact, ""));
    let tail = frac.get(ndigits..).unwrap_or("");
    let is_tie = tail.starts_with('5') && tail[1..].bytes().all(|b| b == b'0');
    if !is_tie {
        return format!("{x:.ndigits$}").parse().unwrap_or(x);
    }
    // A tie has a fractional part, so |x| < 2^53 and the digits fit an i128.
    let negative = int_part.starts_with('-');
    let digits = format!("{}{}", int_part.trim_start_matches('-'), &frac[..ndigits]);
    let mut n: i128 = digits.parse().unwrap_or(0);
    if n % 2 == 1 {
        n += 1;
    }
    let scale = 10i128.pow(ndigits as u32);
    let sign = if negative { "-" } else { "" };
    format!("{sign}{}.{:0ndigits$}", n / scale, n % scale)
        .parse()
        .unwrap_or(x)
}

/// The exact decimal expansion of a finite double.
fn exact_decimal(x: f64) -> String {
    // 1074 fractional digits always suffice for a double; Rust prints them exactly.
    let s = format!("{:.1100}", x);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.')
        .map_or(s.to_string(), |t| format!("{t}.0"))
}

/// The settlements whose owner must be told that quality 3 was assumed (SPEC §6 step 2).
pub fn quality_defaulted(settlements: &[Settlement]) -> impl Iterator<Item = &Settlement> {
    settlements.iter().filter(|s| s.quality_defaulted)
}

fn key(k: &str) -> Value {
    Value::Str(k.to_string())
}

/// The file's contents as a YAML value, keys in the reference's order (SPEC §6 step 7).
pub fn to_value(stats: &RoutingStats) -> Value {
    let mut tags = Mapping::new();
    for t in &stats.tags {
        let mut citizens = Mapping::new();
        for c in &t.citizens {
            let mut m = Mapping::new();
            m.insert(
                key("contracts_completed"),
                Value::Int(c.contracts_completed as i64),
            );
            m.insert(key("avg_quality_score"), Value::Float(c.avg_quality_score));
            m.insert(
                key("avg_actual_minutes"),
                Value::Float(c.avg_actual_minutes),
            );
            m.insert(
                key("last_completed"),
                c.last_completed.clone().map_or(Value::Null, Value::Str),
            );
            citizens.insert(key(&c.citizen), Value::Map(m));
        }
        let mut tm = Mapping::new();
        tm.insert(key("citizens"), Value::Map(citizens));
        if let Some(leader) = &t.leader {
            tm.insert(key("leader"), Value::Str(leader.clone()));
        }
        if let Some(conf) = t.leader_confidence {
            tm.insert(key("leader_confidence"), Value::Float(conf));
        }
        tags.insert(key(&t.tag), Value::Map(tm));
    }
    let mut out = Mapping::new();
    out.insert(key("last_updated"), stats.last_updated.clone());
    out.insert(key("explore_rate"), stats.explore_rate.clone());
    out.insert(key("tags"), Value::Map(tags));
    Value::Map(out)
}

/// The file's bytes: PyYAML `dump(default_flow_style=False, sort_keys=False)` of
/// [`to_value`], as the reference writes it (non-ASCII tags and ids double-quoted and escaped).
pub fn render(stats: &RoutingStats) -> Result<String, yaml::EmitError> {
    yaml::dump(&to_value(stats), &yaml::DumpOptions::STATS)
}

/// Reads an existing `routing_stats.yml` leniently: entries of the wrong shape are skipped
/// (the reference would crash on most of them), numbers may be ints or floats.
pub fn from_value(v: &Value) -> RoutingStats {
    let mut stats = RoutingStats {
        last_updated: v.get("last_updated").clone(),
        explore_rate: v.get("explore_rate").clone(),
        tags: Vec::new(),
    };
    let Some(tags) = v.get("tags").as_map() else {
        return stats;
    };
    for (tag, td) in tags.iter() {
        let Some(tag) = tag.as_str() else { continue };
        let mut citizens = Vec::new();
        if let Some(cm) = td.get("citizens").as_map() {
            for (id, c) in cm.iter() {
                let Some(id) = id.as_str() else { continue };
                // The reference skips a falsy entry (`if not tag_stats: continue`).
                if !c.is_truthy() || c.as_map().is_none() {
                    continue;
                }
                citizens.push(CitizenStats {
                    citizen: id.to_string(),
                    contracts_completed: match c.get("contracts_completed") {
                        Value::Int(i) => (*i).max(0) as u64,
                        Value::Float(f) if f.is_finite() && *f > 0.0 => *f as u64,
                        _ => 0,
                    },
                    avg_quality_score: c.get("avg_quality_score").as_f64().unwrap_or(0.0),
                    avg_actual_minutes: c.get("avg_actual_minutes").as_f64().unwrap_or(0.0),
                    last_completed: match c.get("last_completed") {
                        Value::Null => None,
                        other => Some(other.python_str()),
                    },
                });
            }
        }
        stats.tags.push(TagStats {
            tag: tag.to_string(),
            citizens,
            leader: td.get("leader").as_str().map(str::to_string),
            leader_confidence: td.get("leader_confidence").as_f64(),
        });
    }
    stats
}

/// Parses the text of `routing_stats.yml`.
pub fn parse(text: &str) -> Result<RoutingStats, yaml::YamlError> {
    yaml::load(text).map(|v| from_value(&v))
}

/// How one tag's averages and leader moved, settlement by settlement (the dashboard's chart).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TagHistory {
    /// Per citizen (first-seen order): after the tag's n-th settlement (1-based), the
    /// citizen's running average quality. A point only where that citizen settled.
    pub series: Vec<(String, Vec<(usize, f64)>)>,
    /// Every change of leader: after which settlement, its time as written, from whom, to whom.
    pub leader_changes: Vec<LeaderChange>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeaderChange {
    pub after: usize,
    pub when: String,
    pub from: Option<String>,
    pub to: String,
}

/// Replays `settlements` in the order of SPEC §6 and records, per tag, each citizen's running
/// average after each settlement and each change of leader (highest average, ties to the first
/// seen, as [`reconcile`] picks).
pub fn history(settlements: &[Settlement]) -> Vec<(String, TagHistory)> {
    let mut sorted: Vec<&Settlement> = settlements.iter().collect();
    sorted.sort_by(|a, b| replay_order(a, b));
    history_in_order(sorted.into_iter().map(Settlement::view))
}

/// [`history`] over settlements already in the replay order (a [`LedgerSnapshot`]'s).
pub fn history_in_order<'a>(
    settlements: impl IntoIterator<Item = SettlementView<'a>>,
) -> Vec<(String, TagHistory)> {
    let mut tags: Vec<(String, Vec<CitizenStats>, TagHistory, usize)> = Vec::new();
    for s in settlements {
        for tag in s.tags {
            let i = match tags.iter().position(|t| &t.0 == tag) {
                Some(i) => i,
                None => {
                    tags.push((tag.clone(), Vec::new(), TagHistory::default(), 0));
                    tags.len() - 1
                }
            };
            let (_, citizens, hist, n) = &mut tags[i];
            *n += 1;
            let c = match citizens.iter().position(|c| c.citizen == s.owner) {
                Some(c) => c,
                None => {
                    citizens.push(CitizenStats::new(s.owner));
                    hist.series.push((s.owner.to_string(), Vec::new()));
                    citizens.len() - 1
                }
            };
            citizens[c].record_values(s.quality, s.minutes, s.last_completed);
            hist.series[c].1.push((*n, citizens[c].avg_quality_score));
            let mut leader = &citizens[0];
            for x in &citizens[1..] {
                if x.avg_quality_score > leader.avg_quality_score {
                    leader = x;
                }
            }
            let before = hist.leader_changes.last().map(|l| l.to.clone());
            if before.as_deref() != Some(leader.citizen.as_str()) {
                hist.leader_changes.push(LeaderChange {
                    after: *n,
                    when: s
                        .instant
                        .map_or_else(|| s.when_text.to_string(), |t| t.to_string()),
                    from: before,
                    to: leader.citizen.clone(),
                });
            }
        }
    }
    tags.into_iter().map(|(t, _, h, _)| (t, h)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn s(day: u32, owner: &str, tags: &[&str], quality: u8, minutes: f64) -> Settlement {
        let instant = NaiveDate::from_ymd_opt(2026, 3, day)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap();
        Settlement {
            path: format!("contracts/settled/{day}.md"),
            owner: owner.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            instant: Some(instant),
            when_text: instant.to_string(),
            last_completed: Some(instant.to_string()[..10].to_string()),
            quality,
            minutes,
            ..Default::default()
        }
    }

    /// The replay written plainly (every tag and citizen found by a linear search), to hold
    /// [`reconcile_views`]' lookups to.
    fn plain_replay(settlements: &[SettlementView<'_>]) -> Vec<TagStats> {
        let mut order: Vec<&SettlementView<'_>> = settlements.iter().collect();
        order.sort_by(|a, b| replay_order_of_views(a, b));
        let mut tags: Vec<TagStats> = Vec::new();
        for s in order {
            for tag in s.tags {
                let t = match tags.iter().position(|t| &t.tag == tag) {
                    Some(t) => t,
                    None => {
                        tags.push(TagStats {
                            tag: tag.clone(),
                            citizens: Vec::new(),
                            leader: None,
                            leader_confidence: None,
                        });
                        tags.len() - 1
                    }
                };
                let citizens = &mut tags[t].citizens;
                let c = match citizens.iter().position(|c| c.citizen == s.owner) {
                    Some(c) => c,
                    None => {
                        citizens.push(CitizenStats::new(s.owner));
                        citizens.len() - 1
                    }
                };
                citizens[c].record(s);
            }
        }
        for t in &mut tags {
            (t.leader, t.leader_confidence) = leader_of(&t.citizens);
        }
        tags
    }

    #[test]
    fn tag_lists_shared_or_owned_replay_as_a_plain_search_does() {
        // Lists shared by address (a ledger's table lends each distinct list once), and lists
        // owned one per settlement, more than the replay remembers by address.
        let lists: Vec<Vec<String>> = [
            &["py"][..],
            &["py", "rust"],
            &["rust"],
            &["docs", "py"],
            &[],
            &["rust", "docs"],
        ]
        .iter()
        .map(|l| l.iter().map(|t| t.to_string()).collect())
        .collect();
        let owners = ["a-agent-01", "b-agent-02", "c-agent-03"];
        let owned: Vec<Settlement> = (0..6000)
            .map(|i| {
                let mut x = s(
                    1 + (i * 7 % 28) as u32,
                    owners[i % 3],
                    &[],
                    (1 + i % 5) as u8,
                    (i % 13) as f64,
                );
                x.tags = lists[(i / 3) % lists.len()].clone();
                x.instant = x
                    .instant
                    .map(|t| t + chrono::Duration::seconds((i % 997) as i64));
                x
            })
            .collect();
        let shared: Vec<SettlementView<'_>> = owned
            .iter()
            .map(|x| SettlementView {
                tags: lists.iter().find(|l| **l == x.tags).unwrap(),
                ..x.view()
            })
            .collect();
        let owned_views: Vec<SettlementView<'_>> = owned.iter().map(Settlement::view).collect();
        let expected = plain_replay(&owned_views);
        assert!(expected.len() == 3 && expected.iter().all(|t| t.citizens.len() == 3));
        for views in [&shared, &owned_views] {
            let got = reconcile_views(views, &Value::Null, &Value::Null);
            assert_eq!(got.tags, expected);
        }
    }

    #[test]
    fn round_matches_python() {
        // Values checked against CPython's round(x, 3).
        assert_eq!(round_half_even(0.0625, 3), 0.062);
        assert_eq!(round_half_even(0.1875, 3), 0.188);
        assert_eq!(round_half_even(0.5625, 3), 0.562);
        assert_eq!(round_half_even(0.9375, 3), 0.938);
        assert_eq!(round_half_even(0.6224593312018546, 3), 0.622);
        assert_eq!(round_half_even(2.675, 2), 2.67); // binary value is below the tie
        assert_eq!(round_half_even(0.5, 0), 0.0);
        assert_eq!(round_half_even(1.5, 0), 2.0);
        assert_eq!(round_half_even(0.9999, 3), 1.0);
    }

    #[test]
    fn replay_averages_in_time_order() {
        let st = vec![
            s(3, "bob-agent1", &["py"], 5, 10.0),
            s(1, "alice-agent", &["py"], 4, 20.0),
            s(2, "alice-agent", &["py", "docs"], 5, 40.0),
        ];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        let py = r.tag("py").unwrap();
        assert_eq!(py.citizens[0].citizen, "alice-agent");
        assert_eq!(py.citizens[0].avg_quality_score, 4.5);
        assert_eq!(py.citizens[0].avg_actual_minutes, 30.0);
        assert_eq!(py.leader.as_deref(), Some("bob-agent1"));
        assert_eq!(r.tags[1].tag, "docs");
        assert_eq!(r.last_updated, Value::Str("2026-03-03 10:00:00".into()));
        assert_eq!(r.explore_rate, Value::Float(0.15));
    }

    #[test]
    fn leader_ties_go_to_the_first_seen() {
        let st = vec![
            s(1, "zed-agent1", &["py"], 4, 10.0),
            s(2, "amy-agent1", &["py"], 4, 10.0),
        ];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        assert_eq!(r.tags[0].leader.as_deref(), Some("zed-agent1"));
        assert_eq!(r.tags[0].leader_confidence, Some(0.5));
    }

    #[test]
    fn no_settlements_keeps_previous_values() {
        let r = reconcile(&[], &Value::Float(0.3), &Value::Str("x".into()));
        assert_eq!(r.last_updated, Value::Str("x".into()));
        assert_eq!(r.explore_rate, Value::Float(0.3));
        assert!(r.tags.is_empty());
    }

    #[test]
    fn reconcile_over_keeps_the_old_rate() {
        let old =
            parse("last_updated: '2026-01-01 00:00:00'\nexplore_rate: 0.3\ntags: {}\n").unwrap();
        let r = reconcile_over(&[s(1, "alice-agent", &["py"], 4, 10.0)], Some(&old));
        assert_eq!(r.explore_rate, Value::Float(0.3));
        assert_eq!(r.last_updated, Value::Str("2026-03-01 10:00:00".into()));
        let r = reconcile_over(&[], Some(&old));
        assert_eq!(r.last_updated, old.last_updated);
    }

    #[test]
    fn parse_round_trips_values() {
        let st = vec![s(1, "alice-agent", &["py"], 4, 10.0)];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        assert_eq!(from_value(&to_value(&r)), r);
        assert_eq!(parse(&render(&r).unwrap()).unwrap(), r);
    }

    #[test]
    fn render_layout() {
        let st = vec![
            s(1, "alice-agent", &["py"], 4, 10.0),
            s(2, "bob-agent1", &["py"], 5, 20.0),
        ];
        let r = reconcile(&st, &Value::Null, &Value::Null);
        assert_eq!(
            render(&r).unwrap(),
            "last_updated: '2026-03-02 10:00:00'\nexplore_rate: 0.15\ntags:\n  py:\n    citizens:\n      alice-agent:\n        contracts_completed: 1\n        avg_quality_score: 4.0\n        avg_actual_minutes: 10.0\n        last_completed: '2026-03-01'\n      bob-agent1:\n        contracts_completed: 1\n        avg_quality_score: 5.0\n        avg_actual_minutes: 20.0\n        last_completed: '2026-03-02'\n    leader: bob-agent1\n    leader_confidence: 0.616\n"
        );
        assert_eq!(
            render(&reconcile(&[], &Value::Null, &Value::Null)).unwrap(),
            "last_updated: null\nexplore_rate: 0.15\ntags: {}\n"
        );
    }

    #[test]
    fn history_tracks_running_averages_and_leader_changes() {
        let s = |owner: &str, q: u8, day: u32| Settlement {
            path: format!("contracts/settled/{owner}{day}.md"),
            owner: owner.into(),
            tags: vec!["rust".into()],
            instant: chrono::NaiveDate::from_ymd_opt(2026, 1, day)
                .and_then(|d| d.and_hms_opt(0, 0, 0)),
            when_text: format!("2026-01-{day:02}"),
            quality: q,
            minutes: 30.0,
            ..Settlement::default()
        };
        // Given out of order: replay sorts by time.
        let h = history(&[s("bob", 5, 2), s("alice", 4, 1), s("alice", 2, 3)]);
        assert_eq!(h.len(), 1);
        let (tag, h) = &h[0];
        assert_eq!(tag, "rust");
        assert_eq!(h.series[0], ("alice".into(), vec![(1, 4.0), (3, 3.0)]));
        assert_eq!(h.series[1], ("bob".into(), vec![(2, 5.0)]));
        let changes: Vec<(usize, Option<&str>, &str)> = h
            .leader_changes
            .iter()
            .map(|c| (c.after, c.from.as_deref(), c.to.as_str()))
            .collect();
        assert_eq!(changes, [(1, None, "alice"), (2, Some("alice"), "bob")]);
    }
}
