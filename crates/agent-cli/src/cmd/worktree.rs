//! `agent --worktree[=NAME]` and `agent worktree new|list|remove`: a session in a fresh git
//! worktree on a branch of its own, beside the repository, so several sessions can work on one
//! repository without touching the user's checkout (docs/cli.md, "Worktrees").
//!
//! The worktree of repository `/src/app` named `fix` is `/src/app.worktrees/fix`, on the new
//! branch `agent/fix` from the checkout's `HEAD`.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use agent_exec::process::{self, ProcessSpec};
use anyhow::{Context, bail};
use clap::Subcommand;

/// The prefix of every branch a worktree session makes.
const BRANCH_PREFIX: &str = "agent/";

/// Subcommands of `agent worktree`.
#[derive(Debug, Subcommand)]
pub(crate) enum WorktreeCommand {
    /// Create a worktree (default name: the time and process id) and print its path.
    New {
        /// The worktree's name, which names its folder and its branch `agent/NAME`.
        name: Option<String>,
    },
    /// The agent's worktrees of this repository: name, branch and path.
    List,
    /// Remove a worktree and its branch; refused while it holds uncommitted changes or its
    /// branch is not merged, unless `--force`.
    Remove {
        name: String,
        /// Remove it even with uncommitted changes, and its branch even when not merged.
        #[arg(long)]
        force: bool,
    },
}

/// A created worktree.
#[derive(Debug)]
pub(crate) struct Worktree {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) repo: PathBuf,
}

impl Worktree {
    fn branch(&self) -> String {
        format!("{BRANCH_PREFIX}{}", self.name)
    }

    /// What to do with it once the session is over, for stderr.
    pub(crate) fn farewell(&self) -> String {
        format!(
            "agent: the worktree {} (branch {}) is kept; commit there, then merge with `git -C {} \
             merge {}`, or remove it with `agent worktree remove {}`",
            self.path.display(),
            self.branch(),
            self.repo.display(),
            self.branch(),
            self.name
        )
    }
}

/// Runs a `worktree` subcommand in the repository holding the current directory.
pub(crate) fn run(command: WorktreeCommand) -> anyhow::Result<ExitCode> {
    let here = std::env::current_dir().context("reading the current directory")?;
    match command {
        WorktreeCommand::New { name } => {
            let worktree = create(&here, name.as_deref())?;
            println!("{}", worktree.path.display());
            eprintln!("{}", worktree.farewell());
        }
        WorktreeCommand::List => {
            let repo = repository(&here)?;
            for (name, path) in ours(&repo)? {
                println!("{name}  {BRANCH_PREFIX}{name}  {}", path.display());
            }
        }
        WorktreeCommand::Remove { name, force } => {
            let repo = repository(&here)?;
            let Some((_, path)) = ours(&repo)?.into_iter().find(|(n, _)| *n == name) else {
                bail!("no agent worktree named `{name}` here (`agent worktree list` shows them)");
            };
            let path = path.display().to_string();
            let mut args = vec!["worktree", "remove", path.as_str()];
            if force {
                args.push("--force");
            }
            git(&repo, &args).context("git worktree remove (--force removes uncommitted work)")?;
            let branch = format!("{BRANCH_PREFIX}{name}");
            let delete = if force { "-D" } else { "-d" };
            git(&repo, &["branch", delete, &branch]).context(
                "the worktree is gone; its branch is kept (not merged; --force deletes)",
            )?;
            println!("removed {path} and branch {branch}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--worktree[=NAME]`: creates the worktree for the workspace's repository and moves the
/// session into it (the same folder within it when the workspace is a subfolder).
pub(crate) fn enter(options: &mut crate::Options, name: &str) -> anyhow::Result<Worktree> {
    let here = match &options.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let here = here.canonicalize().with_context(|| format!("{}", here.display()))?;
    let worktree = create(&here, (!name.is_empty()).then_some(name))?;
    let inside = here.strip_prefix(&worktree.repo).unwrap_or(Path::new(""));
    // Joined only when non-empty: `join("")` would add a trailing slash to every path shown.
    let workspace = match inside.as_os_str().is_empty() {
        true => worktree.path.clone(),
        false => worktree.path.join(inside),
    };
    std::env::set_current_dir(&workspace)
        .with_context(|| format!("entering {}", workspace.display()))?;
    eprintln!("agent: working in {} (branch {})", workspace.display(), worktree.branch());
    options.workspace = Some(workspace);
    Ok(worktree)
}

/// Creates the worktree `name` (or a fresh name) of the repository holding `dir`.
pub(crate) fn create(dir: &Path, name: Option<&str>) -> anyhow::Result<Worktree> {
    let repo = repository(dir)?;
    let name = match name {
        Some(name) => name.to_owned(),
        None => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs());
            format!("{secs}-{}", std::process::id())
        }
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.starts_with(['.', '-']) || !name.chars().all(valid) {
        bail!("worktree name `{name}`: use letters, digits, `-`, `_` and `.`, not first");
    }
    let path = root(&repo)?.join(&name);
    let branch = format!("{BRANCH_PREFIX}{name}");
    let shown = path.display().to_string();
    git(&repo, &["worktree", "add", "-b", &branch, &shown, "HEAD"])
        .with_context(|| format!("creating the worktree {shown}"))?;
    Ok(Worktree { name, path, repo })
}

/// The top of the repository holding `dir`.
fn repository(dir: &Path) -> anyhow::Result<PathBuf> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])
        .with_context(|| format!("{} is not in a git repository", dir.display()))?;
    Ok(PathBuf::from(top.trim()))
}

/// Where the repository's agent worktrees live: `REPO.worktrees/` beside it.
fn root(repo: &Path) -> anyhow::Result<PathBuf> {
    let (Some(parent), Some(name)) = (repo.parent(), repo.file_name()) else {
        bail!("the repository {} has no folder beside it", repo.display());
    };
    let mut folder = name.to_os_string();
    folder.push(".worktrees");
    Ok(parent.join(folder))
}

/// The agent's worktrees of `repo` (those under [`root`]), by name.
fn ours(repo: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let root = root(repo)?;
    let listing = git(repo, &["worktree", "list", "--porcelain"])?;
    Ok(listing
        .lines()
        .filter_map(|line| line.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|path| path.parent() == Some(root.as_path()))
        .filter_map(|path| Some((path.file_name()?.to_str()?.to_owned(), path)))
        .collect())
}

/// Runs git in `dir` (as the user's own command: outside the tool sandbox, like a hook) and
/// returns its stdout; a failure carries git's stderr.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let spec = args.iter().fold(ProcessSpec::new("git"), |spec, arg| spec.arg(*arg));
    let spec = ProcessSpec { separate_stderr: true, ..spec };
    let runtime = crate::setup::tokio_runtime()?;
    let cancel = agent_core::CancellationToken::new();
    let timeout = Some(std::time::Duration::from_secs(120));
    let output =
        runtime.block_on(process::run_unsandboxed(spec, dir.to_path_buf(), cancel, timeout))?;
    if !output.success() {
        bail!("git {}: {}", args.join(" "), output.stderr.trim());
    }
    Ok(output.output)
}
