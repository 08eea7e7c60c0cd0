//! The sandbox moved to its own crate (`agent-sandbox`) but keeps its paths under agent-exec: a
//! program written against `agent_exec::sandbox`, `agent_exec::jobs`, `agent_exec::process` and
//! `agent_exec::secret` before the split still compiles and gets the same types.

use agent_exec::{
    jobs::{Jobs, JobsConfig},
    process::ProcessSpec,
    sandbox::{SandboxConfig, SandboxPolicy},
    secret::SecretFiles,
};

#[test]
fn the_sandbox_paths_of_agent_exec_name_the_sandbox_crates_types() {
    // Same types, not look-alikes: a value made through one path is accepted by the other.
    let policy: agent_sandbox::sandbox::SandboxPolicy = SandboxPolicy::WorkspaceWrite;
    let config: agent_sandbox::sandbox::SandboxConfig =
        SandboxConfig::new("/tmp").with_policy(policy);
    assert!(config.policy.is_restricted());
    let jobs: agent_sandbox::jobs::Jobs = Jobs::new(JobsConfig::default());
    assert!(jobs.running().is_empty());
    let spec: agent_sandbox::process::ProcessSpec = ProcessSpec::bash("true");
    assert_eq!(spec.program, std::ffi::OsString::from("bash"));
    let files: agent_sandbox::secret::SecretFiles = SecretFiles::default();
    assert!(!files.patterns.is_empty());
}
