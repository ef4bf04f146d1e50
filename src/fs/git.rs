//! The git repository a polis lives in, as far as polisd needs it (docs/sync.md): where the
//! repository and its worktrees are, whether the polisd merge driver is configured, and
//! registering it; and which commits hold a chronicle line the work tree lacks.
//!
//! Everything goes through the `git` program (`rev-parse`, `config`, `worktree list`, `grep`),
//! never by parsing `.git/` by hand: worktrees, `includeIf` and linked git dirs are git's
//! business. Without git installed, or outside a repository, every function says "no
//! repository". Nothing here writes into `_polis/`; `git config` writes git's own config.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git repository (one worktree of it) holding a polis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The top of this worktree.
    pub top: PathBuf,
    /// The repository's common git dir (shared by every worktree).
    pub common_dir: PathBuf,
    /// This worktree's own git dir (where a stopped rebase or merge keeps its state).
    pub git_dir: PathBuf,
}

/// Why a git command failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}; install git, or run this inside a git repository")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
}

fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(GitError::Spawn)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether some folder from `dir` up holds `.git` (a folder, or the file of a linked
/// worktree): a cheap test before spawning git.
pub fn inside_repo(dir: &Path) -> bool {
    dir.ancestors()
        .any(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
}

impl Repo {
    /// The repository holding `dir`, or `None` (no `.git` above it, or no git).
    pub fn find(dir: &Path) -> Option<Repo> {
        if !inside_repo(dir) {
            return None;
        }
        let out = git(
            dir,
            &[
                "rev-parse",
                "--show-toplevel",
                "--git-common-dir",
                "--absolute-git-dir",
            ],
        )
        .ok()?;
        let mut lines = out.lines();
        let top = PathBuf::from(lines.next()?.trim());
        let common = PathBuf::from(lines.next()?.trim());
        let git_dir = PathBuf::from(lines.next()?.trim());
        // `--git-common-dir` may be relative to `dir`.
        let common_dir = if common.is_absolute() {
            common
        } else {
            dir.join(common)
        };
        Some(Repo {
            top: crate::fs::snapshot::canonical_root(&top),
            common_dir: crate::fs::snapshot::canonical_root(&common_dir),
            git_dir,
        })
    }

    /// `git config --get KEY`, `None` when unset.
    pub fn config_get(&self, key: &str) -> Option<String> {
        git(&self.top, &["config", "--get", key])
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// `git config KEY VALUE` (the repository's config, which every worktree shares).
    pub fn config_set(&self, key: &str, value: &str) -> Result<(), GitError> {
        git(&self.top, &["config", key, value]).map(|_| ())
    }

    /// The value git gives the attribute `attr` on each of `paths` (relative to `dir`, a folder
    /// inside this worktree; the files need not exist), as `git check-attr` says it: `unset`,
    /// `unspecified`, `set` or the value. Every `.gitattributes` and `.git/info/attributes`
    /// in their order of precedence, which only git knows for sure.
    pub fn check_attr(
        &self,
        dir: &Path,
        attr: &str,
        paths: &[String],
    ) -> Result<Vec<(String, String)>, GitError> {
        let mut args = vec!["check-attr", "-z", attr, "--"];
        args.extend(paths.iter().map(String::as_str));
        let out = git(dir, &args)?;
        let fields: Vec<&str> = out.split('\0').collect();
        Ok(fields
            .chunks_exact(3)
            .map(|f| (f[0].to_string(), f[2].to_string()))
            .collect())
    }

    /// The files under `dir` (relative to `root`, a folder inside the work tree) that this
    /// clone shares with the others: tracked and unchanged since `HEAD`, as paths relative to
    /// `root`. Empty when there is no commit yet or git fails.
    pub fn shared_unchanged(&self, root: &Path, dir: &str) -> std::collections::BTreeSet<String> {
        let tracked = git(root, &["ls-files", "-z", "--", dir]);
        let changed = git(
            root,
            &["diff", "--name-only", "-z", "--relative", "HEAD", "--", dir],
        );
        let (Ok(tracked), Ok(changed)) = (tracked, changed) else {
            return Default::default();
        };
        let changed: std::collections::BTreeSet<&str> = changed.split('\0').collect();
        tracked
            .split('\0')
            .filter(|p| !p.is_empty() && !changed.contains(p))
            .map(str::to_string)
            .collect()
    }

    /// Every worktree's top folder (`git worktree list --porcelain`), this one included,
    /// canonicalised. Bare and missing (`prunable`) worktrees are left out.
    pub fn worktrees(&self) -> Vec<PathBuf> {
        let Ok(out) = git(&self.top, &["worktree", "list", "--porcelain"]) else {
            return vec![self.top.clone()];
        };
        parse_worktree_list(&out)
            .into_iter()
            .filter(|p| p.is_dir())
            .map(|p| crate::fs::snapshot::canonical_root(&p))
            .collect()
    }
}

/// The git operation stopped halfway in the worktree whose git dir is `git_dir` (a rebase, a
/// merge, a cherry-pick or a revert waiting for a person to resolve a conflict, or a bisect
/// waiting for the person's verdict on an older commit), if any. Until it ends the work tree
/// holds part of the history: the lines of commits not yet replayed, or left out by the
/// bisect, are missing. A few `stat`s, the files `git status` itself looks for.
pub fn operation_in_progress(git_dir: &Path) -> Option<&'static str> {
    [
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
        ("BISECT_LOG", "bisect"),
    ]
    .into_iter()
    .find(|(file, _)| std::fs::symlink_metadata(git_dir.join(file)).is_ok())
    .map(|(_, what)| what)
}

/// Where the chronicle lines missing from a polis's work tree are in git: the lines of the
/// checked-out commit's chronicle, and of other branches', that match them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommittedLines {
    /// The matching lines of `HEAD`'s `chronicle.md` and archives, one a line.
    pub head: String,
    /// The matching lines of every other branch's: a local branch other than the one checked
    /// out (any, on a detached HEAD), a remote-tracking one, or the latest stash.
    pub other_branches: String,
}

/// The committed chronicle lines that match any of `lines` (lines missing from the polis at
/// `root`), in `HEAD` and in other branches. A line that `HEAD` lacks too and another branch
/// holds was left behind by a checkout (of another branch, or of an older commit) or set
/// aside by `git stash`, not lost.
/// One `git grep` over the trees; empty when the polis is not in a repository or git fails.
pub fn committed_chronicle_lines(root: &Path, lines: &[&str]) -> CommittedLines {
    use std::io::Write as _;
    let mut found = CommittedLines::default();
    let patterns: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .collect();
    if patterns.is_empty() || !inside_repo(root) {
        return found;
    }
    // `%(HEAD)` is `*` for the branch checked out, which `HEAD` already stands for.
    let Ok(refs) = git(
        root,
        &[
            "for-each-ref",
            "--format=%(HEAD)%(refname)",
            "refs/heads",
            "refs/remotes",
            "refs/stash",
        ],
    ) else {
        return found;
    };
    let trees: Vec<&str> = std::iter::once("HEAD")
        .chain(
            refs.lines()
                .filter_map(|r| r.strip_prefix(' '))
                .filter(|r| !r.ends_with("/HEAD")),
        )
        .collect();
    let child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["grep", "-F", "-I", "--no-color", "-f", "-"])
        .args(&trees)
        .args(["--", crate::protocol::layout::CHRONICLE, "chronicle-*.md"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return found;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // One pattern a line; dropping stdin ends the list.
        let _ = stdin.write_all(format!("{}\n", patterns.join("\n")).as_bytes());
    }
    // Exit 1 is "no match", with nothing on stdout.
    let Ok(out) = child.wait_with_output() else {
        return found;
    };
    // `<tree>:<path>:<line>`: neither a ref name nor a chronicle's file name holds a colon.
    for hit in String::from_utf8_lossy(&out.stdout).lines() {
        let mut parts = hit.splitn(3, ':');
        let (Some(tree), Some(_path), Some(line)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let into = if tree == "HEAD" {
            &mut found.head
        } else {
            &mut found.other_branches
        };
        into.push_str(line);
        into.push('\n');
    }
    found
}

/// The worktree paths of `git worktree list --porcelain` output, without bare entries.
fn parse_worktree_list(out: &str) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for record in out.split("\n\n") {
        let mut path = None;
        let mut bare = false;
        for line in record.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = Some(PathBuf::from(p));
            } else if line == "bare" {
                bare = true;
            }
        }
        if let (Some(p), false) = (path, bare) {
            paths.push(p);
        }
    }
    paths
}

/// The `.gitattributes` files that apply to a polis at `root`: from `_polis/` up to the
/// repository's top, those that exist, with their text.
pub fn gitattributes_above(root: &Path, top: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for dir in root.ancestors() {
        let path = dir.join(".gitattributes");
        if let Some(bytes) = crate::fs::snapshot::read_regular(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
        if dir == top {
            break;
        }
    }
    out
}

/// The finding for a clone whose `.gitattributes` names polisd's merge driver while its git
/// config does not define it (overdeck#1901: git then silently falls back to its text merge,
/// conflict markers and all). `None` when the driver is not named, or is configured, or the
/// polis is not in a repository. Spawns git only when a `.gitattributes` names the driver.
pub fn driver_finding(root: &Path) -> Option<crate::protocol::finding::Finding> {
    use crate::protocol::merge::{names_driver, DRIVER_NAME};
    if !inside_repo(root) {
        return None;
    }
    // The candidate files are read before git is asked where the top is: most polises have
    // none, and then no process is spawned.
    let named: Vec<PathBuf> = root
        .ancestors()
        .map(|d| d.join(".gitattributes"))
        .filter_map(|p| crate::fs::snapshot::read_regular(&p).map(|b| (p, b)))
        .filter(|(_, b)| names_driver(&String::from_utf8_lossy(b)))
        .map(|(p, _)| p)
        .collect();
    if named.is_empty() {
        return None;
    }
    let repo = Repo::find(root)?;
    let named: Vec<&PathBuf> = named.iter().filter(|p| p.starts_with(&repo.top)).collect();
    let first = named.first()?;
    let driver = repo.config_get(&format!("merge.{DRIVER_NAME}.driver"));
    let rel = first
        .strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| first.display().to_string());
    if let Some(driver) = driver {
        // A program named by its path that is gone (polisd moved, a build folder cleaned):
        // git's shell fails to run it, git counts that as a conflict and leaves our side of
        // the file as it was, without markers. A bare name is looked up in git's PATH, and a
        // relative path from the worktree's top, neither of which need be this process's: not
        // judged.
        let program = crate::protocol::merge::driver_program(&driver)?;
        if !Path::new(&program).is_absolute()
            || std::fs::metadata(&program).is_ok_and(|m| m.is_file())
        {
            return None;
        }
        return Some(crate::protocol::finding::Finding::error(
            crate::protocol::finding::Code::DriverNotConfigured,
            rel,
            None,
            format!(
                "this clone's git config runs `{program}` as polisd's merge driver \
                 (`merge.{DRIVER_NAME}.driver`), and there is no such file, so every merge of \
                 the files {} gives the driver fails: git leaves our side, the other side's \
                 lines out, without conflict markers. Run `polisd git-setup` in this clone to \
                 register this polisd",
                first.display()
            ),
        ));
    }
    Some(crate::protocol::finding::Finding::error(
        crate::protocol::finding::Code::DriverNotConfigured,
        rel,
        None,
        format!(
            "{} assigns `merge={DRIVER_NAME}`, but this clone's git config has no \
             `merge.{DRIVER_NAME}.driver`, so git merges those files as plain text (conflict \
             markers in the chronicle and inboxes). Run `polisd git-setup` in this clone; every \
             clone needs it once, because git never copies its config with a clone",
            first.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_list_skips_bare_entries() {
        let out = "worktree /r/main.git\nbare\n\nworktree /r/a\nHEAD 1234\nbranch refs/heads/a\n\nworktree /r/b\nHEAD 5678\ndetached\n";
        assert_eq!(
            parse_worktree_list(out),
            vec![PathBuf::from("/r/a"), PathBuf::from("/r/b")]
        );
    }
}
