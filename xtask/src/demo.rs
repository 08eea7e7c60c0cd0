//! `cargo xtask demo [NAME]`: offline demos of the real `agent` binary over real HTTP.
//!
//! Each demo writes a small workspace, starts the scripted OpenAI-compatible server with a script
//! of model turns, runs `agent exec` against it with the real tools and sandbox, prints the
//! conversation from the session transcript, and checks its own outcome. Every demo runs against
//! both APIs. The product is driven as separate processes, so xtask depends on no workspace crate.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// One demo: a workspace, a prompt, the model's scripted turns, and a check of what happened.
struct Demo {
    name: &'static str,
    about: &'static str,
    prompt: &'static str,
    files: &'static [(&'static str, &'static str)],
    args: &'static [&'static str],
    turns: fn() -> Value,
    /// Checks the transcript items and the workspace afterwards.
    check: fn(&[Value], &Path) -> Result<(), String>,
}

const PACKAGE_JSON: &str = r#"{
  "name": "demo-app",
  "scripts": {
    "build": "tsc -p .",
    "test": "vitest run",
    "lint": "eslint src"
  }
}
"#;
const MAIN_TS: &str = "// TODO: read the port from the environment\nexport const port = 3000;\n";
const UTIL_TS: &str =
    "export function add(a: number, b: number) {\n    return a + b; // TODO: overflow?\n}\n";

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"call_id": id, "name": name, "arguments": arguments})
}

fn demos() -> Vec<Demo> {
    vec![
        Demo {
            name: "uppercase",
            about: "a prompt in Chinese; the model calls the uppercase tool",
            prompt: "把 hello 转大写",
            files: &[],
            args: &[],
            turns: || {
                json!([
                    {"tool_calls": [call("call_up", "uppercase", json!({"text": "hello"}))]},
                    {"text": "转换结果是 HELLO。"}
                ])
            },
            check: |items, _| expect_output(items, "call_up", true, "HELLO"),
        },
        Demo {
            name: "scripts",
            about: "list the scripts in package.json with read_file",
            prompt: "Which scripts does package.json define?",
            files: &[("package.json", PACKAGE_JSON)],
            args: &[],
            turns: || {
                json!([
                    {"tool_calls": [call("call_read", "read_file", json!({"path": "package.json"}))]},
                    {"text": "Three scripts: build (tsc -p .), test (vitest run) and lint (eslint src)."}
                ])
            },
            check: |items, _| expect_output(items, "call_read", true, "\"test\": \"vitest run\""),
        },
        Demo {
            name: "todos",
            about: "find the TODOs with grep",
            prompt: "Find the TODOs in this project.",
            files: &[("src/main.ts", MAIN_TS), ("src/util.ts", UTIL_TS)],
            args: &[],
            turns: || {
                json!([
                    {"tool_calls": [call("call_grep", "grep",
                        json!({"pattern": "TODO", "output_mode": "content"}))]},
                    {"text": "Two TODOs: src/main.ts:1 (port from the environment) and src/util.ts:2 (overflow)."}
                ])
            },
            check: |items, _| {
                expect_output(items, "call_grep", true, "main.ts")?;
                expect_output(items, "call_grep", true, "util.ts")
            },
        },
        Demo {
            name: "list",
            about: "list src with list_dir",
            prompt: "What is in src?",
            files: &[("src/main.ts", MAIN_TS), ("src/util.ts", UTIL_TS)],
            args: &[],
            turns: || {
                json!([
                    {"tool_calls": [call("call_ls", "list_dir", json!({"path": "src"}))]},
                    {"text": "src holds main.ts and util.ts."}
                ])
            },
            check: |items, _| expect_output(items, "call_ls", true, "util.ts"),
        },
        Demo {
            name: "parallel",
            about: "two reads in one turn, answered in call order",
            prompt: "Compare main.ts and util.ts.",
            files: &[("src/main.ts", MAIN_TS), ("src/util.ts", UTIL_TS)],
            args: &[],
            turns: || {
                json!([
                    {"tool_calls": [
                        call("call_a", "read_file", json!({"path": "src/main.ts"})),
                        call("call_b", "read_file", json!({"path": "src/util.ts"}))
                    ]},
                    {"text": "main.ts exports the port; util.ts exports add()."}
                ])
            },
            check: |items, _| {
                expect_output(items, "call_a", true, "export const port")?;
                expect_output(items, "call_b", true, "export function add")?;
                let order: Vec<&str> =
                    outputs(items).map(|o| o["call_id"].as_str().unwrap_or("")).collect();
                if order != ["call_a", "call_b"] {
                    return Err(format!("outputs out of call order: {order:?}"));
                }
                Ok(())
            },
        },
        Demo {
            name: "edit",
            about: "an edit that fails, a re-read, and an edit that succeeds",
            prompt: "Change the port to 8080.",
            files: &[("src/main.ts", MAIN_TS)],
            args: &["--permission-mode", "accept-edits"],
            turns: || {
                json!([
                    {"tool_calls": [call("call_e1", "edit_file", json!({
                        "path": "src/main.ts", "old_string": "const port = 300;", "new_string": "const port = 8080;"}))]},
                    {"tool_calls": [call("call_r", "read_file", json!({"path": "src/main.ts"}))]},
                    {"tool_calls": [call("call_e2", "edit_file", json!({
                        "path": "src/main.ts", "old_string": "export const port = 3000;", "new_string": "export const port = 8080;"}))]},
                    {"text": "The port is now 8080."}
                ])
            },
            check: |items, workspace| {
                expect_output(items, "call_e1", false, "")?;
                expect_output(items, "call_e2", true, "8080")?;
                let text =
                    std::fs::read_to_string(workspace.join("src/main.ts")).unwrap_or_default();
                if !text.contains("export const port = 8080;") {
                    return Err(format!("src/main.ts was not edited: {text:?}"));
                }
                Ok(())
            },
        },
        Demo {
            name: "bad-args",
            about: "a call with bad arguments, corrected after the observation",
            prompt: "Shout 'ready'.",
            files: &[],
            args: &[],
            turns: || {
                json!([
                    {"tool_calls": [call("call_bad", "uppercase", json!({"txt": "ready"}))]},
                    {"tool_calls": [call("call_good", "uppercase", json!({"text": "ready"}))]},
                    {"text": "READY"}
                ])
            },
            check: |items, _| {
                expect_output(items, "call_bad", false, "invalid_arguments")?;
                expect_output(items, "call_good", true, "READY")
            },
        },
        Demo {
            name: "sandbox",
            about: "the permission policy lets a command through (bypass); the kernel sandbox stops it",
            prompt: "Write 'owned' to /etc/agent-demo.",
            files: &[],
            args: &["--permission-mode", "bypass"],
            turns: || {
                json!([
                    {"tool_calls": [call("call_sh", "bash",
                        json!({"command": "echo owned > /etc/agent-demo && echo written"}))]},
                    {"text": "The sandbox refused: the file system outside the workspace is read-only."}
                ])
            },
            check: |items, _| {
                if Path::new("/etc/agent-demo").exists() {
                    return Err("BREACH: /etc/agent-demo exists".to_owned());
                }
                let output = find_output(items, "call_sh")?;
                let text = output["output"].as_str().unwrap_or("");
                if text.contains("written") || !text.contains("exit 1") {
                    return Err(format!("the command was not stopped: {text}"));
                }
                Ok(())
            },
        },
    ]
}

/// Runs the demos named by `filter` (all when empty) against both APIs, after building the two
/// binaries when `build` is set (CI builds them once for the demo, the tier and the tests).
pub(crate) fn run(root: &Path, filter: Option<&str>, build: bool) -> anyhow::Result<()> {
    let selected: Vec<Demo> =
        demos().into_iter().filter(|demo| filter.is_none_or(|name| demo.name == name)).collect();
    if selected.is_empty() {
        let names: Vec<&str> = demos().iter().map(|demo| demo.name).collect();
        bail!("no demo named {:?}; demos: {}", filter.unwrap_or(""), names.join(", "));
    }
    let bins = if build {
        build_bins(root)?
    } else {
        let debug = crate::built_debug(root, &["agent", "scripted-server"])?;
        Bins { agent: debug.join("agent"), server: debug.join("scripted-server") }
    };
    let scratch = std::env::temp_dir().join(format!("agent-demo-{}", std::process::id()));
    let mut failed = Vec::new();
    for demo in &selected {
        for api in ["chat", "responses"] {
            let dir = scratch.join(format!("{}-{api}", demo.name));
            println!("\n━━ demo {} ({api}): {}", demo.name, demo.about);
            match run_one(&bins, demo, api, &dir) {
                Ok(()) => println!("   ✔ outcome checked"),
                Err(err) => {
                    println!("   ✘ {err:#}");
                    failed.push(format!("{} ({api})", demo.name));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if !failed.is_empty() {
        bail!("demos failed: {}", failed.join(", "));
    }
    println!("\nall {} demos passed against both APIs", selected.len());
    Ok(())
}

struct Bins {
    agent: PathBuf,
    server: PathBuf,
}

/// Builds the `agent` binary and the scripted server (debug profile, shared with the tests).
fn build_bins(root: &Path) -> anyhow::Result<Bins> {
    println!("building the agent binary and the scripted model server…");
    let debug = crate::build_debug(
        root,
        &[
            "-p",
            "agent-cli",
            "--bin",
            "agent",
            "-p",
            "agent-model",
            "--features",
            "agent-model/scripted-server",
            "--bin",
            "scripted-server",
        ],
    )?;
    Ok(Bins { agent: debug.join("agent"), server: debug.join("scripted-server") })
}

fn run_one(bins: &Bins, demo: &Demo, api: &str, dir: &Path) -> anyhow::Result<()> {
    let workspace = dir.join("workspace");
    let data = dir.join("data");
    std::fs::create_dir_all(&workspace)?;
    for (path, text) in demo.files {
        let path = workspace.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    let script = dir.join("script.json");
    std::fs::write(&script, json!({"turns": (demo.turns)()}).to_string())?;

    let mut server = Command::new(&bins.server)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", bins.server.display()))?;
    let mut server_out = BufReader::new(server.stdout.take().context("server stdout")?);
    let mut url = String::new();
    server_out.read_line(&mut url)?;
    let url = url.trim().to_owned();

    println!("   user: {}", demo.prompt);
    let output = Command::new(&bins.agent)
        .args(["--base-url", &url, "--model", "scripted", "--api", api])
        .args(demo.args)
        .args(["exec", demo.prompt])
        .current_dir(&workspace)
        .env("AGENT_DATA_DIR", &data)
        .env_remove("OPENAI_API_KEY")
        .output()
        .context("running agent exec")?;
    // Closing stdin stops the server, which then prints the requests it recorded; they are read to
    // the end so that a full pipe never blocks it.
    drop(server.stdin.take());
    let mut recorded = String::new();
    let _ = std::io::Read::read_to_string(&mut server_out, &mut recorded);
    let _ = server.wait();
    if !output.status.success() {
        bail!(
            "agent exec exited with {}:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let items = transcript(&data)?;
    print_conversation(&items);
    (demo.check)(&items, &workspace).map_err(|err| anyhow::anyhow!(err))
}

/// The items of the single session under `data` (also read by the real-model tier).
pub(crate) fn transcript(data: &Path) -> anyhow::Result<Vec<Value>> {
    let sessions = data.join("sessions");
    let session = std::fs::read_dir(&sessions)
        .with_context(|| format!("reading {}", sessions.display()))?
        .next()
        .context("no session was written")??;
    let text = std::fs::read_to_string(session.path().join("transcript.jsonl"))?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|mut line| line.get_mut("item").map(Value::take))
        .collect())
}

fn print_conversation(items: &[Value]) {
    let mut out = std::io::stdout().lock();
    for item in items {
        let _ = match item["type"].as_str() {
            Some("message") if item["role"] == "user" => Ok(()),
            Some("message") => writeln!(
                out,
                "   {}: {}",
                item["role"].as_str().unwrap_or("?"),
                item["content"].as_str().unwrap_or("")
            ),
            Some("tool_call") => writeln!(
                out,
                "   → {}({})",
                item["name"].as_str().unwrap_or("?"),
                item["arguments"].as_str().unwrap_or("")
            ),
            Some("tool_output") => {
                let text = item["output"].as_str().unwrap_or("");
                let mut lines = text.lines();
                let shown: Vec<&str> = lines.by_ref().take(6).collect();
                let more = lines.count();
                let mark = if item["ok"] == true { "←" } else { "← error" };
                let _ = writeln!(out, "   {mark} {}", shown.join("\n     "));
                if more > 0 { writeln!(out, "     … {more} more lines") } else { Ok(()) }
            }
            _ => Ok(()),
        };
    }
}

fn outputs(items: &[Value]) -> impl Iterator<Item = &Value> {
    items.iter().filter(|item| item["type"] == "tool_output")
}

fn find_output<'a>(items: &'a [Value], call_id: &str) -> Result<&'a Value, String> {
    outputs(items)
        .find(|item| item["call_id"] == call_id)
        .ok_or_else(|| format!("no output for {call_id}"))
}

fn expect_output(items: &[Value], call_id: &str, ok: bool, contains: &str) -> Result<(), String> {
    let output = find_output(items, call_id)?;
    let text = output["output"].as_str().unwrap_or("");
    if output["ok"] != ok || !text.contains(contains) {
        return Err(format!(
            "{call_id}: expected ok={ok} containing {contains:?}, got ok={} {text:?}",
            output["ok"]
        ));
    }
    Ok(())
}
