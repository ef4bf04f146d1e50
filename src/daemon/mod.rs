//! `polisd run`: the long-running process. It owns the event loop — watchers, signals, timers,
//! the service manager's readiness and watchdog — and hands each batch of changes to the
//! [`Engine`] of the polis it concerns. Protocol decisions live in the engine and the core.
//!
//! Signals: SIGTERM and SIGINT finish the batch in hand and exit 0; SIGHUP reloads the
//! configuration (behaviour and notification switches apply at once; a changed watch list or
//! watch settings take a restart, which the log says). SIGXFSZ is ignored, so a file-size limit
//! fails a write (which is retried) instead of killing the daemon.
//!
//! A pass that fails (disk full, a file busy) is retried on its own, with a backoff from one
//! second to a minute, until a full pass succeeds: no later event is needed.
//!
//! Test hook: when `POLISD_FAKE_NOW_FILE` names a file holding an RFC 3339 time, that time is
//! "now" for every pass (read again at each pass; the real clock when the file is missing or
//! unparsable). It lets tests jump the clock of a running daemon; it is not meant for use.

pub mod config;
pub mod engine;
pub mod memory;
pub mod service;
pub mod watch;

use crate::daemon::engine::{Engine, EngineOptions, Trigger};
use anyhow::Context;
use chrono::Utc;
use config::{Backend, Config, LogFormat};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;
use watch::{Batch, WatchConfig};

/// What `polisd run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub paths: Vec<PathBuf>,
    pub config: Option<PathBuf>,
    pub log_level: Option<String>,
}

/// What passes have changed in one polis, published for read-only observers (the dashboard).
/// `generation` counts passes; `paths` are the changed paths of the latest one (relative to
/// `_polis/`; empty after a rescan or a timer pass, when anything may have changed); `state`
/// is what the engine holds after it (the polis it read, the ledger of settled contracts, the
/// stats), shared, so an observer reads no file for it. Publishing is a store into a
/// `tokio::sync::watch` channel: with nobody waiting it wakes nothing.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub generation: u64,
    pub paths: Vec<String>,
    /// `None` from a publisher that holds no state (`polisd serve`'s watcher), or before the
    /// engine's first pass.
    pub state: Option<std::sync::Arc<crate::operations::published::PolisState>>,
}

/// What the daemon lets a front end started beside it see: the configuration and, for every
/// polis it watches, its `_polis/` folder and the channel of its changes. Nothing in it writes.
pub struct DaemonView {
    pub config: Config,
    pub polises: Vec<ObservedPolis>,
}

pub struct ObservedPolis {
    pub root: PathBuf,
    pub changes: tokio::sync::watch::Receiver<Change>,
}

/// A front end running on the daemon's runtime (the dashboard): its address, recorded in the
/// status file for `polisd status`, and the task that serves it.
pub struct Sidecar {
    pub url: Option<String>,
    pub task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
}

/// Starts a front end beside the daemon once every polis is watched; `None` when it does not
/// run (disabled, or its port is busy: it logs why).
pub type StartSidecar = Box<dyn FnOnce(DaemonView) -> Option<Sidecar>>;

/// See the module documentation: a test hook for jumping the clock of a running daemon.
pub const FAKE_NOW_ENV: &str = "POLISD_FAKE_NOW_FILE";

/// The first and the longest wait before a failed pass is retried.
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// "Now" for a pass: the real clock, unless the test hook says otherwise.
pub fn wall_clock() -> chrono::DateTime<Utc> {
    std::env::var_os(FAKE_NOW_ENV)
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| chrono::DateTime::parse_from_rfc3339(text.trim()).ok())
        .map_or_else(Utc::now, |t| t.with_timezone(&Utc))
}

/// Runs the daemon until SIGTERM or SIGINT. Returns the exit code.
pub fn run(options: RunOptions) -> anyhow::Result<u8> {
    run_with(options, None)
}

/// [`run`], with a front end started beside the daemon on its runtime.
pub fn run_with(options: RunOptions, sidecar: Option<StartSidecar>) -> anyhow::Result<u8> {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    memory::limit_heap_arenas();
    let config = config::load(options.config.as_deref())?;
    init_logging(&config, options.log_level.as_deref());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the event loop")?;
    runtime.block_on(serve(config, options, sidecar))
}

/// Sets up tracing to stderr: `RUST_LOG` wins, then `--log-level`, then the configuration.
pub fn init_logging(config: &Config, level: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let default = level.unwrap_or(config.log.level.as_str());
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("polisd={default},warn")));
    // journald and launchd stamp each line themselves.
    let supervised = std::env::var_os("JOURNAL_STREAM").is_some()
        || std::env::var_os("INVOCATION_ID").is_some()
        || std::env::var_os("XPC_SERVICE_NAME").is_some_and(|v| v != "0");
    // Colour codes only on a terminal: a log file or a pipe gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    // A log nobody reads any more (a broken pipe) is not a reason to stop: without this,
    // tracing reports the failed write with `eprintln!`, which panics on the same pipe.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    let _ = match config.log.format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
        LogFormat::Auto if supervised => builder.without_time().with_ansi(false).try_init(),
        LogFormat::Auto => builder.try_init(),
    };
}

struct Watched {
    engine: Engine,
    changes: tokio::sync::watch::Sender<Change>,
    _watcher: watch::Watcher,
    _lock: crate::daemon::engine::EngineLock,
}

async fn serve(
    mut config: Config,
    options: RunOptions,
    sidecar: Option<StartSidecar>,
) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    // Without PATH: the configured polises (what a service runs), else the polis found walking
    // up from the working directory, as every other command does.
    let paths = if !options.paths.is_empty() {
        options.paths.clone()
    } else if !config.polises.is_empty() {
        config.polis_paths()
    } else {
        match crate::fs::locate::locate(None, &cwd) {
            Ok(root) => vec![root],
            Err(e) => anyhow::bail!(
                "no polis to watch: {e}. Or list polises in the configuration as [[polis]] \
                 path = \"...\" (`polisd config example` shows every key, `polisd config path` \
                 where the file goes)"
            ),
        }
    };
    let (tx, mut rx) = mpsc::channel::<(usize, Batch)>(64);
    let mut watched: Vec<Watched> = Vec::new();
    for path in &paths {
        let root = crate::fs::locate::locate(Some(path), &cwd)?;
        // One polis named twice (its project root and its `_polis/`, a link): watched once,
        // rather than refused by its own lock as if another polisd held it.
        let canonical = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        if watched.iter().any(|w| w.engine.root() == canonical) {
            tracing::info!(path = %path.display(), "already watched under another name");
            continue;
        }
        let index = watched.len();
        watched.push(start_one(&root, &config, index, tx.clone())?);
    }
    drop(tx);

    if let Some(start) = sidecar {
        let view = DaemonView {
            config: config.clone(),
            polises: watched
                .iter()
                .map(|w| ObservedPolis {
                    root: w.engine.root().to_path_buf(),
                    changes: w.changes.subscribe(),
                })
                .collect(),
        };
        if let Some(started) = start(view) {
            for w in &mut watched {
                w.engine.set_dashboard_url(started.url.clone());
                w.engine.set_publishing(true);
            }
            tokio::spawn(started.task);
        }
    }

    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
    let mut watchdog_usec = 0u64;
    let watchdog = sd_notify::watchdog_enabled(false, &mut watchdog_usec);
    let mut watchdog_tick = tokio::time::interval(if watchdog {
        Duration::from_micros(watchdog_usec / 2).max(Duration::from_millis(500))
    } else {
        Duration::from_secs(3600)
    });
    // Expiries and staleness are day-granular; an hourly look is plenty and costs nothing.
    let mut clock_tick = tokio::time::interval(Duration::from_secs(3600));
    clock_tick.tick().await;
    let mut last_day = wall_clock().date_naive();
    // Polises whose last pass failed, retried by a full pass when `retry` fires.
    let mut failed = vec![false; watched.len()];
    let mut backoff = RETRY_MIN;
    let retry = tokio::time::sleep(RETRY_MAX);
    tokio::pin!(retry);
    // The engines' own wake-ups: an agent's file to edit once it is settled, the end of a
    // restored folder's arrival. Armed only while some engine wants one.
    let wakeup = tokio::time::sleep(RETRY_MAX);
    tokio::pin!(wakeup);
    let mut wake_at = next_wakeup(&watched);
    if let Some(at) = wake_at {
        wakeup.as_mut().reset(tokio::time::Instant::from_std(at));
    }
    // The earliest reservation lease to run out in any polis: a pass drops it then.
    let mut next_expiry = earliest_expiry(&watched);
    let expiry = tokio::time::sleep_until(until(next_expiry));
    tokio::pin!(expiry);

    let mut sigterm = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut sighup = signal(tokio::signal::unix::SignalKind::hangup())?;

    // Passes run when memory was last given back, and whether a batch came since.
    let mut released_after = 0u64;
    let mut batch_since = false;
    loop {
        // About to wait with nothing queued after a pass or a batch: what it freed, and the
        // code it ran, go back to the system (a burst of changes keeps both until it ends; the
        // watchdog's and the clock's ticks that run nothing give nothing back).
        let passes: u64 = watched.iter().map(|w| w.engine.passes_run()).sum();
        if (passes != released_after || batch_since) && rx.is_empty() {
            released_after = passes;
            batch_since = false;
            let started = std::time::Instant::now();
            memory::release_free_memory();
            tracing::debug!(
                elapsed_us = started.elapsed().as_micros() as u64,
                "memory given back"
            );
        }
        let want = next_wakeup(&watched);
        if want != wake_at {
            wake_at = want;
            if let Some(at) = want {
                wakeup.as_mut().reset(tokio::time::Instant::from_std(at));
            }
        }
        let earliest = earliest_expiry(&watched);
        if earliest != next_expiry {
            next_expiry = earliest;
            expiry.as_mut().reset(until(next_expiry));
        }
        tokio::select! {
            batch = rx.recv() => {
                let Some((index, batch)) = batch else { break };
                batch_since = true;
                let trigger = match batch.rescan {
                    Some(r) => {
                        tracing::debug!(reason = ?r.reason, "rescan");
                        if r.reason == watch::RescanReason::Polling {
                            watched[index].engine.set_watch_mode(watch::Mode::Poll.as_str());
                        }
                        if r.reason == watch::RescanReason::PolisRecreated {
                            tracing::info!(polis = %watched[index].engine.root().display(), "the polis is back; waiting for it to be quiet before acting");
                            watched[index].engine.tree_arriving();
                        }
                        Trigger::Rescan
                    }
                    None => Trigger::Paths(batch.events.into_iter().map(|e| e.path).collect()),
                };
                if !pass(&mut watched[index], &trigger) && !failed[index] {
                    failed[index] = true;
                    if failed.iter().filter(|f| **f).count() == 1 {
                        retry.as_mut().reset(tokio::time::Instant::now() + backoff);
                    }
                }
            }
            _ = &mut wakeup, if wake_at.is_some() => {
                // Re-armed at the top of the loop, even for the same instant: a fired sleep
                // stays ready.
                wake_at = None;
                let now = std::time::Instant::now();
                for (w, f) in watched.iter_mut().zip(failed.iter_mut()) {
                    if let Some(trigger) = w.engine.due(now) {
                        *f |= !pass(w, &trigger);
                    }
                }
            }
            _ = &mut retry, if failed.iter().any(|f| *f) => {
                for (w, f) in watched.iter_mut().zip(failed.iter_mut()) {
                    if *f {
                        tracing::info!(polis = %w.engine.root().display(), "retrying after a failed pass");
                        *f = !pass(w, &Trigger::Rescan);
                    }
                }
                backoff = if failed.iter().any(|f| *f) { (backoff * 2).min(RETRY_MAX) } else { RETRY_MIN };
                retry.as_mut().reset(tokio::time::Instant::now() + backoff);
            }
            _ = &mut expiry, if next_expiry.is_some() => {
                let now = wall_clock();
                for (w, f) in watched.iter_mut().zip(failed.iter_mut()) {
                    if w.engine.next_expiry().is_some_and(|t| t <= now) {
                        *f |= !pass(w, &Trigger::ReservationExpiry);
                    }
                }
            }
            _ = clock_tick.tick() => {
                let today = wall_clock().date_naive();
                let new_day = today != last_day;
                last_day = today;
                for (w, f) in watched.iter_mut().zip(failed.iter_mut()) {
                    if new_day {
                        *f |= !pass(w, &Trigger::Timer);
                    } else if let Some(trigger) = w.engine.due(std::time::Instant::now()) {
                        // A wake-up the monotonic clock missed (the machine slept through
                        // the polis's midnight).
                        *f |= !pass(w, &trigger);
                    }
                }
            }
            _ = watchdog_tick.tick(), if watchdog => {
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
            }
            _ = sigterm.recv() => break,
            _ = sigint.recv() => break,
            _ = sighup.recv() => {
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Reloading]);
                match config::load(options.config.as_deref()) {
                    Ok(new) => {
                        if new.polis_paths() != config.polis_paths() || new.watch != config.watch {
                            tracing::warn!("the watch list or watch settings changed: restart polisd to apply them (behaviour and notification settings apply now)");
                        }
                        for w in &mut watched {
                            w.engine.set_options(new.effective_for(w.engine.root()).into());
                        }
                        config = new;
                        tracing::info!("configuration reloaded");
                    }
                    Err(e) => tracing::error!("configuration not reloaded, keeping the old one: {e}"),
                }
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
            }
        }
    }
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
    for w in &mut watched {
        w.engine.close();
    }
    tracing::info!("stopped");
    Ok(0)
}

/// The earliest pass any engine asks for.
fn next_wakeup(watched: &[Watched]) -> Option<std::time::Instant> {
    watched.iter().filter_map(|w| w.engine.next_wakeup()).min()
}

/// The earliest reservation lease to end among the watched polises.
fn earliest_expiry(watched: &[Watched]) -> Option<chrono::DateTime<Utc>> {
    watched.iter().filter_map(|w| w.engine.next_expiry()).min()
}

/// The moment to wake for `at` (a second late, so the lease has surely ended by the polis's
/// clock too); far away when there is none.
fn until(at: Option<chrono::DateTime<Utc>>) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    match at {
        Some(t) => {
            let wait = (t - wall_clock()).to_std().unwrap_or_default() + Duration::from_secs(1);
            now + wait
        }
        None => now + Duration::from_secs(86_400),
    }
}

/// One pass of one polis; false (logged) when it failed.
fn pass(w: &mut Watched, trigger: &Trigger) -> bool {
    let result = w.engine.handle(trigger, wall_clock());
    let state = w.engine.published();
    // Published even after a failed pass: part of it may have been written.
    w.changes.send_modify(|c| {
        c.state = state;
        c.generation += 1;
        c.paths = match trigger {
            Trigger::Paths(paths) => paths
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            Trigger::Rescan
            | Trigger::Timer
            | Trigger::ReservationExpiry
            | Trigger::Reflection
            | Trigger::Settled
            | Trigger::GitOperationEnded => Vec::new(),
        };
    });
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(polis = %w.engine.root().display(), "{e:#}");
            false
        }
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).context("installing a signal handler")
}

/// Opens the engine of one polis, takes its lock and starts watching it.
fn start_one(
    root: &Path,
    config: &Config,
    index: usize,
    tx: mpsc::Sender<(usize, Batch)>,
) -> anyhow::Result<Watched> {
    let mut engine = Engine::open(root, EngineOptions::from(config.effective_for(root)))?;
    engine.set_stability(config.watch.stability_window());
    engine.set_settling(config.watch.settling);
    let lock = engine.lock()?.ok_or_else(|| {
        anyhow::anyhow!(
            "another polisd already watches {} (it holds the lock on the _polis/ folder or on \
             this state directory); stop it first (`polisd status` shows its pid)",
            root.display()
        )
    })?;
    let watch_config = WatchConfig {
        debounce: config.watch.debounce,
        max_delay: Some(config.watch.max_delay),
        poll_interval: config.watch.poll_interval,
        rescan_interval: (!config.watch.rescan_interval.is_zero())
            .then_some(config.watch.rescan_interval),
        force_poll: config.watch.backend == Backend::Poll
            || watch::force_poll_requested(std::env::var(watch::FORCE_POLL_ENV).ok().as_deref()),
        // A complete chronicle line is final: validated as it lands, even while agents keep
        // appending (the chronicle as a whole never goes quiet under load).
        fast_paths: vec![PathBuf::from(crate::protocol::layout::CHRONICLE)],
        fast_debounce: config.watch.chronicle_debounce,
        ..WatchConfig::default()
    };
    let (watcher, mut batches) = watch::watch(root, watch_config)
        .with_context(|| format!("cannot watch {}", root.display()))?;
    if config.watch.backend == Backend::Native && watcher.mode() == watch::Mode::Poll {
        anyhow::bail!(
            "native file events are unavailable for {} and the configuration says backend = \"native\"; \
             use backend = \"auto\" to fall back to polling",
            root.display()
        );
    }
    engine.set_watch_mode(watcher.mode().as_str());
    tracing::info!(polis = %engine.root().display(), mode = watcher.mode().as_str(), "watching");
    tokio::spawn(async move {
        while let Some(batch) = batches.recv().await {
            if tx.send((index, batch)).await.is_err() {
                break;
            }
        }
    });
    Ok(Watched {
        engine,
        changes: tokio::sync::watch::Sender::new(Change::default()),
        _watcher: watcher,
        _lock: lock,
    })
}
