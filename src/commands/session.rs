//! `polisd prime`, `polisd notices`, `polisd inbox archive`, `polisd hooks …` and the hook entry
//! point `polisd hook <cli> <prime|notices>` that the installed hooks run (and
//! `polisd hook aider prime`, which Aider's `load:` file runs, printing the primer as text).
//!
//! The hook entry point is one short process: it reads the CLI's payload, the citizen's inbox
//! and status (and for the primer the few folders the primer prints), writes the read cursor
//! and its rate-limit record, prints the CLI's JSON and exits 0 whatever happens. It never
//! talks to the daemon and never starts an async runtime.

use crate::commands::cli::Deferred;
use crate::commands::cli::{
    HookArgs, HooksCommand, HooksInstallArgs, HooksTargetArgs, InboxArchiveArgs, InboxCommand,
    NoticesArgs, PrimeArgs,
};
use crate::commands::locate;
use crate::fs::writer::Writer;
use crate::operations::agent_hooks::{self as hooks, Planned};
use crate::operations::session;
use crate::protocol::clock::PolisTime;
use crate::protocol::delivery::agent_hooks::{self, Cli, HookKind};
use crate::protocol::delivery::aider;
use crate::protocol::delivery::notice::{self, Notice};
use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// How many notices a notices hook shows at once; the rest are counted.
const HOOK_NOTICES: usize = 5;

/// How long a notices hook waits for another hook of the same citizen to finish delivering
/// (a few milliseconds of work, unless its CLI is slow to read): past it, it adds nothing.
const DELIVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub fn prime(args: PrimeArgs) -> anyhow::Result<u8> {
    let root = locate(args.path.get())?;
    let now = PolisTime::system(session::polis_zone(&root));
    let primed = session::prime(
        &root,
        &args.who.citizen,
        &now,
        &crate::operations::arg::flags,
    )?;
    // Printed first: a reader gone before the primer reached it (a closed pipe ends the
    // process here) leaves its notices unread and its cursor where it was.
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "citizen": args.who.citizen,
                "markdown": primed.primer.text,
                "bytes": primed.primer.text.len(),
                "shown_notices": primed.primer.shown_notices,
                "cut": primed.primer.cut,
                "since_last_seen": {
                    "events": primed.catch_up.events.len(),
                    "complete": primed.catch_up.complete,
                    "late": primed.catch_up.late,
                    "newest": primed.catch_up.events.iter().take(12).collect::<Vec<_>>(),
                },
            }))?
        );
    } else {
        say_part!("{}", primed.primer.text);
    }
    std::io::stdout().flush()?;
    if !args.no_mark_read {
        let writer = Writer::unrecorded(&root)?;
        if let Some(finding) = session::record_session_or_finding(&root, &writer, &primed, &now)? {
            tell!("polisd: {finding}");
        }
    }
    Ok(0)
}

fn notice_json(n: &Notice, read: bool) -> serde_json::Value {
    serde_json::json!({
        "id": n.id,
        "kind": n.kind.map(|k| k.as_str()),
        "stamp": n.stamp,
        "from": n.author,
        "subject": n.subject,
        "text": n.body,
        "link": n.link,
        "line": n.line,
        "read": read,
    })
}

pub fn notices(args: NoticesArgs) -> anyhow::Result<u8> {
    let root = locate(args.path.get())?;
    let citizen = &args.who.citizen;
    session::check_citizen(&root, citizen)?;
    let view = session::read_inbox(&root, citizen)?;
    let mut listed: Vec<Notice> = if args.unread {
        view.unread().into_iter().cloned().collect()
    } else {
        view.notices.iter().rev().cloned().collect()
    };
    listed.dedup_by(|a, b| a.id == b.id);
    session::mark_outdated(&root, citizen, &mut listed);
    let unread_ids: Vec<String> = listed
        .iter()
        .filter(|n| !view.read.contains(&n.id))
        .map(|n| n.id.clone())
        .collect();
    // Checked before anything is printed, written only once it all reached the reader: a reader
    // gone before the list (a closed pipe ends the process at the print) leaves them unread.
    let marking = args.mark_read && !unread_ids.is_empty();
    if marking {
        session::check_mark_read(&root, &view, &unread_ids)?;
    }
    let mark = || -> anyhow::Result<()> {
        if marking {
            std::io::stdout().flush()?;
            let writer = Writer::unrecorded(&root)?;
            session::mark_read(&root, &writer, &view, &unread_ids)?;
        }
        Ok(())
    };
    if args.json {
        let items: Vec<_> = listed
            .iter()
            .map(|n| notice_json(n, view.read.contains(&n.id)))
            .collect();
        say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "citizen": citizen,
                "notices": items,
                "unread": view.unread().len(),
                "marked_read": if marking { unread_ids.len() } else { 0 },
            }))?
        );
        mark()?;
        return Ok(0);
    }
    if listed.is_empty() {
        say!(
            "no {}notices for {citizen}",
            if args.unread { "unread " } else { "" }
        );
        return Ok(0);
    }
    for n in &listed {
        let flag = if view.read.contains(&n.id) {
            "  "
        } else {
            "* "
        };
        say!(
            "{flag}{}",
            notice::render_notice(n).trim_start_matches("- ")
        );
    }
    if marking {
        mark()?;
        say!("marked {} notice(s) read", unread_ids.len());
    } else if !unread_ids.is_empty() && !args.mark_read {
        say!(
            "{} unread (marked *); `polisd notices --as {citizen} --mark-read` marks them read",
            unread_ids.len()
        );
    }
    Ok(0)
}

/// `7d`, `12h`, `30m`, `90s`, `0`. Anything else, or an age past what a duration holds, is a
/// usage error.
fn parse_age(text: &str) -> Result<chrono::Duration, super::Usage> {
    let bad = || {
        super::Usage(format!(
            "`{text}` is not an age: write it like 7d, 12h, 30m or 0"
        ))
    };
    let t = text.trim();
    if t == "0" {
        return Ok(chrono::Duration::zero());
    }
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: i64 = num.parse().map_err(|_| bad())?;
    let age = match unit {
        "d" => chrono::Duration::try_days(n),
        "h" => chrono::Duration::try_hours(n),
        "m" => chrono::Duration::try_minutes(n),
        "s" => chrono::Duration::try_seconds(n),
        _ => return Err(bad()),
    };
    age.ok_or_else(|| {
        super::Usage(format!(
            "`{text}` is too long an age; give at most a few years"
        ))
    })
}

pub fn inbox(command: InboxCommand) -> anyhow::Result<u8> {
    let InboxCommand::Archive(Deferred(args)) = command;
    archive(args)
}

fn archive(args: InboxArchiveArgs) -> anyhow::Result<u8> {
    let root = locate(args.path.get())?;
    let age = parse_age(&args.older_than)?;
    let now = PolisTime::system(session::polis_zone(&root));
    let writer = Writer::new(&root)?;
    let report = session::archive_inbox(&root, &writer, &args.who.citizen, age, &now)?;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        say!(
            "moved {} read notice(s) to inbox-archive.md; kept {} read newer than {} and {} unread",
            report.moved,
            report.kept_recent,
            args.older_than,
            report.unread
        );
    }
    Ok(0)
}

/// The project root of a located `_polis/` folder.
fn project_root(polis_root: &Path) -> PathBuf {
    polis_root
        .parent()
        .map_or_else(|| polis_root.to_path_buf(), Path::to_path_buf)
}

/// What a `hooks` command is about: the agent CLIs with hooks, and Aider.
struct Targets {
    clis: Vec<Cli>,
    aider: bool,
}

fn targets(t: &HooksTargetArgs) -> anyhow::Result<Targets> {
    if t.all {
        return Ok(Targets {
            clis: Cli::ALL.to_vec(),
            aider: true,
        });
    }
    let clis: Vec<Cli> = [
        (t.claude, Cli::Claude),
        (t.codex, Cli::Codex),
        (t.gemini, Cli::Gemini),
    ]
    .into_iter()
    .filter_map(|(on, c)| on.then_some(c))
    .collect();
    if clis.is_empty() && !t.aider {
        return Err(crate::commands::Usage(
            "name the agent CLIs: --claude, --codex, --gemini, --aider or --all".into(),
        )
        .into());
    }
    Ok(Targets {
        clis,
        aider: t.aider,
    })
}

fn report(plans: &[Planned], dry_run: bool, json: bool, extra: &[String]) -> anyhow::Result<()> {
    if json {
        let items: Vec<_> = plans
            .iter()
            .map(|p| {
                serde_json::json!({
                    "path": p.path,
                    "what": p.what,
                    "changes": p.changes(),
                    "created": p.before.is_none(),
                    "content": if dry_run { Some(&p.after) } else { None },
                })
            })
            .collect();
        say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "dry_run": dry_run,
                "files": items,
                "warnings": extra,
            }))?
        );
        return Ok(());
    }
    for p in plans {
        let verb = match (p.changes(), p.before.is_none(), dry_run) {
            _ if p.remove && dry_run => "would remove",
            _ if p.remove => "removed",
            (false, _, _) => "unchanged",
            (true, true, true) => "would create",
            (true, false, true) => "would update",
            (true, true, false) => "created",
            (true, false, false) => "updated",
        };
        say!("{verb:12} {} ({})", p.path, p.what);
        if dry_run && p.changes() {
            for line in p.after.lines() {
                say!("    {line}");
            }
        }
    }
    for w in extra {
        say!("warning: {w}");
    }
    Ok(())
}

pub fn hooks(command: HooksCommand) -> anyhow::Result<u8> {
    match command {
        HooksCommand::Install(Deferred(args)) => install(args),
        HooksCommand::Uninstall(Deferred(t)) => {
            let root = project_root(&locate(t.path.get())?);
            let targets = targets(&t)?;
            let plans = hooks::plan_uninstall(&root, &targets.clis, targets.aider)?;
            if !t.dry_run {
                hooks::apply(&root, &plans)?;
            }
            if plans.is_empty() && !t.json {
                say!("no polisd hooks to remove");
            }
            report(
                &plans,
                t.dry_run,
                t.json,
                &hooks::aider_uninstall_warnings(&plans),
            )?;
            Ok(0)
        }
        HooksCommand::Status(Deferred(args)) => {
            let root = project_root(&locate(args.path.get())?);
            let status = hooks::status(&root);
            // The exit code is the same with --json: a CI job or an agent checks it either way.
            let code = u8::from(status.iter().any(|s| !s.problems.is_empty()));
            if args.json {
                say!("{}", serde_json::to_string_pretty(&status)?);
                return Ok(code);
            }
            for s in &status {
                let mut parts = Vec::new();
                if !s.hooks.is_empty() {
                    parts.push(match &s.citizen {
                        Some(id) => format!("{} hook(s), acting as {id}", s.hooks.len()),
                        None => format!("{} hook(s)", s.hooks.len()),
                    });
                }
                if !s.reads.is_empty() {
                    parts.push(format!("reads {} at session start", s.reads.join(", ")));
                }
                if let Some(file) = &s.foreign_load {
                    parts.push(format!(
                        "loads {file} (the team's, without polisd's primer)"
                    ));
                }
                let state = if parts.is_empty() {
                    "not installed".to_string()
                } else {
                    parts.join("; ")
                };
                say!("{:7} {:24} {state}", s.cli, s.path);
                for (event, cmd) in &s.hooks {
                    say!("          {event}: {cmd}");
                }
                for p in &s.problems {
                    say!("          problem: {p}");
                }
            }
            Ok(code)
        }
    }
}

fn install(args: HooksInstallArgs) -> anyhow::Result<u8> {
    let t = &args.target;
    let polis_root = locate(t.path.get())?;
    let root = project_root(&polis_root);
    let Targets { clis, aider } = targets(t)?;
    if let Some(id) = &args.citizen {
        session::check_citizen(&polis_root, id)?;
    }
    let mut plans = hooks::plan_install(&root, &clis, &args.bin)?;
    let mut warnings = hooks::install_warnings(&root, &clis, &plans)?;
    if aider {
        let aider_plans = hooks::plan_aider_install(&root, &args.bin)?;
        warnings.extend(hooks::aider_install_warnings(&aider_plans));
        plans.extend(aider_plans);
    }
    if !args.no_bridge {
        plans.extend(hooks::plan_bridge(&root)?);
    }
    let mut names: Vec<&str> = clis.iter().map(|c| c.as_str()).collect();
    if aider {
        names.push(aider::HOOK_NAME);
    }
    let unnamed: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| args.citizen.is_none() && hooks::identity_of(&polis_root, n).is_none())
        .collect();
    if !unnamed.is_empty() {
        warnings.push(format!(
            "no citizen id for the {} hooks: pass --as <your-id> (kept for you, outside the repository) or set POLIS_CITIZEN in the agent's environment",
            unnamed.join(", ")
        ));
    }
    if !t.dry_run {
        // The id first: a state folder it cannot be kept in refuses the install before any
        // settings file is written (an id kept for hooks not installed yet acts on nothing).
        if let Some(id) = &args.citizen {
            hooks::set_identity(&root, &names, id)?;
        }
        hooks::apply(&root, &plans)?;
    }
    report(&plans, t.dry_run, t.json, &warnings)?;
    Ok(0)
}

/// The payload an agent CLI sends on stdin (only what polisd uses). A field of another type
/// counts as missing on its own: a `cwd` polisd cannot read must not hide the event, which
/// says whether the CLI takes the answer at all.
#[derive(Debug, Default, Clone)]
struct Payload {
    hook_event_name: Option<String>,
    cwd: Option<PathBuf>,
    session_id: Option<String>,
}

/// Fills a [`Payload`] field by field as they are read, so what came before a fault (the size
/// bound cutting a large prompt, a bad byte further on) or before the hook stopped waiting is
/// kept: the CLIs write the event before the prompt or the tool's output. A key written twice
/// counts by its last value, as the CLIs' own JSON parsers read it.
struct Fill<'a>(&'a std::sync::Mutex<Payload>);

impl<'de> serde::de::DeserializeSeed<'de> for Fill<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Fill<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a hook payload (a JSON object)")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        /// A field's value, or `None` when it is of another type.
        fn lenient<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Option<T> {
            serde_json::from_value(value).ok()
        }
        type Put = fn(&mut Payload, serde_json::Value);
        while let Some(key) = map.next_key::<String>()? {
            let put: Option<Put> = match key.as_str() {
                "hook_event_name" => Some(|p, v| p.hook_event_name = lenient(v)),
                "cwd" => Some(|p, v| p.cwd = lenient(v)),
                "session_id" => Some(|p, v| p.session_id = lenient(v)),
                _ => None,
            };
            match put {
                Some(put) => {
                    let value = map.next_value()?;
                    put(
                        &mut self
                            .0
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner),
                        value,
                    );
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The most payload bytes parsed; past it the fields not yet read count as missing. Only the
/// three fields polisd uses are kept, so this bounds their size, not a tool's output, which is
/// scanned and dropped.
const MAX_PAYLOAD_BYTES: u64 = 64 * 1024 * 1024;

/// How long a hook waits for its payload while stdin is silent: a CLI writes it as it starts
/// the hook, so one that has sent none by then (and keeps stdin open) gets the answer of a
/// payload it cannot read.
const PAYLOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a hook waits for its payload at most, however steadily it comes (then it answers
/// with the fields read so far): under the installed hooks' 10 s timeout, past which the CLI
/// kills the hook and shows nothing.
const PAYLOAD_MOST: std::time::Duration = std::time::Duration::from_secs(7);

/// How long stdin may stay silent, once the hook has answered, before it stops reading it: a
/// CLI still writing a large payload is read to its end, one that keeps stdin open after it
/// is not waited for.
const DRAIN_IDLE: std::time::Duration = std::time::Duration::from_millis(200);

/// The rest of stdin, read on its own thread while the hook works: the thread says each read
/// on this channel, and ends it (drops its sender) when stdin ends.
struct Drain {
    progress: std::sync::mpsc::Receiver<()>,
}

impl Drain {
    /// Waits while the CLI is still writing; returns once stdin ended or stayed silent for
    /// [`DRAIN_IDLE`]. A hook that exits before the CLI has written its whole payload fails
    /// the CLI's write with EPIPE (Codex then reports the hook as failed).
    fn finish(self) {
        while self.progress.recv_timeout(DRAIN_IDLE).is_ok() {}
    }
}

/// Stdin, saying each read that brought bytes on a channel (one pending signal is enough to
/// say "still writing"), while the payload is parsed as much as after.
struct Signalling<R> {
    inner: R,
    read: std::sync::mpsc::SyncSender<()>,
}

impl<R: Read> Read for Signalling<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            let _ = self.read.try_send(());
        }
        Ok(n)
    }
}

/// Reads the payload, waiting while it comes (at most [`PAYLOAD_WAIT`] of silence, and
/// [`PAYLOAD_MOST`] in all); the rest of stdin is read on by the returned [`Drain`]. Neither a
/// CLI that keeps stdin open nor one that sends nothing holds the hook past its answer.
fn read_payload() -> (Payload, Option<Drain>) {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;
    // A person running the hook by hand has a terminal on stdin: do not wait for it.
    if unsafe { libc::isatty(0) } == 1 {
        return (Payload::default(), None);
    }
    let (sent, parsed) = std::sync::mpsc::channel::<()>();
    let (read, progress) = std::sync::mpsc::sync_channel(1);
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Payload::default()));
    let filled = shared.clone();
    // Left running when the hook is done: the process ends it.
    std::thread::spawn(move || {
        // Buffered above the signalling reader: serde_json reads a byte at a time.
        let mut stdin = std::io::BufReader::with_capacity(
            64 * 1024,
            Signalling {
                inner: std::io::stdin().lock(),
                read,
            },
        );
        {
            let mut json =
                serde_json::Deserializer::from_reader((&mut stdin).take(MAX_PAYLOAD_BYTES));
            let _ = serde::de::DeserializeSeed::deserialize(Fill(&filled), &mut json);
        }
        let _ = sent.send(());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    let started = Instant::now();
    let mut heard = started;
    let step = std::time::Duration::from_millis(20);
    loop {
        match parsed.recv_timeout(step) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                if progress.try_recv().is_ok() {
                    heard = now;
                }
                if now - heard >= PAYLOAD_WAIT || now - started >= PAYLOAD_MOST {
                    break;
                }
            }
        }
    }
    let payload = shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    (payload, Some(Drain { progress }))
}

/// The hook entry point. Always exit 0: a polisd problem must never block the agent; it is
/// reported on stderr, which the CLIs show in their logs.
pub fn hook(args: HookArgs) -> anyhow::Result<u8> {
    if args.cli == aider::HOOK_NAME {
        return aider_hook(&args);
    }
    let (payload, drain) = read_payload();
    answer_hook(&args, &payload);
    if let Some(drain) = drain {
        drain.finish();
    }
    Ok(0)
}

/// `polisd hook aider prime`, which Aider's `load:` file runs with `/run` at session start:
/// the primer as plain text, since `/run` adds the command's output to the chat as it is.
/// Aider sends no payload, so stdin (Aider's own) is not read. Always exit 0, as the other
/// hooks; only a kind Aider cannot have is a usage error.
fn aider_hook(args: &HookArgs) -> anyhow::Result<u8> {
    if args.kind != HookKind::Prime.as_str() {
        return Err(crate::commands::Usage(format!(
            "polisd hook aider: no `{}` hook: Aider runs commands only at session start (the primer, `polisd hook aider prime`); later notices come from the agent running `polisd notices --as ID --unread`",
            notice::one_line(&args.kind, 40)
        ))
        .into());
    }
    let added = context_or_help(hook_context(
        args,
        aider::HOOK_NAME,
        HookKind::Prime,
        false,
        &Payload::default(),
    ));
    let mut stdout = std::io::stdout().lock();
    let reached = added.text.is_empty()
        || writeln!(stdout, "{}", added.text.trim_end())
            .and_then(|()| stdout.flush())
            .is_ok();
    if reached {
        if let Some(after) = added.after {
            record_shown(after);
        }
    }
    Ok(0)
}

/// What a hook adds, or the one line a wrong id gets (the model's to fix: it says who is
/// registered and how to register; the CLIs show a hook's stderr only in their logs).
fn context_or_help(result: anyhow::Result<Added>) -> Added {
    match result {
        Ok(added) => added,
        Err(e) if e.downcast_ref().is_some_and(is_identity_error) => {
            Added::text(e.downcast_ref().map(identity_help).unwrap_or_default())
        }
        Err(e) => {
            tell!("polisd hook: {}", crate::commands::chain_text(&e));
            Added::text(String::new())
        }
    }
}

/// What [`hook`] does once it has its payload.
fn answer_hook(args: &HookArgs, payload: &Payload) {
    let (Some(cli), kind) = (
        Cli::parse(&args.cli),
        match args.kind.as_str() {
            "prime" => Some(HookKind::Prime),
            "notices" => Some(HookKind::Notices),
            _ => None,
        },
    ) else {
        tell!(
            "polisd hook: unknown agent CLI `{}` (claude, codex, gemini, aider)",
            args.cli
        );
        return;
    };
    let Some(kind) = kind else {
        tell!("polisd hook: unknown hook `{}` (prime, notices)", args.kind);
        return;
    };
    let Some(event) = agent_hooks::event_of(cli, kind, payload.hook_event_name.as_deref()) else {
        tell!(
            "polisd hook: `{}` cannot add context to the session, so `polisd hook {} {}` adds nothing there and marks nothing read; `polisd hooks install` puts polisd's hooks on the events that can",
            notice::one_line(payload.hook_event_name.as_deref().unwrap_or_default(), 60),
            cli.as_str(),
            kind.as_str()
        );
        answer(cli, "", "");
        return;
    };
    // A prime hook on an event that fires again and again in a session answers as the
    // notices hook there once the session is primed.
    let repeats = agent_hooks::installed_kind(cli, event) == Some(HookKind::Notices);
    let added = context_or_help(hook_context(args, cli.as_str(), kind, repeats, payload));
    // Recorded only once the CLI has the text: a CLI that closed the pipe or killed the hook
    // at its timeout leaves the notices unread, to be shown next time.
    if answer(cli, event, &added.text) {
        if let Some(after) = added.after {
            record_shown(after);
        }
        if let Some(primed) = added.primed {
            primed.record();
        }
    }
}

/// Prints what a hook adds to the session at `event`, in `cli`'s format; whether it reached
/// the CLI (written and flushed).
fn answer(cli: Cli, event: &str, context: &str) -> bool {
    let Some(out) = agent_hooks::output(cli, event, context) else {
        return true;
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")
        .and_then(|()| stdout.flush())
        .is_ok()
}

/// What a hook adds to the session, and what it records once the session has it.
struct Added {
    text: String,
    after: Option<session::Shown>,
    /// The agent session this primer is the first answer of, if the payload named one.
    primed: Option<PrimedSession>,
    /// Kept until the hook ends: no other notices hook of the citizen looks at the inbox
    /// before this one has shown its notices and marked them read.
    _delivering: Option<crate::fs::state::HookDeliveryLock>,
}

impl Added {
    fn text(text: String) -> Added {
        Added {
            text,
            after: None,
            primed: None,
            _delivering: None,
        }
    }

    fn primed(mut self, primed: Option<PrimedSession>) -> Added {
        self.primed = primed;
        self
    }
}

/// An agent session a prime hook answered, recorded once the session has the answer, so a
/// prime hook on an event that fires again in that session answers as the notices hook does.
struct PrimedSession {
    root: PathBuf,
    /// The citizen, or [`UNIDENTIFIED`] for a session without an id (or with one that is not
    /// an id).
    key: String,
    session: String,
}

impl PrimedSession {
    fn record(self) {
        if let Err(e) =
            crate::fs::state::set_hook_session_primed(&self.root, &self.key, &self.session)
        {
            tell!("polisd hook: {e}; the primer will be shown again in this session");
        }
    }
}

/// Whose primed sessions a prime hook records when the session has no citizen id: no id
/// starts with `_`, so it never meets a citizen's record.
const UNIDENTIFIED: &str = "_unidentified";

/// Records what a hook showed, once its text reached the session; a failure is said in the
/// CLI's log, and what was shown is shown again.
fn record_shown(shown: session::Shown) {
    match shown.record() {
        Ok(Some(finding)) => tell!("polisd: {finding}"),
        Ok(None) => {}
        Err(e) => tell!("polisd hook: {e} (the notices shown will be shown again)"),
    }
}

/// Starts the notices hook's interval at `now`. The record is only a saving: without a
/// writable state directory the hooks still work, checking after every tool, and say why.
fn rate_limit_from(root: &Path, citizen: &str, now: chrono::DateTime<chrono::Utc>) {
    if let Err(e) = crate::fs::state::set_hook_last_check(root, citizen, now) {
        tell!("polisd hook: {e}; until then the notices are checked after every tool");
    }
}

/// A hook command whose arguments do not parse (`error` is clap's message): it still reads its
/// payload to the end, says why on stderr, and adds nothing (`{}` for Gemini CLI, which wants
/// JSON), so the caller can exit 0.
pub fn hook_unparsed(args: &[std::ffi::OsString], error: &str) {
    let (_, drain) = read_payload();
    let first = error.lines().next().unwrap_or_default();
    tell!("polisd hook: {first}; it adds nothing until the hook command is fixed (`polisd hooks install` writes it)");
    let gemini = args.iter().any(|a| a == "gemini");
    answer(if gemini { Cli::Gemini } else { Cli::Claude }, "", "");
    if let Some(drain) = drain {
        drain.finish();
    }
}

fn is_identity_error(e: &session::SessionError) -> bool {
    matches!(
        e,
        session::SessionError::Unknown { .. } | session::SessionError::NotAnId(_)
    )
}

/// What the session is told about a wrong id: the one line that says who is registered and
/// how to register.
fn identity_help(e: &session::SessionError) -> String {
    format!("polisd: {e}")
}

/// The polis a hook acts on: the one its working directory is in, where the agent CLI started
/// it (the project whose settings hold it; the installed command names no path, as those
/// settings are shared through git). The payload's `cwd` only counts against it: one in
/// another polis is refused, so a session cannot prime, or mark read, another project's
/// notices under the id recorded there. One outside any polis, or unreadable, names nothing.
fn hook_polis(payload: &Payload) -> anyhow::Result<Option<PathBuf>> {
    let here = std::env::current_dir().context("reading the working directory")?;
    let Ok(root) = crate::fs::locate::locate(None, &here) else {
        return Ok(None);
    };
    let named = payload
        .cwd
        .as_deref()
        .filter(|p| p.is_dir())
        .and_then(|cwd| Some((cwd, crate::fs::locate::locate(None, cwd).ok()?)));
    let canonical = crate::fs::snapshot::canonical_root;
    if let Some((cwd, other)) = named.filter(|(_, other)| canonical(other) != canonical(&root)) {
        let shown = |p: &Path| notice::one_line(&p.display().to_string(), 200);
        bail!(
            "the payload's cwd {} is in the polis {}, not in {}, the polis of the folder the agent CLI started this hook in; a hook acts only on its own polis, so it adds nothing and marks nothing read (start the agent in that project to work with its polis)",
            shown(cwd),
            shown(&other),
            shown(&root)
        );
    }
    Ok(Some(root))
}

/// What the hook `name` (a CLI's name, or `aider`) of `kind` adds; `repeats`: it fires again
/// and again in a session.
fn hook_context(
    args: &HookArgs,
    name: &str,
    kind: HookKind,
    repeats: bool,
    payload: &Payload,
) -> anyhow::Result<Added> {
    let Some(root) = hook_polis(payload)? else {
        // No polis here: the hooks were installed for another folder; nothing to say.
        return Ok(Added::text(String::new()));
    };
    // `--as` (older installs wrote it), else `$POLIS_CITIZEN`, else the id this person's
    // `hooks install --as` recorded for this CLI.
    let citizen = args
        .citizen
        .clone()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| hooks::identity_of(&root, name));
    // A prime hook wired by hand on an event that fires again and again in a session (after
    // every tool, before every prompt) primes the session once; after that it tells what is
    // new, as the notices hook there would, rather than the whole primer each time. Where a
    // session starts (and after compaction) it always primes. Without a session id in the
    // payload it cannot tell, and primes.
    let primed = match (kind, payload.session_id.as_deref()) {
        (HookKind::Prime, Some(session)) if !session.is_empty() => Some(PrimedSession {
            root: root.clone(),
            // The key names a file: only an id may be one.
            key: citizen
                .as_deref()
                .filter(|c| crate::protocol::layout::card_path(c).is_some())
                .unwrap_or(UNIDENTIFIED)
                .to_string(),
            session: session.to_string(),
        }),
        _ => None,
    };
    let kind = match &primed {
        Some(p) if repeats && crate::fs::state::hook_session_primed(&root, &p.key, &p.session) => {
            HookKind::Notices
        }
        _ => kind,
    };
    let primed = primed.filter(|_| kind == HookKind::Prime);
    let Some(citizen) = citizen else {
        if kind == HookKind::Prime {
            return Ok(Added::text(
                "polisd: this project has a Polis (`_polis/`), but the session has no citizen id. \
Run `polisd hooks install --all --as <your-citizen-id>` once (or set POLIS_CITIZEN), then \
`polisd prime --as <your-citizen-id>`."
                    .to_string(),
            )
            .primed(primed));
        }
        bail!("no citizen id: pass --as or set POLIS_CITIZEN");
    };
    let now_utc = chrono::Utc::now();
    let now = PolisTime::at(session::polis_zone(&root), now_utc);
    match kind {
        HookKind::Prime => {
            let primer = match session::prime(&root, &citizen, &now, &crate::operations::arg::flags)
            {
                Ok(primer) => primer,
                // Said once per session too, where the session has an id.
                Err(e) if is_identity_error(&e) => {
                    return Ok(Added::text(identity_help(&e)).primed(primed))
                }
                Err(e) => return Err(e.into()),
            };
            // The primer shows the notices: the next notices hook need not look for a while.
            rate_limit_from(&root, &citizen, now_utc);
            Ok(Added {
                text: primer.primer.text.clone(),
                after: Some(session::Shown::Session {
                    root,
                    primed: Box::new(primer),
                    now,
                }),
                primed,
                _delivering: None,
            })
        }
        HookKind::Notices => {
            // The id names the rate-limit record's file: it must be an id before anything else.
            if crate::protocol::layout::card_path(&citizen).is_none() {
                return Err(session::SessionError::NotAnId(citizen).into());
            }
            let delivering =
                match crate::fs::state::hook_delivery_lock(&root, &citizen, DELIVERY_WAIT) {
                    Ok(Some(lock)) => Some(lock),
                    // Another session of this citizen is showing them right now.
                    Ok(None) => return Ok(Added::text(String::new())),
                    // Without a state folder, sessions firing at once may each show them.
                    Err(e) => {
                        tell!("polisd hook: {e}; sessions of one citizen may see a notice twice");
                        None
                    }
                };
            if let Some(last) = crate::fs::state::hook_last_check(&root, &citizen) {
                let since = now_utc.signed_duration_since(last);
                // An interval past what a time span holds is the longest one.
                let interval = i64::try_from(args.interval)
                    .ok()
                    .and_then(chrono::Duration::try_seconds)
                    .unwrap_or(chrono::Duration::MAX);
                if since >= chrono::Duration::zero() && since < interval {
                    return Ok(Added::text(String::new()));
                }
            }
            // Recorded first, so a wrong id is said once per interval, not after every tool.
            rate_limit_from(&root, &citizen, now_utc);
            session::check_citizen(&root, &citizen)?;
            let view = match session::read_inbox(&root, &citizen) {
                Ok(view) => view,
                // An inbox or read cursor it cannot read: nothing can be shown and marked read,
                // so the session is told what to fix, once per interval, as the primer does.
                Err(session::SessionError::Unreadable(finding)) => {
                    return Ok(Added::text(format!(
                        "polisd: the notices for `{citizen}` cannot be read or marked read, so none is shown here. Fix first: {}. Then `polisd notices --as {citizen} --unread` lists them.",
                        notice::one_line(&finding.to_string(), 400)
                    )))
                }
                Err(e) => return Err(e.into()),
            };
            let unread = view.unread();
            if unread.is_empty() {
                return Ok(Added::text(String::new()));
            }
            let mut shown: Vec<Notice> = unread
                .iter()
                .take(HOOK_NOTICES)
                .map(|n| (*n).clone())
                .collect();
            session::mark_outdated(&root, &citizen, &mut shown);
            let more = unread.len() - shown.len();
            let text = notice::render_delivery(&citizen, &shown.iter().collect::<Vec<_>>(), more);
            let ids: Vec<String> = shown.iter().map(|n| n.id.clone()).collect();
            match session::check_mark_read(&root, &view, &ids) {
                Ok(()) => Ok(Added {
                    text,
                    after: Some(session::Shown::Read { root, view, ids }),
                    primed: None,
                    _delivering: delivering,
                }),
                // No read cursor can be written: shown, they would come back after every
                // tool. The session is told what to fix instead, once per interval.
                Err(session::SessionError::Unreadable(finding)) => Ok(Added::text(format!(
                    "polisd: {} new notice{} for `{citizen}` cannot be marked read, so none is shown here. Fix first: {}. Then `polisd notices --as {citizen} --unread` lists them.",
                    unread.len(),
                    if unread.len() == 1 { "" } else { "s" },
                    notice::one_line(&finding.to_string(), 400)
                ))),
                Err(e) => Err(e.into()),
            }
        }
    }
}
