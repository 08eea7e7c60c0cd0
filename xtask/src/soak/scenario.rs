//! The sessions the soak plays: eleven kinds in rotation, each a list of steps and the scripted
//! model's turns for them, in the order the agent will ask for them.
//!
//! The scripted server plays its turns first in, first out, and every session of one API runs
//! one after another on one connection, so the turns of all sessions are written into one script
//! before the server starts. Nothing here depends on what a tool answered: a killed MCP server or
//! a dropped page changes the text the model reads, never how many requests it makes. A session
//! whose last answer is not its own (`done <session>`) means the turns went out of step, which
//! fails the soak at once, naming the session.

use serde_json::{Value, json};

/// What one step does.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// `session/prompt` with `text`, expecting `stop`; `cancel_when` cancels the prompt once a
    /// process whose command line holds that marker runs; `calls` are checked (so a session
    /// whose command never ran cannot pass).
    Prompt { text: String, stop: Stop, cancel_when: Option<String>, calls: Vec<Outcome> },
    /// SIGKILL the process whose command line holds this marker (waiting until it runs).
    Kill(String),
    /// `session/set_mode` to this mode (the prompts after it ask the client for permission).
    SetMode(&'static str),
    /// `session/close`, then the session opened again: `session/load` (its history replayed)
    /// or `session/resume`.
    Reopen { load: bool },
}

/// How a tool call must end: completed or failed, its output holding a text.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) call: &'static str,
    pub(crate) ok: bool,
    pub(crate) holds: String,
}

fn ok(call: &'static str, holds: &str) -> Outcome {
    Outcome { call, ok: true, holds: holds.to_owned() }
}

fn failed(call: &'static str, holds: &str) -> Outcome {
    Outcome { call, ok: false, holds: holds.to_owned() }
}

/// How a prompt must end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `end_turn` with this text as the whole answer.
    EndTurn(String),
    /// `cancelled`.
    Cancelled,
    /// A JSON-RPC error (the model's stream broke mid-answer, which is not retried).
    Error,
}

/// The kinds of session, in rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Bash,
    JobKilled,
    JobLeft,
    Mcp,
    McpKilled,
    Subagent,
    Checkpoint,
    WebFetch,
    ModelFaults,
    Cancel,
    Reopen,
}

pub(crate) const KINDS: [Kind; 11] = [
    Kind::Bash,
    Kind::JobKilled,
    Kind::JobLeft,
    Kind::Mcp,
    Kind::Subagent,
    Kind::Checkpoint,
    Kind::WebFetch,
    Kind::ModelFaults,
    Kind::Cancel,
    Kind::McpKilled,
    Kind::Reopen,
];

/// One session's plan.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) kind: Kind,
    /// The marker every process of this session carries in its command line.
    pub(crate) marker: String,
    /// Whether `session/new` names the Python MCP server (its marker folder holds `marker`).
    pub(crate) mcp: bool,
    /// `agent undo` of the session once it is closed.
    pub(crate) undo: bool,
    /// Whether the session is closed; the last one of each API is left open for the end of the
    /// connection to close.
    pub(crate) close: bool,
    pub(crate) steps: Vec<Step>,
    /// The model's turns, in request order.
    pub(crate) turns: Vec<Value>,
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"call_id": id, "name": name, "arguments": arguments}]})
}

fn text(text: &str) -> Value {
    json!({"text": text})
}

fn prompt(text: &str, stop: Stop, calls: Vec<Outcome>) -> Step {
    Step::Prompt { text: text.to_owned(), stop, cancel_when: None, calls }
}

/// The plan of the `n`th session of an API (`base` is the run's marker, such as
/// `soak-123-chat`; `port` is the loopback site's).
pub(crate) fn plan(base: &str, n: usize, port: u16) -> Plan {
    let kind = KINDS[n % KINDS.len()];
    let marker = format!("{base}-s{n}-");
    let done = format!("done {n}");
    let mut plan = Plan {
        kind,
        marker: marker.clone(),
        mcp: false,
        undo: false,
        close: true,
        steps: Vec::new(),
        turns: Vec::new(),
    };
    let end = |text: &str| Stop::EndTurn(text.to_owned());
    match kind {
        Kind::Bash => {
            let command =
                format!("echo {marker}bash | tee out.txt; ls -la; seq 1 2000 | tail -n 3");
            plan.turns = vec![call("b1", "bash", json!({"command": command})), text(&done)];
            // Every other round asks: the client allows the command once.
            if (n / KINDS.len()) % 2 == 1 {
                plan.steps.push(Step::SetMode("default"));
            }
            let outcome = ok("b1", &format!("{marker}bash"));
            plan.steps.push(prompt("run a command", end(&done), vec![outcome]));
        }
        Kind::JobKilled => {
            let job = format!("exec -a {marker}job sleep 600");
            plan.turns = vec![
                call("j1", "bash", json!({"command": job, "background": true})),
                text("started"),
                call("j2", "job", json!({"action": "output", "job_id": 1, "wait_ms": 5000})),
                text(&done),
            ];
            plan.steps = vec![
                prompt("start a job", end("started"), vec![ok("j1", "running in the background")]),
                Step::Kill(format!("{marker}job")),
                prompt("read the job", end(&done), vec![ok("j2", "SIGKILL")]),
            ];
        }
        Kind::JobLeft => {
            let job = format!("exec -a {marker}left sleep 600");
            plan.turns =
                vec![call("j1", "bash", json!({"command": job, "background": true})), text(&done)];
            plan.steps =
                vec![prompt("start a job and leave it", end(&done), vec![ok("j1", "running")])];
        }
        Kind::Mcp | Kind::McpKilled => {
            plan.mcp = true;
            let echo = call("m1", "mcp__py__echo", json!({"text": format!("{marker}mcp")}));
            plan.turns = vec![echo, text(&done)];
            if kind == Kind::McpKilled {
                plan.steps.push(Step::Kill(format!("{marker}mcp")));
            }
            let outcome = match kind {
                Kind::McpKilled => failed("m1", ""),
                _ => ok("m1", &format!("{marker}mcp")),
            };
            plan.steps.push(prompt("call the MCP server", end(&done), vec![outcome]));
        }
        Kind::Subagent => {
            let task =
                json!({"description": "soak child", "prompt": "run echo", "agent": "general"});
            let child = format!("echo {marker}child");
            plan.turns = vec![
                call("t1", "task", task),
                call("c1", "bash", json!({"command": child})),
                text("child done"),
                text(&done),
            ];
            plan.steps = vec![prompt("ask a child", end(&done), vec![ok("t1", "child done")])];
        }
        Kind::Checkpoint => {
            // The middle file fits the store's cap (set by the soak's config), the big one would
            // pass it, so the cap is exercised; the notes file is what the undo takes back.
            let big = format!(
                "echo {marker}write; head -c 100000 /dev/urandom | base64 > mid.txt; \
                 head -c 300000 /dev/urandom | base64 > big.txt"
            );
            plan.turns = vec![
                call("w1", "bash", json!({"command": big})),
                call(
                    "w2",
                    "write_file",
                    json!({"path": "notes.txt", "content": format!("session {n}\n")}),
                ),
                text(&done),
            ];
            plan.steps =
                vec![prompt("write files", end(&done), vec![ok("w1", "exit 0"), ok("w2", "")])];
            plan.undo = true;
        }
        Kind::WebFetch => {
            let path = ["page", "slow", "page", "drop"][(n / KINDS.len()) % 4];
            let url = format!("http://soak.test:{port}/{path}/{n}");
            plan.turns = vec![call("f1", "web_fetch", json!({"url": url})), text(&done)];
            let outcome = match path {
                "drop" => failed("f1", ""),
                _ => ok("f1", &format!("This is /{path}/{n}")),
            };
            plan.steps = vec![prompt("fetch a page", end(&done), vec![outcome])];
        }
        Kind::ModelFaults => {
            let echo = format!("echo {marker}after-faults");
            let cut = json!({"text": "this answer is cut off in the middle of its stream",
                             "fault": {"kind": "reset_after", "events": 2}});
            plan.turns = vec![
                // A reset once the request is sent: the request may have been acted on, so it
                // is not retried and the prompt fails.
                json!({"fault": {"kind": "reset"}}),
                // A reset mid-stream: not retried either.
                cut,
                call("r1", "bash", json!({"command": echo})),
                // A slow server: the answer starts after a pause.
                json!({"text": done, "delay_ms": 1500}),
            ];
            plan.steps = vec![
                prompt("survive a reset", Stop::Error, Vec::new()),
                prompt("survive a cut stream", Stop::Error, Vec::new()),
                prompt("go on, slowly", end(&done), vec![ok("r1", "after-faults")]),
            ];
        }
        Kind::Cancel => {
            let long = format!("exec -a {marker}cancel sleep 600");
            plan.turns = vec![call("x1", "bash", json!({"command": long})), text(&done)];
            plan.steps = vec![
                Step::Prompt {
                    text: "run something long".to_owned(),
                    stop: Stop::Cancelled,
                    cancel_when: Some(format!("{marker}cancel")),
                    calls: Vec::new(),
                },
                prompt("still there?", end(&done), Vec::new()),
            ];
        }
        Kind::Reopen => {
            let echo = format!("echo {marker}reopened");
            plan.turns =
                vec![text("first"), call("o1", "bash", json!({"command": echo})), text(&done)];
            plan.steps = vec![
                prompt("first", end("first"), Vec::new()),
                Step::Reopen { load: (n / KINDS.len()).is_multiple_of(2) },
                prompt("again", end(&done), vec![ok("o1", "reopened")]),
            ];
        }
    }
    plan
}

/// The session each API ends with: a background job started and the session left open, so the
/// end of the connection must close it and end the job.
pub(crate) fn last(base: &str) -> Plan {
    let marker = format!("{base}-last-");
    let job = format!("exec -a {marker}left sleep 600");
    Plan {
        kind: Kind::JobLeft,
        marker,
        mcp: false,
        undo: false,
        close: false,
        steps: vec![prompt(
            "start a job",
            Stop::EndTurn("left open".to_owned()),
            vec![ok("j1", "running")],
        )],
        turns: vec![
            call("j1", "bash", json!({"command": job, "background": true})),
            text("left open"),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's prompts that end with an answer consume at least one turn, and the last
    /// turn of every kind is the session's own answer, so a session out of step is seen.
    #[test]
    fn every_kind_ends_on_its_own_answer() {
        for n in 0..KINDS.len() * 4 {
            let plan = plan("soak-1-chat", n, 80);
            let last = plan.turns.last().map(|turn| turn["text"].clone());
            assert_eq!(last, Some(json!(format!("done {n}"))), "{plan:?}");
            assert!(plan.turns.iter().all(|turn| !turn.to_string().contains("soak-1-chat-s")
                || turn.to_string().contains(&plan.marker)));
        }
    }
}
