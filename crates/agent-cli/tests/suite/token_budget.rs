//! The first request's budget: what the first request of a fresh install carries before the conversation
//! (the tools and the instructions), counted in the request body the server receives.

use agent_model::scripted::{Script, ScriptedServer, Turn};
use std::path::Path;

use serde_json::{Value, json};

use crate::suite::{agent, stderr, stdout};

/// The whole default tool list of a fresh install plus its instructions.
const ALL_DEFAULT: usize = 2_000;
/// `--tools read_file,grep,glob,edit_file,bash`.
const FIVE_TOOLS: usize = 1_000;

/// Runs `agent exec` once against a scripted server and returns the tools and instructions of
/// its first request (in o200k tokens, as sent) and `tools list --tokens`'s total for the same
/// flags, with the names of the tools sent.
async fn first_request(flags: &[&str]) -> (usize, usize, Vec<String>) {
    let (_dir, workspace, config) = fresh_install();
    let flags = [&["--config", config.as_str()][..], flags].concat();
    let (body, listed) = sent_and_listed(&workspace, &flags).await;
    let instructions = body["messages"][0]["content"].as_str().unwrap();
    let tools = body["tools"].to_string();
    let names = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    let sent = agent_model::estimate_tokens(instructions) + agent_model::estimate_tokens(&tools);
    (sent, listed["total"].as_u64().unwrap() as usize, names)
}

/// A fresh install's set-up: an empty workspace and a config with a language server (any command:
/// it starts only when a file is edited), so the `diagnostics` tool is offered as on a machine
/// where one is found. Returns the folder holding both, the workspace and the config's path.
fn fresh_install() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[lsp.python]\ncommand = [\"true\"]\nfile_types = [\"py\"]\n").unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let config = config.display().to_string();
    (dir, workspace, config)
}

/// Runs `agent exec` once against a scripted server and `agent tools list --tokens --json`, both
/// in `workspace` with the same `flags`, and returns the exec's first request body and the listing.
pub(crate) async fn sent_and_listed(workspace: &Path, flags: &[&str]) -> (Value, Value) {
    let server = ScriptedServer::start(Script::new([Turn::text("hi")])).await.unwrap();
    let url = server.url();
    let model = ["--base-url", url.as_str(), "--model", "test-model", "--api", "chat"];
    let owned = |args: &[&str]| args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
    let exec = owned(&[&model[..], flags, &["exec", "say hi"]].concat());
    let list = owned(&[&model[..], flags, &["tools", "list", "--tokens", "--json"]].concat());
    let workspace = workspace.to_path_buf();
    let (sent, listed) = tokio::task::spawn_blocking(move || {
        let exec: Vec<&str> = exec.iter().map(String::as_str).collect();
        let list: Vec<&str> = list.iter().map(String::as_str).collect();
        (agent(&workspace, &exec), agent(&workspace, &list))
    })
    .await
    .unwrap();
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    assert!(listed.status.success(), "{}", stderr(&listed));
    let request = server.requests().into_iter().find(|request| request.method == "POST");
    let body = serde_json::from_str(&request.expect("a model request").body).unwrap();
    (body, serde_json::from_str(&stdout(&listed)).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_with_every_default_tool_fits_the_budget() {
    let (sent, listed, names) = first_request(&[]).await;
    // Every tool a fresh install offers from the first request, the plan and subagent tools included.
    for name in
        ["read_file", "edit_file", "bash", "web_fetch", "update_plan", "task", "diagnostics"]
    {
        assert!(names.iter().any(|sent| sent == name), "{name} not sent: {names:?}");
    }
    // `tools list --tokens` shows exactly what the request carries.
    assert_eq!(listed, sent, "{names:?}");
    assert!(sent <= ALL_DEFAULT, "{sent} tokens of tools and instructions: {names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_with_five_tools_stays_under_a_thousand() {
    let (sent, listed, names) =
        first_request(&["--tools", "read_file,grep,glob,edit_file,bash"]).await;
    assert_eq!(names, ["bash", "read_file", "edit_file", "grep", "glob"]);
    assert_eq!(listed, sent);
    assert!(sent < FIVE_TOOLS, "{sent} tokens of tools and instructions");
}

/// `job` is not in the first request; it joins at the end of the list from the first request
/// after a job exists, and every tool before it keeps its place (the cached prefix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_joins_at_the_end_once_a_job_exists() {
    use agent_model::scripted::ScriptedCall;
    let dir = tempfile::tempdir().unwrap();
    let start = json!({"command": "sleep 30", "background": true});
    let turns = [
        Turn::tool_calls([ScriptedCall::new("call_1", "bash", start)]),
        Turn::tool_calls([ScriptedCall::new("call_2", "job", json!({"action": "list"}))]),
        Turn::text("Started."),
    ];
    let server = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let url = server.url();
    let workspace = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let model = ["--base-url", url.as_str(), "--model", "test-model", "--api", "chat"];
        let args = [&model[..], &["exec", "--allow", "Bash", "start it"]].concat();
        agent(&workspace, &args)
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let names: Vec<Vec<String>> = server
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .map(|request| {
            let body: Value = serde_json::from_str(&request.body).unwrap();
            let tools = body["tools"].as_array().cloned().unwrap_or_default();
            tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_owned()).collect()
        })
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(!names[0].contains(&"job".to_owned()), "{:?}", names[0]);
    assert_eq!(names[1].last().map(String::as_str), Some("job"), "{:?}", names[1]);
    assert_eq!(names[1][..names[1].len() - 1], names[0][..], "the earlier tools keep their order");
    assert_eq!(names[2], names[1]);
    // The call made once `job` was offered ran: its observation in the last request lists the job.
    let last = server.requests().into_iter().rfind(|r| r.method == "POST").unwrap();
    assert!(last.body.contains("sleep 30") && !last.body.contains("unknown_tool"), "{}", last.body);
}

/// docs/tools.md's token table ("after" column) states what `agent tools list --tokens` prints
/// for the same set-up (a model without a known vocabulary, an empty workspace, a language server
/// configured). Tidy checks the table names every tool; this checks the figures it gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_figures_in_tools_md_are_what_tools_list_prints() {
    let (_dir, workspace, config) = fresh_install();
    let (_, listed) = sent_and_listed(&workspace, &["--config", config.as_str()]).await;
    let mut printed: Vec<(String, u64)> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| (tool["name"].as_str().unwrap().to_owned(), tool["tokens"].as_u64().unwrap()))
        .collect();
    printed.push(("instructions".to_owned(), listed["instructions"].as_u64().unwrap()));
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md"))
            .unwrap();
    let stated = stated_figures(&doc);
    // Every tool the listing prints has a plain figure in the doc (a tool that is not offered in
    // this set-up, like `job` before a job exists, has words there instead), and it is the same.
    for (name, tokens) in &printed {
        let doc_figure = stated.iter().find(|(stated, _)| stated == name).map(|(_, n)| *n);
        assert_eq!(doc_figure, Some(*tokens), "docs/tools.md's figure for `{name}`");
    }
}

/// The plain numbers of the "after" column of docs/tools.md's token table, by row.
fn stated_figures(doc: &str) -> Vec<(String, u64)> {
    doc.lines()
        .skip_while(|line| !line.starts_with("| tool | before | after |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let figure = cells.get(3)?.replace(',', "").parse().ok()?;
            Some((cells.get(1)?.trim_matches('`').to_owned(), figure))
        })
        .collect()
}
