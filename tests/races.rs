//! Racing transitions: eight callers at once, command-line processes and MCP servers mixed,
//! with the daemon running, fifty rounds per transition. Every transition is checked and
//! committed under one lock whoever calls, so each round has exactly one winner, the others
//! are refused in one line naming it, and the chronicle records the transition once.
//!
//! Rounds are kept cheap rather than few: the MCP servers and the daemon live for the whole
//! test, and each round's records are written by the test directly.

mod harness;

use harness::{McpStdio, TestPolis, BIN};
use serde_json::{json, Value};
use std::process::{Child, Command, Output, Stdio};

const FOUNDER: &str = "claude-founder-one";
const ROUNDS: usize = 50;
const RACERS: usize = 8;

fn racer(i: usize) -> String {
    format!("racer-agent-{i}")
}

/// An initialized `polisd mcp` session on a polis, numbering its own requests; killed when the
/// test ends.
struct Mcp {
    stdio: McpStdio,
    next_id: u64,
}

impl Mcp {
    fn start(p: &TestPolis) -> Mcp {
        let mut mcp = Mcp {
            stdio: McpStdio::start(&p.root, &p.state_dir),
            next_id: 1,
        };
        let id = mcp.send_request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "races", "version": "1"}}),
        );
        mcp.response(id);
        mcp.stdio
            .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        mcp
    }

    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.stdio.send_request(id, method, params);
        id
    }

    /// Starts a tool call; [`Mcp::response`] collects it.
    fn start_call(&mut self, tool: &str, args: Value) -> u64 {
        self.send_request("tools/call", json!({"name": tool, "arguments": args}))
    }

    #[track_caller]
    fn response(&mut self, id: u64) -> Value {
        self.stdio.response(json!(id))
    }
}

/// One caller's answer: whether it won, and what it said.
#[derive(Debug)]
struct Answer {
    who: String,
    won: bool,
    /// Exit code for a command, 0 or 1 for a tool call (1 = isError).
    code: i32,
    text: String,
}

/// A caller of one round: a command line, or a tool call on one of the MCP servers.
enum Caller {
    Cli(Vec<String>),
    /// A command line run with its own state directory (another user, a container).
    CliOwnState(Vec<String>, std::path::PathBuf),
    Mcp(&'static str, Value),
}

/// The polis, its daemon and four MCP servers, for one transition's rounds.
struct Arena {
    p: TestPolis,
    mcps: Vec<Mcp>,
    _daemon: harness::Daemon,
}

impl Arena {
    fn new() -> Arena {
        let p = TestPolis::init(FOUNDER);
        for i in 0..RACERS {
            p.citizen(&racer(i), "openai", &[("python", 3)], "medium");
        }
        let daemon = p.start_daemon();
        let mcps = (0..4).map(|_| Mcp::start(&p)).collect();
        Arena {
            p,
            mcps,
            _daemon: daemon,
        }
    }

    /// Runs the callers at once (every process started, every tool call sent, before any
    /// answer is read) and returns their answers in order. `won` decides from an answer's
    /// code and text whether that caller made the transition.
    fn race(
        &mut self,
        callers: Vec<(String, Caller)>,
        won: impl Fn(i32, &str) -> bool,
    ) -> Vec<Answer> {
        enum Pending {
            Child(Child),
            Call(usize, u64),
        }
        let mut next_mcp = 0;
        let mut pending = Vec::new();
        for (who, caller) in callers {
            let started = match caller {
                Caller::Cli(args) => Pending::Child(
                    Command::new(BIN)
                        .args(&args)
                        .env("POLISD_STATE_DIR", &self.p.state_dir)
                        .current_dir(&self.p.root)
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                ),
                Caller::CliOwnState(args, state) => Pending::Child(
                    Command::new(BIN)
                        .args(&args)
                        .env("POLISD_STATE_DIR", state)
                        .current_dir(&self.p.root)
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                ),
                Caller::Mcp(tool, args) => {
                    let m = next_mcp % self.mcps.len();
                    next_mcp += 1;
                    Pending::Call(m, self.mcps[m].start_call(tool, args))
                }
            };
            pending.push((who, started));
        }
        pending
            .into_iter()
            .map(|(who, started)| {
                let (code, text) = match started {
                    Pending::Child(child) => {
                        let out: Output = child.wait_with_output().unwrap();
                        let code = out.status.code().unwrap_or(-1);
                        let text = format!(
                            "{}{}",
                            String::from_utf8_lossy(&out.stdout),
                            String::from_utf8_lossy(&out.stderr)
                        );
                        (code, text)
                    }
                    Pending::Call(m, id) => {
                        let v = self.mcps[m].response(id);
                        let failed = v["result"]["isError"].as_bool().unwrap_or(false);
                        let text = v["result"]["content"][0]["text"]
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string());
                        (i32::from(failed), text)
                    }
                };
                Answer {
                    won: won(code, &text),
                    who,
                    code,
                    text,
                }
            })
            .collect()
    }

    fn chronicle_lines(&self, verb: &str, link_part: &str) -> usize {
        self.p
            .read("chronicle.md")
            .lines()
            .filter(|l| l.contains(&format!("| {verb} |")) && l.contains(link_part))
            .count()
    }
}

/// Exactly one winner; every loser refused (exit 1) in one line that names `winner_name`.
#[track_caller]
fn one_winner(answers: &[Answer], round: usize, winner_name: impl Fn(&Answer) -> String) {
    let winners: Vec<&Answer> = answers.iter().filter(|a| a.won).collect();
    assert_eq!(
        winners.len(),
        1,
        "round {round}: exactly one winner: {answers:#?}"
    );
    let name = winner_name(winners[0]);
    for a in answers.iter().filter(|a| !a.won) {
        assert_eq!(a.code, 1, "round {round}: a loser is refused: {a:#?}");
        assert_eq!(
            a.text.trim_end().lines().count(),
            1,
            "round {round}: one line: {a:#?}"
        );
        assert!(
            a.text.contains(&name),
            "round {round}: names the winner {name}: {a:#?}"
        );
        assert!(!a.text.contains("panicked"), "{a:#?}");
    }
}

fn contract(p: &TestPolis, id: &str, owner: Option<&str>) {
    let (owner, status) = match owner {
        Some(o) => (o.to_string(), "claimed"),
        None => ("null".to_string(), "proposed"),
    };
    p.save(
        &format!("contracts/open/{id}.md"),
        &format!(
            "---\ncontract_id: {id}\ntitle: Race {id}\nopened_by: {FOUNDER}\nopened_at: 2026-01-01 10:00:00\nowner: {owner}\nstatus: {status}\nstakes: low\nrequired_tags: [python]\nrouting:\n  recommended_by_router: {FOUNDER}\n  recommendation_score: 0.5\n  exploration: false\n  override: null\n---\n\n## Intent\n\nRace.\n"
        ),
    );
}

fn half_cli(
    n: usize,
    cli: impl Fn(usize) -> Vec<String>,
    mcp: impl Fn(usize) -> (&'static str, Value),
) -> Vec<(String, Caller)> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                (racer(i), Caller::Cli(cli(i)))
            } else {
                let (tool, args) = mcp(i);
                (racer(i), Caller::Mcp(tool, args))
            }
        })
        .collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn racing_claims_have_one_winner_and_one_chronicle_line() {
    let mut a = Arena::new();
    for round in 0..ROUNDS {
        let id = format!("claim-r{round}");
        contract(&a.p, &id, None);
        let callers = half_cli(
            RACERS,
            |i| strings(&["contract", "claim", &id, "--as", &racer(i)]),
            |i| {
                (
                    "polis_claim_contract",
                    json!({"contract_id": id, "citizen": racer(i)}),
                )
            },
        );
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |w| format!("already owned by {}", w.who));
        assert_eq!(
            a.chronicle_lines("claimed contract", &format!("/{id}]]")),
            1
        );
    }
}

#[test]
fn racing_settlements_have_one_winner_and_one_chronicle_line() {
    let mut a = Arena::new();
    let owner = racer(0);
    for round in 0..ROUNDS {
        let id = format!("settle-r{round}");
        contract(&a.p, &id, Some(&owner));
        let callers = half_cli(
            RACERS,
            |_| {
                strings(&[
                    "contract",
                    "settle",
                    &id,
                    "--quality",
                    "4",
                    "--minutes",
                    "5",
                    "--lesson",
                    "Racing settles leave one record.",
                    "--impact",
                    "3",
                ])
            },
            |_| {
                (
                    "polis_settle_contract",
                    json!({"contract_id": id, "quality": 4, "minutes": 5,
                           "lesson": "Racing settles leave one record.", "impact": 3}),
                )
            },
        );
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |_| {
            format!("already settled (owner {owner})")
        });
        assert_eq!(
            a.chronicle_lines("settled contract", &format!("/{id}]]")),
            1
        );
        assert!(a.p.exists(&format!("contracts/settled/{id}.md")));
        assert!(!a.p.exists(&format!("contracts/open/{id}.md")));
    }
}

/// Callers whose state directories differ share no `transition.lock` there: the lock on the
/// polis's own contracts folder still lets one settle win.
#[test]
fn racing_settlements_from_separate_state_directories_have_one_winner() {
    let mut a = Arena::new();
    let owner = racer(0);
    let states = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS / 5 {
        let id = format!("apart-r{round}");
        contract(&a.p, &id, Some(&owner));
        let callers = (0..4)
            .map(|i| {
                let args = strings(&[
                    "contract",
                    "settle",
                    &id,
                    "--quality",
                    "4",
                    "--no-lesson",
                    "racing",
                ]);
                (
                    racer(i),
                    Caller::CliOwnState(args, states.path().join(racer(i))),
                )
            })
            .collect();
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |_| {
            format!("already settled (owner {owner})")
        });
        assert_eq!(
            a.chronicle_lines("settled contract", &format!("/{id}]]")),
            1
        );
    }
}

#[test]
fn racing_abandons_have_one_winner_and_one_chronicle_line() {
    let mut a = Arena::new();
    let owner = racer(0);
    for round in 0..ROUNDS {
        let id = format!("abandon-r{round}");
        contract(&a.p, &id, Some(&owner));
        let callers = half_cli(
            RACERS,
            |_| strings(&["contract", "abandon", &id, "--reason", "racing"]),
            |_| {
                (
                    "polis_abandon_contract",
                    json!({"contract_id": id, "reason": "racing"}),
                )
            },
        );
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |_| {
            format!("already abandoned (owner {owner})")
        });
        assert_eq!(
            a.chronicle_lines("abandoned contract", &format!("/{id}]]")),
            1
        );
    }
}

fn amendment(p: &TestPolis, aid: &str, quorum: u32, agree: &[String]) {
    p.save(
        &format!("amendments/proposed/{aid}.md"),
        &format!(
            "---\namendment_id: {aid}\ntitle: Race {aid}\nproposed_by: {FOUNDER}\nproposed_at: 2026-01-01 10:00:00\nstatus: proposed\nquorum_required: {quorum}\nexpires_at: '2099-01-01'\nvotes:\n  agree: [{}]\n  disagree: []\n  abstain: []\n  request_changes: []\n---\n\n## Problem\n\nRace.\n",
            agree.join(", ")
        ),
    );
}

#[test]
fn racing_votes_of_one_citizen_are_recorded_once() {
    let mut a = Arena::new();
    let voter = racer(1);
    for round in 0..ROUNDS {
        // Nine citizens and a quorum of nine: the amendment stays proposed, neither ratified
        // nor rejected, whatever the daemon tallies meanwhile.
        let aid = format!("2026-01-01-vote-r{round}");
        amendment(&a.p, &aid, 9, &[]);
        let callers = half_cli(
            RACERS,
            |_| strings(&["amendment", "vote", &aid, "--as", &voter, "--vote", "agree"]),
            |_| {
                (
                    "polis_vote",
                    json!({"amendment_id": aid, "citizen": voter, "vote": "agree"}),
                )
            },
        );
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |_| format!("{voter} already voted agree"));
        assert_eq!(
            a.chronicle_lines("voted on amendment", &format!("/{aid}]]")),
            1
        );
    }
}

#[test]
fn racing_tallies_ratify_once_with_one_chronicle_line() {
    let mut a = Arena::new();
    for round in 0..ROUNDS {
        let aid = format!("2026-01-01-tally-r{round}");
        amendment(&a.p, &aid, 2, &[racer(0)]);
        let callers = half_cli(
            RACERS,
            |_| strings(&["tally", "--json"]),
            |_| ("polis_tally", json!({})),
        );
        let ratified_here = |code: i32, text: &str| {
            code == 0
                && serde_json::from_str::<Value>(text).is_ok_and(|v| {
                    v["results"].as_array().is_some_and(|rs| {
                        rs.iter()
                            .any(|r| r["amendment_id"] == aid.as_str() && r["action"] == "ratified")
                    })
                })
        };
        let answers = a.race(callers, ratified_here);
        // The daemon races too: one of the eight callers or the daemon ratifies.
        let winners = answers.iter().filter(|x| x.won).count();
        assert!(
            winners <= 1,
            "round {round}: at most one caller ratifies: {answers:#?}"
        );
        for x in &answers {
            assert_eq!(
                x.code, 0,
                "round {round}: a tally finding nothing to do is no failure: {x:#?}"
            );
        }
        harness::wait_for(&a.p, "the ratification", || {
            a.p.exists(&format!("amendments/ratified/{aid}.md"))
        });
        assert!(!a.p.exists(&format!("amendments/proposed/{aid}.md")));
        assert_eq!(
            a.chronicle_lines("ratified amendment", &format!("/{aid}]]")),
            1
        );
    }
}

#[test]
fn racing_reviews_have_one_winner_and_one_chronicle_line() {
    let mut a = Arena::new();
    for round in 0..ROUNDS {
        let id = format!("review-r{round}");
        // Owned by a citizen who does not race: an owner may not review its own contract.
        contract(&a.p, &id, Some(FOUNDER));
        // A review's file is named by its minute: the round starts well inside one, so the
        // callers compete for one slot (a condition of the set-up, not an assertion).
        harness::wait_until("a minute with room for a round", harness::DEADLINE, || {
            chrono::Utc::now()
                .format("%S")
                .to_string()
                .parse::<u32>()
                .unwrap()
                < 55
        });
        let callers = (0..RACERS)
            .map(|i| {
                let args = strings(&["review", &id, "--as", &racer(i), "--decision", "signed_off"]);
                (racer(i), Caller::Cli(args))
            })
            .collect();
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |w| format!("by {}", w.who));
        assert_eq!(a.chronicle_lines("signed off", &format!("-{id}]]")), 1);
    }
}

#[test]
fn racing_inbox_archives_move_each_notice_once() {
    let mut a = Arena::new();
    let me = racer(0);
    for round in 0..ROUNDS {
        let ids: Vec<String> = (0..2)
            .map(|k| format!("{:016x}", round * 2 + k + 1))
            .collect();
        for id in &ids {
            a.p.append(
                &format!("citizens/{me}/inbox.md"),
                &format!("\n### 2026-01-01 10:00 from polis-daemon\n\nRound {round}.\n\n<!-- polisd:contract-settled:{id} -->\n\n---\n"),
            );
        }
        let read = ids
            .iter()
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(", ");
        a.p.save(
            &format!("citizens/{me}/status.md"),
            &format!("---\nagent_id: {me}\nstate: idle\nnotices_read: [{read}]\n---\n"),
        );
        let callers = (0..RACERS)
            .map(|i| {
                let args = strings(&[
                    "inbox",
                    "archive",
                    "--as",
                    &me,
                    "--older-than",
                    "0",
                    "--json",
                ]);
                (racer(i), Caller::Cli(args))
            })
            .collect();
        let moved = |code: i32, text: &str| {
            code == 0
                && serde_json::from_str::<Value>(text).is_ok_and(|v| v["moved"].as_u64() > Some(0))
        };
        let answers = a.race(callers, moved);
        assert_eq!(
            answers.iter().filter(|x| x.won).count(),
            1,
            "round {round}: {answers:#?}"
        );
        for x in &answers {
            assert_eq!(
                x.code, 0,
                "round {round}: nothing left to move is no failure: {x:#?}"
            );
        }
        let archive = a.p.read(&format!("citizens/{me}/inbox-archive.md"));
        for id in &ids {
            assert_eq!(
                archive.matches(id.as_str()).count(),
                1,
                "round {round}: {archive}"
            );
            assert!(!a
                .p
                .read(&format!("citizens/{me}/inbox.md"))
                .contains(id.as_str()));
        }
    }
}

#[test]
fn racing_reservations_of_one_path_have_one_holder() {
    let mut a = Arena::new();
    let project = a.p.root.parent().unwrap().to_path_buf();
    for round in 0..ROUNDS {
        let path = format!("src/r{round}/");
        std::fs::create_dir_all(project.join(&path)).unwrap();
        // Absolute for the commands (they run in _polis/), relative to the project for MCP.
        let absolute = format!("{}/", project.join(&path).display());
        let callers = half_cli(
            RACERS,
            |i| strings(&["reserve", &absolute, "--as", &racer(i)]),
            |i| {
                (
                    "polis_reserve",
                    json!({"citizen": racer(i), "paths": [path]}),
                )
            },
        );
        let answers = a.race(callers, |code, _| code == 0);
        one_winner(&answers, round, |w| w.who.clone());
    }
}

/// Starts one `polisd init` per id at once in `project`, racer `i` with the state folder
/// `state(i)`, and waits for every one to exit 0.
fn race_inits(
    project: &std::path::Path,
    ids: &[String],
    state: impl Fn(usize) -> std::path::PathBuf,
) {
    let racers: Vec<Child> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            Command::new(BIN)
                .args(["init", ".", "--agent-id", id])
                .env("POLISD_STATE_DIR", state(i))
                .current_dir(project)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in racers {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The polis in `project` has one `founded polis` line and `joined` `joined polis` lines, and
/// `polisd check` (with the state folder `state`) finds nothing.
#[track_caller]
fn founded_once(project: &std::path::Path, joined: usize, state: &std::path::Path) {
    let chronicle = std::fs::read_to_string(project.join("_polis/chronicle.md")).unwrap();
    assert_eq!(
        chronicle.matches("| founded polis |").count(),
        1,
        "{chronicle}"
    );
    assert_eq!(
        chronicle.matches("| joined polis |").count(),
        joined,
        "{chronicle}"
    );
    let check = Command::new(BIN)
        .args(["check", "--json"])
        .env("POLISD_STATE_DIR", state)
        .current_dir(project)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

/// A temporary folder holding an empty `project/`.
fn empty_project() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    (tmp, project)
}

/// Agents started at once in a new project each run `polisd init`: they take turns, so one
/// founds the polis, every other one joins it with its own citizen and `joined polis` line,
/// the pointer files beside `_polis/` are edited one at a time, and every one exits 0.
#[test]
fn racing_inits_found_one_polis_and_the_others_join_it() {
    let (tmp, project) = empty_project();
    let state = tmp.path().join("state");
    let ids: Vec<String> = (0..6).map(racer).collect();
    race_inits(&project, &ids, |_| state.clone());
    founded_once(&project, 5, &state);
    for id in &ids {
        assert!(
            project
                .join(format!("_polis/citizens/{id}/capability_card.yml"))
                .is_file(),
            "{id} has no card"
        );
    }
}

/// Racing inits whose state folders differ still take turns (the turn is the project's, not
/// the machine's state folder): none is refused half-way after writing its citizen, one founds
/// the polis and the others join it.
#[test]
fn racing_inits_with_their_own_state_folders_found_one_polis() {
    let (tmp, project) = empty_project();
    let ids: Vec<String> = (0..6).map(racer).collect();
    race_inits(&project, &ids, |i| tmp.path().join(format!("state-{i}")));
    founded_once(&project, 5, &tmp.path().join("state-check"));
}

/// The same founding citizen's init started six times at once: every one exits 0 and the
/// polis has one founder and one `founded polis` line.
#[test]
fn racing_inits_of_one_founder_found_it_once() {
    let (tmp, project) = empty_project();
    let ids: Vec<String> = (0..6).map(|_| racer(0)).collect();
    race_inits(&project, &ids, |i| tmp.path().join(format!("state-{i}")));
    founded_once(&project, 0, &tmp.path().join("state-check"));
}
