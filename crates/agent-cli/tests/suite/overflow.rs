//! A server's context overflow through the binary: when the size is in the current turn, its
//! outputs shrink, so the retried request is at most a quarter of the refused one, and the run
//! answers.

use agent_model::scripted::{Fault, ScriptedCall, Turn};
use serde_json::json;

use crate::suite::{exec::exec_recorded, stderr, stdout};

fn overflow() -> Turn {
    let body = json!({"error": {
        "message": "This model's maximum context length is 32768 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded"
    }});
    Turn::fault(Fault::Status {
        status: 400,
        body: body.to_string(),
        content_type: None,
        headers: Default::default(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_large_outputs_in_one_turn_then_an_overflow_retry_at_a_quarter_and_answer() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.txt", "b.txt"] {
        let line = format!("{name}: the quick brown fox jumps over the lazy dog\n");
        std::fs::write(dir.path().join(name), line.repeat(2000)).unwrap();
    }
    let both = Turn::tool_calls([
        ScriptedCall::new("call_a", "read_file", json!({"path": "a.txt"})),
        ScriptedCall::new("call_b", "read_file", json!({"path": "b.txt"})),
    ]);
    let turns = vec![both, overflow(), Turn::text("done")];
    // Outputs of up to 64 KiB (read_file's own cap), so they, not the instructions and tool
    // schemas every request carries, make the refused request large; a window the agent believes
    // large, so only the server's word (the overflow) compacts.
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[limits]\noutput_cap = 100000\n").unwrap();
    let config = config.to_str().unwrap();
    let args =
        ["--config", config, "--context-window", "1000000", "--api", "chat", "exec", "read both"];
    let (output, requests) = exec_recorded(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "done");
    assert!(
        stderr(&output).contains("agent: context compacted (overflow): 2 tool outputs shrunk"),
        "{}",
        stderr(&output)
    );
    assert_eq!(requests.len(), 3);
    let (refused, retry) = (&requests[1].body, &requests[2].body);
    assert!(
        retry.len() * 4 <= refused.len(),
        "retry {} bytes, refused {}",
        retry.len(),
        refused.len()
    );
}
