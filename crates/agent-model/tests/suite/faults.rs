//! Injected faults: what is retried, what is reported, and how often the server was asked.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use agent_core::{ModelErrorKind, ModelEvent};
use agent_model::scripted::{Fault, Turn};
use serde_json::json;

use super::{ALL, Api, client, config, failure, run, start, user};

fn status(status: u16, body: &str, headers: &[(&str, &str)]) -> Turn {
    Turn::fault(Fault::Status {
        status,
        body: body.into(),
        content_type: None,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    })
}

fn completed(events: &[ModelEvent]) -> bool {
    matches!(events.last(), Some(ModelEvent::Completed { .. }))
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let body = json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string();
    for (api, stream) in ALL {
        let server = start([status(429, &body, &[("retry-after", "0.2")]), Turn::text("ok")]).await;
        let client = client(api, &config(&server, stream));
        let started = Instant::now();
        let events = run(client.as_ref(), &[user("go")], None).await.unwrap();
        assert!(completed(&events));
        assert!(started.elapsed() >= Duration::from_millis(200), "retry-after was not honoured");
        assert_eq!(server.requests().len(), 2, "{api:?} stream={stream}");
    }
}

#[tokio::test]
async fn retry_after_beyond_the_cap_is_reported_not_waited() {
    let body = json!({"error": {"message": "slow down"}}).to_string();
    let server = start([status(429, &body, &[("retry-after", "3600")]), Turn::text("never")]).await;
    let client = client(Api::Chat, &config(&server, true));
    let error = failure(run(client.as_ref(), &[user("go")], None).await);
    assert_eq!(
        error.kind,
        ModelErrorKind::RateLimit { retry_after: Some(Duration::from_secs(3600)) }
    );
    insta::assert_snapshot!(error.message, @"rate limited (http 429): slow down; the server asked to wait 3600 s before retrying, longer than the 2 s this client waits");
    assert!(error.is_retryable());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_error_twice_then_success() {
    for (api, stream) in ALL {
        let server =
            start([status(500, "upstream crashed", &[]), status(503, "", &[]), Turn::text("ok")])
                .await;
        let client = client(api, &config(&server, stream));
        let events = run(client.as_ref(), &[user("go")], None).await.unwrap();
        assert!(completed(&events));
        assert_eq!(server.requests().len(), 3, "{api:?} stream={stream}");
    }
}

#[tokio::test]
async fn server_errors_past_the_retry_budget_fail_once() {
    let turns = (0..5).map(|_| status(502, "bad gateway", &[]));
    let server = start(turns).await;
    let client = client(Api::Responses, &config(&server, true));
    let error = failure(run(client.as_ref(), &[user("go")], None).await);
    assert_eq!((error.kind, error.status), (ModelErrorKind::Server, Some(502)));
    assert_eq!(
        server.requests().len(),
        4,
        "one try and three retries, not retries stacked on retries"
    );
}

#[tokio::test]
async fn connection_reset_mid_stream_is_an_error_and_not_replayed() {
    for api in [Api::Chat, Api::Responses] {
        let turn =
            Turn::text("a long answer that gets cut").with_fault(Fault::ResetAfter { events: 3 });
        let server = start([turn, Turn::text("must not be requested")]).await;
        let client = client(api, &config(&server, true));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::Network, "{api:?}: {error}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn stream_closed_without_terminal_event() {
    for api in [Api::Chat, Api::Responses] {
        // The body ends cleanly after the text; no finish_reason, no response.completed.
        let turn = Turn::text("cut short").with_fault(Fault::Truncate { events: 3 });
        let server = start([turn]).await;
        let client = client(api, &config(&server, true));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::BadResponse, "{api:?}");
        assert!(error.message.contains("cut short"), "{error}");
    }
}

#[tokio::test]
async fn malformed_json() {
    for (api, stream) in ALL {
        let server = start([Turn::text("x").with_fault(Fault::MalformedJson)]).await;
        let client = client(api, &config(&server, stream));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::BadResponse, "{api:?} stream={stream}");
        assert!(error.message.starts_with("the server sent invalid json"), "{error}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn unauthorized_is_a_clear_auth_error_without_retry() {
    let body = json!({"error": {"message": "Incorrect API key provided: sk-test-0123456789.", "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string();
    for (api, stream) in ALL {
        let server = start([status(401, &body, &[]), Turn::text("never")]).await;
        let client = client(api, &config(&server, stream));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!((error.kind.clone(), error.status), (ModelErrorKind::Auth, Some(401)));
        assert_eq!(
            error.message,
            "the server refused the api key (http 401): Incorrect API key provided: <redacted>."
        );
        assert_eq!(error.request_id.as_deref(), Some("req_scripted_1"));
        assert!(!error.is_retryable());
        assert_eq!(server.requests().len(), 1, "{api:?} stream={stream}");
    }
}

#[tokio::test]
async fn json_answer_to_a_streaming_request() {
    for api in [Api::Chat, Api::Responses] {
        let server = start([Turn::text("whole").with_fault(Fault::NotSse)]).await;
        let client = client(api, &config(&server, true));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!((error.kind.clone(), error.status), (ModelErrorKind::BadResponse, Some(200)));
        assert!(
            error.message.starts_with(
                "expected an event stream but the server answered with application/json"
            ),
            "{error}"
        );
    }
}

#[tokio::test]
async fn stalled_server_hits_the_first_byte_timeout() {
    let server = start([Turn::text("late").with_delay_ms(2_000)]).await;
    let mut config = config(&server, true);
    config.limits.first_byte_timeout = Duration::from_millis(150);
    config.retry.max_retries = 0;
    let client = client(Api::Chat, &config);
    let started = Instant::now();
    let error = failure(run(client.as_ref(), &[user("go")], None).await);
    assert_eq!(error.kind, ModelErrorKind::Network, "{error}");
    // The answer would come after 2 s: anything sooner is the read timeout, however loaded the
    // machine is.
    assert!(started.elapsed() < Duration::from_millis(1800), "{:?}", started.elapsed());
}

#[tokio::test]
async fn refused_connection_is_retried_then_reported() {
    // Bind and drop a listener to get a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = start([]).await;
    let mut config = config(&server, true);
    config.base_url = format!("http://127.0.0.1:{port}/v1");
    // Backoffs long enough to see: 100, 200 and 400 ms, each at least 75% of that after jitter.
    config.retry.initial_backoff = Duration::from_millis(100);
    config.retry.max_backoff = Duration::from_millis(400);
    let client = client(Api::Chat, &config);
    let started = Instant::now();
    let error = failure(run(client.as_ref(), &[user("go")], None).await);
    assert_eq!(error.kind, ModelErrorKind::Network);
    assert!(error.message.starts_with("could not connect to the server"), "{error}");
    // A refused connection fails in about a millisecond: only the three retries' backoffs make it
    // last this long.
    let retried = Duration::from_millis(75 + 150 + 300);
    assert!(started.elapsed() >= retried, "no retries: failed after {:?}", started.elapsed());
}

/// llama-cpp-python answers a request its validation rejects with HTTP 500; the same bytes would
/// fail the same way, so the error is reported at once with the server's message.
#[tokio::test]
async fn a_validation_error_sent_as_500_is_reported_at_once() {
    let body = json!({"error": {"message": "1 validation error for ChatCompletionRequestAssistantMessage content: Input should be a valid string", "type": "internal_server_error", "param": null, "code": null}}).to_string();
    for (api, stream) in ALL {
        let server = start([status(500, &body, &[]), Turn::text("never")]).await;
        let client = client(api, &config(&server, stream));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::InvalidRequest, "{api:?} stream={stream}");
        assert!(!error.is_retryable());
        assert!(error.message.contains("Input should be a valid string"), "{}", error.message);
        assert_eq!(server.requests().len(), 1, "{api:?} stream={stream}");
    }
}

/// A 200 with an empty event stream (llama-cpp-python streaming with tool_choice "auto") is a
/// failure, not an empty answer; it is not retried, since the server would fail the same way.
#[tokio::test]
async fn an_empty_event_stream_is_an_error() {
    for api in [Api::Chat, Api::Responses] {
        let server = start([Turn::fault(Fault::Truncate { events: 0 }), Turn::text("never")]).await;
        let client = client(api, &config(&server, true));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::BadResponse, "{api:?}");
        assert!(error.message.contains("empty event stream"), "{api:?}: {}", error.message);
        assert_eq!(server.requests().len(), 1, "{api:?}");
    }
}

/// An answer with no text and no tool call is asked for once more; the second answer counts.
#[tokio::test]
async fn an_empty_answer_is_asked_for_once_more() {
    for (api, stream) in ALL {
        let server = start([Turn::default(), Turn::text("ok")]).await;
        let client = client(api, &config(&server, stream));
        let events = run(client.as_ref(), &[user("go")], None).await.unwrap();
        let messages: Vec<_> = events
            .iter()
            .filter(|event| matches!(event, ModelEvent::Message(_) | ModelEvent::ToolCall(_)))
            .collect();
        assert_eq!(messages, [&ModelEvent::Message(agent_core::Message::assistant("ok"))]);
        assert!(completed(&events), "{api:?} stream={stream}");
        assert_eq!(server.requests().len(), 2, "{api:?} stream={stream}");
    }
}

/// Two empty answers in a row are a model error naming the server's usage and response id,
/// never a successful run with nothing in it.
#[tokio::test]
async fn two_empty_answers_are_a_model_error() {
    for (api, stream) in ALL {
        let server = start([Turn::default(), Turn::default(), Turn::text("never")]).await;
        let client = client(api, &config(&server, stream));
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert_eq!(error.kind, ModelErrorKind::BadResponse, "{api:?} stream={stream}");
        assert!(
            error.message.starts_with("the model returned an empty answer")
                && error.message.contains("42 prompt tokens")
                && error.message.contains("response id "),
            "{api:?} stream={stream}: {}",
            error.message
        );
        assert_eq!(server.requests().len(), 2, "{api:?} stream={stream}");
    }
}

type SetLimit = fn(&mut agent_model::ResponseLimits);

/// Each size cap ends the response with an error naming its `[limits]` key, on both APIs.
#[tokio::test]
async fn responses_past_a_size_cap_fail_naming_it() {
    let long = "many words in many deltas ".repeat(200);
    for (api, stream) in ALL {
        let cases: [(&str, SetLimit); 3] = [
            ("model_max_body_bytes", |limits| limits.max_body_bytes = 1024),
            ("model_max_stream_events", |limits| limits.max_stream_events = 3),
            ("model_max_stream_bytes", |limits| limits.max_stream_bytes = 2048),
        ];
        for (key, set) in cases {
            if (key == "model_max_body_bytes") == stream {
                continue;
            }
            let server = start([Turn::text(&long)]).await;
            let mut config = config(&server, stream);
            set(&mut config.limits);
            let client = client(api, &config);
            let error = failure(run(client.as_ref(), &[user("go")], None).await);
            assert_eq!(error.kind, ModelErrorKind::BadResponse, "{api:?} {key}: {error}");
            assert!(error.message.contains(key), "{api:?} {key}: {error}");
        }
    }
}

#[tokio::test]
async fn an_event_past_the_event_cap_fails_naming_it() {
    for api in [Api::Chat, Api::Responses] {
        let chunk = json!({"padding": "x".repeat(4096)});
        let server = start([Turn::text("hi").with_fault(Fault::Chunk { events: 1, chunk })]).await;
        let mut config = config(&server, true);
        config.limits.max_event_bytes = 1024;
        let client = client(api, &config);
        let error = failure(run(client.as_ref(), &[user("go")], None).await);
        assert!(error.message.contains("(model_max_event_bytes)"), "{api:?}: {error}");
    }
}
