//! What a polis's paths and ids may be (SPEC §1, §2).
//!
//! Everything that turns an id into a path goes through here, so an id like `../x` or one with
//! a control character never becomes a path.

/// Author ids that write without a card (SPEC §2).
pub const SYSTEM_CITIZENS: [&str; 3] = ["polis-daemon", "polis-tally", "polis-reflector"];
/// polisd's own author id in chronicle lines and inbox notices.
pub const DAEMON_ID: &str = "polis-daemon";

/// The folder a project keeps its polis in.
pub const POLIS_DIR: &str = "_polis";
pub const CONSTITUTION: &str = "CONSTITUTION.md";
pub const CHRONICLE: &str = "chronicle.md";
pub const POLIS_YML: &str = "polis.yml";
pub const INDEX: &str = "index.md";
pub const CITIZENS_DIR: &str = "citizens";
/// The folder of the contract folders.
pub const CONTRACTS_DIR: &str = "contracts";
pub const ROUTING_STATS: &str = "contracts/routing_stats.yml";
/// A contract for agents to copy, written by `init`; never read as a contract (it is not in a
/// contract folder).
pub const CONTRACT_TEMPLATE: &str = "contracts/TEMPLATE.md";
pub const LESSONS_DIR: &str = "lessons";
pub const REVIEWS_DIR: &str = "reviews";

/// The three contract folders, in the order the reference searches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContractFolder {
    Open,
    Settled,
    Abandoned,
}

impl ContractFolder {
    pub const ALL: [ContractFolder; 3] = [Self::Open, Self::Settled, Self::Abandoned];

    pub fn dir(self) -> &'static str {
        match self {
            Self::Open => "contracts/open",
            Self::Settled => "contracts/settled",
            Self::Abandoned => "contracts/abandoned",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Settled => "settled",
            Self::Abandoned => "abandoned",
        }
    }
}

/// The two amendment folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AmendmentFolder {
    Proposed,
    Ratified,
}

impl AmendmentFolder {
    pub fn dir(self) -> &'static str {
        match self {
            Self::Proposed => "amendments/proposed",
            Self::Ratified => "amendments/ratified",
        }
    }
}

// The id rules are tested byte by byte rather than with patterns: every command checks an id
// or two before it does anything, and compiling a pattern costs more than the whole check
// (the patterns they match are in the tests, which compare the two).

fn is_slug_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// A citizen id as SPEC §2 defines it: `[a-z][a-z0-9-]{7,39}`.
pub fn is_agent_id(id: &str) -> bool {
    let b = id.as_bytes();
    (8..=40).contains(&b.len()) && b[0].is_ascii_lowercase() && b.iter().all(|&c| is_slug_byte(c))
}

/// Contract ids and tags: lowercase ASCII, digits and hyphens (`[a-z0-9-]+`).
pub fn is_slug(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(is_slug_byte)
}

/// Lesson and amendment ids: `YYYY-MM-DD-<slug>`.
pub fn is_dated_id(id: &str) -> bool {
    let b = id.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    b.len() > 11
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'-'
        && is_slug(&id[11..])
}

pub fn is_system_citizen(id: &str) -> bool {
    SYSTEM_CITIZENS.contains(&id)
}

/// A title as an id, as the reference makes one: lowercase, every run of characters other than
/// `a-z0-9` becomes one `-`, hyphens trimmed, then cut to `max` characters (the reference's
/// guardrail ids keep 48, and the cut may leave a final `-`); `fallback` when nothing is left.
pub fn slugify(title: &str, max: Option<usize>, fallback: &str) -> String {
    let mut slug = String::new();
    let mut dash = false;
    // Python's `str.lower()` then `[^a-z0-9]+`: a non-ASCII letter is a separator.
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !slug.is_empty() {
                slug.push('-');
            }
            dash = false;
            slug.push(c);
        } else {
            dash = true;
        }
    }
    if let Some(max) = max {
        slug = slug.chars().take(max).collect();
    }
    if slug.is_empty() {
        fallback.to_string()
    } else {
        slug
    }
}

/// The longest file name, in bytes, that common file systems (ext4, APFS, NTFS) take.
pub const MAX_FILE_NAME: usize = 255;

/// Whether the file `<id>.md` can be named at all: an id made from a long title may not.
pub fn fits_file_name(id: &str) -> bool {
    id.len() + ".md".len() <= MAX_FILE_NAME
}

/// `YYYY-MM-DD-HHMM-`: what a review's file name (`reviews/<stamp>-<cid>.md`) adds to a
/// contract's id.
const REVIEW_STAMP: &str = "YYYY-MM-DD-HHMM-";

/// Whether contract `id` leaves room for its reviews' file names, which are longer than its
/// own: an id polisd makes must, or the contract could never be reviewed.
pub fn fits_review_file_name(id: &str) -> bool {
    REVIEW_STAMP.len() + id.len() + ".md".len() <= MAX_FILE_NAME
}

/// `base`, or `base-2`, `base-3`, … : the first that `taken` says is free (the reference's rule
/// for a clashing id).
pub fn unique_id(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (2u64..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !taken(id))
        .expect("some suffix is free")
}

/// A citizen's folder, relative to `_polis/`, or `None` when the id may not become a path.
pub fn citizen_dir(id: &str) -> Option<String> {
    is_agent_id(id).then(|| format!("{CITIZENS_DIR}/{id}"))
}

pub fn card_path(id: &str) -> Option<String> {
    citizen_dir(id).map(|d| format!("{d}/capability_card.yml"))
}

pub fn status_path(id: &str) -> Option<String> {
    citizen_dir(id).map(|d| format!("{d}/status.md"))
}

pub fn inbox_path(id: &str) -> Option<String> {
    citizen_dir(id).map(|d| format!("{d}/inbox.md"))
}

pub fn inbox_archive_path(id: &str) -> Option<String> {
    citizen_dir(id).map(|d| format!("{d}/inbox-archive.md"))
}

pub fn contract_path(folder: ContractFolder, id: &str) -> Option<String> {
    is_slug(id).then(|| format!("{}/{id}.md", folder.dir()))
}

pub fn amendment_path(folder: AmendmentFolder, id: &str) -> Option<String> {
    // Amendment files are named by id; accept any slug-safe stem so older files still move.
    is_slug(id).then(|| format!("{}/{id}.md", folder.dir()))
}

/// Editor, temporary and sync-tool files that are never read as records (SPEC §11).
pub fn is_ignored_name(name: &str) -> bool {
    name.ends_with('~')
        || (name.starts_with('.') && name.ends_with(".swp"))
        || name == "4913"
        || name.starts_with(".#")
        || name.starts_with(".polisd-")
        || is_transfer_temporary(name)
        || is_conflict_copy(name)
}

/// A file a sync tool writes while a transfer is in flight, renamed into place (or away) when
/// it completes: never a record, never a conflict copy, even when the file it becomes is one
/// (`.syncthing.chronicle.sync-conflict-20260101-120000-ABCDEFG.md.tmp`).
/// - Syncthing: `.syncthing.<name>.tmp`, and `~syncthing~<name>.tmp` on Windows;
/// - Dropbox: anything `.tmp`, and its `.dropbox.cache` / `.dropbox` entries;
/// - Nextcloud and ownCloud: a download in flight `.<name>.~<hex>`, the client's journal
///   `._sync_<hex>.db` (and `-wal`, `-shm`), `.owncloudsync.log`;
/// - iCloud: the placeholder `.<name>.icloud` of a file not downloaded yet.
pub fn is_transfer_temporary(name: &str) -> bool {
    let nextcloud_download = name.starts_with('.')
        && name.rsplit_once(".~").is_some_and(|(stem, hex)| {
            stem.len() > 1 && !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())
        });
    let nextcloud_journal = (name.starts_with("._sync_") || name.starts_with(".sync_"))
        && [".db", ".db-wal", ".db-shm", ".db-journal"]
            .iter()
            .any(|e| name.ends_with(e));
    name.ends_with(".tmp")
        || name.starts_with(".syncthing.")
        || name.starts_with("~syncthing~")
        || name.starts_with(".dropbox")
        || nextcloud_download
        || nextcloud_journal
        || name == ".owncloudsync.log"
        || (name.starts_with('.') && name.ends_with(".icloud"))
}

/// Sync conflict copies: Syncthing's `*.sync-conflict-*`, Dropbox's `(… conflicted copy …)`,
/// Nextcloud's `(conflicted copy <date> <time>)` (and ownCloud's older `_conflict-<date>-`),
/// iCloud's `<name> 2.<ext>`, and the generic `(conflict …)`. A transfer's temporary file is
/// never one, whatever it will be called once complete.
pub fn is_conflict_copy(name: &str) -> bool {
    conflict_original(name).is_some()
}

/// Temporary and editor names the watcher never reports (everything [`is_ignored_name`] names
/// but conflict copies, which polisd merges or reports).
pub fn is_temporary_name(name: &str) -> bool {
    is_ignored_name(name) && !is_conflict_copy(name)
}

/// [`conflict_original`] for a path: the same folder, the original's name.
pub fn conflict_original_path(rel: &str) -> Option<String> {
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let original = conflict_original(name)?;
    Some(if dir.is_empty() {
        original
    } else {
        format!("{dir}/{original}")
    })
}

/// The name of the file a conflict copy is a copy of: `chronicle.md` for
/// `chronicle.sync-conflict-20260101-120000-ABCDEFG.md`, `chronicle (Bob's conflicted copy
/// 2026-01-01).md`, `chronicle (conflicted copy 2026-01-01 120000).md`,
/// `chronicle_conflict-20260101-120000.md`, `chronicle 2.md` and `chronicle (conflict 1).md`.
/// `None` for a name that is not a copy, and for a transfer's temporary file.
pub fn conflict_original(name: &str) -> Option<String> {
    if is_transfer_temporary(name) {
        return None;
    }
    if let Some(i) = name.find(".sync-conflict-") {
        let rest = &name[i + ".sync-conflict-".len()..];
        let ext = rest.find('.').map_or("", |j| &rest[j..]);
        return Some(format!("{}{ext}", &name[..i]));
    }
    if let Some(i) = name.find("_conflict-") {
        let rest = &name[i + "_conflict-".len()..];
        if rest.len() > 8 && rest.as_bytes()[..8].iter().all(u8::is_ascii_digit) {
            let ext = rest.find('.').map_or("", |j| &rest[j..]);
            return Some(format!("{}{ext}", &name[..i]));
        }
    }
    if let Some(original) = icloud_original(name) {
        return Some(original);
    }
    let open = name.match_indices(" (").map(|(i, _)| i).find(|&i| {
        let inner = name[i..].split(')').next().unwrap_or("");
        inner.starts_with(" (conflict") || inner.contains("conflicted copy")
    })?;
    // Dropbox numbers a second copy of one day inside the parentheses: `(… 2026-01-01 (1))`.
    let mut close = open + name[open..].find(')')?;
    while name[close + 1..].starts_with(')') {
        close += 1;
    }
    Some(format!("{}{}", &name[..open], &name[close + 1..]))
}

/// iCloud keeps a conflicting version as `<stem> <n>.<ext>` (n ≥ 2). polis files are named by
/// slugs, which hold no space, so the pattern is not taken for a record's own name.
fn icloud_original(name: &str) -> Option<String> {
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    let (base, n) = stem.rsplit_once(' ')?;
    let n: u32 = n
        .parse()
        .ok()
        .filter(|_| n.bytes().all(|b| b.is_ascii_digit()))?;
    (n >= 2 && !base.is_empty() && !base.contains(' ') && !base.starts_with('.'))
        .then(|| format!("{base}{ext}"))
}

/// The time a sync tool wrote into a conflict copy's name, as `YYYY-MM-DD HH:MM`: Syncthing's
/// `YYYYMMDD-HHMMSS` (`name.sync-conflict-20260101-120000-ABCDEFG.md`), Dropbox's date
/// (`name (Bob's conflicted copy 2026-01-01).md`, its midnight). `None` when the name holds
/// none (`name (conflict 1).md`). Pure text: the same name gives the same stamp everywhere.
pub fn conflict_stamp(name: &str) -> Option<String> {
    let name = name.rsplit('/').next().unwrap_or(name);
    if let Some(i) = name.find(".sync-conflict-") {
        let rest = &name.as_bytes()[i + ".sync-conflict-".len()..];
        let digits = |r: std::ops::Range<usize>| {
            rest.get(r.clone())
                .filter(|b| b.iter().all(u8::is_ascii_digit))
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        let (y, mo, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
        let (h, mi) = (digits(9..11)?, digits(11..13)?);
        (rest.get(8) == Some(&b'-')).then_some(())?;
        let text = format!("{y}-{mo}-{d} {h}:{mi}");
        return crate::protocol::clock::parse_stamp(&text).map(|_| text);
    }
    if let Some(i) = name.find("_conflict-") {
        let rest = &name[i + "_conflict-".len()..];
        let compact = format!("{}{}", "x.sync-conflict-", rest);
        return conflict_stamp(&compact);
    }
    let at = name.find("conflicted copy ")? + "conflicted copy ".len();
    let date = name.get(at..at + 10)?;
    chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    // Nextcloud writes the time too: `(conflicted copy 2026-01-01 120359)`.
    let time = name
        .get(at + 11..at + 17)
        .filter(|t| name.as_bytes()[at + 10] == b' ' && t.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|t| chrono::NaiveTime::parse_from_str(t, "%H%M%S").ok());
    Some(match time {
        Some(t) => format!("{date} {}", t.format("%H:%M")),
        None => format!("{date} 00:00"),
    })
}

/// A record's id as its path gives it: the file name without `.md` (`contracts/settled/x.md`
/// → `x`).
pub fn record_stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".md").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The id rules as the patterns they were written as (SPEC §2, the reference's rules).
    fn by_pattern(pattern: &str, id: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(id)
    }

    const AGENT_ID: &str = r"^[a-z][a-z0-9-]{7,39}$";
    const SLUG: &str = r"^[a-z0-9-]+$";
    const DATED_ID: &str = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}-[a-z0-9-]+$";

    #[test]
    fn the_id_rules_decide_the_edges_as_their_patterns_do() {
        for id in [
            "",
            "a",
            "claude-c",
            "claude-code-1",
            "1laude-code",
            "Claude-code-1",
            "-laude-code",
            "claude-code\n",
            "claude_code_1",
            "claude-cod\u{e9}",
            &"a".repeat(40),
            &"a".repeat(41),
            "2026-12-01-x",
            "2026-12-01-",
            "2026-12-01",
            "2026-1-01-abc",
            "20261-12-01-abc",
            "2026-12-01-abc-",
            "2026-12-01-ab_c",
            "\u{661}026-12-01-abc",
        ] {
            assert_eq!(is_agent_id(id), by_pattern(AGENT_ID, id), "agent id {id:?}");
            assert_eq!(is_slug(id), by_pattern(SLUG, id), "slug {id:?}");
            assert_eq!(is_dated_id(id), by_pattern(DATED_ID, id), "dated id {id:?}");
        }
    }

    proptest! {
        #[test]
        fn the_id_rules_are_their_patterns(
            id in "[a-z0-9A-Z_\\-\u{e9}\u{661}\n]{0,44}",
            date in "[0-9\u{661}]{4}-[0-9]{2}-[0-9a]{2}-[a-z0-9_-]{0,6}",
        ) {
            for id in [id.as_str(), date.as_str()] {
                prop_assert_eq!(is_agent_id(id), by_pattern(AGENT_ID, id), "agent id {:?}", id);
                prop_assert_eq!(is_slug(id), by_pattern(SLUG, id), "slug {:?}", id);
                prop_assert_eq!(is_dated_id(id), by_pattern(DATED_ID, id), "dated id {:?}", id);
            }
        }
    }

    #[test]
    fn conflict_stamp_reads_the_sync_tools_names() {
        assert_eq!(
            conflict_stamp("chronicle.sync-conflict-20260101-120359-ABCDEFG.md").as_deref(),
            Some("2026-01-01 12:03")
        );
        assert_eq!(
            conflict_stamp("contracts/open/x (Bob's conflicted copy 2026-03-02).md").as_deref(),
            Some("2026-03-02 00:00")
        );
        assert_eq!(conflict_stamp("x (conflict 1).md"), None);
        assert_eq!(conflict_stamp("x.sync-conflict-2026.md"), None);
        assert_eq!(conflict_stamp("x.sync-conflict-20261399-120000-A.md"), None);
    }

    #[test]
    fn slugify_follows_the_reference() {
        assert_eq!(
            slugify("Fix the Login bug!", None, "contract"),
            "fix-the-login-bug"
        );
        assert_eq!(
            slugify("  --Ünïcode  title-- ", None, "contract"),
            "n-code-title"
        );
        assert_eq!(slugify("!!!", None, "contract"), "contract");
        let long = "a".repeat(47) + " b";
        assert_eq!(slugify(&long, Some(48), "guardrail"), "a".repeat(47) + "-");
    }

    #[test]
    fn unique_id_adds_the_first_free_suffix() {
        let taken = ["x", "x-2"];
        assert_eq!(unique_id("x", |id| taken.contains(&id)), "x-3");
        assert_eq!(unique_id("y", |id| taken.contains(&id)), "y");
    }

    #[test]
    fn a_contract_id_fits_when_its_review_file_name_does() {
        assert!(fits_review_file_name(&"a".repeat(236)));
        assert!(!fits_review_file_name(&"a".repeat(237)));
        assert!(fits_file_name(&"a".repeat(237)));
    }

    #[test]
    fn ids_that_are_not_paths_are_refused() {
        assert!(is_agent_id("claude-code-1"));
        assert!(!is_agent_id("short"));
        assert!(card_path("../../etc/passwd").is_none());
        assert!(contract_path(ContractFolder::Open, "a/b").is_none());
        assert!(contract_path(ContractFolder::Open, "ok\n").is_none());
        assert!(inbox_path("claude\u{7}code").is_none());
    }

    #[test]
    fn ignored_names() {
        for n in [
            "x.tmp",
            "x.md~",
            ".x.md.swp",
            "4913",
            ".#x.md",
            ".polisd-abc.tmp",
            "chronicle.sync-conflict-20260101-abc.md",
            "chronicle (Bob's conflicted copy 2026-01-01).md",
        ] {
            assert!(is_ignored_name(n), "{n}");
        }
        assert!(!is_ignored_name("chronicle.md"));
    }

    #[test]
    fn a_transfer_in_flight_is_never_a_conflict_copy() {
        for n in [
            ".syncthing.chronicle.sync-conflict-20260101-120000-ABCDEFG.md.tmp",
            ".syncthing.chronicle.md.tmp",
            "~syncthing~chronicle.md.tmp",
            ".chronicle.md.~3fa2b1",
            "._sync_0a1b2c3d.db",
            "._sync_0a1b2c3d.db-wal",
            ".owncloudsync.log",
            ".chronicle.md.icloud",
            ".dropbox.cache",
            "chronicle (Bob's conflicted copy 2026-01-01).md.tmp",
        ] {
            assert!(is_transfer_temporary(n), "{n}");
            assert!(!is_conflict_copy(n), "{n}");
            assert!(is_temporary_name(n), "{n}");
            assert_eq!(conflict_original(n), None, "{n}");
        }
        for n in [
            "chronicle.md",
            "2026-03-01-x.md",
            ".gitattributes",
            "contract-2.md",
        ] {
            assert!(!is_transfer_temporary(n), "{n}");
            assert!(!is_conflict_copy(n), "{n}");
        }
    }

    #[test]
    fn every_sync_tools_conflict_copy_names_its_original() {
        for (copy, original) in [
            (
                "chronicle.sync-conflict-20260101-120000-ABCDEFG.md",
                "chronicle.md",
            ),
            ("inbox (Bob's conflicted copy 2026-01-01).md", "inbox.md"),
            (
                "inbox (Bob's conflicted copy 2026-01-01 (1)).md",
                "inbox.md",
            ),
            (
                "chronicle (conflicted copy 2026-01-01 120359).md",
                "chronicle.md",
            ),
            ("chronicle_conflict-20260101-120359.md", "chronicle.md"),
            ("chronicle 2.md", "chronicle.md"),
            ("routing_stats 3.yml", "routing_stats.yml"),
            ("x (conflict 2).md", "x.md"),
        ] {
            assert!(is_conflict_copy(copy), "{copy}");
            assert!(is_ignored_name(copy), "{copy}");
            assert_eq!(conflict_original(copy).as_deref(), Some(original), "{copy}");
        }
        assert_eq!(
            conflict_stamp("chronicle (conflicted copy 2026-01-01 120359).md").as_deref(),
            Some("2026-01-01 12:03")
        );
        assert_eq!(
            conflict_stamp("chronicle_conflict-20260101-120359.md").as_deref(),
            Some("2026-01-01 12:03")
        );
        for n in ["notes 1.md", "a b 2.md", "2026.md", ". 2.md"] {
            assert!(!is_conflict_copy(n), "{n}");
        }
    }

    #[test]
    fn conflict_copies_name_their_original() {
        assert_eq!(
            conflict_original("chronicle.sync-conflict-20260101-120000-ABCDEFG.md").as_deref(),
            Some("chronicle.md")
        );
        assert_eq!(
            conflict_original("inbox (Bob's conflicted copy 2026-01-01).md").as_deref(),
            Some("inbox.md")
        );
        assert_eq!(
            conflict_original("x (conflict 2).md").as_deref(),
            Some("x.md")
        );
        assert_eq!(conflict_original("notes (draft).md"), None);
        assert!(is_temporary_name(".polisd-1-x.tmp") && !is_temporary_name("a (conflict 1).md"));
    }
}
