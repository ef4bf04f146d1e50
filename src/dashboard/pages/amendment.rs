//! One amendment: where it stands (proposed or ratified, the votes against its quorum, what a
//! tally now would do), who voted what and where the vote is written, and the file itself.

use super::{citizen_link, Context, Page, PageError, Rendered};
use crate::protocol::amendments::amendment::VOTES_DIR;
use crate::protocol::layout::AmendmentFolder;
use maud::html;

pub const PAGE: Page = Page {
    route: "/amendments/{id}",
    nav: None,
    render,
};

fn render(cx: &Context<'_>) -> Result<Rendered, PageError> {
    let s = cx.snapshot;
    let id = cx.param("id");
    // By its `amendment_id`, else by its file name (the two differ only in a hand-written
    // file, and links from the chronicle name the file).
    let file = s
        .polis
        .amendments
        .iter()
        .find(|f| f.amendment.id == id)
        .or_else(|| {
            s.polis
                .amendments
                .iter()
                .find(|f| f.amendment.file_stem == id)
        })
        .ok_or_else(|| PageError::NotFound(format!("no amendment `{id}` in this polis")))?;
    let a = &file.amendment;
    let row = (file.folder == AmendmentFolder::Proposed)
        .then(|| s.summary.amendments.iter().find(|r| r.amendment_id == a.id))
        .flatten();
    let folder = match file.folder {
        AmendmentFolder::Proposed => "proposed",
        AmendmentFolder::Ratified => "ratified",
    };
    let title = a.title.clone().unwrap_or_else(|| a.id.clone());
    // The snapshot reads the file's own votes (frontmatter lists, then response blocks), then
    // the vote files (`amendments/votes/<stem>/<citizen>.md`): the last ones are the files.
    let from_files = crate::fs::snapshot::vote_files(&s.polis.root, &a.file_stem).len();
    let first_file = a.votes.len().saturating_sub(from_files);
    let implied = a
        .proposed_by
        .as_deref()
        .filter(|p| s.polis.registered().contains(*p) && !a.votes.iter().any(|v| v.citizen == *p));
    let body = html! {
        h1 { (title) }
        p.muted {
            (file.rel) " · " (folder)
            @if let Some(st) = &a.status { " · status " strong #status { (st) } }
            @if let Some(by) = &a.proposed_by { " · proposed by " (citizen_link(cx, by)) }
        }
        @if let Some(r) = row {
            p #tally {
                progress max=(r.quorum) value=(r.agrees.min(r.quorum)) { (r.agrees) "/" (r.quorum) }
                " " (r.agrees) " agree of " (r.quorum) " needed"
                " · expires " (r.expires.as_deref().unwrap_or("-"))
                @if r.expiry_passed { " " span.error { "(passed)" } }
                " · a tally now would " (r.tally_would())
                                @if let Some(who) = r.who_tallies(s.summary.daemon.as_ref().map(|d| d.pid)) { ": " (super::code_spans(&who)) }
            }
        }
        h2 { "Votes" }
        @if a.votes.is_empty() { p.muted { "No votes yet." } }
        @else {
            table #votes {
                thead { tr { th { "citizen" } th { "vote" } th { "written" } } }
                tbody {
                    @for (i, v) in a.votes.iter().enumerate() {
                        tr {
                            td { (citizen_link(cx, &v.citizen)) }
                            td { (v.vote.as_str()) }
                            td.muted {
                                @match v.line {
                                    Some(n) => { "a response block, line " (n) }
                                    None if i >= first_file => { (VOTES_DIR) "/" (a.file_stem) "/" (v.citizen) ".md" }
                                    None => { "the frontmatter's " code { "votes" } }
                                }
                            }
                        }
                    }
                }
            }
        }
        p.muted {
            "A citizen's last vote counts."
            @if let Some(p) = implied { " " (citizen_link(cx, p)) " proposed it and counts as agreeing, having cast no vote." }
        }
        h2 { "File" }
        (super::document(cx, &file.rel, &file.text))
    };
    Ok(Rendered { title, body })
}
