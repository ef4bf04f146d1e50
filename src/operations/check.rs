//! Every finding in a polis, gathered from a [`Polis`] read model without writing anything:
//! `polisd check` prints them, `polisd status`, the daemon and the dashboard summarize them.

use crate::fs::snapshot::Polis;
use crate::protocol::chronicle::claims::ClaimConflict;
use crate::protocol::chronicle::summary::{self, Source, Summary, Texts};
use crate::protocol::citizens::card::VerifyState;
use crate::protocol::clock::PolisTime;
use crate::protocol::finding::{quoted, Code, Finding, Severity};
use crate::protocol::layout::{AmendmentFolder, ContractFolder};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Unknown `depends_on` ids and dependency cycles among the open contracts.
pub fn dependency_findings(polis: &Polis) -> Vec<Finding> {
    let nodes: Vec<_> = polis
        .contracts
        .iter()
        .filter(|c| c.folder == crate::protocol::layout::ContractFolder::Open)
        .map(|c| {
            crate::protocol::contracts::dependency::Node::of(&c.file.stem, &c.file.rel, &c.contract)
        })
        .collect();
    crate::operations::ready::dependency_findings(&polis.root, &nodes)
}

/// A chronicle finding that a later line resolved (see [`crate::protocol::chronicle::resolution`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Resolved {
    #[serde(flatten)]
    pub finding: Finding,
    /// `path:line` of the correcting or retracting line.
    pub resolved_by: String,
}

/// The findings that still count and the chronicle findings later lines resolved.
pub fn findings_and_resolved(polis: &Polis, now: &PolisTime) -> (Vec<Finding>, Vec<Resolved>) {
    findings_and_resolved_beside(polis, now, &|_| false)
}

/// [`findings_and_resolved`] of a polis read without its settled contracts (a reader beside
/// the daemon holds those as a ledger): `is_settled` says whether
/// `contracts/settled/<id>.md` is there.
pub fn findings_and_resolved_beside(
    polis: &Polis,
    now: &PolisTime,
    is_settled: &dyn Fn(&str) -> bool,
) -> (Vec<Finding>, Vec<Resolved>) {
    let mut texts = chronicle_texts(polis);
    let chronicle = chronicle_summary(polis, now, &mut texts);
    findings_and_resolved_with(polis, now, is_settled, &chronicle, &mut texts)
}

/// [`findings_and_resolved_beside`] with what the chronicle says already gathered
/// (`chronicle`, from the files of `source`).
pub fn findings_and_resolved_with(
    polis: &Polis,
    now: &PolisTime,
    is_settled: &dyn Fn(&str) -> bool,
    chronicle: &Summary,
    source: &mut dyn Source,
) -> (Vec<Finding>, Vec<Resolved>) {
    let copies = crate::operations::sync::conflict_copies(&polis.root);
    findings_and_resolved_from(
        polis,
        now,
        is_settled,
        &copies,
        &mut Rechecks::once(),
        chronicle,
        source,
    )
}

/// The chronicle texts `polis` holds, as a source of lines for [`chronicle_summary`].
pub fn chronicle_texts(polis: &Polis) -> Texts<'_> {
    Texts::new(polis.chronicle_files().collect())
}

/// What the chronicle files of `polis` say (their findings, claims, activity, answers), every
/// rule fed each line of `source` once: the texts the polis holds ([`chronicle_texts`]) or
/// the files read from disk a line at a time (`fs::chronicle_lines::Files`).
pub fn chronicle_summary(polis: &Polis, now: &PolisTime, source: &mut dyn Source) -> Summary {
    let has_card = |id: &str| polis.cards.contains_key(id);
    let link_exists = |rel: &str| polis.exists(rel);
    summary::summarize(
        source,
        &summary::Context {
            has_card: &has_card,
            link_exists: &link_exists,
            now: *now,
        },
    )
}

/// What a reader that gathers a polis's findings again after every change (the dashboard)
/// keeps between gatherings, so that each checks again only the files that changed: the
/// SPEC §8 findings of each amendment, by path, with the text they were found in (an
/// amendment with its votes runs to tens of kilobytes of YAML, parsed strictly, and is
/// checked by two rules).
#[derive(Debug, Default)]
pub struct Rechecks {
    amendments: HashMap<String, (String, Vec<Finding>)>,
    /// Whether anything is kept (not for a one-shot gathering, which would only copy texts).
    keep: bool,
}

impl Rechecks {
    /// Keeps what it checks, for the next gathering.
    pub fn kept() -> Rechecks {
        Rechecks {
            keep: true,
            ..Rechecks::default()
        }
    }

    /// Keeps nothing: one gathering (a command, a daemon pass).
    pub fn once() -> Rechecks {
        Rechecks::default()
    }

    /// [`record_check::check_amendment`] of `rel`, from the memo while its text is the same
    /// (its findings depend on nothing else: `now` only gives the zone a date is read in, and
    /// whether `expires_at` reads as a date does not depend on it).
    pub fn amendment(&mut self, rel: &str, text: &str, now: &PolisTime) -> Vec<Finding> {
        if let Some((seen, found)) = self.amendments.get(rel) {
            if seen == text {
                return found.clone();
            }
        }
        let found = crate::protocol::contracts::record_check::check_amendment(rel, text, now);
        if self.keep {
            self.amendments
                .insert(rel.to_string(), (text.to_string(), found.clone()));
        }
        found
    }

    /// Forgets the amendments `polis` no longer holds.
    pub fn retain(&mut self, polis: &Polis) {
        let held: BTreeSet<&str> = polis.amendments.iter().map(|a| a.rel.as_str()).collect();
        self.amendments.retain(|rel, _| held.contains(rel.as_str()));
    }
}

/// [`findings_and_resolved_with`] with the conflict copies already found (`copies`) and the
/// amendments checked through `rechecks`. The chronicle's findings come from `chronicle`; the
/// lines that resolve them are read from `source`, only when there are any.
pub fn findings_and_resolved_from(
    polis: &Polis,
    now: &PolisTime,
    is_settled: &dyn Fn(&str) -> bool,
    copies: &[crate::operations::sync::ConflictCopy],
    rechecks: &mut Rechecks,
    chronicle: &Summary,
    source: &mut dyn Source,
) -> (Vec<Finding>, Vec<Resolved>) {
    let all = all_findings(polis, now, is_settled, copies, rechecks, chronicle);
    let chronicle_paths: BTreeSet<&str> = chronicle.paths.iter().map(String::as_str).collect();
    let (chron, rest): (Vec<Finding>, Vec<Finding>) = all
        .into_iter()
        .partition(|f| chronicle_paths.contains(f.path.as_str()) && f.line.is_some());
    let by = crate::protocol::chronicle::resolution::resolve(source, &chron);
    let mut open = rest;
    let mut resolved = Vec::new();
    for (finding, by) in chron.into_iter().zip(by) {
        match by {
            Some(resolved_by) => resolved.push(Resolved {
                finding,
                resolved_by,
            }),
            None => open.push(finding),
        }
    }
    open.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    (open, resolved)
}

/// Every finding in the polis that still counts (resolved chronicle findings left out),
/// sorted by path, then line (a finding about a whole file first).
pub fn findings(polis: &Polis, now: &PolisTime) -> Vec<Finding> {
    findings_and_resolved(polis, now).0
}

/// Every finding in the polis, resolved or not, sorted by path, then line.
///
/// Pure apart from what `polis` already read, and `Polis::exists` for wikilink targets.
fn all_findings(
    polis: &Polis,
    now: &PolisTime,
    is_settled: &dyn Fn(&str) -> bool,
    copies: &[crate::operations::sync::ConflictCopy],
    rechecks: &mut Rechecks,
    chronicle: &Summary,
) -> Vec<Finding> {
    let mut out = polis.findings.clone();
    // C001–C008 and lines written twice (P024), in the order `check` always gave them.
    out.extend(chronicle.findings.iter().cloned());
    out.extend(card_findings(polis));
    out.extend(status_findings(polis));
    out.extend(unknown_voters(polis));
    out.extend(hand_ratified(polis, now));
    out.extend(contracts_in_two_folders(polis, is_settled));
    out.extend(sync_findings(polis, copies));
    out.extend(
        crate::operations::records::record_findings_with(polis, now, rechecks)
            .into_iter()
            .map(|r| r.finding),
    );
    out.extend(claim_conflicts(polis, &chronicle.claim_conflicts));
    out.extend(dependency_findings(polis));
    out.extend(crate::operations::council::findings(polis));
    out.extend(routing_rule_findings(polis));
    // Stable: findings on one line keep their code order.
    out.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    out
}

/// `routing.rules` in `polis.yml`: entries routing ignores (their shape is wrong), and rules
/// whose target has no card, which fall through to the policy until it registers.
fn routing_rule_findings(polis: &Polis) -> Vec<Finding> {
    use crate::protocol::routing::rules;
    let (rules, mut out) = rules::parse(&polis.settings.merged);
    for rule in rules {
        if !polis.cards.contains_key(&rule.route_to) {
            out.push(Finding::warning(
                Code::UnknownCitizen,
                crate::protocol::layout::POLIS_YML,
                None,
                format!(
                    "routing.rules entry {} routes to `{}`, who has no capability card, so the policy decides instead; register {} or fix the id",
                    rule.n, rule.route_to, rule.route_to
                ),
            ));
        }
    }
    out
}

/// The findings that make the tally skip an amendment or read it differently from what it
/// says (bad YAML, a status it does not know, a quorum or expiry it cannot read, a vote file
/// it cannot count), for
/// `status` and `tally` to show next to the amendments.
pub fn amendment_problems(polis: &Polis, now: &PolisTime) -> Vec<Finding> {
    amendment_problems_with(polis, now, &mut Rechecks::once())
}

/// [`amendment_problems`], each amendment checked through `rechecks`.
pub fn amendment_problems_with(
    polis: &Polis,
    now: &PolisTime,
    rechecks: &mut Rechecks,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = polis
        .findings
        .iter()
        .filter(|f| {
            (f.path.starts_with("amendments/") && f.code == Code::BadYaml)
                || f.path
                    .starts_with(crate::protocol::amendments::amendment::VOTES_DIR)
        })
        .cloned()
        .collect();
    for a in polis.amendments.iter() {
        out.extend(rechecks.amendment(&a.rel, &a.text, now));
    }
    out.extend(hand_ratified(polis, now));
    out.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    out
}

/// `reservations.yml` that cannot be read (an error: `polisd reserve` refuses to touch it),
/// entries written wrong by hand (each with its fix), and overlapping entries of different
/// citizens.
pub fn reservation_findings(root: &std::path::Path, now: &PolisTime) -> Vec<Finding> {
    use crate::operations::reservation as op;
    use crate::protocol::contracts::reservation::FILE;
    let problems = match op::entry_problems(root, now) {
        Ok(p) => p,
        Err(e) => return vec![Finding::error(Code::BadYaml, FILE, None, e.to_string())],
    };
    let mut out: Vec<Finding> = problems.into_iter().map(op::finding).collect();
    let departures = || crate::operations::chronicle::departures(root);
    for o in op::overlaps_now(root, now, departures).unwrap_or_default() {
        out.push(Finding::warning(
            Code::ReservationOverlap,
            FILE,
            None,
            format!(
                "`{}` holds `{}`, which overlaps `{}` held by `{}` since {}; one of them should release it (`polisd release PATH --as ID`)",
                quoted(&o.second), quoted(&o.second_path), quoted(&o.first_path), quoted(&o.first), if o.first_at.is_empty() { "an unknown time".to_string() } else { quoted(&o.first_at) }
            ),
        ));
    }
    out
}

/// (errors, warnings).
pub fn count(findings: &[Finding]) -> (usize, usize) {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    (errors, findings.len() - errors)
}

/// Cards without tags, with values outside the card's schema, or whose `content_hash` no longer
/// matches.
fn card_findings(polis: &Polis) -> Vec<Finding> {
    let mut out = Vec::new();
    for card in polis.cards.values() {
        if card.card.capability_tags.is_empty() {
            out.push(Finding::warning(
                Code::CardWithoutTags,
                &card.rel,
                None,
                "the card claims no `capability_tags`, so the router can never pick this citizen; \
                 add a map of tag -> {self_rating: 1-5, evidence: ...}",
            ));
        }
        for problem in card.card.value_problems() {
            out.push(Finding::warning(Code::BadYaml, &card.rel, None, problem));
        }
        let v = card.card.verify();
        if v.state == VerifyState::Mismatch {
            out.push(Finding::warning(
                Code::CardMismatch,
                &card.rel,
                None,
                format!(
                    "the stored content_hash ({}) does not match the card's content ({}): the card \
                     was edited after it was stamped; if the edit is intended, run `polisd verify --fix`",
                    quoted(v.stored.as_deref().unwrap_or("?")),
                    v.computed.as_deref().unwrap_or("?"),
                ),
            ));
        }
    }
    out
}

/// Statuses whose `state:` is none of SPEC §5's, so the router reads them as half available.
fn status_findings(polis: &Polis) -> Vec<Finding> {
    polis
        .statuses
        .iter()
        .filter_map(|(id, status)| {
            let problem = status.state_problem()?;
            let rel = crate::protocol::layout::status_path(id)?;
            Some(Finding::warning(Code::BadYaml, &rel, None, problem))
        })
        .collect()
}

/// Votes by ids that are not registered citizens, in amendments still in `proposed/` (votes in
/// ratified amendments no longer count for anything; a citizen who has since left is no news).
fn unknown_voters(polis: &Polis) -> Vec<Finding> {
    let registered: BTreeSet<String> = polis.registered();
    polis
        .amendments
        .iter()
        .filter(|a| a.folder == AmendmentFolder::Proposed)
        .flat_map(|a| {
            crate::protocol::amendments::amendment::unknown_voter_findings(
                &a.rel,
                &a.amendment,
                &registered,
            )
        })
        .collect()
}

/// Amendments in `proposed/` whose `status: ratified` was typed without the votes to reach the
/// quorum: the tally does not finish them (`amendment::hand_ratified_finding`).
fn hand_ratified(polis: &Polis, now: &PolisTime) -> Vec<Finding> {
    use crate::protocol::amendments::amendment;
    let marked: Vec<_> = polis
        .amendments
        .iter()
        .filter(|a| {
            a.folder == AmendmentFolder::Proposed && amendment::needs_move(&a.amendment, true)
        })
        .collect();
    if marked.is_empty() {
        // The electorate reads the activity window: only when there is something to weigh.
        return Vec::new();
    }
    let electorate = crate::operations::tally::Electorate::of(polis, now);
    let ctx = electorate.context(now);
    marked
        .into_iter()
        .filter_map(|a| amendment::hand_ratified_finding(&a.rel, &a.text, &a.amendment, &ctx))
        .collect()
}

/// What several machines, clones or worktrees left behind (docs/sync.md): sync conflict
/// copies (P009), polisd ids that arrived twice (P024) in an inbox (in the chronicle: its
/// summary's), and a merge driver named in `.gitattributes` but not configured in this clone
/// (P025).
fn sync_findings(polis: &Polis, copies: &[crate::operations::sync::ConflictCopy]) -> Vec<Finding> {
    let mut out: Vec<Finding> = copies
        .iter()
        .map(crate::operations::sync::copy_finding)
        .collect();
    for id in polis.cards.keys() {
        let Some(rel) = crate::protocol::layout::inbox_path(id) else {
            continue;
        };
        if let Ok(Some(text)) = crate::fs::snapshot::read_text(&polis.root, &rel, None) {
            out.extend(crate::protocol::merge::duplicate_markers(&[(&rel, &text)]));
        }
    }
    out.extend(crate::fs::git::driver_finding(&polis.root));
    out
}

/// The same contract id in two or more of open/settled/abandoned (a sync artifact, SPEC §6).
/// With a settled copy that copy counts and each stale copy is a warning; without one the
/// contract's state is ambiguous, which is an error.
fn contracts_in_two_folders(polis: &Polis, is_settled: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let mut by_id: BTreeMap<&str, Vec<(ContractFolder, String)>> = BTreeMap::new();
    for c in &polis.contracts {
        by_id
            .entry(c.file.stem.as_str())
            .or_default()
            .push((c.folder, c.file.rel.clone()));
    }
    // The settled copies the polis was read without.
    for (id, copies) in &mut by_id {
        if !copies.iter().any(|(f, _)| *f == ContractFolder::Settled) && is_settled(id) {
            if let Some(rel) = crate::protocol::layout::contract_path(ContractFolder::Settled, id) {
                copies.push((ContractFolder::Settled, rel));
            }
        }
    }
    let mut out = Vec::new();
    for (id, copies) in by_id {
        if copies.len() < 2 {
            continue;
        }
        let all = copies
            .iter()
            .map(|(_, rel)| format!("`{rel}`"))
            .collect::<Vec<_>>()
            .join(", ");
        match copies.iter().find(|(f, _)| *f == ContractFolder::Settled) {
            Some((_, settled)) => {
                for (_, rel) in copies.iter().filter(|(f, _)| *f != ContractFolder::Settled) {
                    out.push(Finding::warning(
                        Code::ContractInTwoFolders,
                        rel,
                        None,
                        format!(
                            "contract `{id}` is in more than one folder ({all}); only `{settled}` \
                             counts. This copy is stale (often a sync artifact): delete it"
                        ),
                    ));
                }
            }
            None => out.push(Finding::error(
                Code::ContractInTwoFolders,
                &copies[0].1,
                None,
                format!(
                    "contract `{id}` is in more than one folder ({all}), none of them settled, so \
                     its state is ambiguous; keep the copy in the folder it belongs to and delete \
                     the others"
                ),
            )),
        }
    }
    out
}

/// Claim conflicts still unresolved: an open contract claimed by two citizens with no release
/// between, whose file does not name the first claimer as owner.
fn claim_conflicts(polis: &Polis, conflicts: &[ClaimConflict]) -> Vec<Finding> {
    conflicts
        .iter()
        .filter_map(|c| {
            let file = polis
                .contracts
                .iter()
                .find(|f| f.folder == ContractFolder::Open && f.file.stem == c.contract_id)?;
            let owner = file.contract.owner.as_deref();
            (owner != Some(c.winner.as_str()))
                .then(|| crate::protocol::chronicle::claims::finding(c, &file.file.rel, owner))
        })
        .collect()
}
