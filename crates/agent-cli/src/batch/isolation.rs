//! Each task's own copy of its workspace: a `git worktree` at the task's commit, or a copy of a
//! plain directory with a baseline commit kept outside it, and the patch of what the task
//! changed, taken against that baseline.
//!
//! The two kinds give the same patch format (`git diff --binary`), so a reader of RESULTS.jsonl
//! applies every patch the same way. A copied directory's baseline lives in a git directory under
//! the batch's state, not in the copy, so the agent sees exactly the files it was given.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{Mutex, PoisonError},
};

use anyhow::{Context, bail};

use super::task::Source;

/// `git worktree add` and `remove` of one repository lock its `.git`; two tasks of one batch on
/// the same repository take turns rather than fail on each other's lock.
static WORKTREES: Mutex<()> = Mutex::new(());

/// A task's prepared copy.
#[derive(Debug, Clone)]
pub(crate) struct Copy {
    /// The directory the task runs in.
    pub(crate) dir: PathBuf,
    /// The git directory holding the baseline: the repository's own for a worktree, the batch's
    /// for a copied directory.
    git_dir: Option<PathBuf>,
    /// The baseline commit.
    base: String,
    /// The scratch index used to take the patch, so the copy's own index is never touched.
    index: PathBuf,
}

/// Where a task's copy and its baseline go.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    /// The copy: `<batch>/work/<id>`.
    pub(crate) dir: PathBuf,
    /// The baseline of a copied directory: `<batch>/state/git/<id>`.
    pub(crate) git_dir: PathBuf,
}

/// Makes the task's copy at `place`, clearing whatever an earlier, interrupted run left there.
pub(crate) fn prepare(source: &Source, place: &Place) -> anyhow::Result<Copy> {
    remove(source, place);
    if let Some(parent) = place.dir.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let index = place.git_dir.with_extension("index");
    match source {
        Source::Git { repo, commit } => {
            let spec = format!("{commit}^{{commit}}");
            let base = git(repo, None, ["rev-parse", "--verify", "--quiet", spec.as_str()])
                .with_context(|| format!("no commit `{commit}` in {}", repo.display()))?;
            let base = String::from_utf8_lossy(&base).trim().to_owned();
            let _turn = WORKTREES.lock().unwrap_or_else(PoisonError::into_inner);
            let dir = place.dir.as_os_str();
            let add =
                [OsStr::new("worktree"), "add".as_ref(), "--detach".as_ref(), "--force".as_ref()];
            let args = add.into_iter().chain([dir, OsStr::new(&base)]);
            git(repo, None, args).context("git worktree add")?;
            Ok(Copy { dir: place.dir.clone(), git_dir: None, base, index })
        }
        Source::Directory(from) => {
            if !from.is_dir() {
                bail!("the workspace {} is not a directory", from.display());
            }
            std::fs::create_dir_all(&place.dir)?;
            // `cp -a SRC/. DST` copies the contents, hidden files, links and modes included.
            #[expect(
                clippy::disallowed_methods,
                reason = "the batch's own bookkeeping on a copy it made, not a command of the model"
            )]
            let status = Command::new("cp")
                .arg("-a")
                .arg(from.join("."))
                .arg(&place.dir)
                .stdin(Stdio::null())
                .status()
                .context("running cp")?;
            if !status.success() {
                bail!("copying {} failed ({status})", from.display());
            }
            let separate = Some(place.git_dir.as_path());
            git(&place.dir, separate, ["init", "--quiet"])?;
            git(&place.dir, separate, ["add", "--all", "--force"])?;
            let commit = ["commit", "--quiet", "--allow-empty", "--no-verify", "-m", "baseline"];
            git(&place.dir, separate, commit)?;
            let base = git(&place.dir, separate, ["rev-parse", "HEAD"])?;
            let base = String::from_utf8_lossy(&base).trim().to_owned();
            Ok(Copy { dir: place.dir.clone(), git_dir: Some(place.git_dir.clone()), base, index })
        }
    }
}

/// The patch of everything the task changed, added and deleted against the baseline (files
/// git ignores left out); empty when nothing changed.
pub(crate) fn patch(copy: &Copy) -> anyhow::Result<Vec<u8>> {
    let git_dir = copy.git_dir.as_deref();
    let index = copy.index.as_os_str();
    let run = |args: &[&str]| {
        let mut command = git_command(&copy.dir, git_dir);
        command.env("GIT_INDEX_FILE", index).args(args);
        output(command)
    };
    let _ = std::fs::remove_file(&copy.index);
    run(&["read-tree", &copy.base])?;
    // A copied directory's baseline took every file, ignored ones too, so its patch does.
    if git_dir.is_some() {
        run(&["add", "--all", "--force"])?
    } else {
        run(&["add", "--all"])?
    };
    let diff = run(&["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", &copy.base]);
    let _ = std::fs::remove_file(&copy.index);
    diff
}

/// Removes a task's copy and its baseline; a worktree is unregistered from its repository.
/// Best effort: what cannot be removed is removed by the next run's `prepare`.
pub(crate) fn remove(source: &Source, place: &Place) {
    if let Source::Git { repo, .. } = source {
        let _turn = WORKTREES.lock().unwrap_or_else(PoisonError::into_inner);
        if place.dir.exists() {
            let args = [OsStr::new("worktree"), "remove".as_ref(), "--force".as_ref()];
            let _ = git(repo, None, args.into_iter().chain([place.dir.as_os_str()]));
        }
        let _ = std::fs::remove_dir_all(&place.dir);
        let _ = git(repo, None, ["worktree", "prune"]);
    } else {
        let _ = std::fs::remove_dir_all(&place.dir);
    }
    let _ = std::fs::remove_dir_all(&place.git_dir);
    let _ = std::fs::remove_file(place.git_dir.with_extension("index"));
}

/// A git command in `dir`, with the baseline in `git_dir` when it is kept apart. The user's
/// hooks, signing and pagers are off: the batch's own commits and diffs are bookkeeping.
fn git_command(dir: &Path, git_dir: Option<&Path>) -> Command {
    #[expect(
        clippy::disallowed_methods,
        reason = "the batch's own bookkeeping on a copy it made, not a command of the model"
    )]
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .args(["-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false"])
        .args(["-c", "user.name=agent batch", "-c", "user.email=batch@localhost"])
        .args(["-c", "core.autocrlf=false", "-c", "core.fileMode=true"])
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    if let Some(git_dir) = git_dir {
        command.env("GIT_DIR", git_dir).env("GIT_WORK_TREE", dir);
    }
    command
}

fn git<I, S>(dir: &Path, git_dir: Option<&Path>, args: I) -> anyhow::Result<Vec<u8>>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = git_command(dir, git_dir);
    command.args(args);
    output(command)
}

/// Runs `command`; its stdout, or an error with its stderr.
fn output(mut command: Command) -> anyhow::Result<Vec<u8>> {
    let out = command.output().context("running git (is it installed?)")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("{:?} failed: {}", command.get_args().collect::<Vec<_>>(), stderr.trim());
    }
    Ok(out.stdout)
}
