//! One polis on several machines, clones or worktrees (docs/sync.md): merging the sync
//! conflict copies polisd can merge, finding the ones it cannot, comparing the copies of a
//! polis in the repository's worktrees, and setting up git's merge driver.
//!
//! The rules are in `protocol::merge`; this module gathers their inputs from disk and hands
//! every write to the `Writer` (or, for git's own config, to git).

use super::ActionError;
use crate::fs::git::{GitError, Repo};
use crate::fs::snapshot::{self};
use crate::fs::writer::Writer;
use crate::protocol::finding::{Code, Finding};
use crate::protocol::layout::{self, ContractFolder};
use crate::protocol::merge::{self, ContractCopy, DRIVER_NAME};
use std::path::{Path, PathBuf};

/// What a sync conflict copy is, for polisd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyKind {
    /// A copy of `chronicle.md` or an archive: merged by the chronicle pass.
    Chronicle,
    /// A copy of an inbox or inbox archive: merged here.
    Inbox,
    /// A copy of `routing_stats.yml`: stale derived bytes, removed (polisd rebuilds the file).
    Derived,
    /// A copy of a proposed amendment: when both are reflection's drafts of one proposal, the
    /// fuller draft is kept and the copy removed; otherwise reported like [`CopyKind::Other`].
    Draft,
    /// Anything else: reported to the index keeper.
    Other,
}

/// A sync conflict copy found in the polis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictCopy {
    pub copy: String,
    pub original: String,
    pub kind: CopyKind,
    /// Why a chronicle or inbox copy is left for a person instead of merged
    /// ([`merge::copy_held_back`]); `None` when it is merged, and for other kinds.
    pub held: Option<String>,
}

/// Every conflict copy in the polis, with what polisd does about it.
pub fn conflict_copies(root: &Path) -> Vec<ConflictCopy> {
    snapshot::conflict_copies(root)
        .into_iter()
        .map(|(copy, original)| ConflictCopy::read(root, copy, original))
        .collect()
}

/// Why the chronicle or inbox copy `copy` of `original` is left for a person
/// ([`merge::copy_held_back`]), reading both files; `None` when it can be merged, or is gone.
pub fn held_back(root: &Path, copy: &str, original: &str) -> Option<String> {
    let copy = match snapshot::read_text(root, copy, None) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => return None,
        Err(f) => Err(f.message),
    };
    let current = snapshot::read_text(root, original, None).map_err(|f| f.message);
    merge::copy_held_back(
        copy.as_deref().map_err(String::as_str),
        current
            .as_ref()
            .map(Option::as_deref)
            .map_err(String::as_str),
        original,
    )
}

impl ConflictCopy {
    /// [`ConflictCopy::of`], with whether a chronicle or inbox copy is left for a person
    /// ([`held_back`], which reads both files).
    pub fn read(root: &Path, copy: String, original: String) -> ConflictCopy {
        let mut c = ConflictCopy::of(copy, original);
        if matches!(c.kind, CopyKind::Chronicle | CopyKind::Inbox) {
            c.held = held_back(root, &c.copy, &c.original);
        }
        c
    }

    /// The copy `copy` of `original` (paths relative to `_polis/`), with its kind.
    pub fn of(copy: String, original: String) -> ConflictCopy {
        let kind = match merge::strategy_for(&original) {
            merge::Strategy::Chronicle => CopyKind::Chronicle,
            merge::Strategy::Inbox => CopyKind::Inbox,
            merge::Strategy::Derived => CopyKind::Derived,
            merge::Strategy::Draft => CopyKind::Draft,
            merge::Strategy::Text => CopyKind::Other,
        };
        ConflictCopy {
            copy,
            original,
            kind,
            held: None,
        }
    }
}

/// The finding `polisd check` reports for a conflict copy (P009).
pub fn copy_finding(c: &ConflictCopy) -> Finding {
    if let Some(why) = &c.held {
        return Finding::warning(
            Code::ConflictCopy,
            &c.copy,
            None,
            format!(
                "a sync tool kept a second version of `{}` here; polisd does not merge it, \
                 because {why}. Compare the two, keep the right lines in `{}` (without \
                 markers), and delete this copy",
                c.original, c.original
            ),
        );
    }
    let message = match c.kind {
        CopyKind::Other => format!(
            "a sync tool kept a second version of `{}` here; polisd does not read it as a record. \
             Compare the two, keep the right content in `{}`, and delete this copy",
            c.original, c.original
        ),
        CopyKind::Draft => format!(
            "a sync tool kept a second version of `{}` here; polisd does not read it as a record. \
             Two drafts of one proposal by polis-reflector are settled by the daemon (the fuller \
             evidence is kept); this is not that: compare the two, keep the right content in \
             `{}`, and delete this copy",
            c.original, c.original
        ),
        CopyKind::Derived => format!(
            "a sync tool kept a second version of `{}` here; it is derived from the settled \
             contracts, so the daemon removes the copy (or delete it; `polisd reconcile` \
             rebuilds the file)",
            c.original
        ),
        _ => format!(
            "a sync tool kept a second version of `{}` here; the daemon merges it into `{}` (an \
             id-aware union of its lines) and removes it, or merge it by hand",
            c.original, c.original
        ),
    };
    Finding::warning(Code::ConflictCopy, &c.copy, None, message)
}

/// Merges a conflict copy polisd can merge into its original, compare-before-replace, then
/// removes the copy. An inbox's: an id-aware union of the blocks (a block already in the inbox
/// archive is not brought back). A proposed amendment's, when the copy and its original are
/// both reflection's drafts of one proposal: the fuller draft ([`merge::merge_drafts`], the
/// rule git's merge driver follows). Returns whether the original changed; `None`, with the
/// copy left in place to be reported, when the original is missing or the two cannot be
/// merged.
pub fn merge_copy(
    writer: &Writer,
    root: &Path,
    copy: &ConflictCopy,
) -> Result<Option<bool>, ActionError> {
    let Ok(Some(copy_text)) = snapshot::read_text(root, &copy.copy, None) else {
        return Ok(None);
    };
    let archive = match copy.kind {
        CopyKind::Inbox => copy
            .original
            .strip_suffix("inbox.md")
            .map(|dir| format!("{dir}inbox-archive.md"))
            .filter(|a| *a != copy.original)
            .and_then(|a| snapshot::read_text(root, &a, None).ok().flatten()),
        CopyKind::Draft => None,
        _ => return Ok(None),
    };
    let elsewhere: Vec<&str> = archive.as_deref().into_iter().collect();
    // Whether the original the edit last saw could be merged with the copy: the copy goes only
    // then, so its bytes are never lost to a file that vanished or changed meanwhile.
    let merged_with = std::cell::Cell::new(false);
    let changed = super::edit_agent_file(writer, root, &copy.original, |cur| {
        if copy.kind == CopyKind::Inbox
            && merge::copy_held_back(Ok(&copy_text), Ok(Some(cur)), &copy.original).is_some()
        {
            merged_with.set(false);
            return None;
        }
        let merged = match copy.kind {
            CopyKind::Inbox => Some(merge::merge_inbox(None, cur, &copy_text, &elsewhere)),
            _ => merge::merge_drafts(cur, &copy_text),
        };
        merged_with.set(merged.is_some());
        merged.map(|m| m.text)
    })?;
    if !merged_with.get() || !root.join(&copy.original).is_file() {
        return Ok(None);
    }
    writer.remove(&copy.copy)?;
    Ok(Some(changed))
}

// ---------------------------------------------------------------------------------------------
// Worktrees

/// The polis at the same place in each other worktree of the repository holding `root`
/// (`git worktree list`), with the worktree's top. Empty outside a repository or with one
/// worktree.
pub fn other_worktree_polises(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    match Repo::find(root) {
        Some(repo) => other_worktree_polises_in(&repo, root),
        None => Vec::new(),
    }
}

/// [`other_worktree_polises`] in a repository already found.
pub fn other_worktree_polises_in(repo: &Repo, root: &Path) -> Vec<(PathBuf, PathBuf)> {
    let canonical = snapshot::canonical_root(root);
    let Ok(rel) = canonical.strip_prefix(&repo.top) else {
        return Vec::new();
    };
    repo.worktrees()
        .into_iter()
        .filter(|w| *w != repo.top)
        .map(|w| (w.clone(), w.join(rel)))
        .filter(|(_, p)| p.join(layout::CONSTITUTION).is_file())
        .collect()
}

/// Every contract copy of one polis: each file name in the three folders; the owner and status
/// of open and abandoned ones (a settled copy's are not read: a settlement is final, and a
/// polis may hold many thousands).
fn contract_copies(root: &Path, label: &Path) -> Vec<(String, ContractCopy)> {
    let mut out = Vec::new();
    let mut ignored = Vec::new();
    for folder in ContractFolder::ALL {
        if folder == ContractFolder::Settled {
            for e in snapshot::list(root, folder.dir(), ".md", &mut ignored) {
                out.push((
                    e.stem,
                    ContractCopy {
                        path: label.join(&e.rel).display().to_string(),
                        folder,
                        owner: None,
                        status: Some("settled".into()),
                    },
                ));
            }
            continue;
        }
        for f in snapshot::read_records(root, folder.dir(), &mut ignored) {
            let c = crate::protocol::contracts::contract::Contract::from_record(&f.record);
            out.push((
                f.stem.clone(),
                ContractCopy {
                    path: label.join(&f.rel).display().to_string(),
                    folder,
                    owner: c.owner,
                    status: c.status,
                },
            ));
        }
    }
    out
}

/// The contracts whose copies differ between this polis and the same polis in the
/// repository's other worktrees, each with its copies described (path, folder, owner,
/// status). `others` is [`other_worktree_polises`]'s answer.
pub fn worktree_divergences(
    root: &Path,
    others: &[(PathBuf, PathBuf)],
) -> Vec<(String, Vec<String>)> {
    if others.is_empty() {
        return Vec::new();
    }
    let mut copies = contract_copies(root, &snapshot::canonical_root(root));
    for (_, polis) in others {
        copies.extend(contract_copies(polis, polis));
    }
    merge::diverging(&copies)
}

/// The P026 findings for [`worktree_divergences`].
pub fn divergence_findings(divergences: &[(String, Vec<String>)]) -> Vec<Finding> {
    divergences
        .iter()
        .map(|(id, copies)| {
            Finding::warning(
                Code::Diverged,
                format!("contracts/{id}"),
                None,
                format!(
                    "contract `{id}` differs between worktrees: {}. Agents in each worktree see \
                     a different owner or state; make the copies agree, or keep one polis that \
                     every worktree uses (docs/sync.md)",
                    copies.join("; ")
                ),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// git-setup

/// What `polisd git-setup` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GitSetup {
    /// The repository's top folder.
    pub repository: PathBuf,
    /// `merge.polisd.driver` as it now is.
    pub driver: String,
    /// Whether the driver's config was written now (false: it already was so).
    pub driver_written: bool,
    /// `_polis/.gitattributes`, and whether it was written.
    pub gitattributes: String,
    pub gitattributes_written: bool,
    /// The files polisd's lines give the driver to that git merges another way all the same (a
    /// later line, or `.git/info/attributes`, wins): empty when git uses the driver for all.
    pub overridden: Vec<Overridden>,
}

/// A file polisd's `.gitattributes` line gives the driver to, which git merges another way.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Overridden {
    /// The file, relative to `_polis/` (a sample name for a pattern's `*`).
    pub path: String,
    /// The `merge` attribute git gives it, as `git check-attr` says it (`union`, `unset`…).
    pub merge: String,
}

/// Why `git-setup` could not run.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0} is not inside a git repository; run `git init` first, or sync it another way (docs/sync.md)")]
    NotARepository(PathBuf),
    /// `_polis` is a symbolic link: git stores the link, not the files it points to.
    #[error("{link} is a symbolic link to {target}; git stores the link, not the polis's files, so a merge driver here would merge nothing. Run `polisd git-setup {target}` if that folder is in a git repository (nothing was written)", link = .link.display(), target = .target.display())]
    Linked { link: PathBuf, target: PathBuf },
    /// `_polis/.gitattributes` cannot be read or written (a symbolic link, not a regular file).
    #[error("{path}: {why} (nothing was written)", path = .path.display())]
    Unreadable { path: PathBuf, why: String },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Write(#[from] ActionError),
}

/// Registers polisd's merge driver in the clone's git config (`merge.polisd.name` and
/// `.driver`, running `program`) and writes the `merge=polisd` lines into
/// `_polis/.gitattributes`, keeping whatever else that file says. Idempotent.
pub fn git_setup(root: &Path, writer: &Writer, program: &str) -> Result<GitSetup, SetupError> {
    if std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(SetupError::Linked {
            link: root.to_path_buf(),
            target: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
        });
    }
    let repo = Repo::find(root).ok_or_else(|| SetupError::NotARepository(root.to_path_buf()))?;
    let rel = ".gitattributes";
    // Read before git's config is written: a file polisd will not edit refuses the whole setup.
    let existing = snapshot::read_text(root, rel, None).map_err(|f| SetupError::Unreadable {
        path: root.join(rel),
        why: f.message,
    })?;
    let driver = merge::driver_command(program);
    let key = format!("merge.{DRIVER_NAME}.driver");
    let driver_written = repo.config_get(&key).as_deref() != Some(driver.as_str());
    if driver_written {
        repo.config_set(
            &format!("merge.{DRIVER_NAME}.name"),
            "polisd: id-aware union of chronicle lines and inbox blocks",
        )?;
        repo.config_set(&key, &driver)?;
    }
    let gitattributes_written = match existing {
        None => {
            let text = merge::with_driver_lines("").unwrap_or_default();
            writer
                .create_new(rel, text.as_bytes())
                .map_err(ActionError::from)?
        }
        Some(_) => super::edit_agent_file(writer, root, rel, merge::with_driver_lines)?,
    };
    // polisd's lines being there is not enough: a later line of the file, or the repository's
    // `info/attributes`, can give a path another merge, and then git never runs the driver.
    let overridden = repo
        .check_attr(root, "merge", &merge::driver_sample_paths())?
        .into_iter()
        .filter(|(_, merge)| merge != DRIVER_NAME)
        .map(|(path, merge)| Overridden { path, merge })
        .collect();
    Ok(GitSetup {
        repository: repo.top,
        driver,
        driver_written,
        gitattributes: root.join(rel).display().to_string(),
        gitattributes_written,
        overridden,
    })
}
