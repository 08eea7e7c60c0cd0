//! File-system rules through Landlock: build the ruleset in the parent, enforce it in the child.
//!
//! The `landlock` crate opens the rule paths and fills a ruleset file descriptor before the fork.
//! The child then only needs the `landlock_restrict_self` system call on that descriptor, which
//! [`super::child`] makes without allocating.

use std::{
    os::fd::OwnedFd,
    path::{Path, PathBuf},
};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use super::SandboxError;

/// The newest Landlock ABI this code was written and tested against. Newer kernels keep
/// honouring it; older kernels get the subset they know (best effort, reported by the probe).
const TARGET_ABI: ABI = ABI::V7;

/// What a rule grants beneath a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Read files and list directories, without executing anything.
    Read,
    /// Read and execute.
    ReadExecute,
    /// Execute (and read) one file, such as an interpreter.
    Execute,
    /// Read, execute, create, change and delete.
    Write,
    /// Read, create, change and delete, without executing (under an execute allow-list).
    WriteNoExecute,
}

impl Grant {
    fn access(self) -> BitFlags<AccessFs> {
        let read = AccessFs::from_read(TARGET_ABI);
        match self {
            Grant::Read => read & !AccessFs::Execute,
            Grant::ReadExecute => read,
            Grant::Execute => AccessFs::Execute | AccessFs::ReadFile,
            // Never device nodes: root could make one for the disk that holds hidden secrets.
            Grant::Write => {
                AccessFs::from_all(TARGET_ABI) & !(AccessFs::MakeBlock | AccessFs::MakeChar)
            }
            Grant::WriteNoExecute => {
                AccessFs::from_all(TARGET_ABI)
                    & !(AccessFs::Execute | AccessFs::MakeBlock | AccessFs::MakeChar)
            }
        }
    }
}

/// File-system rules: every path not covered by a rule is neither readable nor writable.
#[derive(Debug, Clone, Default)]
pub struct FsRules {
    rules: Vec<(PathBuf, Grant)>,
}

impl FsRules {
    /// Adds a rule; paths that do not exist are skipped when the ruleset is built.
    pub fn grant(&mut self, path: impl Into<PathBuf>, grant: Grant) -> &mut Self {
        self.rules.push((path.into(), grant));
        self
    }

    /// The rules in insertion order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Path, Grant)> {
        self.rules.iter().map(|(path, grant)| (path.as_path(), *grant))
    }
}

/// Builds the ruleset file descriptor for `rules`, also denying TCP bind/connect when `network`
/// is off, and scoping signals and abstract UNIX sockets to the sandbox.
///
/// Fails when the kernel has no Landlock at all: the caller must not run the process then.
pub(crate) fn build(rules: &FsRules, network: bool) -> Result<OwnedFd, SandboxError> {
    let error = |err: landlock::RulesetError| SandboxError::Setup(format!("landlock: {err}"));
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(error)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(error)?;
    if !network {
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET_ABI)).map_err(error)?;
    }
    let mut created = ruleset.create().map_err(error)?;
    for (path, grant) in rules.iter() {
        let Ok(metadata) = std::fs::metadata(path) else { continue };
        let Ok(fd) = PathFd::new(path) else { continue };
        let mut access = grant.access();
        if !metadata.is_dir() {
            // Directory rights on a file are rejected by the kernel.
            access &= AccessFs::from_file(TARGET_ABI);
        }
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(error)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::unavailable(super::KernelFeature::Landlock))
}
