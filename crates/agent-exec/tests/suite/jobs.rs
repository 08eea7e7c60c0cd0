//! Background jobs through the agent loop: a scripted model starts a server as a job, queries it
//! from a later call and hears, once, of another job that finished. The jobs themselves are tested
//! against real processes in agent-sandbox (`tests/suite/jobs.rs`).

use std::{path::Path, time::Duration};

use agent_exec::{
    jobs::{Jobs, JobsConfig},
    sandbox::{NetNamespace, SandboxConfig, SandboxPolicy, probe},
};
use agent_test_support::skipped;

struct Session {
    jobs: Jobs,
    config: SandboxConfig,
    _workspace: tempfile::TempDir,
}

/// A session under workspace-write with the network off and its private loopback; `None` (after
/// saying why) where the kernel cannot enforce it.
fn session() -> Option<Session> {
    if let Some(err) = probe().support(SandboxPolicy::WorkspaceWrite).missing {
        skipped(&err.to_string());
        return None;
    }
    let workspace = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(workspace.path());
    config.kill_grace = Duration::from_millis(300);
    match NetNamespace::create() {
        Ok(ns) => config.loopback = Some(ns),
        Err(err) => {
            skipped(&format!("no private network namespace: {err}"));
            return None;
        }
    }
    let jobs = Jobs::new(JobsConfig { max_jobs: 3, ..JobsConfig::default() });
    Some(Session { jobs, config, _workspace: workspace })
}

impl Session {
    fn workspace(&self) -> &Path {
        &self.config.workspace
    }
}

/// The whole path with a scripted model: it starts a server as a job, queries it from a later
/// call, receives the notice of another job, and answers. The notice reaches the model once,
/// after the outputs of the turn in which the job ended, and the transcript replays as it ran.
#[tokio::test(flavor = "multi_thread")]
async fn a_scripted_session_serves_queries_and_hears_of_a_finished_job() {
    use agent_core::{CancellationToken, Item};
    use agent_exec::{Agent, PermissionMode, Transcript, agent::Finish};
    use agent_model::{
        ChatClient, ClientConfig,
        scripted::{Script, ScriptedCall, ScriptedServer, Turn},
    };
    use serde_json::json;

    let Some(s) = session() else { return };
    std::fs::write(s.workspace().join("hello.txt"), "hello from the job\n").unwrap();
    let server = "exec python3 -m http.server 8766 --bind 127.0.0.1";
    // Job 2 ends once the query has been made; the query then waits until its group is gone.
    let build = "echo $$ > build.pid; while [ ! -e go ]; do sleep 0.02; done; echo built; exit 3";
    let query = "touch go; for i in $(seq 100); do curl -sf http://127.0.0.1:8766/hello.txt && break; sleep 0.1; done; \
                 while kill -0 -- -$(cat build.pid) 2>/dev/null; do sleep 0.02; done";
    let model_server = ScriptedServer::start(Script::new([
        Turn::tool_calls([
            ScriptedCall::new("call_1", "bash", json!({"command": server, "background": true})),
            ScriptedCall::new("call_2", "bash", json!({"command": build, "background": true})),
        ]),
        Turn::tool_calls([ScriptedCall::new("call_3", "bash", json!({"command": query}))]),
        Turn::text("The server answered and the build failed with exit 3."),
    ]))
    .await
    .unwrap();
    let model = ChatClient::new(&ClientConfig::new(model_server.url(), "scripted")).unwrap();
    let bash = agent_tools::BashConfig {
        sandbox: s.config.clone(),
        jobs: s.jobs.clone(),
        ..agent_tools::BashConfig::default()
    };
    let builtin = agent_tools::BuiltinConfig { bash, ..Default::default() };
    let mut agent =
        agent_tools::BuiltinTools::builtin_tools(Agent::builder(s.workspace()), &builtin)
            .unwrap()
            .permission_mode(PermissionMode::Bypass)
            .build(model)
            .unwrap();
    let log = tempfile::tempdir().unwrap();
    let mut transcript = Transcript::open(log.path().join("transcript.jsonl"), Vec::new()).unwrap();
    let finish = agent
        .prompt_with(
            "Start the server, query it, tell me about the build.",
            &CancellationToken::new(),
            |event| {
                transcript.record(&event).unwrap();
            },
        )
        .await;
    assert!(matches!(finish, Finish::Answered(_)), "{finish:?}");

    let items = &agent.conversation().items;
    let outputs: Vec<&str> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolOutput(output) => Some(output.output.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        outputs[0].starts_with("job_id: 1 ·") && outputs[1].starts_with("job_id: 2 ·"),
        "{outputs:?}"
    );
    assert!(outputs[2].contains("hello from the job"), "{}", outputs[2]);
    // One notice, right after the last output of the turn in which the job ended.
    let notices: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, Item::Message(m) if m.content.starts_with("[job 2 finished: exit 3")))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(notices.len(), 1, "{items:#?}");
    assert!(matches!(&items[notices[0] - 1], Item::ToolOutput(o) if o.call_id == "call_3"));
    let Item::Message(notice) = &items[notices[0]] else { unreachable!() };
    assert!(notice.content.contains("built"), "{}", notice.content);
    // The model received it exactly once: in the last request, and in no earlier one.
    let requests = model_server.requests();
    let carried: Vec<bool> =
        requests.iter().map(|r| r.body.contains("[job 2 finished: exit 3")).collect();
    assert_eq!(carried, [false, false, true]);
    // Job 1 (the server) still runs; it is no finished job, so no notice.
    assert_eq!(s.jobs.running().len(), 1);
    assert_eq!(&Transcript::read_items(&log.path().join("transcript.jsonl")).unwrap(), items);
    let pgid = s.jobs.running()[0].pid;
    s.jobs.shutdown().await;
    assert!(all_in_group(pgid).is_empty());
}

/// Every pid in process group `pgid`, zombies included.
fn all_in_group(pgid: u32) -> Vec<u32> {
    agent_test_support::process_group(pgid).into_iter().map(|member| member.pid).collect()
}
