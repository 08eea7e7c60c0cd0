//! `agent serve`'s lock, tried the way an attacker would: no token, a wrong one, a rebinding
//! `Host`, another site's `Origin`, a bind to every interface. Each refusal is checked by its
//! effect (no request reached the model, no file was created, no session folder exists), next
//! to a control showing that the same request runs when it is allowed (docs/serve.md).

use std::process::Stdio;

use agent_model::scripted::{Script, ScriptedCall, ScriptedServer, Turn};
use serde_json::json;

use crate::suite::{
    Running, command, data_dir,
    serve_client::{Serve, answer, client, start},
};

/// A server whose one profile's model creates `pwned` in the workspace with `bash`.
async fn target(dir: &std::path::Path, serve_args: &[&str]) -> (ScriptedServer, Serve) {
    let call = ScriptedCall::new("p1", "bash", json!({"command": "touch pwned"}));
    let turns = [Turn::tool_calls([call]), Turn::text("Done.")];
    let model = ScriptedServer::start(Script::new(turns)).await.unwrap();
    let config = dir.join("config.toml");
    let profile = format!("[profiles.p]\nbase_url = \"{}\"\nmodel = \"m\"\n", model.url());
    std::fs::write(&config, profile).unwrap();
    let serve = start(dir, &["--config", config.to_str().unwrap()], serve_args);
    (model, serve)
}

/// The session folders the server has created.
fn sessions(dir: &std::path::Path) -> usize {
    let root = data_dir(&dir.join("server")).join("sessions");
    std::fs::read_dir(root).map_or(0, |entries| entries.count())
}

/// A request as an attacker sends it: `headers` exactly, the token only when `token`.
fn attempt(
    serve: &Serve,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    let mut request = client().request(method.parse().unwrap(), format!("{}{path}", serve.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_without_the_token_from_a_rebound_host_or_a_foreign_origin_run_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let (model, serve) = target(dir.path(), &[]).await;
    let create = json!({"workspace": ws, "profile": "p", "permission_mode": "bypass"});
    let token = serve.token.clone();
    let evil_host = format!("evil.example:{}", serve.port);
    let own = format!("http://127.0.0.1:{}", serve.port);
    let mode = std::fs::metadata(&serve.token_file).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);

    let (status, body) =
        answer(attempt(&serve, "POST", "/v1/sessions", None, &[]).json(&create)).await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Authorization: Bearer"), "{body}");
    assert_eq!(sessions(dir.path()), 0, "no session was opened");
    let (status, _) = answer(attempt(&serve, "GET", "/v1/sessions", None, &[])).await;
    assert_eq!(status, 401);
    let (status, body) = answer(attempt(&serve, "GET", "/health", None, &[])).await;
    assert_eq!((status, body), (204, serde_json::Value::Null), "the health check says nothing");

    let (status, info) = serve.call("POST", "/v1/sessions", Some(create.clone())).await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_owned();
    assert_eq!(sessions(dir.path()), 1);
    let prompt = format!("/v1/sessions/{id}/prompt");
    let body = json!({"text": "make pwned"});
    let wrong = "0".repeat(token.len());
    let in_query = format!("{prompt}?token={token}");
    let foreign = [("origin", "http://evil.example")];
    // Each attack is refused with its status, and nothing ran: the model was never asked.
    let check = async |what: &str,
                       path: &str,
                       token: Option<&str>,
                       headers: &[(&str, &str)],
                       status: u16| {
        let (got, refusal) =
            answer(attempt(&serve, "POST", path, token, headers).json(&body)).await;
        assert_eq!(got, status, "{what}: {refusal}");
        assert!(model.requests().is_empty(), "{what}: the model was asked");
        assert!(!ws.join("pwned").exists(), "{what}: the command ran");
    };
    check("no token", &prompt, None, &[], 401).await;
    check("a wrong token", &prompt, Some(&wrong), &[], 401).await;
    check("the token in the query", &in_query, None, &[], 401).await;
    check("a rebound Host", &prompt, Some(&token), &[("host", &evil_host)], 421).await;
    check("a foreign Origin", &prompt, Some(&token), &foreign, 403).await;
    check("Origin: null", &prompt, Some(&token), &[("origin", "null")], 403).await;
    let huge = json!({"text": "x".repeat(2 << 20)});
    let (status, _) = answer(attempt(&serve, "POST", &prompt, Some(&token), &[]).json(&huge)).await;
    assert_eq!(status, 413, "a body over 1 MiB is refused");
    assert!(model.requests().is_empty(), "the oversized prompt reached the model");
    let (status, _) =
        answer(attempt(&serve, "GET", "/health", None, &[("host", &evil_host)])).await;
    assert_eq!(status, 421, "a rebound Host reaches not even the health check");
    let log = serve.running.stderr_so_far();
    assert!(!log.contains(&serve.token), "the access log holds no token");
    assert!(log.contains(&format!("\"POST {prompt}\" 421")), "{log}");

    // The control: the same prompt with the token, from the server's own page, runs.
    let mut stream = serve.events(&id, 0).await;
    let headers = [("origin", own.as_str())];
    let (status, _) =
        answer(attempt(&serve, "POST", &prompt, Some(&token), &headers).json(&body)).await;
    assert_eq!(status, 202);
    stream.until("run.completed").await;
    assert!(ws.join("pwned").exists(), "the allowed prompt ran the command");
    let _ = serve.running.kill();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_origin_gets_cors_and_others_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let app = "http://app.example:3000";
    let (_model, serve) = target(dir.path(), &["--allow-origin", app]).await;
    let preflight = [("origin", app), ("access-control-request-method", "POST")];
    let response =
        attempt(&serve, "OPTIONS", "/v1/sessions", None, &preflight).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    assert_eq!(response.headers()["access-control-allow-origin"], app);
    let response = attempt(&serve, "GET", "/v1/sessions", Some(&serve.token), &[("origin", app)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], app);
    let other = [("origin", "http://app.example:3001")];
    let response =
        attempt(&serve, "GET", "/v1/sessions", Some(&serve.token), &other).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(response.headers().get("access-control-allow-origin").is_none());
    // Without --allow-origin no answer carries CORS headers, even for the server's own page.
    let own = format!("http://127.0.0.1:{}", serve.port);
    let response = attempt(&serve, "GET", "/v1/sessions", Some(&serve.token), &[("origin", &own)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers().get("access-control-allow-origin").is_none());
    let _ = serve.running.kill();
}

/// `agent serve --listen ADDR` with `token` in the environment (if any) and `flags`.
fn bind(dir: &std::path::Path, addr: &str, token: Option<&str>, flags: &[&str]) -> Running {
    let mut args = vec!["serve", "--listen", addr];
    args.extend(flags);
    let mut command = command(dir, &args);
    command.stdin(Stdio::null());
    if let Some(token) = token {
        command.env("AGENT_SERVE_TOKEN", token);
    }
    Running::spawn(&mut command)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bind_beyond_loopback_needs_a_set_token_and_an_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let refused = bind(&ws, "0.0.0.0:0", None, &["--exposed"]).finish("serve without a token");
    let text = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(refused.status.code(), Some(2), "{text}");
    assert!(text.contains("AGENT_SERVE_TOKEN is not set") && text.contains("127.0.0.1"), "{text}");
    assert!(!data_dir(&ws).join("serve").exists(), "no token file was written: {text}");
    let refused = bind(&ws, "0.0.0.0:0", Some("a-long-secret-token"), &[]).finish("serve unacked");
    let text = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(refused.status.code(), Some(2), "{text}");
    assert!(text.contains("--exposed was not passed"), "{text}");

    // The control: with both, it listens, and the set token (only it) opens the API.
    let secret = "a-long-secret-token";
    let mut running = bind(&ws, "0.0.0.0:0", Some(secret), &["--exposed"]);
    running.wait_for_stderr("token from $AGENT_SERVE_TOKEN", 1);
    let line = running.stderr_so_far();
    let port = line.split("http://0.0.0.0:").nth(1).unwrap().split('/').next().unwrap().to_owned();
    let url = format!("http://127.0.0.1:{port}/v1/sessions");
    let (status, _) = answer(client().get(&url).bearer_auth(secret)).await;
    assert_eq!(status, 200);
    let (status, _) = answer(client().get(&url).bearer_auth("another-token")).await;
    assert_eq!(status, 401);
    let _ = running.kill();
}
