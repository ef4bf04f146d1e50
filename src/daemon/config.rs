//! polisd's own configuration (TOML): which polises to watch, how to watch them, what the daemon
//! may do on its own, which notifications it sends and how it logs.
//!
//! This module finds, reads and checks the file; it never writes it (`service install` writes a
//! first one) and never touches a polis. Every key is documented with its default in the
//! top-level `config.example.toml`; a test keeps the two in step. A bad key or value is an error
//! naming the file, the line, the key and what is accepted — the daemon never starts on a guess.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The config file's name inside the user config directory.
pub const FILE_NAME: &str = "config.toml";
/// Environment variable naming the config file when `--config` is not given.
pub const ENV_VAR: &str = "POLISD_CONFIG";

/// Declares the notification kinds once: [`NOTIFICATION_KINDS`] and the form in which the
/// config file writes them (`kind = bool`, one serde field each so that an unknown or
/// mistyped kind is reported at its own line).
macro_rules! notification_kinds {
    ($($field:ident = $kind:literal,)*) => {
        /// The notification kinds of SPEC §9, spelled as in the inbox marker
        /// `polisd:<kind>:<id>`. They are also the key names in `[notifications]`.
        pub const NOTIFICATION_KINDS: [&str; [$($kind),*].len()] = [$($kind),*];

        /// A `notifications` table as written in the file.
        #[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        struct NotificationTable {
            $(
                #[serde(rename = $kind, skip_serializing_if = "Option::is_none")]
                $field: Option<bool>,
            )*
        }

        impl From<NotificationTable> for NotificationOverrides {
            fn from(table: NotificationTable) -> Self {
                let mut out = NotificationOverrides::default();
                $(out.name($kind, table.$field);)*
                out
            }
        }

        impl From<NotificationOverrides> for NotificationTable {
            fn from(o: NotificationOverrides) -> Self {
                NotificationTable {
                    $($field: o.get($kind),)*
                }
            }
        }
    };
}

notification_kinds! {
    chronicle_finding = "chronicle-finding",
    contract_routed = "contract-routed",
    contract_settled = "contract-settled",
    quality_defaulted = "quality-defaulted",
    review_needed = "review-needed",
    amendment_proposed = "amendment-proposed",
    amendment_ratified = "amendment-ratified",
    amendment_rejected = "amendment-rejected",
    amendment_expired = "amendment-expired",
    lesson_filed = "lesson-filed",
    contract_stale = "contract-stale",
    card_changed = "card-changed",
    sync_conflict = "sync-conflict",
    worktree_diverged = "worktree-diverged",
    record_finding = "record-finding",
    reservation_conflict = "reservation-conflict",
    claim_conflict = "claim-conflict",
    setting_change = "setting-change",
    handoff_opened = "handoff-opened",
    handoff_deferred = "handoff-deferred",
    citizen_needed = "citizen-needed",
    contract_unblocked = "contract-unblocked",
    council_prompt = "council-prompt",
    council_over_limit = "council-over-limit",
    council_verdict_invalid = "council-verdict-invalid",
    council_verdict = "council-verdict",
    review_decided = "review-decided",
    postit_missing = "postit-missing",
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {} (from {origin}) does not exist", path.display())]
    Missing { path: PathBuf, origin: &'static str },
    /// A syntax error, an unknown key or a bad value. `key` is the dotted key when known.
    #[error("{}:{line}:{column}: {}{message}", path.display(), key.as_deref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        key: Option<String>,
        message: String,
    },
    #[error("no user config directory (is HOME set?); pass --config FILE or set {ENV_VAR}")]
    NoConfigDir,
}

/// Where the configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--config FILE`.
    Flag,
    /// `$POLISD_CONFIG`.
    Env,
    /// The user config directory; a missing file there means defaults.
    Default,
}

impl Origin {
    pub fn describe(&self) -> &'static str {
        match self {
            Origin::Flag => "--config",
            Origin::Env => "$POLISD_CONFIG",
            Origin::Default => "the user config directory",
        }
    }
}

/// A config file location and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    pub origin: Origin,
}

/// The default config file: `config.toml` in the user config directory
/// (`~/.config/polisd/` on Linux, `~/Library/Application Support/polisd/` on macOS).
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "polisd").map(|d| d.config_dir().join(FILE_NAME))
}

/// Chooses the config file: `--config`, else `$POLISD_CONFIG` (when non-empty), else `default`.
/// Relative paths are taken from `cwd`. Pure, so tests need not touch the environment.
pub fn resolve_location(
    flag: Option<&Path>,
    env: Option<&std::ffi::OsStr>,
    default: Option<PathBuf>,
    cwd: &Path,
) -> Option<Location> {
    let absolute = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    if let Some(path) = flag {
        return Some(Location {
            path: absolute(path),
            origin: Origin::Flag,
        });
    }
    if let Some(env) = env.filter(|e| !e.is_empty()) {
        return Some(Location {
            path: absolute(Path::new(env)),
            origin: Origin::Env,
        });
    }
    default.map(|path| Location {
        path,
        origin: Origin::Default,
    })
}

/// Finds and loads the configuration for this process (`--config`, `$POLISD_CONFIG`, the user
/// config directory).
pub fn load(flag: Option<&Path>) -> Result<Config, ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let env = std::env::var_os(ENV_VAR);
    let location = resolve_location(flag, env.as_deref(), default_path(), &cwd)
        .ok_or(ConfigError::NoConfigDir)?;
    load_from(&location, home_dir().as_deref())
}

/// The user's home directory, for `~` in polis paths.
pub fn home_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf())
}

/// Loads the file at `location`. A missing file is an error when it was named explicitly and
/// means "defaults, no polises" when it is the default location.
pub fn load_from(location: &Location, home: Option<&Path>) -> Result<Config, ConfigError> {
    match std::fs::read_to_string(&location.path) {
        Ok(text) => parse(&text, &location.path, home),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match location.origin {
            Origin::Default => Ok(Config {
                file: None,
                ..Config::default()
            }),
            _ => Err(ConfigError::Missing {
                path: location.path.clone(),
                origin: location.origin.describe(),
            }),
        },
        Err(source) => Err(ConfigError::Read {
            path: location.path.clone(),
            source,
        }),
    }
}

/// The configuration polisd runs with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// The file it was read from; `None` for built-in defaults.
    pub file: Option<PathBuf>,
    pub polises: Vec<PolisEntry>,
    pub watch: Watch,
    pub behaviour: Behaviour,
    pub notifications: Notifications,
    pub log: Log,
    pub dashboard: Dashboard,
}

/// One `[[polis]]` entry, its path made absolute.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolisEntry {
    /// The project root or `_polis/` folder, as written (after `~` expansion and resolving a
    /// relative path against the config file's folder).
    pub path: PathBuf,
    /// The line of `path =` in the config file.
    pub line: usize,
    pub overrides: Overrides,
}

/// What a `[[polis]]` entry may override.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Overrides {
    pub auto_route: Option<bool>,
    pub rollover: Option<bool>,
    pub writer: Option<WriterMode>,
    pub reflect: Option<bool>,
    pub notifications: NotificationOverrides,
}

/// `[watch]`: how changes are noticed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Watch {
    /// Quiet time after the last change to a file before polisd acts on it.
    #[serde(with = "human_duration")]
    pub debounce: Duration,
    /// Longest polisd waits for a file that keeps changing.
    #[serde(with = "human_duration")]
    pub max_delay: Duration,
    pub backend: Backend,
    /// How often the poll backend scans (also used when `auto` falls back to polling).
    #[serde(with = "human_duration")]
    pub poll_interval: Duration,
    /// A full rescan catches events every backend can miss; `0s` turns it off.
    #[serde(with = "human_duration")]
    pub rescan_interval: Duration,
    /// How long an agent's file must be unchanged before polisd edits or moves it; `0s` means
    /// twice the debounce (see [`Watch::stability_window`]).
    #[serde(with = "human_duration")]
    pub stability: Duration,
    /// The chronicle's own debounce: a complete line is final, so appended lines are validated
    /// this soon after they land even while agents keep appending.
    #[serde(with = "human_duration")]
    pub chronicle_debounce: Duration,
    /// The transfer settling window (docs/sync.md): a finding that a file still in transit
    /// may resolve (a link to a contract not here yet, a line lost while a peer's version
    /// replaced the chronicle) is told only once the polis has been quiet this long and it
    /// still stands. `0s` tells at once.
    #[serde(with = "human_duration")]
    pub settling: Duration,
}

impl Watch {
    /// The stability window for agents' files: `stability`, or twice the debounce when unset.
    pub fn stability_window(&self) -> Duration {
        if self.stability.is_zero() {
            self.debounce.saturating_mul(2)
        } else {
            self.stability
        }
    }
}

impl Default for Watch {
    fn default() -> Self {
        Watch {
            debounce: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
            backend: Backend::Auto,
            poll_interval: Duration::from_secs(2),
            rescan_interval: Duration::from_secs(300),
            stability: Duration::ZERO,
            chronicle_debounce: Duration::from_millis(30),
            settling: Duration::from_secs(10),
        }
    }
}

/// Which file watcher to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The platform's native events, falling back to polling where they are unavailable.
    #[default]
    Auto,
    /// Native events only (inotify, FSEvents); fail if unavailable.
    Native,
    /// Scan every `poll_interval` (network and synced file systems).
    Poll,
}

/// `[behaviour]`: what the daemon does on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Behaviour {
    /// Recommend a citizen for each new open contract (SPEC §7).
    pub auto_route: bool,
    /// Move `chronicle.md` to a quarterly archive at the start of a quarter (SPEC §3).
    pub rollover: bool,
    /// Whether this machine's polisd appends and edits (docs/sync.md).
    pub writer: WriterMode,
    /// Propose amendments from recurring friction, daily and after settlements.
    pub reflect: bool,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            auto_route: true,
            reflect: true,
            rollover: false,
            writer: WriterMode::Any,
        }
    }
}

/// `writer`: which machines' daemons append lines and notices and edit agents' files, when one
/// polis is synced between several (docs/sync.md). Generated files (`routing_stats.yml`) are
/// written by every daemon: their bytes are the same on every machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriterMode {
    /// Every machine's daemon writes; duplicates that arrive by sync are recognised by id.
    #[default]
    Any,
    /// This machine is the one that writes; a notice another machine's daemon delivered is
    /// reported once (set `writer = "none"` there).
    ThisMachineOnly,
    /// This daemon appends nothing and edits nothing; it validates, reports and keeps
    /// `routing_stats.yml` current.
    None,
}

impl WriterMode {
    /// Whether this daemon appends chronicle lines and inbox notices and edits agents' files
    /// (routing blocks, amendment outcomes, rollover, conflict-copy merges).
    pub fn writes(self) -> bool {
        self != WriterMode::None
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WriterMode::Any => "any",
            WriterMode::ThisMachineOnly => "this-machine-only",
            WriterMode::None => "none",
        }
    }
}

// The switch sets below keep one bit per kind.
const _: () = assert!(NOTIFICATION_KINDS.len() <= u32::BITS as usize);

/// The bit of `kind` in the switch sets below: its place in [`NOTIFICATION_KINDS`].
fn kind_bit(kind: &str) -> Option<u32> {
    NOTIFICATION_KINDS
        .iter()
        .position(|k| *k == kind)
        .map(|i| 1 << i)
}

/// `[notifications]`: one switch per SPEC §9 kind; all on by default. Written in the file as
/// `kind = bool` under the kinds' own names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "NotificationTable", into = "NotificationTable")]
pub struct Notifications {
    /// The kinds switched off, one bit each.
    off: u32,
}

impl Notifications {
    /// Whether notifications of `kind` (a SPEC §9 kind string) are sent. Kinds this version
    /// does not know are sent: switching off is always explicit.
    pub fn enabled(&self, kind: &str) -> bool {
        kind_bit(kind).is_none_or(|bit| self.off & bit == 0)
    }

    /// Turns `kind` on or off; `false` when the kind is unknown.
    pub fn set(&mut self, kind: &str, on: bool) -> bool {
        let Some(bit) = kind_bit(kind) else {
            return false;
        };
        if on {
            self.off &= !bit;
        } else {
            self.off |= bit;
        }
        true
    }
}

/// A `[[polis]]` entry's `notifications` table: only the kinds it names change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "NotificationTable", into = "NotificationTable")]
pub struct NotificationOverrides {
    /// The kinds the table names, one bit each, and of those the ones it switches on.
    named: u32,
    on: u32,
}

impl NotificationOverrides {
    fn is_empty(&self) -> bool {
        self.named == 0
    }

    /// Every kind named, set to `on`.
    fn all(on: bool) -> Self {
        let every = (1u32 << NOTIFICATION_KINDS.len()) - 1;
        NotificationOverrides {
            named: every,
            on: if on { every } else { 0 },
        }
    }

    fn apply(&self, to: &mut Notifications) {
        to.off = (to.off & !self.named) | (self.named & !self.on);
    }

    /// Records `kind` as set to `on`, when it is set.
    fn name(&mut self, kind: &str, on: Option<bool>) {
        if let (Some(bit), Some(on)) = (kind_bit(kind), on) {
            self.named |= bit;
            if on {
                self.on |= bit;
            }
        }
    }

    /// What the table says of `kind`, if it names it.
    fn get(&self, kind: &str) -> Option<bool> {
        let bit = kind_bit(kind)?;
        (self.named & bit != 0).then_some(self.on & bit != 0)
    }
}

impl From<NotificationTable> for Notifications {
    fn from(table: NotificationTable) -> Self {
        let mut out = Notifications::default();
        NotificationOverrides::from(table).apply(&mut out);
        out
    }
}

impl From<Notifications> for NotificationTable {
    fn from(n: Notifications) -> Self {
        let mut all = NotificationOverrides::all(true);
        all.on &= !n.off;
        all.into()
    }
}

/// `[dashboard]`: the read-only web view `polisd run` serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Dashboard {
    /// Serve it from `polisd run`.
    pub enabled: bool,
    /// `IP:PORT`. Off loopback a token is required (printed once at start).
    pub listen: String,
    /// More `Host` names it answers to (the loopback names and the listen address always
    /// count); anything else gets 403, which stops DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Run for each new item of the human queue, through `sh -c`, with the item in
    /// `POLISD_ITEM_TITLE`, `POLISD_ITEM_ACTION`, `POLISD_ITEM_URL` and `POLISD_POLIS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify_command: Option<String>,
    /// Open connections served at once; one more is answered 503 and closed. Also lowered to
    /// fit the process's file-descriptor limit, keeping descriptors for the daemon.
    pub max_connections: usize,
    /// Live-update streams (`/events`) open at once; one more is answered 503.
    pub max_event_streams: usize,
}

impl Default for Dashboard {
    fn default() -> Self {
        Dashboard {
            enabled: true,
            listen: "127.0.0.1:7341".into(),
            allowed_hosts: Vec::new(),
            notify_command: None,
            max_connections: 256,
            max_event_streams: 64,
        }
    }
}

impl Dashboard {
    /// The parsed listen address (validated when the file is read).
    pub fn listen_addr(&self) -> std::net::SocketAddr {
        self.listen
            .parse()
            .unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 7341)))
    }
}

/// `[log]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Log {
    pub level: LogLevel,
    pub format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Text for a terminal; text without timestamps under journald/launchd (they add their own).
    #[default]
    Auto,
    Text,
    /// One JSON object per line.
    Json,
}

/// The settings that apply to one polis: the global ones with its entry's overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    pub auto_route: bool,
    pub rollover: bool,
    pub writer: WriterMode,
    pub reflect: bool,
    pub notifications: Notifications,
}

impl Config {
    /// The settings for the polis at `polis_path` (a project root or its `_polis/` folder; an
    /// entry naming either matches). A polis no entry names gets the global settings.
    pub fn effective_for(&self, polis_path: &Path) -> Effective {
        let mut eff = Effective {
            auto_route: self.behaviour.auto_route,
            reflect: self.behaviour.reflect,
            rollover: self.behaviour.rollover,
            writer: self.behaviour.writer,
            notifications: self.notifications,
        };
        let wanted = project_root(&normalize(polis_path));
        let entry = self
            .polises
            .iter()
            .find(|e| project_root(&normalize(&e.path)) == wanted);
        if let Some(entry) = entry {
            let o = &entry.overrides;
            eff.auto_route = o.auto_route.unwrap_or(eff.auto_route);
            eff.rollover = o.rollover.unwrap_or(eff.rollover);
            eff.writer = o.writer.unwrap_or(eff.writer);
            eff.reflect = o.reflect.unwrap_or(eff.reflect);
            o.notifications.apply(&mut eff.notifications);
        }
        eff
    }

    /// The configured polis paths, in file order.
    pub fn polis_paths(&self) -> Vec<PathBuf> {
        self.polises.iter().map(|e| e.path.clone()).collect()
    }
}

/// `…/_polis` and `…` name the same polis.
fn project_root(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == "_polis") {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        path.to_path_buf()
    }
}

/// Lexical clean-up (`.`, `..`, trailing `/`) so equal paths compare equal without touching
/// the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The file as written. Separate from `Config` so polis paths keep their spans for errors.

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    polis: Vec<PolisFileEntry>,
    watch: Watch,
    behaviour: Behaviour,
    notifications: Notifications,
    log: Log,
    dashboard: Dashboard,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolisFileEntry {
    path: toml::Spanned<String>,
    // Listed one by one rather than flattening `Overrides`: serde's flatten loses the spans
    // and the unknown-key check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    auto_route: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rollover: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    writer: Option<WriterMode>,
    reflect: Option<bool>,
    #[serde(default, skip_serializing_if = "NotificationOverrides::is_empty")]
    notifications: NotificationOverrides,
}

/// Every dotted key the parser accepts (`watch.debounce`, `polis.path`,
/// `polis.notifications.card-changed`, …), derived from the types above so it cannot drift.
pub fn accepted_keys() -> BTreeSet<String> {
    // Every override filled in so that serialising shows every key. The struct literals (no
    // `..Default::default()`) make adding a field here a compile error until it is listed; a
    // notification kind is listed by being in NOTIFICATION_KINDS.
    let all = NotificationOverrides::all(true);
    let sample = ConfigFile {
        polis: vec![PolisFileEntry {
            path: toml::Spanned::new(0..0, "~/project".into()),
            auto_route: Some(true),
            rollover: Some(true),
            writer: Some(WriterMode::Any),
            reflect: Some(true),
            notifications: all,
        }],
        dashboard: Dashboard {
            notify_command: Some("notify-send polisd".into()),
            ..Dashboard::default()
        },
        ..ConfigFile::default()
    };
    let table = toml::Table::try_from(&sample).expect("the config types serialise to TOML");
    keys_of_table(&table)
}

/// The dotted keys present in a TOML document, with array-of-table elements merged under
/// their array's name. For checking `config.example.toml` against [`accepted_keys`].
pub fn keys_of_document(text: &str) -> Result<BTreeSet<String>, toml::de::Error> {
    let table: toml::Table = toml::from_str(text)?;
    Ok(keys_of_table(&table))
}

fn keys_of_table(table: &toml::Table) -> BTreeSet<String> {
    fn walk(prefix: &str, value: &toml::Value, out: &mut BTreeSet<String>) {
        match value {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    walk(&join(prefix, k), v, out);
                }
            }
            toml::Value::Array(items)
                if items.iter().all(|i| i.is_table()) && !items.is_empty() =>
            {
                for item in items {
                    walk(prefix, item, out);
                }
            }
            _ => {
                out.insert(prefix.to_string());
            }
        }
    }
    fn join(prefix: &str, key: &str) -> String {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    }
    let mut out = BTreeSet::new();
    for (k, v) in table {
        walk(k, v, &mut out);
    }
    out
}

/// Parses config text read from `path`. `home` expands a leading `~` in polis paths.
pub fn parse(text: &str, path: &Path, home: Option<&Path>) -> Result<Config, ConfigError> {
    let invalid = |span: Option<std::ops::Range<usize>>, key: Option<String>, message: String| {
        let (line, column) = span.map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            key,
            message,
        }
    };
    let file: ConfigFile = toml::from_str(text).map_err(|e| {
        let key = e.span().and_then(|s| key_at(text, s.start));
        let mut message = e.message().trim_end().to_string();
        // serde's own messages list accepted values only for unknown keys and variants.
        if let Some(accepted) = key.as_deref().and_then(accepted_values) {
            if !message.contains("expected one of") && !message.contains("e.g.") {
                message = format!("{message}; accepted: {accepted}");
            }
        }
        invalid(e.span(), key, message)
    })?;

    let base = path.parent().unwrap_or(Path::new("/"));
    let mut polises: Vec<PolisEntry> = Vec::new();
    for entry in file.polis {
        let span = entry.path.span();
        let raw = entry.path.into_inner();
        let resolved = expand_path(&raw, home, base)
            .map_err(|msg| invalid(Some(span.clone()), Some("polis.path".into()), msg))?;
        if let Some(earlier) = polises
            .iter()
            .find(|p| project_root(&normalize(&p.path)) == project_root(&normalize(&resolved)))
        {
            return Err(invalid(
                Some(span),
                Some("polis.path".into()),
                format!(
                    "{} is already listed on line {}; list each polis once",
                    resolved.display(),
                    earlier.line
                ),
            ));
        }
        polises.push(PolisEntry {
            path: normalize(&resolved),
            line: line_col(text, span.start).0,
            overrides: Overrides {
                auto_route: entry.auto_route,
                rollover: entry.rollover,
                writer: entry.writer,
                reflect: entry.reflect,
                notifications: entry.notifications,
            },
        });
    }

    let watch = file.watch;
    if watch.max_delay < watch.debounce {
        return Err(invalid(
            find_key(text, "watch", "max_delay"),
            Some("watch.max_delay".into()),
            format!(
                "max_delay ({}) is shorter than debounce ({}); it must be at least as long",
                format_duration(watch.max_delay),
                format_duration(watch.debounce)
            ),
        ));
    }
    if watch.poll_interval.is_zero() {
        return Err(invalid(
            find_key(text, "watch", "poll_interval"),
            Some("watch.poll_interval".into()),
            "poll_interval must be longer than 0s, e.g. \"2s\"".into(),
        ));
    }

    if file
        .dashboard
        .listen
        .parse::<std::net::SocketAddr>()
        .is_err()
    {
        return Err(invalid(
            find_key(text, "dashboard", "listen"),
            Some("dashboard.listen".into()),
            format!(
                "listen = {:?} is not an address and port; write e.g. \"127.0.0.1:7341\" (or \"0.0.0.0:7341\" to serve off loopback, with a token)",
                file.dashboard.listen
            ),
        ));
    }

    Ok(Config {
        file: Some(path.to_path_buf()),
        polises,
        watch,
        behaviour: file.behaviour,
        notifications: file.notifications,
        log: file.log,
        dashboard: file.dashboard,
    })
}

/// What a key accepts, in words, for error messages.
fn accepted_values(key: &str) -> Option<&'static str> {
    let last = key.rsplit('.').next().unwrap_or(key);
    Some(match last {
        "debounce" | "max_delay" | "poll_interval" | "rescan_interval" | "stability"
        | "chronicle_debounce" | "settling" => {
            "a quoted duration such as \"200ms\", \"2s\" or \"5m\""
        }
        "backend" => "\"auto\", \"native\" or \"poll\"",
        "level" => "\"error\", \"warn\", \"info\", \"debug\" or \"trace\"",
        "format" => "\"auto\", \"text\" or \"json\"",
        "path" => "a quoted path such as \"~/project\"",
        "writer" => "\"any\", \"this-machine-only\" or \"none\"",
        "auto_route" | "rollover" | "reflect" => "true or false",
        kind if NOTIFICATION_KINDS.contains(&kind) => "true or false",
        _ => return None,
    })
}

/// `~` and `~/x` become the home directory; a relative path is taken from the config file's
/// folder, so a config next to its polises can say `path = "project"`.
fn expand_path(raw: &str, home: Option<&Path>, base: &Path) -> Result<PathBuf, String> {
    if raw.trim().is_empty() {
        return Err("path is empty; give a project root or `_polis/` folder".into());
    }
    let expanded = if raw == "~" || raw.starts_with("~/") {
        let home = home.ok_or_else(|| {
            format!(
                "{raw:?} starts with `~` but the home directory is unknown; write an absolute path"
            )
        })?;
        match raw.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => home.to_path_buf(),
        }
    } else if raw.starts_with('~') {
        return Err(format!(
            "{raw:?}: only `~` and `~/…` (your own home) are expanded; write an absolute path"
        ));
    } else {
        PathBuf::from(raw)
    };
    Ok(if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    })
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The table header (`[watch]`, `[[polis]]`, `[polis.notifications]`) in force at `offset`.
fn table_at(text: &str, offset: usize) -> String {
    let before = &text[..floor_char_boundary(text, offset.min(text.len()))];
    for line in before.lines().rev() {
        let t = line.trim();
        if t.starts_with('[') {
            let inner = t.trim_start_matches('[');
            if let Some(end) = inner.find(']') {
                return inner[..end].trim().replace(' ', "");
            }
        }
    }
    String::new()
}

/// The dotted key an error span points at: the span is either a key itself (unknown field) or
/// a value (bad value), whose key is the one before the `=` on its left.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = &text[line_start..line_end];
    let rel = offset - line_start;
    if line.trim_start().starts_with('[') {
        // An error on a table header: the table itself.
        let t = table_at(text, line_end);
        return (!t.is_empty()).then_some(t);
    }
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let key = if line[rel..].starts_with(is_key_char)
        && line[rel..]
            .trim_start_matches(is_key_char)
            .trim_start()
            .starts_with('=')
    {
        // The span starts at a key.
        line[rel..]
            .split(|c: char| !is_key_char(c))
            .next()?
            .to_string()
    } else {
        // The span is a value: take the key of the nearest `=` on its left.
        let left = &line[..rel];
        let eq = left.rfind('=')?;
        let k = left[..eq].trim_end();
        let start = k.rfind(|c: char| !is_key_char(c)).map_or(0, |i| i + 1);
        k[start..].to_string()
    };
    if key.is_empty() {
        return None;
    }
    let table = table_at(text, line_start);
    Some(if table.is_empty() {
        key
    } else {
        format!("{table}.{key}")
    })
}

/// The span of `key = …` inside `[table]`, for errors found after parsing.
fn find_key(text: &str, table: &str, key: &str) -> Option<std::ops::Range<usize>> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with(key)
            && t[key.len()..].trim_start().starts_with('=')
            && table_at(text, offset) == table
        {
            let start = offset + (line.len() - t.len());
            return Some(start..start + key.len());
        }
        offset += line.len();
    }
    None
}

/// Durations as people write them: `200ms`, `2s`, `5m`, `1h`, or combined (`1m30s`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let err = || {
        format!(
            "{text:?} is not a duration; write a number and a unit (ms, s, m, h), e.g. \"200ms\", \"2s\", \"5m\""
        )
    };
    let s = text.trim();
    if s.is_empty() {
        return Err(err());
    }
    let mut total: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(err());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| err())?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let millis_per = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(err()),
        };
        rest = &rest[unit_len..];
        total = n
            .checked_mul(millis_per)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(err)?;
    }
    Ok(Duration::from_millis(total))
}

/// The shortest exact spelling of a duration in the units [`parse_duration`] reads.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        "0s".into()
    } else if ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1_000) {
        format!("{}s", ms / 1_000)
    } else {
        format!("{ms}ms")
    }
}

mod human_duration {
    use super::{format_duration, parse_duration};
    use serde::{Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration string such as \"200ms\", \"2s\" or \"5m\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "{v} has no unit; write a quoted duration such as \"{v}ms\" or \"{v}s\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Auto => "auto",
            Backend::Native => "native",
            Backend::Poll => "poll",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Config {
        parse(
            text,
            Path::new("/etc/polisd/config.toml"),
            Some(Path::new("/home/u")),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn parse_err(text: &str) -> (usize, Option<String>, String) {
        match parse(
            text,
            Path::new("/c/config.toml"),
            Some(Path::new("/home/u")),
        ) {
            Err(ConfigError::Invalid {
                line, key, message, ..
            }) => (line, key, message),
            other => panic!("expected an Invalid error, got {other:?}"),
        }
    }

    #[test]
    fn empty_file_is_defaults() {
        let c = parse_ok("");
        assert_eq!(c.watch, Watch::default());
        assert_eq!(c.behaviour, Behaviour::default());
        assert!(c.polises.is_empty());
        assert!(c.notifications.enabled("card-changed"));
    }

    #[test]
    fn durations_parse_in_human_units() {
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "2",
            "s",
            "2x",
            "-1s",
            "1.5s",
            "99999999999999999999h",
            "2 s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn format_duration_round_trips() {
        for ms in [
            0u64, 1, 200, 1000, 1500, 60_000, 90_000, 300_000, 3_600_000, 7_200_000,
        ] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }

    #[test]
    fn tilde_and_relative_polis_paths() {
        let c = parse_ok("[[polis]]\npath = \"~/a\"\n[[polis]]\npath = \"b/_polis\"\n");
        assert_eq!(c.polises[0].path, PathBuf::from("/home/u/a"));
        assert_eq!(c.polises[1].path, PathBuf::from("/etc/polisd/b/_polis"));
        assert_eq!(c.polises[1].line, 4);
    }

    #[test]
    fn other_users_tilde_is_refused() {
        let (line, key, msg) = parse_err("[[polis]]\npath = \"~bob/x\"\n");
        assert_eq!((line, key.as_deref()), (2, Some("polis.path")));
        assert!(msg.contains("absolute"), "{msg}");
    }

    #[test]
    fn the_same_polis_twice_is_an_error() {
        let (line, _, msg) =
            parse_err("[[polis]]\npath = \"/p\"\n[[polis]]\npath = \"/p/_polis\"\n");
        assert_eq!(line, 4);
        assert!(msg.contains("line 2"), "{msg}");
    }

    #[test]
    fn unknown_key_names_line_key_and_accepted_keys() {
        let (line, key, msg) = parse_err("[watch]\ndebounce = \"1s\"\ndebounse = \"1s\"\n");
        assert_eq!(line, 3);
        assert_eq!(key.as_deref(), Some("watch.debounse"));
        assert!(
            msg.contains("max_delay") && msg.contains("poll_interval"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_top_level_table_is_named() {
        let (line, key, msg) =
            parse_err("[log]\nlevel = \"info\"\n\n[behavior]\nauto_route = true\n");
        assert_eq!(line, 4, "{msg}");
        assert_eq!(key.as_deref(), Some("behavior"), "{msg}");
        assert!(msg.contains("behaviour"), "{msg}");
    }

    #[test]
    fn bad_enum_value_lists_accepted_values() {
        let (line, key, msg) = parse_err("[watch]\nbackend = \"inotify\"\n");
        assert_eq!((line, key.as_deref()), (2, Some("watch.backend")));
        assert!(
            msg.contains("auto") && msg.contains("native") && msg.contains("poll"),
            "{msg}"
        );
    }

    #[test]
    fn bad_duration_explains_the_format() {
        let (line, key, msg) = parse_err("\n[watch]\n  debounce = \"fast\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("watch.debounce")));
        assert!(msg.contains("200ms"), "{msg}");
        let (_, key, msg) = parse_err("[watch]\ndebounce = 200\n");
        assert_eq!(key.as_deref(), Some("watch.debounce"));
        assert!(msg.contains("\"200ms\""), "{msg}");
    }

    #[test]
    fn wrong_type_for_an_enum_lists_accepted_values() {
        let (line, key, msg) = parse_err("[log]\nformat = \"text\"\nlevel = 3\n");
        assert_eq!((line, key.as_deref()), (3, Some("log.level")));
        assert!(msg.contains("\"trace\""), "{msg}");
    }

    #[test]
    fn bad_bool_names_the_key() {
        let (line, key, msg) = parse_err("[notifications]\ncard-changed = \"no\"\n");
        assert_eq!(
            (line, key.as_deref()),
            (2, Some("notifications.card-changed"))
        );
        assert!(msg.contains("bool"), "{msg}");
    }

    #[test]
    fn per_polis_override_errors_name_the_nested_key() {
        let (line, key, _) =
            parse_err("[[polis]]\npath = \"/p\"\n[polis.notifications]\nlesson-filled = false\n");
        assert_eq!(
            (line, key.as_deref()),
            (4, Some("polis.notifications.lesson-filled"))
        );
    }

    #[test]
    fn max_delay_shorter_than_debounce_is_an_error() {
        let (line, key, _) = parse_err("[watch]\ndebounce = \"2s\"\nmax_delay = \"1s\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("watch.max_delay")));
    }

    #[test]
    fn syntax_error_has_a_line() {
        let (line, _, _) = parse_err("[watch]\ndebounce = \n");
        assert_eq!(line, 2);
    }

    #[test]
    fn effective_for_merges_entry_overrides() {
        let c = parse_ok(
            "[behaviour]\nrollover = true\n[notifications]\ncontract-stale = false\n\
             [[polis]]\npath = \"/a\"\nauto_route = false\n\
             [polis.notifications]\ncontract-stale = true\ncard-changed = false\n\
             [[polis]]\npath = \"/b\"\n",
        );
        let a = c.effective_for(Path::new("/a/_polis"));
        assert!(!a.auto_route && a.rollover);
        assert!(a.notifications.enabled("contract-stale"));
        assert!(!a.notifications.enabled("card-changed"));
        let b = c.effective_for(Path::new("/b"));
        assert!(b.auto_route && b.rollover);
        assert!(!b.notifications.enabled("contract-stale"));
        assert!(b.notifications.enabled("card-changed"));
        let other = c.effective_for(Path::new("/elsewhere"));
        assert_eq!(other, b);
    }

    #[test]
    fn notification_switches_cover_every_spec_kind() {
        let mut n = Notifications::default();
        for kind in NOTIFICATION_KINDS {
            assert!(n.set(kind, false), "{kind} has no switch");
            assert!(!n.enabled(kind));
        }
        assert!(!n.set("no-such-kind", false));
        let keys = accepted_keys();
        for kind in NOTIFICATION_KINDS {
            assert!(keys.contains(&format!("notifications.{kind}")), "{kind}");
            assert!(
                keys.contains(&format!("polis.notifications.{kind}")),
                "{kind}"
            );
        }
    }

    #[test]
    fn explicit_missing_file_is_an_error_default_missing_is_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.toml");
        let flag = Location {
            path: missing.clone(),
            origin: Origin::Flag,
        };
        assert!(matches!(
            load_from(&flag, None),
            Err(ConfigError::Missing { .. })
        ));
        let default = Location {
            path: missing,
            origin: Origin::Default,
        };
        let c = load_from(&default, None).unwrap();
        assert!(c.file.is_none() && c.polises.is_empty());
    }

    #[test]
    fn location_prefers_flag_then_env_then_default() {
        let cwd = Path::new("/w");
        let d = Some(PathBuf::from("/d/config.toml"));
        let env = std::ffi::OsStr::new("e.toml");
        let l = resolve_location(Some(Path::new("f.toml")), Some(env), d.clone(), cwd).unwrap();
        assert_eq!(
            (l.path, l.origin),
            (PathBuf::from("/w/f.toml"), Origin::Flag)
        );
        let l = resolve_location(None, Some(env), d.clone(), cwd).unwrap();
        assert_eq!(
            (l.path, l.origin),
            (PathBuf::from("/w/e.toml"), Origin::Env)
        );
        let l = resolve_location(None, Some(std::ffi::OsStr::new("")), d.clone(), cwd).unwrap();
        assert_eq!(l.origin, Origin::Default);
        assert!(resolve_location(None, None, None, cwd).is_none());
    }
}
