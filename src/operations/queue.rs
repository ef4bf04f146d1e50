//! The human queue's decisions: what the orchestration seed says only the user decides (a
//! suggested new agent, a handoff deferred at the chain's maximum depth, a chaining hint), and
//! the one operation that answers them (`polisd queue answer`, the dashboard's "answer a queue
//! item", any front end).
//!
//! Items are derived from the folder each time (`protocol::contracts::person_queue` has the
//! answers' format), so they need no file and every machine sees the same queue. Nothing here
//! writes to an agent's inbox: a person decides. Accepting a new citizen registers its stub;
//! accepting a deferred handoff opens its follow-up as the first step of a new chain.

use crate::fs::snapshot::Polis;
use crate::fs::writer::Writer;
use crate::operations::arg::{Arg, Words};
use crate::operations::chronicle;
use crate::operations::error::OpError;
use crate::operations::handoff::{self as dispatch, BlockOutcome};
use crate::protocol::clock::PolisTime;
use crate::protocol::contracts::handoff::{self, FollowUp, Source, Suggestion};
use crate::protocol::contracts::person_queue::{self as rules, Answer};
use crate::protocol::delivery::inbox::Notification;
use crate::protocol::layout::{self, ContractFolder};
use std::collections::HashMap;

/// The newest answer of an item, with when it was given.
type LatestAnswer = (Answer, chrono::NaiveDateTime);

/// What the person is asked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Ask {
    /// A `Suggested new citizen` (or `new agent`) block: register such a citizen?
    NewCitizen {
        need: String,
        reason: String,
        role: String,
    },
    /// A `Suggested next citizen` block refused at the chain's maximum depth: start it as a
    /// new chain?
    Deferred { suggestion: Suggestion, why: String },
    /// A settled contract's lesson is on a tag another citizen is rated for, and nobody
    /// suggested a next step: open one for that citizen?
    Chain {
        citizen: String,
        tags: Vec<String>,
        lesson: String,
    },
}

/// One item waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Item {
    /// `<kind>/<contract>/<n>`: stable while the item stands, and what the answer names.
    pub key: String,
    /// The contract whose Settlement (or lesson, or review) raised it.
    pub contract_id: String,
    /// Where the suggestion was written (`contracts/settled/<id>` or `reviews/<stem>`).
    pub link: String,
    /// Who wrote the suggestion (the contract's owner).
    pub suggested_by: String,
    pub title: String,
    #[serde(flatten)]
    pub ask: Ask,
    /// The command that answers it.
    pub answer_command: String,
}

/// Every item that waits for a person at `now`, in contract order: the settled contracts'
/// new-citizen blocks, their suggestions deferred at maximum depth and their chaining hints,
/// then the reviews' new-citizen blocks, less those answered (a `later` answer hides an item
/// for a day).
pub fn items(polis: &Polis, now: &PolisTime) -> Vec<Item> {
    collect(polis, now, false)
}

/// [`items`] of the polis at `root`, read whole (settled contracts included) at the polis's
/// time: for a front end without a snapshot of its own.
pub fn list(root: &std::path::Path) -> Vec<Item> {
    let polis = Polis::read(root);
    items(&polis, &crate::operations::chronicle::polis_now(root))
}

/// [`items`] of a polis read without its settled contracts (a long-running reader keeps those
/// as a ledger: the dashboard), `settled` naming the files of `contracts/settled/`: each is
/// read in its turn, and parsed only when it has a handoff section or a lesson names it, so
/// what is held is one contract, not the folder.
pub fn items_beside<'a>(
    polis: &Polis,
    now: &PolisTime,
    settled: impl IntoIterator<Item = &'a str>,
) -> Vec<Item> {
    let mut rels: Vec<&str> = settled.into_iter().collect();
    rels.sort_unstable();
    let mut queue = Queue::new(polis, now, false);
    let mut ignored = Vec::new();
    for rel in rels {
        let stem = layout::record_stem(rel);
        let Ok(Some(text)) = crate::fs::snapshot::read_text(
            &polis.root,
            rel,
            Some(crate::fs::snapshot::MAX_RECORD_BYTES),
        ) else {
            continue;
        };
        if !handoff::has_suggestion_heading(&text) && !queue.has_lesson_about(stem) {
            continue;
        }
        drop(text);
        let Some(file) = crate::fs::snapshot::read_record(&polis.root, rel, stem, &mut ignored)
        else {
            continue;
        };
        let contract = crate::protocol::contracts::contract::Contract::from_record(&file.record);
        queue.settled(&crate::fs::snapshot::ContractFile {
            folder: ContractFolder::Settled,
            file,
            contract,
        });
        ignored.clear();
    }
    queue.finish()
}

/// [`items`], with `postponed` also those answered `later` (they may be answered again at
/// any time).
fn collect(polis: &Polis, now: &PolisTime, postponed: bool) -> Vec<Item> {
    let mut queue = Queue::new(polis, now, postponed);
    for c in polis
        .contracts
        .iter()
        .filter(|c| c.folder == ContractFolder::Settled)
    {
        queue.settled(c);
    }
    queue.finish()
}

/// The queue as it is gathered: the answers the chronicle holds, then each settled contract's
/// items, then the reviews'.
struct Queue<'p> {
    polis: &'p Polis,
    now: &'p PolisTime,
    postponed: bool,
    answers: std::collections::BTreeMap<String, LatestAnswer>,
    folders: HashMap<&'p str, ContractFolder>,
    out: Vec<Item>,
}

impl<'p> Queue<'p> {
    fn new(polis: &'p Polis, now: &'p PolisTime, postponed: bool) -> Queue<'p> {
        Queue {
            polis,
            now,
            postponed,
            answers: match &polis.answers {
                Some(answers) => answers.clone(),
                None => polis
                    .chronicle_text()
                    .map(rules::answers)
                    .unwrap_or_default(),
            },
            folders: polis
                .contracts
                .iter()
                .map(|c| (c.file.stem.as_str(), c.folder))
                .collect(),
            out: Vec::new(),
        }
    }

    fn waits(&self, answer: Option<&LatestAnswer>) -> bool {
        rules::stands(answer, self.now.now)
            || (self.postponed && matches!(answer, Some((Answer::Later, _))))
    }

    /// Whether a lesson names contract `id` (only then can it give a chaining hint).
    fn has_lesson_about(&self, id: &str) -> bool {
        self.polis.lessons.iter().any(|l| {
            handoff::ids_of(&l.lesson.related_contracts)
                .iter()
                .any(|r| r == id)
        })
    }

    /// Where contract `id` is: among the contracts read, else (a reader without its settled
    /// contracts) in `contracts/settled/` if it is there.
    fn folder_of(&self, id: &str) -> Option<ContractFolder> {
        self.folders.get(id).copied().or_else(|| {
            crate::operations::ready::is_in(&self.polis.root, ContractFolder::Settled, id)
                .then_some(ContractFolder::Settled)
        })
    }

    /// The items of one settled contract.
    fn settled(&mut self, c: &crate::fs::snapshot::ContractFile) {
        let polis = self.polis;
        let id = c.file.stem.as_str();
        let owner = c.contract.owner.clone().unwrap_or_default();
        let link = format!("contracts/settled/{id}");
        let mut found: Vec<(String, String, Ask)> = Vec::new();
        let text = &c.file.text;
        if !handoff::has_suggestion_heading(text) {
            if let Some(hint) = chain_hint(polis, c) {
                found.push((
                    format!("chain/{id}/1"),
                    format!(
                        "`{id}` settled with a lesson on {}, which `{}` is rated for: open a next step for it?",
                        hint.1.join(", "),
                        hint.0
                    ),
                    Ask::Chain {
                        citizen: hint.0,
                        tags: hint.1,
                        lesson: hint.2,
                    },
                ));
            }
        } else {
            let folder_of = |id: &str| self.folder_of(id);
            let (next, new) = dispatch::explain(polis, id, &c.contract, true, text, &folder_of);
            for (k, n) in new.into_iter().enumerate() {
                found.push((
                    format!("new-citizen/{id}/{}", k + 1),
                    format!("`{owner}` suggests a new citizen: {}", n.need),
                    Ask::NewCitizen {
                        need: n.need,
                        reason: n.reason,
                        role: n.role,
                    },
                ));
            }
            for (s, outcome) in next {
                if let BlockOutcome::Deferred {
                    why,
                    at_max_depth: true,
                } = outcome
                {
                    found.push((
                        format!("deferred/{id}/{}", s.n),
                        format!(
                            "Deferred at the chain's maximum depth: `{}` for \"{}\"",
                            s.citizen,
                            handoff::follow_up_title(&s.reason, id)
                        ),
                        Ask::Deferred { suggestion: s, why },
                    ));
                }
            }
        }
        for (key, title, ask) in found {
            if !self.waits(self.answers.get(&key)) {
                continue;
            }
            let extra = match ask {
                Ask::NewCitizen { .. } => " --id NEW-AGENT-ID",
                _ => "",
            };
            self.out.push(Item {
                answer_command: format!(
                    "polisd queue answer {key} accept|decline|later --by \"YOUR NAME\"{extra}"
                ),
                key,
                contract_id: id.to_string(),
                link: link.clone(),
                suggested_by: owner.clone(),
                title,
                ask,
            });
        }
    }

    /// The reviews' items after the settled contracts'.
    fn finish(mut self) -> Vec<Item> {
        let mut out = std::mem::take(&mut self.out);
        let waits = |answer: Option<&LatestAnswer>| self.waits(answer);
        review_items(self.polis, &self.answers, &waits, &mut out);
        out
    }
}

/// The `Suggested new citizen` blocks of review files (`reviews/<YYYY-MM-DD-HHMM>-<cid>.md`),
/// keyed by the review's name.
fn review_items(
    polis: &Polis,
    answers: &std::collections::BTreeMap<String, LatestAnswer>,
    waits: &dyn Fn(Option<&LatestAnswer>) -> bool,
    out: &mut Vec<Item>,
) {
    use crate::fs::snapshot;
    let mut findings = Vec::new();
    for entry in snapshot::list(&polis.root, layout::REVIEWS_DIR, ".md", &mut findings) {
        let name = entry.rel.rsplit('/').next().unwrap_or(&entry.rel);
        let Some((_, cid)) = Source::review(name) else {
            continue;
        };
        let Ok(Some(text)) =
            snapshot::read_text(&polis.root, &entry.rel, Some(snapshot::MAX_RECORD_BYTES))
        else {
            continue;
        };
        if !handoff::has_suggestion_heading(&text) {
            continue;
        }
        let Ok(review) = crate::protocol::contracts::review::parse(&text) else {
            continue;
        };
        let body = crate::protocol::frontmatter::parse(&text)
            .map(|r| r.body)
            .unwrap_or_default();
        let stem = name.trim_end_matches(".md");
        let by = review.reviewer.clone().unwrap_or_default();
        for (k, n) in handoff::parse_blocks(&body).new.into_iter().enumerate() {
            let key = format!("new-citizen/{stem}/{}", k + 1);
            if !waits(answers.get(&key)) {
                continue;
            }
            out.push(Item {
                answer_command: format!(
                    "polisd queue answer {key} accept|decline|later --by \"YOUR NAME\" --id NEW-AGENT-ID"
                ),
                key,
                contract_id: review.contract.clone().unwrap_or_else(|| cid.clone()),
                link: format!("reviews/{stem}"),
                suggested_by: by.clone(),
                title: format!("`{by}` suggests a new citizen: {}", n.need),
                ask: Ask::NewCitizen {
                    need: n.need,
                    reason: n.reason,
                    role: n.role,
                },
            });
        }
    }
}

/// The chaining rule (orchestration seed, "Dispatcher Decision Logic": chaining without an
/// explicit suggestion), as polisd decides it: a settled contract with no suggestion block
/// whose lesson (filed on it: `related_contracts` names it) carries a tag that the contract
/// did not require, and that a registered citizen other than the owner rates 4 or 5 on its
/// card, is offered to the person as a next step for the best-rated such citizen (ties: the
/// first id). Only offered; polisd never opens it on its own. `(citizen, tags, lesson id)`.
fn chain_hint(
    polis: &Polis,
    c: &crate::fs::snapshot::ContractFile,
) -> Option<(String, Vec<String>, String)> {
    let id = c.file.stem.as_str();
    let owner = c.contract.owner.as_deref().unwrap_or("");
    for l in &polis.lessons {
        let lesson = &l.lesson;
        if !handoff::ids_of(&lesson.related_contracts)
            .iter()
            .any(|r| r == id)
        {
            continue;
        }
        let new_tags: Vec<&String> = lesson
            .capability_tags
            .iter()
            .filter(|t| !c.contract.required_tags.contains(t))
            .collect();
        if new_tags.is_empty() {
            continue;
        }
        let mut best: Option<(f64, &str, Vec<String>)> = None;
        for (citizen, card) in &polis.cards {
            if citizen == owner {
                continue;
            }
            let rated: Vec<(String, f64)> = new_tags
                .iter()
                .filter_map(|t| {
                    let claim = card.card.capability_tags.iter().find(|(k, _)| k == *t)?;
                    Some(((*t).clone(), claim.1.self_rating?))
                })
                .filter(|(_, r)| *r >= 4.0)
                .collect();
            let Some(top) = rated.iter().map(|(_, r)| *r).reduce(f64::max) else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, _, _)| top > *b) {
                best = Some((top, citizen, rated.into_iter().map(|(t, _)| t).collect()));
            }
        }
        if let Some((_, citizen, tags)) = best {
            return Some((citizen.to_string(), tags, lesson.lesson_id.clone()));
        }
    }
    None
}

/// A person's answer to one item.
#[derive(Debug, Clone)]
pub struct AnswerRequest {
    pub key: String,
    pub answer: Answer,
    /// The person who decides (a name, not a citizen id).
    pub by: String,
    pub why: String,
    /// Accepting a new citizen: its agent id (SPEC §2), vendor and model.
    pub agent_id: Option<String>,
    pub vendor: Option<String>,
    pub model: Option<String>,
    /// Its capability tags; empty: the suggesting contract's tags, rated 3 (a stub's
    /// starting point, which routing's history soon outweighs).
    pub tags: Vec<(String, u8)>,
}

/// What an answer did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Answered {
    pub key: String,
    pub answer: Answer,
    pub chronicle: String,
    /// Accepting a new citizen: the stub registered.
    pub registered: Option<crate::operations::register::Registered>,
    /// Accepting a deferred handoff or a chaining hint: the contract opened.
    pub opened: Option<String>,
}

/// Answers the item `req.key` (it must be waiting now), under the polis's transition lock:
/// `accept` registers the suggested citizen's stub (with its `joined polis` line) or opens the
/// deferred follow-up as step 1 of a new chain; `decline` and `later` only record the answer.
/// Every answer is one `answered queue item` chronicle line.
pub fn answer(writer: &Writer, now: &PolisTime, req: &AnswerRequest) -> Result<Answered, OpError> {
    if req.by.trim().is_empty() {
        return Err(OpError::Empty {
            what: "the person who answers",
            fix: Words::asking(
                "write your name in ",
                Arg::By,
                ": the queue records who decided",
            ),
        });
    }
    // Both are words of the answer's chronicle line: one-line texts, held to their one rule.
    crate::operations::error::on_one_line("your name", Arg::By, &req.by)?;
    crate::operations::error::on_one_line("why", Arg::Why, &req.why)?;
    let root = writer.root();
    // The queue holds the decisions only a person makes: a citizen answering under its own
    // id (the one that asked, even) would be the agent deciding them.
    let by = req.by.trim();
    if crate::protocol::layout::is_system_citizen(by)
        || crate::operations::chronicle::is_registered(root, by)
    {
        return Err(OpError::PersonIsCitizen(by.to_string()));
    }
    let _transition = writer.transition_lock()?;
    let polis = Polis::read(root);
    let Some(item) = collect(&polis, now, true)
        .into_iter()
        .find(|i| i.key == req.key)
    else {
        return Err(OpError::NoQueueItem(req.key.clone()));
    };
    let mut registered = None;
    let mut opened = None;
    if req.answer == Answer::Accept {
        match &item.ask {
            Ask::NewCitizen { need, .. } => {
                let Some(agent_id) = req.agent_id.clone() else {
                    return Err(OpError::Empty {
                        what: "the new citizen's id",
                        fix: Words::asking(
                            "give its id in ",
                            Arg::AgentId,
                            " (8 to 40 lowercase letters, digits, hyphens): accepting registers its stub",
                        ),
                    });
                };
                let citizen = crate::protocol::citizens::register::NewCitizen {
                    agent_id,
                    vendor: req.vendor.clone().unwrap_or_else(|| "unknown".into()),
                    model: req.model.clone().unwrap_or_else(|| "unknown".into()),
                    tool: "unknown".into(),
                    tags: if req.tags.is_empty() {
                        polis
                            .contracts
                            .iter()
                            .find(|c| c.file.stem == item.contract_id)
                            .map(|c| {
                                c.contract
                                    .required_tags
                                    .iter()
                                    .map(|t| (t.clone(), 3))
                                    .collect()
                            })
                            .unwrap_or_default()
                    } else {
                        req.tags.clone()
                    },
                    cost: "medium".into(),
                };
                let r = crate::operations::register::register(root, Some(writer), &citizen, now)
                    .map_err(|e| OpError::NewCitizen {
                        why: Box::new(e),
                        need: need.clone(),
                    })?;
                registered = Some(r);
            }
            Ask::Deferred { suggestion, .. } => {
                opened = Some(open_new_chain(writer, now, &polis, &item, suggestion)?);
            }
            Ask::Chain {
                citizen,
                tags,
                lesson,
            } => {
                let s = Suggestion {
                    n: 1,
                    citizen: citizen.clone(),
                    reason: format!(
                        "Follow up on {} where the lesson {lesson} touches {}",
                        item.contract_id,
                        tags.join(", ")
                    ),
                    context: format!("Read [[lessons/{}/{lesson}]].", tags[0]),
                    tags: tags.clone(),
                };
                opened = Some(open_new_chain(writer, now, &polis, &item, &s)?);
            }
        }
    }
    let link = item.link.clone();
    let note = rules::answer_note(&item.key, req.answer, &req.by, &req.why);
    // One line per item and answer (`later` once a day): its own cause id, so a replay or a
    // second machine records it once.
    let cause = crate::protocol::digest::netstring_id(&[
        rules::ANSWER_VERB,
        &item.key,
        req.answer.as_str(),
        &if req.answer == Answer::Later {
            now.now.format("%Y-%m-%d").to_string()
        } else {
            String::new()
        },
    ]);
    chronicle::append_system_caused(
        writer,
        now,
        layout::DAEMON_ID,
        rules::ANSWER_VERB,
        Some(&link),
        &note,
        &cause,
    )?;
    Ok(Answered {
        key: item.key,
        answer: req.answer,
        chronicle: note,
        registered,
        opened,
    })
}

/// Opens the follow-up `<parent>-next-<n>` (a chaining hint: `<parent>-chain-1`) for an accepted
/// item as step 1 of a new chain (the person started it anew), recommends it to the suggested
/// citizen and tells them. Returns its id.
fn open_new_chain(
    writer: &Writer,
    now: &PolisTime,
    polis: &Polis,
    item: &Item,
    s: &Suggestion,
) -> Result<String, OpError> {
    let parent = polis
        .contracts
        .iter()
        .find(|c| c.folder == ContractFolder::Settled && c.file.stem == item.contract_id)
        .ok_or_else(|| OpError::NoContract(item.contract_id.clone()))?;
    let id = match item.ask {
        Ask::Chain { .. } => format!("{}-chain-1", item.contract_id),
        _ => Source::Settlement.follow_up_id(&item.contract_id, s.n),
    };
    let follow = FollowUp {
        id: id.clone(),
        parent_id: &item.contract_id,
        parent_title: parent
            .contract
            .title
            .as_deref()
            .unwrap_or(&item.contract_id),
        parent_tags: &parent.contract.required_tags,
        stakes: parent.contract.stakes.as_deref().unwrap_or("medium"),
        cost_ceiling: parent.contract.cost_ceiling().unwrap_or("60min"),
        opened_at: now.second_stamp(),
        chain: &[],
        max: handoff::max_chain_depth(&polis.settings.merged),
        suggestion: s,
        suggested_by: &item.suggested_by,
        source: &Source::Settlement,
    };
    let bytes = handoff::render_follow_up(&follow)?;
    let rel = layout::contract_path(ContractFolder::Open, &id).expect("a slug");
    if writer.create_new(&rel, bytes.as_bytes())? {
        let link = rel.trim_end_matches(".md");
        chronicle::append_daemon(
            writer,
            now,
            "opened contract",
            Some(link),
            &handoff::follow_up_title(&s.reason, &item.contract_id),
        )?;
        let notice = Notification::handoff_opened(
            &s.citizen,
            &id,
            &item.contract_id,
            &item.suggested_by,
            "settling",
            1,
            follow.max,
        );
        let after = Polis::read_with(writer.root(), false);
        // The contract is open either way; a notice that cannot be written is the router's
        // `contract-routed` to repeat, so its failure does not undo the answer.
        let _ = crate::operations::deliver_now(&after, writer, &[notice], now);
    }
    Ok(id)
}
