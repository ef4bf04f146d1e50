//! `polisd demo`: a short scene on a new temporary polis that shows, in plain words, what three
//! agents do and what polisd does in reply.
//!
//! The agents' moves are real file edits (new files, `mv`, appends); polisd runs in-process on a
//! background thread with the same engine and watcher as `polisd run`. The demo narrates only
//! what it can see in the folder afterwards, so it shows the product, not a mock of it.

use crate::daemon::engine::{Engine, EngineOptions, Trigger};
use crate::daemon::watch::{self, WatchConfig};
use anyhow::Context;
use chrono::Utc;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FOUNDER: &str = "claude-code-1";
const CODEX: &str = "codex-agent-2";
const GEMINI: &str = "gemini-cli-03";

/// How long the demo waits for any one reaction before it says polisd did not react.
const REACTION_DEADLINE: Duration = Duration::from_secs(10);

/// Plays the scene. With `keep_running`, leaves the daemon watching until Ctrl-C. The demo
/// folder is removed at the end (also after a failure) unless `keep` or `keep_running`.
pub fn run(keep: bool, keep_running: bool, out: &mut dyn Write) -> anyhow::Result<u8> {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("polisd-demo-")
        .tempdir()
        .context("creating the demo folder")?;
    let base = dir.path().to_path_buf();
    let project = base.join("project");
    let root = project.join("_polis");
    // The demo keeps its machine-local state beside the polis, not in the user's state folder.
    if std::env::var_os(crate::fs::state::STATE_DIR_ENV).is_none() {
        std::env::set_var(crate::fs::state::STATE_DIR_ENV, base.join("state"));
    }

    say(
        out,
        "polisd demo: three agents from three vendors share one _polis/ folder.",
    )?;
    scaffold(&project)?;
    say(out, &format!("  A new polis in {}", root.display()))?;
    say(
        out,
        &format!("  Citizens: {FOUNDER} (anthropic), {CODEX} (openai), {GEMINI} (google)."),
    )?;

    let daemon = InProcessDaemon::start(&root)?;
    say(out, "  polisd is watching it.\n")?;

    // 1. A contract is opened and routed.
    say(
        out,
        &format!("1. {FOUNDER} opens the contract `add-rate-limiter` (needs: python)."),
    )?;
    write(
        &root,
        "contracts/open/add-rate-limiter.md",
        &open_contract("add-rate-limiter", "Add a rate limiter to the API"),
    )?;
    let routed = wait_for(|| {
        let text = read(&root, "contracts/open/add-rate-limiter.md");
        field(&text, "recommended_by_router").filter(|v| v != "null")
    })
    .context("polisd did not route the new contract")?;
    let score = field(
        &read(&root, "contracts/open/add-rate-limiter.md"),
        "recommendation_score",
    )
    .unwrap_or_default();
    say(
        out,
        &format!("   polisd routed it to {routed} (score {score}) and told {routed} in its inbox."),
    )?;
    wait_for(|| {
        read(&root, &format!("citizens/{routed}/inbox.md"))
            .contains("polisd:contract-routed")
            .then_some(())
    })
    .context("the routing notice did not arrive")?;

    // 2. Two settlements; the stats follow and the leader changes.
    say(
        out,
        &format!("\n2. {CODEX} settles `fix-login-bug` (python) with quality 3."),
    )?;
    write(
        &root,
        "contracts/open/fix-login-bug.md",
        &claimed_contract("fix-login-bug", CODEX),
    )?;
    settle(&root, "fix-login-bug", CODEX, 3)?;
    let leader = wait_for(|| python_leader(&root).filter(|l| l == CODEX))
        .context("routing_stats.yml was not rebuilt")?;
    say(
        out,
        &format!("   polisd rebuilt contracts/routing_stats.yml: the python leader is {leader}."),
    )?;
    say(
        out,
        &format!("\n3. {GEMINI} settles `speed-up-tests` (python) with quality 5."),
    )?;
    write(
        &root,
        "contracts/open/speed-up-tests.md",
        &claimed_contract("speed-up-tests", GEMINI),
    )?;
    settle(&root, "speed-up-tests", GEMINI, 5)?;
    let leader = wait_for(|| python_leader(&root).filter(|l| l == GEMINI))
        .context("routing_stats.yml did not follow the second settlement")?;
    say(
        out,
        &format!("   polisd rebuilt the stats again: the python leader is now {leader}."),
    )?;

    // 3. A malformed chronicle line.
    say(
        out,
        &format!(
            "\n4. {GEMINI} appends a malformed line to chronicle.md (a verb phrase in capitals)."
        ),
    )?;
    append(
        &root,
        "chronicle.md",
        &format!(
            "- {} | {GEMINI} | Finished The Tests | - | all green\n",
            minute_now()
        ),
    )?;
    let notice = wait_for(|| {
        let inbox = read(&root, &format!("citizens/{GEMINI}/inbox.md"));
        inbox
            .contains("polisd:chronicle-finding")
            .then(|| first_paragraph_after(&inbox, "chronicle-finding"))
    })
    .context("the chronicle finding was not reported")?;
    say(
        out,
        &format!(
            "   polisd wrote to {GEMINI}'s inbox:\n     \"{}\"",
            shorten(&notice, 160)
        ),
    )?;

    // 4. An amendment, voted in its body, ratified and moved.
    say(
        out,
        &format!(
            "\n5. {FOUNDER} proposes an amendment; {CODEX} votes `agree` in a response block."
        ),
    )?;
    write(
        &root,
        "amendments/proposed/2026-01-01-review-high-stakes.md",
        &amendment(),
    )?;
    wait_for(|| {
        read(&root, &format!("citizens/{CODEX}/inbox.md"))
            .contains("polisd:amendment-proposed")
            .then_some(())
    })
    .context("the amendment was not announced")?;
    say(
        out,
        "   polisd told the active citizens that there is an amendment to vote on.",
    )?;
    append(
        &root,
        "amendments/proposed/2026-01-01-review-high-stakes.md",
        &format!("\n## Response from {CODEX} (agree)\n\nYes: high stakes deserve a second pair of eyes.\n"),
    )?;
    wait_for(|| {
        root.join("amendments/ratified/2026-01-01-review-high-stakes.md")
            .is_file()
            .then_some(())
    })
    .context("the amendment was not ratified")?;
    say(
        out,
        "   polisd counted 2 agreeing votes of a quorum of 2: it set `status: ratified`, moved the \
         file to amendments/ratified/, wrote a `ratified amendment` chronicle line and told every \
         active citizen that CONSTITUTION.md must now be edited.",
    )?;

    say(
        out,
        &format!(
            "\nDone in {:.1} s. The polis is at {}",
            started.elapsed().as_secs_f64(),
            root.display()
        ),
    )?;
    say(out, "\n$ polisd status\n")?;
    out.flush()?;
    let status = crate::commands::status::run(crate::commands::cli::JsonPolisArg {
        path: crate::commands::cli::PolisPath {
            path: Some(root.clone()),
            polis: None,
        },
        json: false,
    });
    if let Err(e) = status {
        say(out, &format!("(polisd status failed: {e:#})"))?;
    }

    if keep_running {
        say(out, "\npolisd keeps watching the demo polis; edit its files and watch the inboxes. Ctrl-C stops it.")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let _ = tokio::signal::ctrl_c().await;
            flag.store(true, Ordering::SeqCst);
        });
    }
    daemon.stop();
    if keep || keep_running {
        let kept = dir.keep();
        say(
            out,
            &format!(
                "\nThe demo folder {} is kept; remove it when done.",
                kept.display()
            ),
        )?;
    } else {
        drop(dir);
        say(
            out,
            "\nThe demo folder is removed; `polisd demo --keep` leaves it to explore.",
        )?;
    }
    Ok(0)
}

/// Writes `text`, each of its lines wrapped at the terminal's width (see
/// [`crate::commands::terminal::columns`]), so that a narrow terminal does not fold a step into
/// its number's column.
fn say(out: &mut dyn Write, text: &str) -> anyhow::Result<()> {
    let width = crate::commands::terminal::columns();
    for line in text.split('\n') {
        writeln!(out, "{}", wrap_line(line, width))?;
    }
    out.flush()?;
    Ok(())
}

/// One line of narration laid out at `width`: continuation lines hang under the text after the
/// line's indent, its step number (`1. `) or its opening quote.
fn wrap_line(line: &str, width: usize) -> String {
    let body = line.trim_start_matches(' ');
    let lead = line.len() - body.len();
    if body.is_empty() {
        return String::new();
    }
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    let marker = if digits > 0 && body[digits..].starts_with(". ") {
        digits + 2
    } else if body.starts_with('"') {
        1
    } else {
        0
    };
    let filled = crate::commands::terminal::fill(body, lead, lead + marker, width);
    format!("{}{filled}", " ".repeat(lead))
}

/// The engine and watcher of `polisd run`, on a thread of this process.
struct InProcessDaemon {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcessDaemon {
    fn start(root: &Path) -> anyhow::Result<InProcessDaemon> {
        let options = EngineOptions {
            auto_route: true,
            rollover: false,
            writer: crate::daemon::config::WriterMode::Any,
            reflect: false,
            notifications: crate::daemon::config::Notifications::default(),
        };
        let mut engine = Engine::open(root, options)?;
        let (watcher, mut batches) = watch::watch(
            root,
            WatchConfig {
                debounce: Duration::from_millis(50),
                ..WatchConfig::default()
            },
        )?;
        engine.set_watch_mode(watcher.mode().as_str());
        // The first pass takes the baseline before any agent moves.
        engine.handle(&Trigger::Rescan, Utc::now())?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let _watcher = watcher;
            while !flag.load(Ordering::SeqCst) {
                match batches.try_recv() {
                    Ok(batch) => {
                        let trigger = match batch.rescan {
                            Some(_) => Trigger::Rescan,
                            None => {
                                Trigger::Paths(batch.events.into_iter().map(|e| e.path).collect())
                            }
                        };
                        if let Err(e) = engine.handle(&trigger, Utc::now()) {
                            tracing::error!("{e:#}");
                        }
                    }
                    Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
                }
            }
            engine.close();
        });
        Ok(InProcessDaemon {
            stop,
            thread: Some(thread),
        })
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Polls `check` until it yields a value or the deadline passes.
fn wait_for<T>(mut check: impl FnMut() -> Option<T>) -> anyhow::Result<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return Ok(v);
        }
        if start.elapsed() > REACTION_DEADLINE {
            anyhow::bail!("no reaction within {REACTION_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn scaffold(project: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(project)?;
    let founder = crate::commands::init::InitParams {
        agent_id: FOUNDER.to_string(),
        project_name: "demo".to_string(),
        vendor: "anthropic".to_string(),
        model: "claude-opus".to_string(),
        tool: "claude code".to_string(),
    };
    crate::commands::init::run(project, &founder, false)?;
    let root = project.join("_polis");
    for (id, vendor, tool, python, docs, cost) in [
        (CODEX, "openai", "codex", 4, 3, "low"),
        (GEMINI, "google", "gemini cli", 4, 4, "medium"),
    ] {
        // Registered as `polisd register` would: a stamped card, status, inbox and journal, so
        // the scene's findings are only the one it stages.
        let citizen = crate::protocol::citizens::register::NewCitizen {
            agent_id: id.to_string(),
            vendor: vendor.to_string(),
            model: "demo".to_string(),
            tool: tool.to_string(),
            tags: vec![("python".to_string(), python), ("docs".to_string(), docs)],
            cost: cost.to_string(),
        };
        let time = crate::protocol::clock::PolisTime::system(Default::default());
        for (rel, text) in citizen.files(&time)? {
            write(&root, &rel, &text)?;
        }
    }
    // Everyone has been active recently, so all three count for the quorum.
    let stamp = minute_now();
    for id in [CODEX, GEMINI] {
        append(
            &root,
            "chronicle.md",
            &format!("- {stamp} | {id} | joined polis | [[citizens/{id}]] | -\n"),
        )?;
    }
    append(
        &root,
        "chronicle.md",
        &format!("- {stamp} | {FOUNDER} | welcomed citizens | - | -\n"),
    )?;
    Ok(())
}

fn minute_now() -> String {
    Utc::now().format("%Y-%m-%d %H:%M").to_string()
}

fn second_now() -> String {
    Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

fn open_contract(id: &str, title: &str) -> String {
    format!(
        "---\ncontract_id: {id}\ntitle: {title}\nopened_by: {FOUNDER}\nopened_at: {now}\nowner: null\n\
         status: proposed\nstakes: medium\nrequired_tags:\n- python\ncost_ceiling: medium\nrouting:\n  \
         recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\n---\n\n\
         ## Intent\n\n{title}.\n",
        now = second_now()
    )
}

fn claimed_contract(id: &str, owner: &str) -> String {
    open_contract(id, &format!("Work on {id}"))
        .replace("owner: null", &format!("owner: {owner}"))
        .replace("status: proposed", "status: claimed")
}

/// Settles the way an agent does: edit the frontmatter, then `mv` to `contracts/settled/`.
fn settle(root: &Path, id: &str, owner: &str, quality: u8) -> anyhow::Result<()> {
    let open = format!("contracts/open/{id}.md");
    let text = read(root, &open)
        .replace("status: claimed", "status: settled")
        .replace("owner: null", &format!("owner: {owner}"))
        .replace("cost_ceiling: medium", &format!("cost_ceiling: medium\nsettled_at: {}\nquality_score: {quality}\nactual_minutes: 25", second_now()));
    write(root, &open, &text)?;
    fs::rename(
        root.join(&open),
        root.join(format!("contracts/settled/{id}.md")),
    )?;
    append(
        root,
        "chronicle.md",
        &format!(
            "- {} | {owner} | settled contract | [[contracts/settled/{id}]] | quality {quality}\n",
            minute_now()
        ),
    )
}

fn amendment() -> String {
    format!(
        "---\namendment_id: 2026-01-01-review-high-stakes\ntitle: Every high-stakes contract gets a reviewer\n\
         proposed_by: {FOUNDER}\nproposed_at: {now}\nstatus: proposed\nquorum_required: null\nvotes:\n  agree: []\n  \
         disagree: []\n  abstain: []\n  request_changes: []\n---\n\n## Proposal\n\nA contract with `stakes: high` \
         settles only after a reviewer other than its owner signs off.\n",
        now = second_now()
    )
}

fn python_leader(root: &Path) -> Option<String> {
    let text = read(root, crate::protocol::layout::ROUTING_STATS);
    let stats = crate::protocol::routing::stats::parse(&text).ok()?;
    stats.tag("python")?.leader.clone()
}

fn write(root: &Path, rel: &str, text: &str) -> anyhow::Result<()> {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    // Like an editor: a temporary file renamed over the target.
    let tmp = path.with_extension("md.tmp");
    fs::write(&tmp, text)?;
    fs::rename(&tmp, &path)?;
    Ok(())
}

fn append(root: &Path, rel: &str, text: &str) -> anyhow::Result<()> {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(root.join(rel))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap_or_default()
}

/// `key: value` from the first line of `text` that sets it.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{key}:")))
        .map(|v| v.trim().to_string())
}

fn first_paragraph_after(inbox: &str, kind: &str) -> String {
    let Some(at) = inbox.find(&format!("polisd:{kind}")) else {
        return String::new();
    };
    let block = &inbox[..at];
    let start = block
        .rfind("from polis-daemon")
        .map_or(0, |i| i + "from polis-daemon".len());
    block[start..]
        .split("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty())
        .unwrap_or("")
        .to_string()
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_line_hangs_continuations_under_the_text() {
        let step = format!("2. {}", "word ".repeat(20).trim());
        let wrapped = wrap_line(&step, 30);
        assert!(wrapped.lines().count() > 1, "{wrapped}");
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("   w")));
        assert!(wrapped.lines().all(|l| l.len() <= 30), "{wrapped}");
        let quoted = wrap_line(&format!("     \"{}\"", "word ".repeat(20).trim()), 30);
        assert!(quoted.lines().skip(1).all(|l| l.starts_with("      w")));
        assert_eq!(wrap_line("  short line", 30), "  short line");
        assert_eq!(wrap_line("", 30), "");
    }
}
