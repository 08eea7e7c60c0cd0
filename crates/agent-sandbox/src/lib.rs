//! The OS half of the agent: every process a tool starts runs here, under a sandbox the kernel
//! enforces.
//!
//! This crate owns what touches the operating system directly and nothing of the agent above it:
//! it depends on no other crate of the workspace. `agent-exec` re-exports its modules
//! (`agent_exec::sandbox`, `agent_exec::process`, `agent_exec::jobs`, `agent_exec::secret`), so
//! most users never name it; `agent-tools` and `agent-mcp` use it directly.
//!
//! - [`sandbox`]: the policy (`read-only`, `workspace-write`, `danger-full-access`) and how it is
//!   applied between `fork` and `exec`: Landlock file-system rules, a seccomp filter, resource
//!   limits, a scrubbed environment, the kernel probe and the loopback-only network namespace.
//! - [`process`]: starting a sandboxed process in its own process group, below a supervisor, and
//!   collecting its output; nothing it starts outlives the call, or the agent (`kill -9` included).
//! - [`jobs`]: background processes of a session, with output rings and exit notices.
//! - [`secret`]: the one list of secret files that every path able to reveal content keeps from
//!   the model.
//! - [`network`]: the SSRF guard, the resolver with the user's pins, domain lists and the
//!   session proxy of allow-list mode.
//! - [`paths`]: gitignore-style path globs, anchored the way permission rules spell them.
//! - [`writes`]: what a command changed inside its writable roots ([`writes::WriteSet`]).
//!
//! Linux only: the sandbox is built from Landlock, seccomp and Linux namespaces, and on any other
//! target the crate stops with one `compile_error!` rather than with link errors. See
//! `docs/sandbox.md` for what each policy guarantees.
//!
//! A command under `workspace-write` may write inside its workspace and nowhere else. A kernel
//! that cannot enforce the policy refuses to run it: a restricted policy never falls back to no
//! sandbox.
//!
//! ```
//! use agent_sandbox::{
//!     process::{self, ProcessSpec, SpawnError},
//!     sandbox::{SandboxConfig, SandboxError, SandboxPolicy},
//! };
//! use tokio_util::sync::CancellationToken;
//!
//! let workspace = tempfile::tempdir()?;
//! let config = SandboxConfig::new(workspace.path()).with_policy(SandboxPolicy::WorkspaceWrite);
//! let spec = ProcessSpec::new("bash")
//!     .arg("-c")
//!     .arg("echo hi > note.txt && cat note.txt && touch /etc/owned 2>/dev/null || echo refused");
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! match runtime.block_on(process::run(spec, &config, CancellationToken::new(), None)) {
//!     Ok(output) => assert_eq!(output.output.lines().collect::<Vec<_>>(), ["hi", "refused"]),
//!     // This kernel lacks Landlock or seccomp: nothing was started.
//!     Err(SpawnError::Sandbox(SandboxError::Unavailable { .. })) => {}
//!     Err(err) => return Err(err.into()),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

// Every module is Linux-only, so that on another target the `compile_error!` below is the only
// error a user sees.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "agent-sandbox supports Linux only: the OS sandbox is built from Landlock, seccomp and Linux \
     namespaces, which this target does not have (see docs/sandbox.md)"
);

#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzz;
#[cfg(target_os = "linux")]
pub mod jobs;
#[cfg(target_os = "linux")]
pub mod network;
#[cfg(target_os = "linux")]
pub mod paths;
#[cfg(target_os = "linux")]
pub mod process;
#[cfg(target_os = "linux")]
pub mod sandbox;
#[cfg(target_os = "linux")]
pub mod secret;
#[cfg(target_os = "linux")]
pub mod writes;
