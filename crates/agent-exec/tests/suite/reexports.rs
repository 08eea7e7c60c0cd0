//! The OS sandbox moved into agent-sandbox; the paths a user wrote against agent-exec still name
//! the same items, so a program written before the move builds and behaves as before.

use agent_exec::{
    jobs::{Jobs, JobsConfig},
    process::ProcessSpec,
    sandbox::{SandboxConfig, SandboxPolicy},
    secret::Secrets,
};

#[test]
fn the_sandbox_paths_of_agent_exec_still_work() {
    let policy: SandboxPolicy = "workspace-write".parse().unwrap();
    assert_eq!(policy, agent_sandbox::sandbox::SandboxPolicy::WorkspaceWrite);
    let config = SandboxConfig::new("/tmp").with_policy(policy).with_secrets(Secrets::default());
    assert_eq!(config.policy, SandboxPolicy::WorkspaceWrite);
    let jobs: agent_sandbox::jobs::Jobs = Jobs::new(JobsConfig::default());
    assert!(jobs.running().is_empty());
    let _spec: agent_sandbox::process::ProcessSpec = ProcessSpec::bash("true");
}
