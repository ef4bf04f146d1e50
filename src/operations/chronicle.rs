//! The validated chronicle append every operation that records an event goes through (and
//! `polisd log`): the line is built with the current stamp, checked against SPEC §3's rules,
//! and refused with the finding (which carries a corrected example) when it would draw an
//! error. Otherwise it is appended with one locked write. Nothing is written on a refusal.
//!
//! Also the small reads every operation needs: the polis clock and "is this a citizen".

use crate::fs::snapshot;
use crate::fs::writer::Writer;
use crate::operations::error::OpError;
use crate::protocol::chronicle::{self, ChronicleContext, Line};
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::{Finding, Severity};
use crate::protocol::layout;
use std::path::Path;

/// "Now" in the polis timezone (`polis.yml`'s `timezone:`, UTC without it).
pub fn polis_now(root: &Path) -> PolisTime {
    let text = snapshot::read_text(root, layout::POLIS_YML, None)
        .ok()
        .flatten();
    let (settings, _) = crate::protocol::settings::parse(text.as_deref());
    PolisTime::system(settings.timezone)
}

/// Whether `id` has a capability card (SPEC §3 C002), without reading the card.
pub fn is_registered(root: &Path, id: &str) -> bool {
    snapshot::has_card(root, id)
}

/// Refuses, before a transition's first write, when its chronicle line could not be appended
/// (`chronicle.md` a link, or not a file): a claim, settlement or vote is never left on disk
/// without the line that records it.
pub fn check_appendable(writer: &Writer) -> Result<(), OpError> {
    Ok(writer.check_writable(layout::CHRONICLE)?)
}

/// `chronicle.md` and its newest archive, newest first: where membership lines are looked up.
fn recent_texts(root: &Path) -> Vec<String> {
    let current = snapshot::read_text(root, layout::CHRONICLE, None)
        .ok()
        .flatten();
    let mut findings = Vec::new();
    let archive = snapshot::archive_names(root, &mut findings)
        .pop()
        .and_then(|name| snapshot::read_text(root, &name, None).ok().flatten());
    current.into_iter().chain(archive).collect()
}

/// The citizens whose latest membership line is `left polis`, each with that line's stamp
/// (polis-local), from `chronicle.md` and the newest archive.
pub fn departures(root: &Path) -> std::collections::BTreeMap<String, chrono::NaiveDateTime> {
    let recent = recent_texts(root);
    let texts: Vec<&str> = recent.iter().map(String::as_str).collect();
    crate::protocol::contracts::handoff::departures(&texts)
}

/// Whether `id`'s latest membership line, in `chronicle.md` or else its newest archive (the
/// texts the tally reads), is `left polis`.
pub fn has_left(root: &Path, id: &str) -> bool {
    let recent = recent_texts(root);
    let texts: Vec<&str> = recent.iter().map(String::as_str).collect();
    crate::protocol::contracts::handoff::has_left(&texts, id)
}

/// Refuses an id that is not a registered citizen, and a system identity (SPEC §2: only
/// polisd writes as one, through [`append_system`] and [`append_daemon`]).
pub fn require_citizen(root: &Path, id: &str) -> Result<(), OpError> {
    crate::protocol::input::check_acting_id(id)?;
    if is_registered(root, id) {
        Ok(())
    } else {
        Err(OpError::NotRegistered(id.to_string()))
    }
}

/// A path relative to `_polis/` that exists (for C006), never leaving the folder.
fn link_exists(root: &Path, rel: &str) -> bool {
    !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.split('/').any(|c| c == "..")
        && std::fs::symlink_metadata(root.join(rel)).is_ok()
}

/// The findings a new line would draw (C001–C004, C006–C008; C005 needs the line before it,
/// which a stamp of "now" cannot be older than by a day unless the chronicle is in the future).
pub fn validate_line(root: &Path, now: &PolisTime, line: &str) -> Vec<Finding> {
    let registered = |id: &str| is_registered(root, id);
    let exists = |rel: &str| link_exists(root, rel);
    let ctx = ChronicleContext {
        path: layout::CHRONICLE,
        is_registered: &registered,
        link_exists: &exists,
        newest_earlier: None,
        now: *now,
    };
    let mut findings = chronicle::validate(
        &Line {
            number: 0,
            text: line.to_string(),
        },
        &ctx,
    );
    // The line is not in the file yet, so it has no number to name (counting the file's lines
    // would cost a read of the whole chronicle); the finding quotes the line instead.
    for f in &mut findings {
        f.line = None;
    }
    findings
}

/// A line that was appended, with the warnings it drew.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Appended {
    pub line: String,
    #[serde(serialize_with = "findings_as_text")]
    pub warnings: Vec<Finding>,
}

fn findings_as_text<S: serde::Serializer>(f: &[Finding], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(f.iter().map(|f| f.to_string()))
}

/// The longest author, verb and link `polisd log` writes (the note's bound is
/// [`crate::protocol::input::MAX_TEXT_CHARS`]). The verb's and the link's are public so
/// `polis_log`'s schema states the same bounds.
const MAX_AUTHOR_CHARS: usize = 64;
pub const MAX_VERB_CHARS: usize = 200;
pub const MAX_LINK_CHARS: usize = 1024;

/// Builds `- <now> | author | verb | [[link]] | note`, validates it, and appends it to
/// `chronicle.md` under the append lock. An error finding refuses it: nothing is written.
pub fn append(
    writer: &Writer,
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
) -> Result<Appended, OpError> {
    append_as(writer, now, author, verb, link, note, false)
}

/// [`append`] for a line an agent asks for by itself (`polisd log`): the same line already
/// in the chronicle (a retried command, in the same minute) is refused, not written a second
/// time for `check` to report as one event written twice. The check is made under the
/// append's lock.
pub fn log(
    writer: &Writer,
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
) -> Result<Appended, OpError> {
    use crate::protocol::input::{check_chars, MAX_TEXT_CHARS};
    // One line is one event: bounds far above any real line keep a runaway value (a whole
    // file passed as a note) out of the file every reader reads, and out of every message
    // that quotes the line.
    check_chars(
        "the author",
        author,
        MAX_AUTHOR_CHARS,
        "a citizen id is at most 40",
    )?;
    check_chars(
        "the verb",
        verb,
        MAX_VERB_CHARS,
        "a verb phrase is a few words; details go in the note",
    )?;
    check_chars(
        "the note",
        note,
        MAX_TEXT_CHARS,
        "put the details in a file under _polis/ and link it",
    )?;
    if let Some(link) = link {
        check_chars(
            "the link",
            link,
            MAX_LINK_CHARS,
            "link a file by its path under _polis/",
        )?;
    }
    append_as(writer, now, author, verb, link, note, true)
}

fn append_as(
    writer: &Writer,
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
    once: bool,
) -> Result<Appended, OpError> {
    use crate::protocol::input;
    input::check_acting_id(author)?;
    input::check_text("the verb", verb)?;
    input::check_text("the note", note)?;
    if let Some(link) = link {
        input::check_link(link)?;
    }
    let line = chronicle::citizen_line(&now.minute_stamp(), author, verb, link, note);
    if verb.contains('|') || author.contains('|') || link.is_some_and(|l| l.contains('|')) {
        // The grammar splits on ` | `; the generic C001 example would guess wrong fields.
        let fixed = chronicle::citizen_line(
            &now.minute_stamp(),
            &author.replace('|', "-"),
            &verb.replace('|', "-"),
            link.map(|l| l.replace('|', "-")).as_deref(),
            note,
        );
        return Err(OpError::Chronicle {
            finding: Box::new(Finding::error(
                crate::protocol::finding::Code::C001,
                layout::CHRONICLE,
                None,
                format!(
                    "`{}`: `|` separates the fields, so the author, verb and link may not contain it (the note may). A corrected line: `{}`",
                    crate::protocol::finding::quoted(&line),
                    crate::protocol::finding::quoted(&fixed)
                ),
            )),
            line,
        });
    }
    let findings = validate_line(writer.root(), now, &line);
    if let Some(error) = findings.iter().find(|f| f.severity == Severity::Error) {
        return Err(OpError::Chronicle {
            finding: Box::new(error.clone()),
            line,
        });
    }
    let bytes = format!("{line}\n");
    if !once {
        writer.append_locked(layout::CHRONICLE, bytes.as_bytes())?;
    } else if !writer.append_locked_unless(layout::CHRONICLE, bytes.as_bytes(), |current| {
        chronicle::holds_line(current, line.as_bytes())
    })? {
        return Err(OpError::Refused(format!(
            "`{line}` is already in chronicle.md: one event is one line; nothing was written"
        )));
    }
    Ok(Appended {
        line,
        warnings: findings,
    })
}

/// Appends one of polisd's own lines ([`chronicle::daemon_line`]: stamped now, ending with the
/// id of its cause, the verb and the link) unless `chronicle.md` already holds that id. The
/// check is made under the append's lock, so a second polisd process, or the same line that
/// reached this machine from another through a sync, leaves the line once (docs/sync.md).
/// Returns whether it appended.
pub fn append_daemon(
    writer: &Writer,
    now: &PolisTime,
    verb: &str,
    link: Option<&str>,
    note: &str,
) -> Result<bool, OpError> {
    append_system(writer, now, layout::DAEMON_ID, verb, link, note)
}

/// [`append_daemon`] for any of polisd's system citizens (`polis-reflector` files its
/// proposals' lines this way).
pub fn append_system(
    writer: &Writer,
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
) -> Result<bool, OpError> {
    append_system_caused(
        writer,
        now,
        author,
        verb,
        link,
        note,
        &chronicle::cause_id(verb, link),
    )
}

/// [`append_system`] with the id of the line's cause given (several causes share one verb and
/// link): appended unless `chronicle.md` already holds that id.
pub fn append_system_caused(
    writer: &Writer,
    now: &PolisTime,
    author: &str,
    verb: &str,
    link: Option<&str>,
    note: &str,
    id: &str,
) -> Result<bool, OpError> {
    let line = chronicle::system_line_caused(now, author, verb, link, note, id);
    let marker = format!("<!-- polisd:{}:{id} -->", chronicle::LINE_KIND);
    Ok(
        writer.append_locked_unless(layout::CHRONICLE, line.as_bytes(), |current| {
            String::from_utf8_lossy(current).contains(&marker)
        })?,
    )
}

/// Whether the chronicle already has a `verb` line linking `target` (a replayed operation
/// must not record its event twice): in the current chronicle, else in an archive, newest
/// first, since a quarterly rollover moves the line of an event made last quarter there.
/// Reads whole files: only recovery paths call it.
pub fn has_line(root: &Path, verb: &str, target: &str) -> bool {
    has_line_of(root, None, verb, target)
}

/// The note of the last `verb` line by `author` (`None`: any) linking `target`: in the current
/// chronicle, else in the newest archive that has one. Reads whole files: only recovery paths
/// call it.
pub fn last_note_of(root: &Path, author: Option<&str>, verb: &str, target: &str) -> Option<String> {
    let note = |rel: &str| {
        snapshot::read_text(root, rel, None)
            .ok()
            .flatten()
            .and_then(|text| chronicle::rollover::last_note_of(&text, author, verb, target))
    };
    note(layout::CHRONICLE).or_else(|| {
        snapshot::archive_names(root, &mut Vec::new())
            .iter()
            .rev()
            .find_map(|name| note(name))
    })
}

/// [`has_line`] by one author only (`None`: any).
pub fn has_line_of(root: &Path, author: Option<&str>, verb: &str, target: &str) -> bool {
    last_note_of(root, author, verb, target).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citizen_whose_folder_is_a_link_is_not_registered() {
        // Reading the polis never enters a linked folder, so check and the tally hold such a
        // citizen unregistered; a command must not act (and append a C002 line) as one.
        let (d, root, _w) = crate::operations::test_polis::polis_with(&["alpha-agent"]);
        let elsewhere = d.path().join("elsewhere");
        std::fs::rename(root.join("citizens/alpha-agent"), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("citizens/alpha-agent")).unwrap();
        assert!(!is_registered(&root, "alpha-agent"));
        assert!(matches!(
            require_citizen(&root, "alpha-agent"),
            Err(OpError::NotRegistered(_))
        ));
        // A session still comes (the primer names the link); acting is what is refused.
        assert!(crate::operations::session::check_citizen(&root, "alpha-agent").is_ok());
    }

    fn at(stamp: &str) -> PolisTime {
        PolisTime::at_stamp(crate::protocol::clock::PolisZone::default(), stamp).unwrap()
    }

    #[test]
    fn a_daemon_line_whose_cause_is_in_the_chronicle_is_not_appended_again() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap().join("_polis");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join(layout::CHRONICLE),
            "---\nfile_type: chronicle\n---\n",
        )
        .unwrap();
        let w = Writer::new(&root).unwrap();
        let link = Some("contracts/open/parser-next-1");
        assert!(
            append_daemon(&w, &at("2026-03-02 10:00"), "opened contract", link, "Fuzz").unwrap()
        );
        // The same cause a minute later (another machine's daemon, whose line arrived by a
        // sync, or a replayed dispatch): one line.
        assert!(
            !append_daemon(&w, &at("2026-03-02 10:01"), "opened contract", link, "Fuzz").unwrap()
        );
        let text = std::fs::read_to_string(root.join(layout::CHRONICLE)).unwrap();
        assert_eq!(text.matches("opened contract").count(), 1, "{text}");
        assert!(text.contains("<!-- polisd:chronicle:"), "{text}");
        // Another cause is another line.
        let other = Some("contracts/open/parser-next-2");
        assert!(append_daemon(
            &w,
            &at("2026-03-02 10:01"),
            "opened contract",
            other,
            "More"
        )
        .unwrap());
    }
}
