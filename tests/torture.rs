//! The torture test: four simulated agents, each a separate process, act on
//! one polis the way agents do — `>>` chronicle appends (a tenth of them invalid), contracts
//! opened, claimed (double claims included) and settled by `mv` or by an editor-style save,
//! amendments proposed and voted on in both vote forms, cards edited — while `polisd run` is
//! SIGKILLed and restarted at random moments. After a quiet period the folder must be exactly
//! what the rules call for.
//!
//! How the agents run: the test re-executes its own binary (`--exact torture_agent_role`) with
//! `POLISD_TORTURE_AGENT=<n>`; that test returns at once when the variable is unset. Each agent
//! journals what it did in the temporary folder (outside `_polis/`): the chronicle lines it
//! appended, and every write, move and removal of a record file. Agents serialise their
//! read-modify-write of record files among themselves with a lock file (also outside
//! `_polis/`), so "what an agent last wrote" is well defined; nothing serialises them with
//! polisd, which is the point.
//!
//! "Required" notifications, from the final folder and the agents' journals (SPEC §9): one
//! `chronicle-finding` per invalid agent line (to its author); `contract-routed` for each open,
//! unowned contract with a recommendation; `review-needed` for each open high-stakes contract
//! with an owner and no reviewer; `contract-settled` (opener ≠ owner) and `quality-defaulted`
//! (no quality) for each settled contract; `amendment-proposed` to every active citizen but the
//! proposer for each amendment still proposed; `amendment-ratified` to every active citizen and
//! the index keeper, `amendment-rejected` to the proposer; `card-changed` to the citizen and the
//! index keeper for each card whose final `content_hash` does not match. Each must be in its
//! recipient's inbox exactly once, and no marker of any kind may appear twice (notices about
//! intermediate states — a card edited again, a contract claimed twice — may exist, once).
//!
//! Sizes: 4 × 1,300 actions by default (about a minute of agent activity), at least 10 kills.
//! `POLISD_TORTURE_LONG=1` runs a soak: 4 × 12,500 actions and a kill every few seconds
//! throughout. `POLISD_TORTURE_ACTIONS=<n>` sets the per-agent count; `POLISD_TORTURE_SEED` the
//! seed (printed, so a failure can be replayed as far as timing allows).

mod harness;
#[path = "common/reference.rs"]
mod reference;

use harness::{copy_tree, markers_in, wait_until, TestPolis, BIN};
use polisd::protocol::delivery::inbox::{Kind, Notification};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const AGENT_ENV: &str = "POLISD_TORTURE_AGENT";
const DIR_ENV: &str = "POLISD_TORTURE_DIR";
const ACTIONS_ENV: &str = "POLISD_TORTURE_ACTIONS";
const SEED_ENV: &str = "POLISD_TORTURE_SEED";
const LONG_ENV: &str = "POLISD_TORTURE_LONG";

const FOUNDER: &str = "founder-one";
const AGENTS: [&str; 4] = ["agent-alpha", "agent-bravo", "agent-charlie", "agent-delta"];
const TAGS: [&str; 3] = ["rust", "docs", "ops"];
const MIN_KILLS: usize = 10;
const BOGUS_HASH: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn now_minutes() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M").to_string()
}

fn now_seconds() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

// ---------------------------------------------------------------------------------------------
// The agent process

/// One entry of the shared journal: what an agent did to a record file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Journal {
    Write { path: String, text: String },
    Move { from: String, to: String },
    Remove { path: String },
}

/// A chronicle line an agent appended; `invalid` names the finding it must draw.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Appended {
    agent: String,
    text: String,
    invalid: Option<String>,
}

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
struct Counts {
    actions: usize,
    appends: usize,
    invalid: usize,
    opened: usize,
    claims: usize,
    double_claims: usize,
    settled_mv: usize,
    settled_save: usize,
    proposals: usize,
    votes_frontmatter: usize,
    votes_body: usize,
    card_edits: usize,
}

struct Agent {
    idx: usize,
    me: &'static str,
    root: PathBuf,
    rng: StdRng,
    lock: File,
    journal: File,
    lines: File,
    counts: Counts,
    seq: usize,
}

/// The agent role: does nothing unless the torture test started this process as an agent.
#[test]
fn torture_agent_role() {
    let Ok(idx) = std::env::var(AGENT_ENV) else {
        return;
    };
    let idx: usize = idx.parse().unwrap();
    let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
    let actions: usize = std::env::var(ACTIONS_ENV).unwrap().parse().unwrap();
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let open = |name: &str| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(name))
            .unwrap()
    };
    let mut agent = Agent {
        idx,
        me: AGENTS[idx],
        root: dir.join("project/_polis"),
        rng: StdRng::seed_from_u64(seed.wrapping_add(idx as u64 * 7919)),
        lock: open("agents.lock"),
        journal: open("journal.jsonl"),
        lines: open(&format!("lines-{idx}.jsonl")),
        counts: Counts::default(),
        seq: 0,
    };
    while agent.counts.actions < actions {
        agent.act();
        agent.counts.actions += 1;
        let pause = agent.rng.random_range(0..40);
        std::thread::sleep(Duration::from_millis(pause));
    }
    fs::write(
        dir.join(format!("counts-{idx}.json")),
        serde_json::to_string(&agent.counts).unwrap(),
    )
    .unwrap();
}

impl Agent {
    fn act(&mut self) {
        self.seq += 1;
        let roll = self.rng.random_range(0..100);
        let done = match roll {
            0..40 => false,
            40..50 => self.locked(Agent::open_contract),
            50..62 => self.locked(Agent::claim),
            62..74 => self.locked(Agent::settle),
            74..77 => self.locked(Agent::propose),
            77..90 => self.locked(Agent::vote),
            _ => self.locked(Agent::edit_card),
        };
        if !done {
            self.append_line();
        }
    }

    fn locked(&mut self, f: fn(&mut Agent) -> bool) -> bool {
        fs4::fs_std::FileExt::lock_exclusive(&self.lock).unwrap();
        let done = f(self);
        fs4::fs_std::FileExt::unlock(&self.lock).unwrap();
        done
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn record(&mut self, entry: Journal) {
        let mut line = serde_json::to_string(&entry).unwrap();
        line.push('\n');
        self.journal.write_all(line.as_bytes()).unwrap();
    }

    /// An editor-style save (temporary file renamed over the target), journalled.
    fn save(&mut self, rel: &str, text: &str) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let tmp = path.with_file_name(format!(
            ".{}.{}.swp",
            path.file_name().unwrap().to_string_lossy(),
            self.idx
        ));
        fs::write(&tmp, text).unwrap();
        fs::rename(&tmp, &path).unwrap();
        self.record(Journal::Write {
            path: rel.to_string(),
            text: text.to_string(),
        });
    }

    /// Like `save`, but gives up if the file changed since `read` (an agent re-reading before
    /// it saves; polisd may have edited it meanwhile).
    fn save_if_unchanged(&mut self, rel: &str, read: &str, text: &str) -> bool {
        if fs::read_to_string(self.path(rel)).ok().as_deref() != Some(read) {
            return false;
        }
        self.save(rel, text);
        true
    }

    fn append_line(&mut self) {
        let tag = format!("n{}-{}", self.idx, self.seq);
        let invalid = self.rng.random_range(0..10) == 0;
        let (text, code) = if !invalid {
            let verbs = [
                "noted progress",
                "reviewed notes",
                "did some work",
                "checked the build",
            ];
            let verb = verbs[self.rng.random_range(0..verbs.len())];
            (
                format!("- {} | {} | {verb} | - | {tag}", now_minutes(), self.me),
                None,
            )
        } else if self.rng.random_bool(0.5) {
            (
                format!("- {} | {} | broken line {tag}", now_minutes(), self.me),
                Some("C001"),
            )
        } else {
            (
                format!(
                    "- 2026-02-30 10:00 | {} | noted progress | - | {tag}",
                    self.me
                ),
                Some("C003"),
            )
        };
        let mut f = OpenOptions::new()
            .append(true)
            .open(self.path("chronicle.md"))
            .unwrap();
        f.write_all(format!("{text}\n").as_bytes()).unwrap();
        let mut rec = serde_json::to_string(&Appended {
            agent: self.me.to_string(),
            text,
            invalid: code.map(str::to_string),
        })
        .unwrap();
        rec.push('\n');
        self.lines.write_all(rec.as_bytes()).unwrap();
        self.counts.appends += 1;
        self.counts.invalid += usize::from(code.is_some());
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let mut out: Vec<String> = fs::read_dir(self.path(dir))
            .map(|r| {
                r.flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
                    .map(|n| format!("{dir}/{n}"))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    fn open_contract(&mut self) -> bool {
        self.counts.opened += 1;
        let id = format!("t{}-{:04}", self.idx, self.counts.opened);
        let n = self.rng.random_range(1..=2);
        // No duplicated tags: the reference counts a duplicate twice (SPEC §6 defect list).
        let first = self.rng.random_range(0..TAGS.len());
        let tags: Vec<&str> = (0..n).map(|k| TAGS[(first + k) % TAGS.len()]).collect();
        let stakes = if self.rng.random_range(0..10) == 0 {
            "high"
        } else {
            "low"
        };
        let text = format!(
            "---\ncontract_id: {id}\ntitle: Contract {id}\nopened_by: {me}\nopened_at: {now}\nowner: null\n\
             status: proposed\nstakes: {stakes}\nrequired_tags: [{tags}]\ncost_ceiling: medium\nrouting:\n  \
             recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\n\
             review:\n  required: false\n  reviewer: null\n---\n\n## Intent\n\nPlease do {id}.\n\n## Assignment\n\n\
             ## Settlement\n",
            me = self.me,
            now = now_seconds(),
            tags = tags.join(", "),
        );
        self.save(&format!("contracts/open/{id}.md"), &text);
        true
    }

    fn claim(&mut self) -> bool {
        let open = self.list("contracts/open");
        if open.is_empty() {
            return false;
        }
        let rel = open[self.rng.random_range(0..open.len())].clone();
        let Ok(text) = fs::read_to_string(self.path(&rel)) else {
            return false;
        };
        let owner = field(&text, "owner");
        if owner.as_deref() == Some(self.me) {
            return false;
        }
        let new = set_field(
            &set_field(&text, "owner", self.me),
            "status",
            if self.rng.random_bool(0.5) {
                "claimed"
            } else {
                "in_progress"
            },
        );
        if !self.save_if_unchanged(&rel, &text, &new) {
            return false;
        }
        self.counts.claims += 1;
        if owner.is_some_and(|o| o != "null") {
            self.counts.double_claims += 1;
        }
        true
    }

    fn settle(&mut self) -> bool {
        let mine: Vec<String> = self
            .list("contracts/open")
            .into_iter()
            .filter(|rel| {
                fs::read_to_string(self.path(rel))
                    .is_ok_and(|t| field(&t, "owner").as_deref() == Some(self.me))
            })
            .collect();
        if mine.is_empty() {
            return false;
        }
        let rel = mine[self.rng.random_range(0..mine.len())].clone();
        let Ok(text) = fs::read_to_string(self.path(&rel)) else {
            return false;
        };
        let Some(end) = text[4..].find("\n---\n").map(|i| i + 4) else {
            return false;
        };
        let quality = if self.rng.random_range(0..100) < 15 {
            String::new()
        } else {
            format!("quality_score: {}\n", self.rng.random_range(1..=5))
        };
        let new = format!(
            "{}\nsettled_at: {}\n{quality}actual_minutes: {}\n---\n{}\nDone by {}.\n",
            set_field(&text[..end], "status", "settled"),
            now_seconds(),
            self.rng.random_range(5..120),
            &text[end + 5..],
            self.me
        );
        let settled = rel.replace("contracts/open/", "contracts/settled/");
        if self.rng.random_bool(0.5) {
            if !self.save_if_unchanged(&rel, &text, &new) {
                return false;
            }
            fs::rename(self.path(&rel), self.path(&settled)).unwrap();
            self.record(Journal::Move {
                from: rel,
                to: settled,
            });
            self.counts.settled_mv += 1;
        } else {
            self.save(&settled, &new);
            fs::remove_file(self.path(&rel)).unwrap();
            self.record(Journal::Remove { path: rel });
            self.counts.settled_save += 1;
        }
        true
    }

    fn propose(&mut self) -> bool {
        if self.counts.proposals >= 12 {
            return false;
        }
        self.counts.proposals += 1;
        let today = chrono::Utc::now().format("%Y-%m-%d");
        let id = format!("{today}-a{}-rule-{}", self.idx, self.counts.proposals);
        let text = format!(
            "---\namendment_id: {id}\ntitle: Rule {id}\nproposed_by: {me}\nproposed_at: {now}\n\
             status: proposed\nquorum_required: null\nvotes:\n  agree: []\n  disagree: []\n  abstain: []\n  \
             request_changes: []\nratified_at: null\nexpires_at: null\n---\n\n## Proposal\n\nA rule.\n",
            me = self.me,
            now = now_seconds(),
        );
        self.save(&format!("amendments/proposed/{id}.md"), &text);
        true
    }

    fn vote(&mut self) -> bool {
        let open: Vec<(String, String)> = self
            .list("amendments/proposed")
            .into_iter()
            .filter_map(|rel| Some((rel.clone(), fs::read_to_string(self.path(&rel)).ok()?)))
            .filter(|(_, t)| {
                field(t, "status").as_deref() == Some("proposed") && !t.contains(self.me)
            })
            .collect();
        if open.is_empty() {
            return false;
        }
        let (rel, text) = open[self.rng.random_range(0..open.len())].clone();
        let vote = if self.rng.random_range(0..4) == 0 {
            "disagree"
        } else {
            "agree"
        };
        let new = match self.rng.random_range(0..3) {
            0 => {
                // Frontmatter form: add the id to the flow list.
                let key = format!("  {vote}: [");
                let Some(start) = text.find(&key) else {
                    return false;
                };
                let close = start + text[start..].find(']').unwrap();
                let inner = &text[start + key.len()..close];
                let list = if inner.trim().is_empty() {
                    self.me.to_string()
                } else {
                    format!("{inner}, {}", self.me)
                };
                self.counts.votes_frontmatter += 1;
                format!("{}{list}{}", &text[..start + key.len()], &text[close..])
            }
            1 => {
                self.counts.votes_body += 1;
                format!(
                    "{text}\n### {} from {}: {vote}\n\nReasons.\n",
                    now_minutes(),
                    self.me
                )
            }
            _ => {
                self.counts.votes_body += 1;
                format!(
                    "{text}\n## Response from {} ({vote})\n\nReasons.\n",
                    self.me
                )
            }
        };
        self.save_if_unchanged(&rel, &text, &new)
    }

    fn edit_card(&mut self) -> bool {
        self.counts.card_edits += 1;
        let mut card = format!(
            "agent_id: {me}\nvendor: test\nmodel: m{n}\nregistered: 2026-01-01 00:00:00\ncapability_tags:\n",
            me = self.me,
            n = self.counts.card_edits
        );
        for tag in TAGS {
            card.push_str(&format!(
                "  {tag}:\n    self_rating: {}\n    evidence: edit {}\n",
                self.rng.random_range(1..=5),
                self.counts.card_edits
            ));
        }
        card.push_str("cost_envelope:\n  relative: medium\n");
        if self.rng.random_range(0..10) < 3 {
            card.push_str(&format!("content_hash: \"{BOGUS_HASH}\"\n"));
        }
        self.save(&format!("citizens/{}/capability_card.yml", self.me), &card);
        true
    }
}

/// The value of a top-level frontmatter line `key: value`.
fn field(text: &str, key: &str) -> Option<String> {
    let prefix = format!("{key}:");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().to_string())
}

fn set_field(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key}:");
    text.split_inclusive('\n')
        .map(|l| {
            if l.starts_with(&prefix) {
                let nl = if l.ends_with('\n') { "\n" } else { "" };
                format!("{key}: {value}{nl}")
            } else {
                l.to_string()
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The test

struct Run {
    long: bool,
    per_agent: usize,
    seed: u64,
}

impl Run {
    fn from_env() -> Run {
        let long = std::env::var(LONG_ENV).is_ok_and(|v| v == "1");
        let per_agent = std::env::var(ACTIONS_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if long { 12_500 } else { 1_300 });
        let seed = std::env::var(SEED_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| rand::rng().random());
        Run {
            long,
            per_agent,
            seed,
        }
    }
}

/// The daemon, as a handle that kills it when dropped (a failing assertion included).
fn spawn_daemon(p: &TestPolis) -> harness::Daemon {
    let log_path = p.dir.path().join("daemon.log");
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .unwrap();
    let child = Command::new(BIN)
        .arg("run")
        .arg(&p.root)
        .arg("--config")
        .arg(p.dir.path().join("polisd.toml"))
        .env("POLISD_STATE_DIR", &p.state_dir)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    harness::Daemon {
        child,
        log: log_path,
    }
}

fn kill9(daemon: &mut harness::Daemon) {
    let _ = daemon.child.kill();
    let _ = daemon.child.wait();
}

#[test]
fn torture_agents_and_kill9() {
    if std::env::var(AGENT_ENV).is_ok() {
        return;
    }
    // Fail now, not after a minute of agents, when the comparison at the end cannot run.
    reference::reference_python();
    let run = Run::from_env();
    println!(
        "torture: seed {} ({SEED_ENV}), {} agents x {} actions{}",
        run.seed,
        AGENTS.len(),
        run.per_agent,
        if run.long { ", long mode" } else { "" }
    );
    let p = TestPolis::init(FOUNDER);
    let dir = p.dir.path().to_path_buf();
    for (i, a) in AGENTS.iter().enumerate() {
        p.citizen(
            a,
            "test",
            &[(TAGS[i % 3], 4), (TAGS[(i + 1) % 3], 2)],
            "medium",
        );
        p.append(
            "chronicle.md",
            &harness::chronicle_line(a, "joined polis", "-", "hello"),
        );
    }
    fs::write(
        dir.join("polisd.toml"),
        "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"info\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n",
    )
    .unwrap();

    // The first start takes the baseline before any agent acts: every agent line is "new".
    let mut daemon = spawn_daemon(&p);
    wait_until("the first initial scan", Duration::from_secs(30), || {
        fs::read_to_string(dir.join("daemon.log"))
            .unwrap_or_default()
            .contains("initial scan done")
    });

    let exe = std::env::current_exe().unwrap();
    let mut agents: Vec<harness::Killed> = (0..AGENTS.len())
        .map(|i| {
            let child = Command::new(&exe)
                .args([
                    "--exact",
                    "torture_agent_role",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(AGENT_ENV, i.to_string())
                .env(DIR_ENV, &dir)
                .env(ACTIONS_ENV, run.per_agent.to_string())
                .env(SEED_ENV, run.seed.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            harness::Killed::new(child)
        })
        .collect();

    // Kill at random moments (the pause only picks the moment; nothing is asserted on time).
    let mut rng = StdRng::seed_from_u64(run.seed);
    let mut kills = 0usize;
    let started = Instant::now();
    loop {
        let running = agents
            .iter_mut()
            .map(|a| matches!(a.child().try_wait(), Ok(None)))
            .filter(|r| *r)
            .count();
        if running == 0 && kills >= MIN_KILLS {
            break;
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(300..4000)));
        kill9(&mut daemon);
        kills += 1;
        if rng.random_bool(0.2) {
            // Sometimes stay down a while: changes pile up for the next start.
            std::thread::sleep(Duration::from_millis(rng.random_range(100..1500)));
        }
        daemon = spawn_daemon(&p);
        assert!(
            started.elapsed() < Duration::from_secs(if run.long { 3600 } else { 300 }),
            "the agents did not finish in time"
        );
    }
    for (i, a) in agents.into_iter().enumerate() {
        let out = a.into_inner().wait_with_output().unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "agent {i} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let agent_time = started.elapsed();

    // Quiet period: wait until the folder is what the rules call for.
    let expect = Expectations::load(&dir);
    // The checks copy the whole polis and run two one-shot commands on it, so a soak's big
    // polis takes longer to check, not only to converge.
    let deadline = Duration::from_secs(if run.long { 900 } else { 120 });
    let start = Instant::now();
    let mut problems = check(&p, &expect);
    while !problems.is_empty() && start.elapsed() < deadline {
        assert!(
            daemon.is_running(),
            "the daemon exited:\n{}",
            tail(&dir.join("daemon.log"), 60)
        );
        std::thread::sleep(Duration::from_millis(500));
        problems = check(&p, &expect);
    }
    if !problems.is_empty() {
        panic!(
            "after {deadline:?} of quiet, {} problems (seed {}):\n{}\n--- daemon log (end) ---\n{}",
            problems.len(),
            run.seed,
            problems
                .iter()
                .take(40)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
            tail(&dir.join("daemon.log"), 60)
        );
    }
    // The reference agrees with the daemon's routing_stats.yml too (except last_updated).
    let reference = reference_reconcile(&p.root);
    assert_eq!(
        without_last_updated(&p.read("contracts/routing_stats.yml")),
        without_last_updated(&reference),
        "routing_stats.yml differs from the reference's reconcile"
    );
    kill9(&mut daemon);

    let total = expect.counts.iter().fold(Counts::default(), |a, c| Counts {
        actions: a.actions + c.actions,
        appends: a.appends + c.appends,
        invalid: a.invalid + c.invalid,
        opened: a.opened + c.opened,
        claims: a.claims + c.claims,
        double_claims: a.double_claims + c.double_claims,
        settled_mv: a.settled_mv + c.settled_mv,
        settled_save: a.settled_save + c.settled_save,
        proposals: a.proposals + c.proposals,
        votes_frontmatter: a.votes_frontmatter + c.votes_frontmatter,
        votes_body: a.votes_body + c.votes_body,
        card_edits: a.card_edits + c.card_edits,
    });
    let required = required_notices(&p, &expect).len();
    let markers = p.all_markers().len();
    println!(
        "torture: {} actions ({total:?}) in {agent_time:?}; {kills} SIGKILLs survived; \
         {required} required notifications checked exactly once, {markers} markers without \
         duplicates; converged {:?} after the agents stopped",
        total.actions,
        start.elapsed()
    );
    assert!(total.actions >= 4 * run.per_agent);
    assert!(kills >= MIN_KILLS);
}

fn tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

// ---------------------------------------------------------------------------------------------
// What the folder must be

struct Expectations {
    appended: Vec<Appended>,
    /// Each record file's last state as agents left it (`None`: removed or moved away).
    files: BTreeMap<String, Option<String>>,
    counts: Vec<Counts>,
}

impl Expectations {
    fn load(dir: &Path) -> Expectations {
        let mut appended = Vec::new();
        let mut counts = Vec::new();
        for i in 0..AGENTS.len() {
            for line in fs::read_to_string(dir.join(format!("lines-{i}.jsonl")))
                .unwrap_or_default()
                .lines()
            {
                appended.push(serde_json::from_str(line).unwrap());
            }
            counts.push(
                serde_json::from_str(
                    &fs::read_to_string(dir.join(format!("counts-{i}.json"))).unwrap(),
                )
                .unwrap(),
            );
        }
        let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
        for line in fs::read_to_string(dir.join("journal.jsonl"))
            .unwrap_or_default()
            .lines()
        {
            match serde_json::from_str::<Journal>(line).unwrap() {
                Journal::Write { path, text } => {
                    files.insert(path, Some(text));
                }
                Journal::Move { from, to } => {
                    let text = files.insert(from, None).flatten();
                    files.insert(to, text);
                }
                Journal::Remove { path } => {
                    files.insert(path, None);
                }
            }
        }
        Expectations {
            appended,
            files,
            counts,
        }
    }
}

/// What polisd may change in an agent's file (SPEC §1 table): the routing block's values of an
/// open contract, an amendment's `status`/`ratified_at`.
fn normalise(rel: &str, text: &str) -> String {
    let editable: &[&str] = if rel.starts_with("contracts/open/") {
        &[
            "  recommended_by_router:",
            "  recommendation_score:",
            "  exploration:",
        ]
    } else if rel.starts_with("amendments/") {
        &["status:", "ratified_at:"]
    } else {
        &[]
    };
    text.split_inclusive('\n')
        .map(|l| match editable.iter().find(|k| l.starts_with(**k)) {
            Some(k) => format!("{k} *\n"),
            None => l.to_string(),
        })
        .collect()
}

fn active_citizens() -> Vec<String> {
    std::iter::once(FOUNDER)
        .chain(AGENTS)
        .map(str::to_string)
        .collect()
}

/// Every notification the final state and the agents' journals call for: (recipient, kind, id).
fn required_notices(p: &TestPolis, expect: &Expectations) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    let mut add = |n: Notification| {
        out.insert((n.recipient.clone(), n.kind.as_str().to_string(), n.id()));
    };
    let raw = |kind: Kind, subject: &str, recipient: &str| Notification {
        kind,
        recipient: recipient.to_string(),
        subject: subject.to_string(),
        discriminator: String::new(),
        link: String::new(),
        paragraph: String::new(),
        at: None,
    };
    // Each invalid agent line: one notice to its (registered) author.
    for a in &expect.appended {
        if let Some(code) = &a.invalid {
            let subject = format!(
                "chronicle.md:{}",
                polisd::protocol::chronicle::line_key(&a.text)
            );
            add(Notification {
                kind: Kind::ChronicleFinding,
                recipient: a.agent.clone(),
                subject,
                discriminator: code.clone(),
                link: String::new(),
                paragraph: String::new(),
                at: None,
            });
        }
    }
    let contracts = |dir: &str| contracts_in(p, dir);
    for (id, text) in contracts("contracts/open") {
        let c = polisd::protocol::contracts::contract::Contract::parse(&text).unwrap_or_default();
        if c.owner.is_none() {
            if let Some(r) = &c.routing.recommended_by_router {
                add(Notification::contract_routed(r, &id, "", 0.0, false));
            }
        }
        if c.stakes.as_deref() == Some("high") && c.review.reviewer.is_none() {
            if let Some(owner) = &c.owner {
                add(Notification::review_needed(owner, &id, "", None));
            }
        }
    }
    for (id, text) in contracts("contracts/settled") {
        let c = polisd::protocol::contracts::contract::Contract::parse(&text).unwrap_or_default();
        let (Some(owner), Some(opener)) = (&c.owner, &c.opened_by) else {
            continue;
        };
        if opener != owner {
            add(Notification::contract_settled(opener, &id, "", owner, None));
        }
        if c.quality_score.as_i64().is_none() {
            add(Notification::quality_defaulted(owner, &id));
        }
    }
    for (folder, status_dir) in [
        ("proposed", "amendments/proposed"),
        ("ratified", "amendments/ratified"),
    ] {
        for (id, text) in contracts(status_dir) {
            let a = polisd::protocol::amendments::amendment::parse(&text, &id).unwrap();
            let status = a.status.clone().unwrap_or_default();
            let proposer = a.proposed_by.clone().unwrap_or_default();
            match (folder, status.as_str()) {
                ("proposed", "proposed") => {
                    for r in active_citizens().iter().filter(|r| **r != proposer) {
                        add(Notification::amendment_proposed(r, &a));
                    }
                }
                // The reflector's own proposals: a system citizen has no inbox to tell.
                ("proposed", "rejected")
                    if !polisd::protocol::layout::is_system_citizen(&proposer) =>
                {
                    add(raw(Kind::AmendmentRejected, &id, &proposer))
                }
                ("ratified", "ratified") => {
                    for r in active_citizens() {
                        add(raw(Kind::AmendmentRatified, &id, &r));
                    }
                }
                // Not settled yet (e.g. ratified but not moved): `check` reports it as a
                // problem, so the quiet period waits for it instead of failing at once.
                _ => {}
            }
        }
    }
    for a in AGENTS {
        let text = p.read(&format!("citizens/{a}/capability_card.yml"));
        let card = polisd::protocol::citizens::card::parse(&text).unwrap();
        let v = card.verify();
        if v.state == polisd::protocol::citizens::card::VerifyState::Mismatch {
            let actual = v.computed.unwrap_or_default();
            add(Notification::card_changed(a, a, &actual));
            add(Notification::card_changed(FOUNDER, a, &actual));
        }
    }
    out
}

/// Everything that must hold once the daemon has caught up; each problem as a line.
/// The `(stem, text)` of every `*.md` record in `dir`, sorted.
fn contracts_in(p: &TestPolis, dir: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = fs::read_dir(p.path(dir))
        .map(|r| {
            r.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.to_string();
                    let id = name.strip_suffix(".md")?.to_string();
                    (!name.starts_with('.'))
                        .then(|| Some((id, fs::read_to_string(e.path()).ok()?)))?
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn check(p: &TestPolis, expect: &Expectations) -> Vec<String> {
    let mut problems = Vec::new();
    for (folder, dir) in [
        ("proposed", "amendments/proposed"),
        ("ratified", "amendments/ratified"),
    ] {
        for (id, text) in contracts_in(p, dir) {
            let status = polisd::protocol::amendments::amendment::parse(&text, &id)
                .ok()
                .and_then(|a| a.status)
                .unwrap_or_default();
            let settled = matches!(
                (folder, status.as_str()),
                ("proposed", "proposed" | "rejected") | ("ratified", "ratified")
            );
            if !settled {
                problems.push(format!("amendment {id} left as ({folder}, {status})"));
            }
        }
    }

    // routing_stats.yml equals a from-scratch reconcile.
    let stats = p.read("contracts/routing_stats.yml");
    if stats != p.expected_stats() {
        problems.push("routing_stats.yml differs from a from-scratch `polisd reconcile`".into());
    }

    // Every amendment's state equals a from-scratch tally.
    problems.extend(tally_problems(p));

    // Notifications: every required one exactly once, and no marker twice.
    let mut seen: HashMap<(String, String, String), usize> = HashMap::new();
    for a in std::iter::once(FOUNDER).chain(AGENTS) {
        for m in markers_in(a, &p.read(&format!("citizens/{a}/inbox.md"))) {
            *seen.entry((m.recipient, m.kind, m.id)).or_default() += 1;
        }
    }
    for (m, n) in &seen {
        if *n > 1 {
            problems.push(format!("notification sent {n} times: {m:?}"));
        }
    }
    for r in required_notices(p, expect) {
        if !seen.contains_key(&r) {
            problems.push(format!("required notification missing: {r:?}"));
        }
    }

    // Every appended line is still in the chronicle.
    let chronicle = p.read("chronicle.md");
    let mut have: HashMap<&str, usize> = HashMap::new();
    for l in chronicle.lines() {
        *have.entry(l).or_default() += 1;
    }
    for a in &expect.appended {
        match have.get_mut(a.text.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => problems.push(format!("agent line lost from the chronicle: {:?}", a.text)),
        }
    }

    // No temporary file left.
    let mut stack = vec![p.root.clone()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else if name.starts_with(".polisd-") && name.ends_with(".tmp") {
                problems.push(format!("temporary file left: {}", e.path().display()));
            }
        }
    }

    // Agents' files are what they last wrote, apart from the fields polisd may edit.
    for (rel, want) in &expect.files {
        let mut actual_rel = rel.clone();
        let mut actual = fs::read_to_string(p.path(rel)).ok();
        if actual.is_none() && rel.starts_with("amendments/proposed/") && want.is_some() {
            actual_rel = rel.replace("/proposed/", "/ratified/");
            actual = fs::read_to_string(p.path(&actual_rel)).ok();
        }
        match (want, actual) {
            (None, None) => {}
            (None, Some(_)) => problems.push(format!("{rel} should be gone but exists")),
            (Some(_), None) => problems.push(format!("{rel} is missing")),
            (Some(w), Some(a)) => {
                if normalise(&actual_rel, w) != normalise(&actual_rel, &a) {
                    problems.push(format!(
                        "{actual_rel} is not what its agent last wrote:\n--- agent\n{w}\n--- now\n{a}"
                    ));
                }
            }
        }
    }
    problems
}

/// Runs a from-scratch `polisd tally` on a copy where every decided amendment is back in
/// `proposed/` with `status: proposed`: each must come out as it is in the live folder.
fn tally_problems(p: &TestPolis) -> Vec<String> {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("project/_polis");
    copy_tree(&p.root, &copy);
    let mut live: BTreeMap<String, String> = BTreeMap::new();
    for folder in ["proposed", "ratified"] {
        let dir = copy.join("amendments").join(folder);
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(id) = name.strip_suffix(".md") else {
                continue;
            };
            let text = fs::read_to_string(e.path()).unwrap();
            live.insert(id.to_string(), field(&text, "status").unwrap_or_default());
            let reset = set_field(
                &set_field(&text, "status", "proposed"),
                "ratified_at",
                "null",
            );
            fs::remove_file(e.path()).unwrap();
            fs::create_dir_all(copy.join("amendments/proposed")).unwrap();
            fs::write(copy.join("amendments/proposed").join(&name), reset).unwrap();
        }
    }
    let out = Command::new(BIN)
        .args(["tally", "--dry-run", "--json"])
        .arg(&copy)
        .env("POLISD_STATE_DIR", scratch.path().join("state"))
        .output()
        .unwrap();
    let json: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(j) => j,
        Err(e) => {
            return vec![format!(
                "polisd tally --json failed ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )]
        }
    };
    let results = json
        .as_array()
        .cloned()
        .or_else(|| json.get("results").and_then(|r| r.as_array().cloned()))
        .unwrap_or_default();
    let mut problems = Vec::new();
    for r in results {
        let id = r["amendment_id"].as_str().unwrap_or_default().to_string();
        let action = r["action"].as_str().unwrap_or_default();
        let want = if action == "pending" {
            "proposed"
        } else {
            action
        };
        match live.get(&id) {
            Some(status) if status == want => {}
            other => problems.push(format!(
                "amendment {id}: a from-scratch tally says {action}, the folder says {other:?}"
            )),
        }
    }
    problems
}

fn without_last_updated(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("last_updated:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The reference's `reconcile_stats` on a copy of the polis.
fn reference_reconcile(root: &Path) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("_polis");
    copy_tree(root, &copy);
    let script = "import contextlib, io, sys\nfrom pathlib import Path\nfrom polis.routing import reconcile_stats\n\
                  root = Path(sys.stdin.read().strip())\n\
                  with contextlib.redirect_stdout(io.StringIO()):\n    reconcile_stats(root)\n\
                  print((root / 'contracts' / 'routing_stats.yml').read_text(encoding='utf-8'), end='')\n";
    reference::run_python(script, &copy.to_string_lossy())
}
