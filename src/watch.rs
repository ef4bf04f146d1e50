//! Watching a `_polis/` folder: the edge where notify's events become our own small
//! [`Event`] type (STYLE "The engine does not know notify").
//!
//! Owns: choosing a native watcher or falling back to polling, debouncing, dropping editor and
//! temporary names (`polis::is_ignored_name`), noticing `_polis/` itself being deleted and
//! recreated (a non-recursive watch on its parent plus an identity check of the folder), and
//! telling the caller when events can no longer be trusted ([`Rescan`]): at start, on kernel
//! queue overflow, on watcher errors, when `_polis/` comes or goes, and on a periodic timer.
//!
//! Must never: know the protocol beyond ignored names, read file contents, follow symbolic
//! links (a link in `_polis/` to `/` must not make us watch the disk), or write anything.
//!
//! Delivery: a bounded `tokio::sync::mpsc` channel of [`Batch`]es, because the daemon's engine
//! is a tokio task that also waits on signals and timers; synchronous callers (tests, one-shot
//! commands) use `Receiver::blocking_recv`. The watcher runs on its own thread and blocks when
//! the channel is full, so a slow engine slows the watcher instead of growing memory (the
//! debouncer keeps merging events meanwhile).

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{PollWatcher, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer_opt, DebounceEventResult, Debouncer, NoCache};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Set to `1` to skip the native watcher and poll (tests, network filesystems).
pub const FORCE_POLL_ENV: &str = "POLISD_FORCE_POLL";

/// What happened to a path, as far as the watcher can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Create,
    Modify,
    Remove,
    /// One side of a rename (the old or the new name); each side is its own event.
    Rename,
    /// Something happened; the watcher cannot say what.
    Any,
}

/// Where an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The platform's change notifications (inotify, FSEvents, kqueue).
    Native,
    /// notify's polling watcher.
    Poll,
    /// Found by walking a folder rather than reported: the contents of a folder that appeared
    /// (native watchers miss files created before the new folder's watch exists), or events
    /// the engine synthesises after a [`Rescan`].
    Rescan,
    /// Produced on a timer by the engine (the watcher itself sends timer ticks as
    /// [`RescanReason::Timer`]).
    Timer,
}

/// "This path may have changed." `path` is relative to `_polis/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    pub path: PathBuf,
    pub kind: EventKind,
    pub source: Source,
}

/// Why the caller should rescan the whole polis instead of trusting the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RescanReason {
    /// Watching has just been established; anything before this point is only found by a scan.
    Started,
    /// The periodic safety rescan.
    Timer,
    /// The kernel or the watcher dropped events (inotify queue overflow).
    Overflow,
    /// The watcher reported an error (message for the log).
    WatcherError(String),
    /// `_polis/` is gone (deleted or moved away); events stop until it returns.
    PolisRemoved,
    /// `_polis/` is back (or was replaced by a new folder) and is watched again.
    PolisRecreated,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rescan {
    pub reason: RescanReason,
}

/// What the watcher delivers: the events of one debounce window, or a rescan request (with
/// whatever events came with it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    pub events: Vec<Event>,
    pub rescan: Option<Rescan>,
}

/// Which watcher is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Native,
    Poll,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Poll => "poll",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// How long a path must be quiet before its events are delivered.
    pub debounce: Duration,
    /// How often the polling fallback scans.
    pub poll_interval: Duration,
    /// The periodic safety rescan; `None` disables it.
    pub rescan_interval: Option<Duration>,
    /// Poll without trying the native watcher. `POLISD_FORCE_POLL=1` sets it too.
    pub force_poll: bool,
    /// Batches buffered before the watcher thread waits for the caller.
    pub channel_capacity: usize,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            debounce: Duration::from_millis(500),
            poll_interval: Duration::from_secs(2),
            rescan_interval: Some(Duration::from_secs(15 * 60)),
            force_poll: false,
            channel_capacity: 64,
        }
    }
}

/// Whether a `POLISD_FORCE_POLL` value asks for polling.
pub fn force_poll_requested(value: Option<&str>) -> bool {
    matches!(
        value.map(str::trim),
        Some("1") | Some("true") | Some("yes") | Some("on")
    )
}

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch {}: it is not a folder (or is gone)", .0.display())]
    NotAFolder(PathBuf),
    #[error("cannot watch {}: neither the native watcher ({native}) nor polling ({poll}) could start", .root.display())]
    NoWatcher {
        root: PathBuf,
        native: String,
        poll: String,
    },
    #[error("cannot start the watcher thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// A running watcher. Dropping it stops the watcher thread.
#[derive(Debug)]
pub struct Watcher {
    mode: Mode,
    root: PathBuf,
    control: std_mpsc::Sender<Internal>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The canonical `_polis/` folder being watched.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Stops the watcher and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.control.send(Internal::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts watching `polis_root` (the `_polis/` folder). The first batch is always a
/// [`RescanReason::Started`] rescan.
pub fn watch(
    polis_root: &Path,
    mut config: WatchConfig,
) -> Result<(Watcher, mpsc::Receiver<Batch>), WatchError> {
    let root = std::fs::canonicalize(polis_root)
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| WatchError::NotAFolder(polis_root.to_path_buf()))?;
    if force_poll_requested(std::env::var(FORCE_POLL_ENV).ok().as_deref()) {
        config.force_poll = true;
    }
    let (tx, rx) = mpsc::channel(config.channel_capacity.max(1));
    let (control, inbox) = std_mpsc::channel();
    let (ready_tx, ready_rx) = std_mpsc::channel();
    let thread = {
        let root = root.clone();
        let control = control.clone();
        std::thread::Builder::new()
            .name("polisd-watch".into())
            .spawn(move || {
                let backend = match Backend::start(&root, &config, &control) {
                    Ok(b) => {
                        let _ = ready_tx.send(Ok(b.mode()));
                        b
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                Loop::new(root, config, backend, tx).run(inbox);
            })
            .map_err(WatchError::Thread)?
    };
    let mode = match ready_rx.recv() {
        Ok(Ok(mode)) => mode,
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => {
            let _ = thread.join();
            return Err(WatchError::NotAFolder(root));
        }
    };
    Ok((
        Watcher {
            mode,
            root,
            control,
            thread: Some(thread),
        },
        rx,
    ))
}

enum Internal {
    Debounced(DebounceEventResult),
    Stop,
}

enum Backend {
    Native(Debouncer<RecommendedWatcher, NoCache>),
    Poll(Debouncer<PollWatcher, NoCache>),
}

impl Backend {
    fn start(
        root: &Path,
        config: &WatchConfig,
        control: &std_mpsc::Sender<Internal>,
    ) -> Result<Backend, WatchError> {
        let handler = |control: std_mpsc::Sender<Internal>| {
            move |r: DebounceEventResult| {
                let _ = control.send(Internal::Debounced(r));
            }
        };
        // NoCache: the file-id cache walks the tree following links, which a polis must not
        // make us do; renames are still paired by inotify's cookies.
        let native_err = if config.force_poll {
            tracing::info!("polling {} as requested ({FORCE_POLL_ENV})", root.display());
            None
        } else {
            let native = new_debouncer_opt::<_, RecommendedWatcher, NoCache>(
                config.debounce,
                None,
                handler(control.clone()),
                NoCache,
                notify::Config::default().with_follow_symlinks(false),
            )
            .map(Backend::Native)
            .and_then(|mut b| b.watch_all(root).map(|_| b));
            #[cfg(test)]
            let native = if tests::FAIL_NATIVE.load(std::sync::atomic::Ordering::SeqCst) {
                Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch))
            } else {
                native
            };
            match native {
                Ok(b) => return Ok(b),
                Err(e) => {
                    tracing::warn!(
                        "native file watching of {} failed ({e}); polling every {:?} instead. {}",
                        root.display(),
                        config.poll_interval,
                        fallback_advice(&e)
                    );
                    Some(e)
                }
            }
        };
        let poll = new_debouncer_opt::<_, PollWatcher, NoCache>(
            config.debounce.max(Duration::from_millis(1)),
            None,
            handler(control.clone()),
            NoCache,
            // Modification times are compared at one-second granularity by the poller, so a
            // change in the same second as the previous scan would wait for the safety rescan;
            // comparing contents costs a read per file and poll, which is the price of
            // correctness on file systems without events.
            notify::Config::default()
                .with_follow_symlinks(false)
                .with_poll_interval(config.poll_interval)
                .with_compare_contents(true),
        )
        .map(Backend::Poll)
        .and_then(|mut b| b.watch_all(root).map(|_| b));
        poll.map_err(|e| WatchError::NoWatcher {
            root: root.to_path_buf(),
            native: native_err.map_or_else(|| "not tried".into(), |n| n.to_string()),
            poll: e.to_string(),
        })
    }

    fn mode(&self) -> Mode {
        match self {
            Backend::Native(_) => Mode::Native,
            Backend::Poll(_) => Mode::Poll,
        }
    }

    fn source(&self) -> Source {
        match self {
            Backend::Native(_) => Source::Native,
            Backend::Poll(_) => Source::Poll,
        }
    }

    /// The parent non-recursively (to see `_polis/` come and go), `_polis/` recursively.
    fn watch_all(&mut self, root: &Path) -> notify::Result<()> {
        if let Some(parent) = root.parent() {
            self.watch(parent, RecursiveMode::NonRecursive)?;
        }
        self.watch(root, RecursiveMode::Recursive)
    }

    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        match self {
            Backend::Native(d) => d.watch(path, mode),
            Backend::Poll(d) => d.watch(path, mode),
        }
    }

    fn unwatch(&mut self, path: &Path) -> notify::Result<()> {
        match self {
            Backend::Native(d) => d.unwatch(path),
            Backend::Poll(d) => d.unwatch(path),
        }
    }

    fn rewatch(&mut self, root: &Path) -> notify::Result<()> {
        let _ = self.unwatch(root);
        self.watch(root, RecursiveMode::Recursive)
    }
}

/// One line of advice for the log when the native watcher fails.
fn fallback_advice(e: &notify::Error) -> String {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => "The inotify watch limit is reached: raise it with \
            `sudo sysctl fs.inotify.max_user_watches=524288` (persist it in /etc/sysctl.d/) and \
            restart polisd."
            .into(),
        notify::ErrorKind::Io(io) if io.raw_os_error() == Some(24) => "Too many inotify \
            instances: raise `fs.inotify.max_user_instances` with sysctl and restart polisd."
            .into(),
        _ => format!("Set {FORCE_POLL_ENV}=1 to poll deliberately and silence this warning."),
    }
}

/// Identity of the watched `_polis/` folder, to notice it being replaced.
fn folder_id(root: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(root)
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| (m.dev(), m.ino()))
}

struct Loop {
    root: PathBuf,
    config: WatchConfig,
    backend: Backend,
    tx: mpsc::Sender<Batch>,
    root_id: Option<(u64, u64)>,
    warned_limit: bool,
}

impl Loop {
    fn new(root: PathBuf, config: WatchConfig, backend: Backend, tx: mpsc::Sender<Batch>) -> Loop {
        let root_id = folder_id(&root);
        Loop {
            root,
            config,
            backend,
            tx,
            root_id,
            warned_limit: false,
        }
    }

    fn run(mut self, inbox: std_mpsc::Receiver<Internal>) {
        if !self.send(Batch {
            events: Vec::new(),
            rescan: Some(Rescan {
                reason: RescanReason::Started,
            }),
        }) {
            return;
        }
        let mut next_timer = self.config.rescan_interval.map(|i| Instant::now() + i);
        loop {
            let msg = match next_timer {
                Some(at) => {
                    match inbox.recv_timeout(at.saturating_duration_since(Instant::now())) {
                        Ok(m) => Some(m),
                        Err(std_mpsc::RecvTimeoutError::Timeout) => None,
                        Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match inbox.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                },
            };
            let mut batch = Batch::default();
            match msg {
                Some(Internal::Stop) => return,
                Some(Internal::Debounced(Ok(events))) => self.translate(&events, &mut batch),
                Some(Internal::Debounced(Err(errors))) => self.errors(errors, &mut batch),
                None => {
                    next_timer = self.config.rescan_interval.map(|i| Instant::now() + i);
                    batch.rescan = Some(Rescan {
                        reason: RescanReason::Timer,
                    });
                }
            }
            self.check_root(&mut batch);
            if self.root_id.is_none() {
                // Nothing under a missing `_polis/` can be trusted; the rescan says so.
                batch.events.clear();
            }
            if (!batch.events.is_empty() || batch.rescan.is_some()) && !self.send(batch) {
                return;
            }
        }
    }

    /// False when the receiver is gone.
    fn send(&self, batch: Batch) -> bool {
        self.tx.blocking_send(batch).is_ok()
    }

    /// Notices `_polis/` disappearing or being replaced, whatever events said, and watches the
    /// new folder. The rescan reason for this wins over others: it says the most.
    fn check_root(&mut self, batch: &mut Batch) {
        let now = folder_id(&self.root);
        if now == self.root_id {
            return;
        }
        self.root_id = now;
        let reason = if now.is_none() {
            // inotify watches follow a folder that was moved away; drop them so its events
            // are not reported under the old name.
            let _ = self.backend.unwatch(&self.root);
            RescanReason::PolisRemoved
        } else {
            match self.backend.rewatch(&self.root) {
                Ok(()) => RescanReason::PolisRecreated,
                Err(e) => {
                    // Seen again on the next batch or tick: forget the id so we retry.
                    self.root_id = None;
                    RescanReason::WatcherError(format!(
                        "cannot watch {} again: {e}",
                        self.root.display()
                    ))
                }
            }
        };
        batch.rescan = Some(Rescan { reason });
    }

    fn errors(&mut self, errors: Vec<notify::Error>, batch: &mut Batch) {
        let mut messages = Vec::new();
        for e in errors {
            let gone = matches!(&e.kind, notify::ErrorKind::PathNotFound)
                || matches!(&e.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound);
            // A file vanishing mid-scan (polling) is an ordinary removal, already reported.
            if gone {
                continue;
            }
            if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) && !self.warned_limit {
                self.warned_limit = true;
                tracing::warn!(
                    "some folders of {} are not watched ({e}). {}",
                    self.root.display(),
                    fallback_advice(&e)
                );
            }
            messages.push(e.to_string());
        }
        if !messages.is_empty() && batch.rescan.is_none() {
            batch.rescan = Some(Rescan {
                reason: RescanReason::WatcherError(messages.join("; ")),
            });
        }
    }

    fn translate(&mut self, events: &[notify_debouncer_full::DebouncedEvent], batch: &mut Batch) {
        let source = self.backend.source();
        let mut seen = HashSet::new();
        for ev in events {
            if ev.event.need_rescan() {
                batch.rescan.get_or_insert(Rescan {
                    reason: RescanReason::Overflow,
                });
            }
            let kind = match ev.event.kind {
                notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
                    EventKind::Modify
                }
                // Opens and reads (including polisd's own) change nothing.
                notify::EventKind::Access(_) | notify::EventKind::Other => continue,
                notify::EventKind::Create(_) => EventKind::Create,
                notify::EventKind::Modify(ModifyKind::Name(_)) => EventKind::Rename,
                notify::EventKind::Modify(_) => EventKind::Modify,
                notify::EventKind::Remove(_) => EventKind::Remove,
                notify::EventKind::Any => EventKind::Any,
            };
            for path in &ev.event.paths {
                // Events on `_polis/` itself and its siblings: check_root handles the folder.
                let Ok(rel) = path.strip_prefix(&self.root) else {
                    continue;
                };
                if rel.as_os_str().is_empty() {
                    continue;
                }
                let ignored = rel
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(crate::polis::is_ignored_name);
                if ignored {
                    continue;
                }
                let event = Event {
                    path: rel.to_path_buf(),
                    kind,
                    source,
                };
                if seen.insert(event.clone()) {
                    batch.events.push(event);
                }
                if matches!(kind, EventKind::Create | EventKind::Rename) {
                    self.walk_new_folder(path, &mut seen, batch);
                }
            }
        }
    }

    /// A folder that appeared may already hold files the native watcher never saw (created
    /// before its watch existed, or moved in whole). Report its contents, without following
    /// links.
    fn walk_new_folder(&self, path: &Path, seen: &mut HashSet<Event>, batch: &mut Batch) {
        let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
        if !is_dir {
            return;
        }
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                let name = entry.file_name();
                if name.to_str().is_some_and(crate::polis::is_ignored_name) {
                    continue;
                }
                let child = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(child.clone());
                }
                let Ok(rel) = child.strip_prefix(&self.root) else {
                    continue;
                };
                let event = Event {
                    path: rel.to_path_buf(),
                    kind: EventKind::Create,
                    source: Source::Rescan,
                };
                if seen.insert(event.clone()) {
                    batch.events.push(event);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Makes the native watcher fail at start, as an exhausted inotify watch limit would.
    pub(super) static FAIL_NATIVE: AtomicBool = AtomicBool::new(false);

    #[track_caller]
    fn recv_within(rx: &mut mpsc::Receiver<Batch>) -> Batch {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(b) = rx.try_recv() {
                return b;
            }
            assert!(Instant::now() < end, "no batch within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn native_failure_at_start_falls_back_to_polling() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        FAIL_NATIVE.store(true, Ordering::SeqCst);
        let started = watch(
            &root,
            WatchConfig {
                debounce: Duration::from_millis(20),
                poll_interval: Duration::from_millis(50),
                ..WatchConfig::default()
            },
        );
        FAIL_NATIVE.store(false, Ordering::SeqCst);
        let (w, mut rx) = started.unwrap();
        assert_eq!(w.mode(), Mode::Poll);
        assert_eq!(
            recv_within(&mut rx).rescan.unwrap().reason,
            RescanReason::Started
        );
        std::fs::write(root.join("chronicle.md"), "- a\n").unwrap();
        let batch = recv_within(&mut rx);
        assert_eq!(batch.events[0].path, Path::new("chronicle.md"));
        assert_eq!(batch.events[0].source, Source::Poll);
    }

    #[test]
    fn force_poll_values() {
        assert!(force_poll_requested(Some("1")));
        assert!(force_poll_requested(Some(" true ")));
        assert!(!force_poll_requested(Some("0")));
        assert!(!force_poll_requested(Some("")));
        assert!(!force_poll_requested(None));
    }

    #[test]
    fn advice_names_the_sysctl() {
        let e = notify::Error::new(notify::ErrorKind::MaxFilesWatch);
        assert!(fallback_advice(&e).contains("fs.inotify.max_user_watches"));
    }
}
