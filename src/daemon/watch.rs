//! Watching a `_polis/` folder: the edge where notify's events become our own small
//! [`Event`] type (STYLE "The engine does not know notify").
//!
//! Owns: choosing a native watcher or falling back to polling, debouncing, dropping editor and
//! temporary names (`layout::is_temporary_name`; sync conflict copies are passed on, to be
//! merged or reported), noticing `_polis/` itself being deleted and recreated (a non-recursive watch on its parent plus an identity check of the folder), and
//! telling the caller when events can no longer be trusted ([`Rescan`]): at start, on kernel
//! queue overflow, on watcher errors, when `_polis/` comes or goes, and on a periodic timer.
//!
//! Must never: know the protocol beyond ignored names, read file contents, follow symbolic
//! links (a link in `_polis/` to `/` must not make us watch the disk), or write anything.
//!
//! Debouncing: notify's raw events go to the watcher thread's inbox, which keeps the changed
//! paths (`Pending`) with the instant of each path's last event, and delivers a path once it
//! has been quiet for the debounce (or has waited [`WatchConfig::max_delay`], by default
//! [`max_wait`] of the debounce, while being written without pause), with the paths falling due within a quarter of the debounce after it. The thread
//! sleeps until the next such deadline or the rescan timer, and with nothing pending and no
//! timer it blocks without waking at all: an idle daemon costs nothing here. Rescans and
//! `_polis/` coming or going are delivered at once, not after the debounce.
//!
//! Delivery: a bounded `tokio::sync::mpsc` channel of [`Batch`]es, because the daemon's engine
//! is a tokio task that also waits on signals and timers; synchronous callers (tests, one-shot
//! commands) use `Receiver::blocking_recv`. The watcher thread blocks when the channel is full,
//! so a slow engine slows the watcher instead of piling up batches; notify's events wait in the
//! thread's inbox meanwhile and are merged per path once the thread gets to them.

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{PollWatcher, RecommendedWatcher, RecursiveMode, Watcher as _};
use std::collections::{HashMap, HashSet};
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
    /// The native watcher hit the OS watch limit on a folder made while running: the polis is
    /// polled from now on, as when the limit is reached at start.
    Polling,
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
    /// The longest a path that keeps changing waits before it is delivered anyway; `None`
    /// picks [`max_wait`] of the debounce.
    pub max_delay: Option<Duration>,
    /// How often the polling fallback scans.
    pub poll_interval: Duration,
    /// The periodic safety rescan; `None` disables it.
    pub rescan_interval: Option<Duration>,
    /// Poll without trying the native watcher. `POLISD_FORCE_POLL=1` sets it too.
    pub force_poll: bool,
    /// Batches buffered before the watcher thread waits for the caller.
    pub channel_capacity: usize,
    /// Paths (relative to `_polis/`) with a debounce of their own: files only ever appended
    /// to in complete units (the chronicle's lines), which need not wait for the whole file to
    /// go quiet. The caller names them; the watcher knows nothing of what they are.
    pub fast_paths: Vec<PathBuf>,
    /// The debounce of `fast_paths`; such a path waits at most four of these while it keeps
    /// changing.
    pub fast_debounce: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            debounce: Duration::from_millis(500),
            max_delay: None,
            poll_interval: Duration::from_secs(2),
            rescan_interval: Some(Duration::from_secs(15 * 60)),
            force_poll: false,
            channel_capacity: 64,
            fast_paths: Vec::new(),
            fast_debounce: Duration::from_millis(30),
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
                Loop::new(root, config, backend, control, tx).run(inbox);
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
    /// One raw event (or error) from notify, straight from its thread.
    Raw(notify::Result<notify::Event>),
    Stop,
}

enum Backend {
    /// With the folders it watches (see [`native_watches`]).
    Native(RecommendedWatcher, Vec<PathBuf>),
    Poll(PollWatcher),
}

/// The watches of a native backend over `_polis/`: the folder itself and `contracts/` without
/// recursion, `contracts/settled/` without recursion (it holds files only: a recursive watch
/// stats every entry it meets, which was a fifth of a restart with 100k settled contracts),
/// every other folder recursively. Only folders are listed, by their entries' types (no stat
/// per file). A folder created later in one of the unrecursed ones is watched when its event
/// arrives ([`Loop::watch_new_folder`]).
///
/// Each unrecursed folder is watched *before* it is listed: a subfolder created in between is
/// then seen by the listing, its event or both, never by neither (a tree restored by a copy
/// arrives while this runs). `watch` says whether the folder was there to watch.
fn native_watches(
    root: &Path,
    start: &Path,
    mut watch: impl FnMut(&Path, RecursiveMode) -> notify::Result<bool>,
) -> notify::Result<()> {
    let contracts = root.join("contracts");
    let settled = contracts.join("settled");
    let subfolders = |dir: &Path| -> Vec<PathBuf> {
        let Ok(read) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = read
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        out.sort();
        out
    };
    let mut stack = vec![start.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let listed = dir == root || dir == contracts;
        let mode = if listed || dir == settled {
            RecursiveMode::NonRecursive
        } else {
            RecursiveMode::Recursive
        };
        if watch(&dir, mode)? && listed {
            stack.extend(subfolders(&dir).into_iter().rev());
        }
    }
    Ok(())
}

impl Backend {
    fn start(
        root: &Path,
        config: &WatchConfig,
        control: &std_mpsc::Sender<Internal>,
    ) -> Result<Backend, WatchError> {
        let native_err = if config.force_poll {
            tracing::info!("polling {} as requested ({FORCE_POLL_ENV})", root.display());
            None
        } else {
            let native = RecommendedWatcher::new(
                forward(control.clone()),
                notify::Config::default().with_follow_symlinks(false),
            )
            .map(|w| Backend::Native(w, Vec::new()))
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
        let poll = Backend::poll(root, config, control);
        poll.map_err(|e| WatchError::NoWatcher {
            root: root.to_path_buf(),
            native: native_err.map_or_else(|| "not tried".into(), |n| n.to_string()),
            poll: e.to_string(),
        })
    }

    /// The polling backend over `_polis/` (and its parent, to see `_polis/` come and go).
    fn poll(
        root: &Path,
        config: &WatchConfig,
        control: &std_mpsc::Sender<Internal>,
    ) -> notify::Result<Backend> {
        PollWatcher::new(
            forward(control.clone()),
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
        .and_then(|mut b| b.watch_all(root).map(|_| b))
    }

    fn mode(&self) -> Mode {
        match self {
            Backend::Native(..) => Mode::Native,
            Backend::Poll(_) => Mode::Poll,
        }
    }

    fn source(&self) -> Source {
        match self {
            Backend::Native(..) => Source::Native,
            Backend::Poll(_) => Source::Poll,
        }
    }

    /// The parent non-recursively (to see `_polis/` come and go), `_polis/` recursively
    /// (natively: as [`native_watches`] says).
    fn watch_all(&mut self, root: &Path) -> notify::Result<()> {
        if let Some(parent) = root.parent() {
            self.watch(parent, RecursiveMode::NonRecursive)?;
        }
        self.watch_polis(root, root)
    }

    /// `_polis/` (or, natively, the folder `start` inside it) and what is under it.
    fn watch_polis(&mut self, root: &Path, start: &Path) -> notify::Result<()> {
        match self {
            Backend::Poll(d) => d.watch(root, RecursiveMode::Recursive),
            Backend::Native(d, watched) => native_watches(root, start, |path, mode| {
                match d.watch(path, mode) {
                    Ok(()) => {}
                    // Gone since it was listed: nothing to watch.
                    Err(e) if path != root && is_gone(&e) => return Ok(false),
                    Err(e) => return Err(e),
                }
                if !watched.iter().any(|w| w == path) {
                    watched.push(path.to_path_buf());
                }
                Ok(true)
            }),
        }
    }

    fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        match self {
            Backend::Native(d, _) => d.watch(path, mode),
            Backend::Poll(d) => d.watch(path, mode),
        }
    }

    /// Stops watching `_polis/` and everything under it.
    fn unwatch_polis(&mut self, root: &Path) {
        match self {
            Backend::Native(d, watched) => {
                for path in std::mem::take(watched) {
                    let _ = d.unwatch(&path);
                }
            }
            Backend::Poll(d) => {
                let _ = d.unwatch(root);
            }
        }
    }

    fn rewatch(&mut self, root: &Path) -> notify::Result<()> {
        self.unwatch_polis(root);
        self.watch_polis(root, root)
    }
}

/// What notify calls on its own thread: hands each event or error to the watcher loop.
fn forward(
    control: std_mpsc::Sender<Internal>,
) -> impl FnMut(notify::Result<notify::Event>) + Send + 'static {
    move |r: notify::Result<notify::Event>| {
        // Dropped here, on notify's thread: a full pass opens every file, and each open
        // would otherwise wake the watcher thread for nothing.
        if r.as_ref().is_ok_and(is_read) {
            return;
        }
        let _ = control.send(Internal::Raw(r));
    }
}

/// Whether a watcher error says the path is not there (any more).
fn is_gone(e: &notify::Error) -> bool {
    matches!(&e.kind, notify::ErrorKind::PathNotFound)
        || matches!(&e.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

/// An open, or a close without writing: nothing changed (inotify reports every open, polisd's
/// own reads included).
fn is_read(event: &notify::Event) -> bool {
    let read = match event.kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        notify::EventKind::Access(_) => true,
        _ => false,
    };
    read && !event.need_rescan()
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

/// The longest a path that never goes quiet waits before it is delivered anyway: ten debounce
/// windows, and at least one second.
///
/// Without a cap, a file written without pause (an agent appending a line every 100 ms, a long
/// copy, a log) would never be quiet for the debounce and would never be seen. Ten windows are
/// far longer than an ordinary run of writes to one file (an editor's save, a script's few
/// steps), which still arrives once; the one-second floor keeps a short debounce from turning a
/// continuous writer into a pass every few milliseconds.
pub fn max_wait(debounce: Duration) -> Duration {
    debounce.saturating_mul(10).max(Duration::from_secs(1))
}

/// The earlier of two optional instants, `None` meaning never.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Changed paths not delivered yet, in the order they were first seen, each with the kinds of
/// its events (each kind once, in the order seen) and when it was first and last touched. Pure:
/// the caller gives the instants, so the debouncing is tested without sleeping.
///
/// When the first path falls due, the batch waits for the paths falling due within `gather`
/// (a quarter of the debounce) after it. During a burst of writes to many files (a checkout, a
/// script settling contracts) the paths fall due one after the other, and delivering each the
/// moment it is due split even a burst of a few milliseconds at its first file, and gave the
/// engine one pass per file of a longer one (500 files written over 0.7 s: 499 batches, against
/// 46 with notify-debouncer-full's debounce/4 tick). No path is delivered before it is due; a
/// change after a quiet spell goes the moment it is due, and a change among others at most
/// `gather` after, which the tick also allowed.
#[derive(Debug)]
struct Pending {
    debounce: Duration,
    max_wait: Duration,
    gather: Duration,
    /// Paths with their own, shorter debounce and cap (see [`WatchConfig::fast_paths`]).
    fast: HashSet<PathBuf>,
    fast_debounce: Duration,
    fast_max_wait: Duration,
    source: Source,
    paths: Vec<PendingPath>,
    /// Position of each path in `paths`.
    index: HashMap<PathBuf, usize>,
}

#[derive(Debug)]
struct PendingPath {
    path: PathBuf,
    kinds: Vec<EventKind>,
    first: Instant,
    last: Instant,
    fast: bool,
}

impl PendingPath {
    /// When this path is due: quiet for `debounce`, or pending for `max_wait`. `None`: never
    /// (durations too long for the clock).
    fn due_at(&self, debounce: Duration, max_wait: Duration) -> Option<Instant> {
        earliest(
            self.last.checked_add(debounce),
            self.first.checked_add(max_wait),
        )
    }
}

impl Pending {
    fn new(debounce: Duration, max_wait: Duration, source: Source) -> Pending {
        Pending {
            debounce,
            max_wait,
            gather: debounce / 4,
            fast: HashSet::new(),
            fast_debounce: debounce,
            fast_max_wait: max_wait,
            source,
            paths: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Gives `paths` a debounce of their own, capped at four of it while they keep changing.
    fn with_fast(mut self, paths: &[PathBuf], debounce: Duration) -> Pending {
        self.fast = paths.iter().cloned().collect();
        self.fast_debounce = debounce.min(self.debounce);
        self.fast_max_wait = self.fast_debounce.saturating_mul(4).min(self.max_wait);
        self
    }

    /// The debounce and cap that apply to a path.
    fn windows(&self, p: &PendingPath) -> (Duration, Duration) {
        if p.fast {
            (self.fast_debounce, self.fast_max_wait)
        } else {
            (self.debounce, self.max_wait)
        }
    }

    fn add(&mut self, path: PathBuf, kind: EventKind, now: Instant) {
        match self.index.get(&path) {
            Some(&i) => {
                let p = &mut self.paths[i];
                p.last = p.last.max(now);
                if !p.kinds.contains(&kind) {
                    p.kinds.push(kind);
                }
            }
            None => {
                self.index.insert(path.clone(), self.paths.len());
                let fast = self.fast.contains(&path);
                self.paths.push(PendingPath {
                    path,
                    kinds: vec![kind],
                    first: now,
                    last: now,
                    fast,
                });
            }
        }
    }

    /// When the next batch is due: the last deadline within `gather` of the first one; `None`
    /// when nothing is pending.
    fn next_deadline(&self) -> Option<Instant> {
        let deadlines = || {
            self.paths.iter().filter_map(|p| {
                let (debounce, max_wait) = self.windows(p);
                p.due_at(debounce, max_wait)
            })
        };
        let first = deadlines().min()?;
        let Some(until) = first.checked_add(self.gather) else {
            return Some(first);
        };
        deadlines().filter(|&at| at <= until).max()
    }

    /// Takes the events of every path that is due, once the batch is (see `next_deadline`).
    fn due(&mut self, now: Instant) -> Vec<Event> {
        if self.next_deadline().is_none_or(|at| now < at) {
            return Vec::new();
        }
        let due: HashSet<PathBuf> = self
            .paths
            .iter()
            .filter(|p| {
                let (debounce, max_wait) = self.windows(p);
                p.due_at(debounce, max_wait).is_some_and(|at| at <= now)
            })
            .map(|p| p.path.clone())
            .collect();
        self.take_where(|p| due.contains(&p.path))
    }

    /// Takes everything, due or not (a rescan is delivered at once, with all of it).
    fn take_all(&mut self) -> Vec<Event> {
        self.take_where(|_| true)
    }

    fn clear(&mut self) {
        self.paths.clear();
        self.index.clear();
    }

    fn take_where(&mut self, due: impl Fn(&PendingPath) -> bool) -> Vec<Event> {
        if !self.paths.iter().any(&due) {
            return Vec::new();
        }
        let (taken, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.paths).into_iter().partition(&due);
        self.paths = kept;
        for p in &taken {
            self.index.remove(&p.path);
        }
        for (i, p) in self.paths.iter().enumerate() {
            if let Some(slot) = self.index.get_mut(&p.path) {
                *slot = i;
            }
        }
        let source = self.source;
        taken
            .into_iter()
            .flat_map(|p| {
                let path = p.path;
                p.kinds.into_iter().map(move |kind| Event {
                    path: path.clone(),
                    kind,
                    source,
                })
            })
            .collect()
    }
}

/// At most this many queued messages are taken in one go before deadlines are looked at, so a
/// flood of events cannot hold back delivery (the `max_wait` cap included).
const DRAIN_MAX: usize = 1024;

struct Loop {
    root: PathBuf,
    config: WatchConfig,
    backend: Backend,
    /// The loop's own inbox, for a polling backend started while running.
    control: std_mpsc::Sender<Internal>,
    tx: mpsc::Sender<Batch>,
    root_id: Option<(u64, u64)>,
    warned_limit: bool,
    pending: Pending,
    /// A rescan to deliver at once (overflow, watcher error, timer) with whatever is pending.
    rescan: Option<Rescan>,
    /// An event on `_polis/` itself, its parent or a sibling (or under a `_polis/` believed
    /// gone): look at the folder now rather than after the debounce.
    root_touched: bool,
}

impl Loop {
    fn new(
        root: PathBuf,
        config: WatchConfig,
        backend: Backend,
        control: std_mpsc::Sender<Internal>,
        tx: mpsc::Sender<Batch>,
    ) -> Loop {
        let root_id = folder_id(&root);
        let cap = config
            .max_delay
            .unwrap_or_else(|| max_wait(config.debounce))
            .max(config.debounce);
        let pending = Pending::new(config.debounce, cap, backend.source())
            .with_fast(&config.fast_paths, config.fast_debounce);
        Loop {
            root,
            config,
            backend,
            control,
            tx,
            root_id,
            warned_limit: false,
            pending,
            rescan: None,
            root_touched: false,
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
        let interval = self.config.rescan_interval;
        let mut next_timer = interval.and_then(|i| Instant::now().checked_add(i));
        loop {
            // Sleep until a message comes, the rescan timer fires or the next batch falls due;
            // with neither a timer nor anything pending, until a message.
            let first = match earliest(next_timer, self.pending.next_deadline()) {
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
            // Take what else is queued as well: a burst costs one look at the deadlines and
            // lands in as few batches as possible.
            let mut next = first;
            let mut taken = 0;
            while let Some(msg) = next.take() {
                match msg {
                    Internal::Stop => return,
                    Internal::Raw(Ok(event)) => self.translate(event, Instant::now()),
                    Internal::Raw(Err(error)) => self.error(error),
                }
                taken += 1;
                if taken < DRAIN_MAX {
                    next = match inbox.try_recv() {
                        Ok(m) => Some(m),
                        Err(std_mpsc::TryRecvError::Empty) => None,
                        Err(std_mpsc::TryRecvError::Disconnected) => return,
                    };
                }
            }
            let now = Instant::now();
            if next_timer.is_some_and(|at| at <= now) {
                next_timer = interval.and_then(|i| now.checked_add(i));
                self.rescan.get_or_insert(Rescan {
                    reason: RescanReason::Timer,
                });
            }
            if !self.deliver(now) {
                return;
            }
        }
    }

    /// Sends what is due at `now`: with a rescan, at once and with everything pending (the
    /// rescan covers those paths anyway); otherwise the paths that are due, if any. False when
    /// the receiver is gone.
    fn deliver(&mut self, now: Instant) -> bool {
        let mut batch = Batch {
            events: Vec::new(),
            rescan: self.rescan.take(),
        };
        if std::mem::take(&mut self.root_touched) {
            self.check_root(&mut batch);
        }
        let due = if batch.rescan.is_some() {
            self.pending.take_all()
        } else {
            self.pending.due(now)
        };
        if due.is_empty() && batch.rescan.is_none() {
            return true;
        }
        self.complete(due, &mut batch);
        self.check_root(&mut batch);
        if self.root_id.is_none() {
            // Nothing under a missing `_polis/` can be trusted; the rescan says so.
            batch.events.clear();
            self.pending.clear();
        }
        if batch.events.is_empty() && batch.rescan.is_none() {
            return true;
        }
        self.send(batch)
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
            self.backend.unwatch_polis(&self.root);
            RescanReason::PolisRemoved
        } else {
            match self.backend.rewatch(&self.root) {
                Ok(()) => RescanReason::PolisRecreated,
                Err(e) => {
                    // Seen again on the next event or tick: forget the id so we retry.
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

    /// A folder that appeared directly in `_polis/` or `contracts/`, which are watched without
    /// recursion (see [`native_watches`]): watched now, with what is under it. Deeper folders
    /// are the recursive watches' business, as are all of them when polling.
    fn watch_new_folder(&mut self, path: &Path) {
        let Backend::Native(..) = self.backend else {
            return;
        };
        let Some(parent) = path.parent() else {
            return;
        };
        if parent != self.root && parent != self.root.join("contracts") {
            return;
        }
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return;
        }
        let root = self.root.clone();
        if let Err(e) = self.backend.watch_polis(&root, path) {
            self.error(e);
        }
    }

    fn error(&mut self, e: notify::Error) {
        let gone = matches!(&e.kind, notify::ErrorKind::PathNotFound)
            || matches!(&e.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound);
        // A file vanishing mid-scan (polling) is an ordinary removal, already reported.
        if gone {
            return;
        }
        // A folder made while running could not be watched: the native watches no longer
        // cover the polis, so it is polled from now on, as when the limit is hit at start.
        if matches!(e.kind, notify::ErrorKind::MaxFilesWatch)
            && matches!(self.backend, Backend::Native(..))
        {
            match Backend::poll(&self.root, &self.config, &self.control) {
                Ok(poll) => {
                    tracing::warn!(
                        "native file watching of {} failed ({e}); polling every {:?} instead. {}",
                        self.root.display(),
                        self.config.poll_interval,
                        fallback_advice(&e)
                    );
                    // Dropping the native watcher gives its watches back.
                    self.backend = poll;
                    self.pending.source = self.backend.source();
                    self.warned_limit = true;
                    self.rescan = Some(Rescan {
                        reason: RescanReason::Polling,
                    });
                    return;
                }
                Err(poll) => tracing::warn!(
                    "cannot poll {} after the watch limit was reached: {poll}",
                    self.root.display()
                ),
            }
        }
        if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) && !self.warned_limit {
            self.warned_limit = true;
            tracing::warn!(
                "some folders of {} are not watched ({e}). {}",
                self.root.display(),
                fallback_advice(&e)
            );
        }
        // Errors arriving together make one rescan; another reason already pending wins.
        match &mut self.rescan {
            None => {
                self.rescan = Some(Rescan {
                    reason: RescanReason::WatcherError(e.to_string()),
                })
            }
            Some(Rescan {
                reason: RescanReason::WatcherError(messages),
            }) => {
                messages.push_str("; ");
                messages.push_str(&e.to_string());
            }
            Some(_) => {}
        }
    }

    /// Files one raw event under the paths it names (or asks for a rescan or a look at
    /// `_polis/` itself).
    fn translate(&mut self, event: notify::Event, now: Instant) {
        if event.need_rescan() {
            self.rescan.get_or_insert(Rescan {
                reason: RescanReason::Overflow,
            });
        }
        let kind = match event.kind {
            notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => EventKind::Modify,
            // Opens and reads (including polisd's own) change nothing.
            notify::EventKind::Access(_) | notify::EventKind::Other => return,
            notify::EventKind::Create(_) => EventKind::Create,
            notify::EventKind::Modify(ModifyKind::Name(_)) => EventKind::Rename,
            notify::EventKind::Modify(_) => EventKind::Modify,
            notify::EventKind::Remove(_) => EventKind::Remove,
            notify::EventKind::Any => EventKind::Any,
        };
        for path in event.paths {
            // Events on `_polis/` itself, its parent and its siblings: check_root looks at the
            // folder (a stat) rather than trusting what they say.
            let rel = match path.strip_prefix(&self.root) {
                Ok(rel) if !rel.as_os_str().is_empty() => rel,
                _ => {
                    self.root_touched = true;
                    continue;
                }
            };
            let ignored = rel
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(crate::protocol::layout::is_temporary_name);
            if ignored {
                continue;
            }
            if self.root_id.is_none() {
                // Nothing under a `_polis/` believed gone is trusted; look at the folder again.
                self.root_touched = true;
                continue;
            }
            if matches!(kind, EventKind::Create | EventKind::Rename | EventKind::Any) {
                self.watch_new_folder(&path);
            }
            self.pending.add(rel.to_path_buf(), kind, now);
        }
    }

    /// Puts due events in the batch, each followed by the contents of a folder that appeared.
    fn complete(&self, due: Vec<Event>, batch: &mut Batch) {
        let mut seen = HashSet::new();
        for event in due {
            let appeared = matches!(event.kind, EventKind::Create | EventKind::Rename);
            let path = self.root.join(&event.path);
            if seen.insert(event.clone()) {
                batch.events.push(event);
            }
            if appeared {
                self.walk_new_folder(&path, &mut seen, batch);
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
                if name
                    .to_str()
                    .is_some_and(crate::protocol::layout::is_temporary_name)
                {
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

    /// Held while starting a watcher, so no test starts one while FAIL_NATIVE is set.
    static STARTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn watch_native(root: &Path, config: WatchConfig) -> (Watcher, mpsc::Receiver<Batch>) {
        let (w, mut rx) = {
            let _starting = STARTING.lock().unwrap_or_else(|e| e.into_inner());
            watch(root, config).unwrap()
        };
        assert_eq!(w.mode(), Mode::Native);
        assert_eq!(
            recv_within(&mut rx).rescan.unwrap().reason,
            RescanReason::Started
        );
        (w, rx)
    }

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

    /// Waits (with a deadline) for a batch naming `rel`.
    #[track_caller]
    fn wait_for_path(rx: &mut mpsc::Receiver<Batch>, rel: &str) {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no event for {rel} within 10 s");
            if let Ok(b) = rx.try_recv() {
                if b.events.iter().any(|e| e.path == Path::new(rel)) {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn folders_made_after_the_start_in_unrecursed_folders_are_watched_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::create_dir_all(root.join("citizens/a-agent")).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let (_w, mut rx) = watch_native(
            &root,
            WatchConfig {
                debounce: Duration::from_millis(20),
                ..WatchConfig::default()
            },
        );
        // Watched at the start: a deep folder (recursive), settled/ (without recursion).
        std::fs::write(root.join("citizens/a-agent/status.md"), "x").unwrap();
        wait_for_path(&mut rx, "citizens/a-agent/status.md");
        std::fs::write(root.join("contracts/settled/c.md"), "x").unwrap();
        wait_for_path(&mut rx, "contracts/settled/c.md");
        // Made later directly in `_polis/` and in `contracts/`, with a folder inside.
        std::fs::create_dir(root.join("lessons")).unwrap();
        wait_for_path(&mut rx, "lessons");
        std::fs::create_dir(root.join("lessons/python")).unwrap();
        wait_for_path(&mut rx, "lessons/python");
        std::fs::write(root.join("lessons/python/l.md"), "x").unwrap();
        wait_for_path(&mut rx, "lessons/python/l.md");
        std::fs::create_dir(root.join("contracts/drafts")).unwrap();
        wait_for_path(&mut rx, "contracts/drafts");
        std::fs::write(root.join("contracts/drafts/d.md"), "x").unwrap();
        wait_for_path(&mut rx, "contracts/drafts/d.md");
        // settled/ removed and made again: still watched.
        std::fs::remove_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::create_dir(root.join("contracts/settled")).unwrap();
        wait_for_path(&mut rx, "contracts/settled");
        std::fs::write(root.join("contracts/settled/e.md"), "x").unwrap();
        wait_for_path(&mut rx, "contracts/settled/e.md");
    }

    #[test]
    fn the_native_watches_leave_settled_unrecursed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
        std::fs::create_dir_all(root.join("contracts/open")).unwrap();
        std::fs::create_dir_all(root.join("citizens")).unwrap();
        std::fs::write(root.join("polis.yml"), "x").unwrap();
        let mut got = Vec::new();
        native_watches(&root, &root, |path, mode| {
            got.push((path.to_path_buf(), mode));
            Ok(true)
        })
        .unwrap();
        let want = vec![
            (root.clone(), RecursiveMode::NonRecursive),
            (root.join("citizens"), RecursiveMode::Recursive),
            (root.join("contracts"), RecursiveMode::NonRecursive),
            (root.join("contracts/open"), RecursiveMode::Recursive),
            (root.join("contracts/settled"), RecursiveMode::NonRecursive),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_folder_made_while_the_watches_are_set_is_watched() {
        // A restored tree arriving during the walk: `contracts/` appears after `_polis/` is
        // watched. Listing before watching missed it, and with it every later settlement.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        let mut got = Vec::new();
        native_watches(&root, &root, |path, mode| {
            if path == root {
                std::fs::create_dir_all(root.join("contracts/settled")).unwrap();
            }
            got.push((path.to_path_buf(), mode));
            Ok(true)
        })
        .unwrap();
        assert!(
            got.contains(&(root.join("contracts/settled"), RecursiveMode::NonRecursive)),
            "{got:?}"
        );
    }

    #[test]
    fn native_failure_at_start_falls_back_to_polling() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        let starting = STARTING.lock().unwrap_or_else(|e| e.into_inner());
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
        drop(starting);
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

    const MS: Duration = Duration::from_millis(1);

    fn pending(debounce_ms: u64) -> Pending {
        let debounce = MS * debounce_ms as u32;
        Pending::new(debounce, max_wait(debounce), Source::Native)
    }

    fn ev(path: &str, kind: EventKind) -> Event {
        Event {
            path: PathBuf::from(path),
            kind,
            source: Source::Native,
        }
    }

    #[test]
    fn pending_empty_has_no_deadline() {
        let mut p = pending(50);
        assert_eq!(p.next_deadline(), None);
        assert!(p.due(Instant::now()).is_empty());
        assert!(p.take_all().is_empty());
    }

    #[test]
    fn pending_path_touched_again_within_the_window_is_held() {
        let t0 = Instant::now();
        let mut p = pending(50);
        p.add("chronicle.md".into(), EventKind::Modify, t0);
        assert_eq!(p.next_deadline(), Some(t0 + 50 * MS));
        p.add("chronicle.md".into(), EventKind::Modify, t0 + 40 * MS);
        // The first window has passed, but the path was touched 20 ms ago.
        assert!(p.due(t0 + 60 * MS).is_empty());
        assert_eq!(p.next_deadline(), Some(t0 + 90 * MS));
        assert!(p.due(t0 + 89 * MS).is_empty());
        assert_eq!(
            p.due(t0 + 90 * MS),
            vec![ev("chronicle.md", EventKind::Modify)]
        );
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn pending_paths_quiet_at_different_times_are_delivered_separately() {
        let t0 = Instant::now();
        let mut p = pending(50);
        p.add("a.md".into(), EventKind::Create, t0);
        p.add("b.md".into(), EventKind::Modify, t0 + 30 * MS);
        assert_eq!(p.next_deadline(), Some(t0 + 50 * MS));
        assert_eq!(p.due(t0 + 50 * MS), vec![ev("a.md", EventKind::Create)]);
        assert_eq!(p.next_deadline(), Some(t0 + 80 * MS));
        assert!(p.due(t0 + 79 * MS).is_empty());
        assert_eq!(p.due(t0 + 80 * MS), vec![ev("b.md", EventKind::Modify)]);
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn pending_delivers_every_quiet_path_at_once_in_first_seen_order() {
        let t0 = Instant::now();
        let mut p = pending(50);
        p.add("b.md".into(), EventKind::Create, t0);
        p.add("a.md".into(), EventKind::Modify, t0 + 10 * MS);
        p.add("b.md".into(), EventKind::Modify, t0 + 20 * MS);
        p.add("b.md".into(), EventKind::Create, t0 + 20 * MS);
        p.add("c.md".into(), EventKind::Remove, t0 + 45 * MS);
        // Each kind once, in the order seen; c.md is not quiet yet.
        assert_eq!(
            p.due(t0 + 70 * MS),
            vec![
                ev("b.md", EventKind::Create),
                ev("b.md", EventKind::Modify),
                ev("a.md", EventKind::Modify),
            ]
        );
        // The index follows the paths that stayed.
        p.add("c.md".into(), EventKind::Modify, t0 + 80 * MS);
        p.add("a.md".into(), EventKind::Remove, t0 + 80 * MS);
        assert_eq!(
            p.take_all(),
            vec![
                ev("c.md", EventKind::Remove),
                ev("c.md", EventKind::Modify),
                ev("a.md", EventKind::Remove),
            ]
        );
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn pending_caps_the_wait_of_a_path_written_without_pause() {
        assert_eq!(max_wait(50 * MS), Duration::from_secs(1));
        assert_eq!(max_wait(Duration::from_millis(500)), Duration::from_secs(5));
        let t0 = Instant::now();
        let mut p = pending(50);
        let mut delivered = Vec::new();
        // A line appended every 20 ms for 2.5 s: never quiet for 50 ms.
        for k in 0..=125u32 {
            let now = t0 + 20 * MS * k;
            p.add("chronicle.md".into(), EventKind::Modify, now);
            if !p.due(now).is_empty() {
                delivered.push(now - t0);
            }
        }
        assert_eq!(
            delivered,
            vec![Duration::from_millis(1000), Duration::from_millis(2020)]
        );
        // The last window (from 2.04 s) ends 50 ms after the last write.
        assert_eq!(p.next_deadline(), Some(t0 + 2550 * MS));
    }

    #[test]
    fn pending_gathers_paths_falling_due_just_after_the_first() {
        let t0 = Instant::now();
        // A quarter of 40 ms: paths falling due within 10 ms of the first go with it.
        let mut p = pending(40);
        p.add("a.md".into(), EventKind::Create, t0);
        p.add("b.md".into(), EventKind::Create, t0 + 4 * MS);
        p.add("c.md".into(), EventKind::Create, t0 + 9 * MS);
        p.add("d.md".into(), EventKind::Create, t0 + 12 * MS);
        // a.md is due at 40 ms; b.md and c.md fall due within 10 ms of it, d.md does not.
        assert_eq!(p.next_deadline(), Some(t0 + 49 * MS));
        assert!(p.due(t0 + 40 * MS).is_empty());
        assert!(p.due(t0 + 48 * MS).is_empty());
        assert_eq!(
            p.due(t0 + 49 * MS),
            vec![
                ev("a.md", EventKind::Create),
                ev("b.md", EventKind::Create),
                ev("c.md", EventKind::Create),
            ]
        );
        // d.md, alone now, goes the moment it is due.
        assert_eq!(p.next_deadline(), Some(t0 + 52 * MS));
        assert_eq!(p.due(t0 + 52 * MS), vec![ev("d.md", EventKind::Create)]);
    }

    #[test]
    fn pending_fast_path_is_delivered_while_it_keeps_changing() {
        // Eight agents appending keep the chronicle from ever being quiet for the
        // debounce; its own debounce (30 ms, capped at four of it) delivers it regardless,
        // while other paths keep theirs.
        let t0 = Instant::now();
        let mut p = pending(200).with_fast(&[PathBuf::from("chronicle.md")], 30 * MS);
        p.add("contracts/open/x.md".into(), EventKind::Create, t0);
        let mut chronicle = Vec::new();
        let mut other = None;
        for k in 0..=100u32 {
            let now = t0 + 10 * MS * k;
            p.add("chronicle.md".into(), EventKind::Modify, now);
            for e in p.due(now) {
                if e.path == Path::new("chronicle.md") {
                    chronicle.push(now - t0);
                } else {
                    other.get_or_insert(now - t0);
                }
            }
        }
        assert_eq!(chronicle.first(), Some(&Duration::from_millis(120)));
        let gaps: Vec<_> = chronicle.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| *g <= 130 * MS), "{chronicle:?}");
        let other = other.expect("the contract was delivered");
        assert!(other >= 200 * MS && other <= 250 * MS, "{other:?}");
    }

    #[test]
    fn pending_with_zero_debounce_is_due_at_once() {
        let t0 = Instant::now();
        let mut p = pending(0);
        p.add("a.md".into(), EventKind::Create, t0);
        assert_eq!(p.next_deadline(), Some(t0));
        assert_eq!(p.due(t0), vec![ev("a.md", EventKind::Create)]);
    }

    /// Starts a native watcher with a debounce far longer than any test waits.
    fn start_slow(root: &Path) -> (Watcher, mpsc::Receiver<Batch>) {
        watch_native(
            root,
            WatchConfig {
                debounce: Duration::from_secs(3600),
                rescan_interval: None,
                ..WatchConfig::default()
            },
        )
    }

    #[test]
    fn overflow_is_delivered_at_once_with_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        let (w, mut rx) = start_slow(&root);
        let root = w.root().to_path_buf();
        let raw = |e: notify::Event| w.control.send(Internal::Raw(Ok(e))).unwrap();
        raw(
            notify::Event::new(notify::EventKind::Modify(ModifyKind::Any))
                .add_path(root.join("chronicle.md")),
        );
        raw(notify::Event::new(notify::EventKind::Other).set_flag(notify::event::Flag::Rescan));
        let batch = recv_within(&mut rx);
        assert_eq!(batch.rescan.unwrap().reason, RescanReason::Overflow);
        assert_eq!(batch.events, vec![ev("chronicle.md", EventKind::Modify)]);
    }

    #[test]
    fn watcher_errors_are_delivered_at_once_and_missing_paths_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        let (w, mut rx) = start_slow(&root);
        let error = |e: notify::Error| w.control.send(Internal::Raw(Err(e))).unwrap();
        error(notify::Error::path_not_found());
        error(notify::Error::generic("boom"));
        let reason = recv_within(&mut rx).rescan.unwrap().reason;
        assert_eq!(reason, RescanReason::WatcherError("boom".into()));
    }

    /// The watch limit reached on a folder made while running (notify reports it as an error
    /// event): the polis is polled from then on, so a change in that folder is still seen,
    /// rather than waiting for the next safety rescan.
    #[test]
    fn watch_limit_reached_while_running_falls_back_to_polling() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        let (w, mut rx) = watch_native(
            &root,
            WatchConfig {
                debounce: Duration::from_millis(20),
                poll_interval: Duration::from_millis(50),
                ..WatchConfig::default()
            },
        );
        let limit = notify::Error::new(notify::ErrorKind::MaxFilesWatch)
            .add_path(root.join("citizens/new-agent"));
        w.control.send(Internal::Raw(Err(limit))).unwrap();
        let reason = recv_within(&mut rx).rescan.unwrap().reason;
        assert_eq!(reason, RescanReason::Polling);
        std::fs::write(root.join("chronicle.md"), "- a\n").unwrap();
        let batch = recv_within(&mut rx);
        assert_eq!(batch.events[0].path, Path::new("chronicle.md"));
        assert_eq!(batch.events[0].source, Source::Poll);
    }

    #[test]
    fn zero_debounce_delivers_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("_polis");
        std::fs::create_dir(&root).unwrap();
        let (_w, mut rx) = watch_native(
            &root,
            WatchConfig {
                debounce: Duration::ZERO,
                rescan_interval: None,
                ..WatchConfig::default()
            },
        );
        std::fs::write(root.join("chronicle.md"), "- a\n").unwrap();
        let batch = recv_within(&mut rx);
        assert_eq!(batch.rescan, None);
        assert_eq!(batch.events[0], ev("chronicle.md", EventKind::Create));
    }

    #[test]
    fn reads_are_dropped_before_the_inbox_closes_after_writing_are_not() {
        let access = |k| notify::Event::new(notify::EventKind::Access(k));
        assert!(is_read(&access(AccessKind::Open(AccessMode::Any))));
        assert!(is_read(&access(AccessKind::Close(AccessMode::Read))));
        assert!(!is_read(&access(AccessKind::Close(AccessMode::Write))));
        assert!(!is_read(&notify::Event::new(notify::EventKind::Modify(
            ModifyKind::Any
        ))));
        assert!(!is_read(
            &notify::Event::new(notify::EventKind::Other).set_flag(notify::event::Flag::Rescan)
        ));
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
