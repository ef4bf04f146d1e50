//! `polisd reflect`: the detectors of recurring friction, by hand. Without `--apply` it shows
//! what it would propose and why the others are held; with it, it files the new proposals and
//! tells every active citizen.

use crate::commands::cli::ReflectArgs;
use crate::fs::snapshot::Polis;
use crate::fs::writer::Writer;
use crate::operations::reflection::{self, Scope};
use crate::protocol::amendments::reflection::{Held, REFLECTOR};
use crate::protocol::clock::PolisTime;
use crate::protocol::delivery::inbox::Notification;

pub fn run(args: ReflectArgs) -> anyhow::Result<u8> {
    let root = super::locate(args.path.get())?;
    let polis = Polis::read(&root);
    let now = PolisTime::system(polis.settings.timezone);
    let evidence = reflection::gather(&polis, Scope::All, &now);
    let writer = if args.apply {
        Some(Writer::new(&root)?)
    } else {
        None
    };
    let results = reflection::reflect(&evidence, args.min_evidence, writer.as_ref(), &now)?;
    let mut failed = false;
    if let Some(writer) = &writer {
        let written: Vec<&str> = results
            .iter()
            .filter(|r| r.written)
            .map(|r| r.amendment_id.as_str())
            .collect();
        if !written.is_empty() {
            let after = Polis::read(&root);
            let active = crate::operations::active_citizens(&after, &now);
            let notices: Vec<Notification> = after
                .amendments
                .iter()
                .filter(|f| written.contains(&f.amendment.id.as_str()))
                .flat_map(|f| {
                    active
                        .iter()
                        .filter(|r| r.as_str() != REFLECTOR)
                        .map(|r| Notification::amendment_proposed(r, &f.amendment))
                })
                .collect();
            failed = !super::deliver_now(&after, writer, &notices, &now)?;
        }
    }
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "proposals": results }))?
        );
        return Ok(u8::from(failed));
    }
    if results.is_empty() {
        say!(
            "no friction found (at least {} pieces of evidence make a pattern)",
            args.min_evidence
        );
    }
    for r in &results {
        let what = match (&r.held, r.written) {
            (_, true) => "filed".to_string(),
            (None, false) if args.apply => "already filed".to_string(),
            (None, false) => "would file".to_string(),
            (Some(Held::Pending { amendment }), _) => format!("held: {amendment} is open"),
            (Some(Held::Ratified { amendment }), _) => format!("held: {amendment} was ratified"),
            (Some(Held::Stale { newest_evidence }), _) => format!(
                "held: its newest evidence ({newest_evidence}) is more than 30 days old; new evidence files it"
            ),
            (Some(Held::Declined { amendment, evidence_then }), _) => format!(
                "held: {amendment} was declined with {evidence_then} pieces of evidence; needs twice that or 90 days"
            ),
        };
        say!(
            "{:22} {}  ({})",
            r.proposal.kind.as_str(),
            r.amendment_id,
            what
        );
        say!("  {}", r.proposal.problem);
    }
    if !args.apply && results.iter().any(|r| r.held.is_none()) {
        say!("run `polisd reflect --apply` to file them");
    }
    Ok(u8::from(failed))
}
