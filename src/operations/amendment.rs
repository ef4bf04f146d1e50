//! Proposing an amendment and voting on one, as agents do it; listing them. The tally stays in
//! `operations::tally` (the daemon runs it after every vote).

use crate::fs::snapshot;
use crate::fs::writer::Writer;
use crate::operations::arg::{Arg, Words};
use crate::operations::chronicle::{self, Appended};
use crate::operations::edit::command_edit_took;
use crate::operations::error::OpError;
use crate::protocol::amendments::amendment::{self as rules, NewAmendment, Vote};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout::{self, AmendmentFolder};
use std::path::Path;

/// What `amendment propose` asks for.
#[derive(Debug, Clone, Default)]
pub struct ProposeRequest {
    pub title: String,
    pub by: String,
    pub body: String,
    /// `YYYY-MM-DD`; default 30 days from now (the tally's default window).
    pub expires: Option<String>,
    pub quorum: Option<u32>,
    /// File under exactly this id, idempotently: when the file is there already nothing is
    /// written, and its chronicle line is appended only if the chronicle lacks it (reflection,
    /// whose proposals are named by date and slug). `None` takes the next free id.
    pub id: Option<String>,
    /// More frontmatter keys after `status` (see `NewAmendment::extra`).
    pub extra: Vec<(String, crate::yaml::Value)>,
    /// The chronicle line's note; empty takes the title.
    pub note: String,
    /// `proposed_at`, `YYYY-MM-DD HH:MM:SS`; `None` takes the wall clock. Reflection passes the
    /// start of the day its id names, so daemons on synced machines that file the same
    /// proposal write the same bytes (docs/sync.md).
    pub proposed_at: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Proposed {
    pub amendment_id: String,
    pub path: String,
    /// Whether this call created the file (false: an exact id that was already filed).
    pub written: bool,
    /// The `proposed amendment` line, when this call appended it.
    pub chronicle: Option<Appended>,
}

/// Writes `amendments/proposed/<today>-<slug>.md` and appends `proposed amendment`. This is
/// also how reflection files the amendments it drafts.
pub fn propose(
    writer: &Writer,
    now: &PolisTime,
    req: &ProposeRequest,
) -> Result<Proposed, OpError> {
    let root = writer.root();
    if req.title.trim().is_empty() {
        return Err(OpError::Empty {
            what: "the title",
            fix: Words::asking("pass ", Arg::Title, " \"the change in a few words\""),
        });
    }
    // The title becomes the body's `# Amendment:` heading: a line break there would write
    // lines of the body's own, `## Response from …` votes the tally counts among them.
    crate::operations::error::one_line(
        "the title",
        Arg::Title,
        &req.title,
        Words::asking("put the detail in the proposal's body (", Arg::Body, ")"),
    )?;
    if !layout::is_system_citizen(&req.by) {
        chronicle::require_citizen(root, &req.by)?;
    }
    // The tally counts every response block of the file, so a body holding one would file a
    // vote its citizen never cast.
    if let Some(v) = crate::protocol::amendments::amendment::body_votes(&req.body, 1).first() {
        return Err(OpError::VoteInBody {
            line: v.line.unwrap_or(1),
            vote: v.vote.as_str(),
            citizen: v.citizen.clone(),
        });
    }
    // SPEC §8 raises a quorum below 2 to 2: a smaller one would be filed and never applied.
    if let Some(q) = req.quorum.filter(|q| (*q as usize) < rules::MIN_QUORUM) {
        return Err(OpError::BadId {
            what: "quorum",
            value: q.to_string(),
            rule: "a quorum is at least 2 agree votes; pass 2 or more, or leave it out for a majority of the active citizens".into(),
        });
    }
    let expires = match &req.expires {
        Some(d) => {
            chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").map_err(|_| OpError::BadId {
                what: "expiry date",
                value: d.clone(),
                rule: "write it as YYYY-MM-DD".into(),
            })?;
            d.clone()
        }
        None => (now.now + chrono::Duration::days(30))
            .format("%Y-%m-%d")
            .to_string(),
    };
    chronicle::check_appendable(writer)?;
    let new = |id: &str| NewAmendment {
        amendment_id: id.to_string(),
        title: req.title.trim().to_string(),
        proposed_by: req.by.clone(),
        proposed_at: req
            .proposed_at
            .clone()
            .unwrap_or_else(|| now.second_stamp()),
        quorum_required: req.quorum,
        expires_at: expires.clone(),
        body: req.body.clone(),
        extra: req.extra.clone(),
    };
    if let Some(id) = &req.id {
        let rel = layout::amendment_path(AmendmentFolder::Proposed, id).ok_or_else(|| {
            OpError::BadId {
                what: "amendment id",
                value: id.clone(),
                rule: "use lowercase letters, digits and dashes".into(),
            }
        })?;
        let written = writer.create_new(&rel, rules::render_new(&new(id))?.as_bytes())?;
        let link = rel.trim_end_matches(".md").to_string();
        let chronicled = snapshot::read_text(root, layout::CHRONICLE, None)
            .ok()
            .flatten()
            .is_some_and(|t| {
                crate::protocol::chronicle::rollover::has_line(&t, "proposed amendment", &link)
            });
        let line = if chronicled {
            None
        } else {
            proposed_line(writer, now, req, &link)?
        };
        return Ok(Proposed {
            amendment_id: id.clone(),
            path: rel,
            written,
            chronicle: line,
        });
    }
    // A new proposal expires at the end of its `expires_at` day: one already past could never
    // be voted on, only tallied as expired. (Reflection files under an exact id, above, with a
    // deadline counted from when its evidence was complete, and may refile it later.)
    if chrono::NaiveDate::parse_from_str(&expires, "%Y-%m-%d").is_ok_and(|d| d < now.now.date()) {
        return Err(OpError::BadId {
            what: "expiry date",
            value: expires,
            rule: "it has passed; pass today or a later day, YYYY-MM-DD".into(),
        });
    }
    let date = now.now.format("%Y-%m-%d").to_string();
    let base = format!("{date}-{}", layout::slugify(&req.title, None, "amendment"));
    if !layout::fits_file_name(&base) {
        return Err(OpError::BadId {
            what: "amendment id",
            value: format!("{}…", base.chars().take(40).collect::<String>()),
            rule: Words::asking(
                "made from the title, it is too long for a file name; pass a shorter title and put the detail in ",
                Arg::Body,
                "",
            ),
        });
    }
    let taken = |id: &str| {
        [AmendmentFolder::Proposed, AmendmentFolder::Ratified]
            .into_iter()
            .any(|f| {
                layout::amendment_path(f, id)
                    .is_some_and(|rel| std::fs::symlink_metadata(root.join(rel)).is_ok())
            })
    };
    // One proposal at a time, so a replay racing the original sees it.
    let _transition = writer.transition_lock()?;
    let probe = rules::render_new(&new(&base))?;
    crate::operations::error::check_record_size("the amendment", &probe)?;
    let earlier = crate::operations::lookup::filed_earlier(
        root,
        &base,
        |id| layout::amendment_path(AmendmentFolder::Proposed, id),
        |id| !taken(id),
        |text| rules::same_proposal(text, &probe),
    );
    if let Some(rel) = earlier {
        // Under the transition lock no other run is half-way: a proposal without its line is
        // one killed between the two, and the rerun finishes it.
        let link = rel.trim_end_matches(".md").to_string();
        if !chronicle::has_line_of(root, Some(&req.by), "proposed amendment", &link) {
            let line = proposed_line(writer, now, req, &link)?;
            return Ok(Proposed {
                amendment_id: layout::record_stem(&rel).to_string(),
                path: rel,
                written: false,
                chronicle: line,
            });
        }
        return Err(OpError::Refused(format!(
            "{} already proposed this amendment as {rel} (same title, text, quorum and deadline); nothing was written: vote on it, or edit it",
            req.by
        )));
    }
    for _ in 0..8 {
        let id = layout::unique_id(&base, taken);
        let text = rules::render_new(&new(&id))?;
        let rel = layout::amendment_path(AmendmentFolder::Proposed, &id).expect("slug");
        if !writer.create_new(&rel, text.as_bytes())? {
            continue;
        }
        let link = rel.trim_end_matches(".md").to_string();
        let line = proposed_line(writer, now, req, &link)?;
        return Ok(Proposed {
            amendment_id: id,
            path: rel,
            written: true,
            chronicle: line,
        });
    }
    Err(OpError::Busy(format!("amendments/proposed/{base}*.md")))
}

/// The `proposed amendment` line: a citizen's as the commands write it, or, for a system
/// citizen (`polis-reflector`), a line with the id of its cause appended only when the
/// chronicle lacks that id (checked under the append lock), so the same proposal filed on two
/// synced machines has one line (docs/sync.md). `None` when nothing was appended.
fn proposed_line(
    writer: &Writer,
    now: &PolisTime,
    req: &ProposeRequest,
    link: &str,
) -> Result<Option<Appended>, OpError> {
    let note = if req.note.is_empty() {
        req.title.trim()
    } else {
        req.note.as_str()
    };
    let verb = "proposed amendment";
    if layout::is_system_citizen(&req.by) {
        let appended = chronicle::append_system(writer, now, &req.by, verb, Some(link), note)?;
        let line = crate::protocol::chronicle::system_line(now, &req.by, verb, Some(link), note);
        return Ok(appended.then(|| Appended {
            line: line.trim_end().to_string(),
            warnings: Vec::new(),
        }));
    }
    chronicle::append(writer, now, &req.by, verb, Some(link), note).map(Some)
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Voted {
    pub amendment_id: String,
    pub citizen: String,
    pub vote: &'static str,
    pub path: String,
    pub chronicle: Appended,
}

/// Casts (or changes) `citizen`'s vote on a proposed amendment: its vote file
/// (`amendments/votes/<aid>/<citizen>.md`, docs/protocol.md) created or replaced, then
/// `voted on amendment`. The amendment file is not touched, so two machines voting at once
/// write two files that git and sync tools merge without a conflict.
pub fn vote(
    writer: &Writer,
    now: &PolisTime,
    aid: &str,
    citizen: &str,
    vote: Vote,
    rationale: Option<&str>,
) -> Result<Voted, OpError> {
    let root = writer.root();
    chronicle::require_citizen(root, citizen)?;
    let bad_id = || OpError::BadId {
        what: "amendment id",
        value: aid.to_string(),
        rule: "amendment ids are YYYY-MM-DD-<slug>".into(),
    };
    let rel = layout::amendment_path(AmendmentFolder::Proposed, aid).ok_or_else(bad_id)?;
    // The tally counts no vote of a citizen who left: a vote it would never count is refused,
    // not reported as cast.
    if chronicle::has_left(root, citizen) {
        return Err(OpError::Refused(format!(
            "`{citizen}` left the polis (its latest membership line is `left polis`), and the tally counts no vote of a citizen who left; nothing was written: a citizen who returns logs `joined polis` first"
        )));
    }
    chronicle::check_appendable(writer)?;
    // One transition at a time: the status read here still holds when the vote lands.
    let _transition = writer.transition_lock()?;
    let Some(text) = snapshot::read_text(root, &rel, Some(snapshot::MAX_RECORD_BYTES))? else {
        let ratified = layout::amendment_path(AmendmentFolder::Ratified, aid)
            .is_some_and(|r| root.join(r).is_file());
        return Err(if ratified {
            OpError::Vote(
                aid.to_string(),
                rules::VoteError::NotProposed("ratified".into()),
            )
        } else {
            OpError::NoAmendment(aid.to_string())
        });
    };
    let status = crate::protocol::frontmatter::parse(&text)
        .map_err(|e| OpError::Vote(aid.to_string(), e.into()))?
        .fields
        .get("status")
        .clone();
    if status.as_str() != Some("proposed") {
        return Err(OpError::Vote(
            aid.to_string(),
            rules::VoteError::NotProposed(status.python_str()),
        ));
    }
    // Past its deadline an amendment is expired whether or not a tally has said so yet: a
    // late agree would otherwise ratify it on the next tally, which ratifies before it expires.
    let amendment =
        rules::parse(&text, aid).map_err(|e| OpError::Vote(aid.to_string(), e.into()))?;
    if let rules::Expiry::Passed(when) = rules::expiry(&amendment, now) {
        return Err(OpError::Vote(
            aid.to_string(),
            rules::VoteError::Expired(when),
        ));
    }
    let vote_rel = rules::vote_path(aid, citizen).ok_or_else(bad_id)?;
    let new = rules::vote_file_text(aid, citizen, vote, &now.minute_stamp(), rationale);
    // The same vote and rationale again (a retry, or racing callers): one line records it.
    let without_time = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with("voted_at:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let link = rel.trim_end_matches(".md").to_string();
    let note = format!(
        "{}: {}",
        vote.as_str(),
        rationale
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or("-")
    );
    let mut written = false;
    for _ in 0..8 {
        written = match snapshot::read_text(root, &vote_rel, Some(snapshot::MAX_RECORD_BYTES))? {
            None => writer.create_new(&vote_rel, new.as_bytes())?,
            Some(old) if without_time(&old) == without_time(&new) => {
                // Under the transition lock no other run is half-way: a vote whose line is
                // not the citizen's last on it was killed between the two, and is finished.
                // (The vote alone is compared: the line's note keeps the rationale as the
                // chronicle writes it, spaces folded.)
                let recorded =
                    chronicle::last_note_of(root, Some(citizen), "voted on amendment", &link);
                let voted = format!("{}:", vote.as_str());
                if recorded.is_some_and(|n| n.starts_with(&voted)) {
                    return Err(OpError::AlreadyVoted {
                        id: aid.to_string(),
                        citizen: citizen.to_string(),
                        vote: vote.as_str(),
                    });
                }
                true
            }
            Some(old) => command_edit_took(writer.compare_and_replace(
                &vote_rel,
                old.as_bytes(),
                new.as_bytes(),
            )?),
        };
        if written {
            break;
        }
    }
    if !written {
        return Err(OpError::Busy(vote_rel));
    }
    let line = chronicle::append(
        writer,
        now,
        citizen,
        "voted on amendment",
        Some(&link),
        &note,
    )?;
    Ok(Voted {
        amendment_id: aid.to_string(),
        citizen: citizen.to_string(),
        vote: vote.as_str(),
        path: vote_rel,
        chronicle: line,
    })
}

/// A line of `amendment list`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AmendmentSummary {
    pub amendment_id: String,
    pub title: String,
    pub status: String,
    pub folder: &'static str,
    pub votes: std::collections::BTreeMap<&'static str, Vec<String>>,
    /// The proposer, when the tally counts them as agreeing (a registered citizen who cast no
    /// vote of their own): not in `votes`, which holds only votes cast, but an agree all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implied_agree: Option<String>,
    /// The agrees the tally counts: of registered citizens who have not left the polis, the
    /// implied one included.
    pub agrees: usize,
    pub path: String,
}

/// Every amendment in `proposed/` and `ratified/`, sorted by id as the reference lists them.
pub fn list(root: &Path) -> Vec<AmendmentSummary> {
    let mut out = Vec::new();
    let mut findings = Vec::new();
    // Whose votes the tally counts (`rules::voters`): registered, and not departed.
    let departed = crate::operations::chronicle::departures(root);
    let counts = |id: &str| {
        !departed.contains_key(id) && crate::operations::chronicle::is_registered(root, id)
    };
    for folder in [AmendmentFolder::Proposed, AmendmentFolder::Ratified] {
        for e in snapshot::list(root, folder.dir(), ".md", &mut findings) {
            let Ok(Some(text)) =
                snapshot::read_text(root, &e.rel, Some(snapshot::MAX_RECORD_BYTES))
            else {
                continue;
            };
            let Ok(a) = crate::protocol::frontmatter::parse(&text) else {
                continue;
            };
            let field = |k: &str| match a.fields.get(k) {
                crate::yaml::Value::Null => String::new(),
                v => v.python_str(),
            };
            // Each voter's last vote, whichever form recorded it (the file's lists and
            // response blocks, then the vote files).
            let mut votes: std::collections::BTreeMap<&'static str, Vec<String>> =
                Vote::ALL.iter().map(|k| (k.as_str(), Vec::new())).collect();
            let mut implied_agree = None;
            let mut agrees = 0;
            if let Ok(parsed) = snapshot::parse_amendment(root, &text, &e.stem) {
                // As the tally counts (`counted_votes`): a voter's last vote, and a proposer
                // who is a voter with no vote of their own agrees.
                let voters: std::collections::BTreeSet<String> = parsed
                    .votes
                    .iter()
                    .map(|r| r.citizen.clone())
                    .chain(parsed.proposed_by.clone())
                    .filter(|id| counts(id))
                    .collect();
                agrees = rules::counted_votes(&parsed, &voters).count(Vote::Agree);
                implied_agree = parsed.proposed_by.clone().filter(|p| {
                    !parsed.votes.iter().any(|r| r.citizen == *p) && voters.contains(p)
                });
                let mut last: Vec<(String, Vote)> = Vec::new();
                for r in parsed.votes {
                    last.retain(|(c, _)| *c != r.citizen);
                    last.push((r.citizen, r.vote));
                }
                for (citizen, vote) in last {
                    votes.entry(vote.as_str()).or_default().push(citizen);
                }
            }
            out.push(AmendmentSummary {
                amendment_id: Some(field("amendment_id"))
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| e.stem.clone()),
                title: field("title"),
                status: field("status"),
                folder: match folder {
                    AmendmentFolder::Proposed => "proposed",
                    AmendmentFolder::Ratified => "ratified",
                },
                votes,
                implied_agree,
                agrees,
                path: e.rel,
            });
        }
    }
    out.sort_by(|a, b| a.amendment_id.cmp(&b.amendment_id));
    out
}
