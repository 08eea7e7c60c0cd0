//! execute_code: values and output come back; failures are typed observations.

use insta::assert_snapshot;
use serde_json::{Value, json};

use super::{Fixture, sandbox_missing};

/// The JSON result without its duration, which varies.
fn without_duration(out: &str) -> Value {
    let mut value: Value = serde_json::from_str(out).unwrap_or_else(|_| panic!("not JSON: {out}"));
    value.as_object_mut().unwrap().remove("duration_ms").expect("duration_ms present");
    value
}

#[tokio::test]
async fn javascript_returns_value_and_console_output() {
    let fx = Fixture::new();
    let out = fx.call("execute_code", json!({"language": "javascript", "code": "console.log('hi'); console.error('warn'); [1,2,3].map(x => x * 2)"})).await;
    assert_eq!(
        without_duration(&out),
        json!({"value": [2, 4, 6], "stdout": "hi\n", "stderr": "warn\n"})
    );
}

#[tokio::test]
async fn typescript_types_are_stripped() {
    let fx = Fixture::new();
    let code = "interface P { x: number }\nfunction f<T extends P>(p: T): number { return p.x * 2 }\nf({ x: 21 })";
    let out = fx.call("execute_code", json!({"language": "typescript", "code": code})).await;
    assert_eq!(without_duration(&out)["value"], json!(42));
}

#[tokio::test]
async fn python_prints() {
    let fx = Fixture::new();
    let out = fx
        .call("execute_code", json!({"language": "python", "code": "print(sum(range(10)))"}))
        .await;
    if sandbox_missing(&out) {
        return;
    }
    if out.contains("\"error\":\"runtime_missing\"") {
        agent_test_support::skipped(&format!("python3 is not installed: {out}"));
        return;
    }
    assert_eq!(without_duration(&out), json!({"value": null, "stdout": "45\n", "stderr": ""}));
}

#[tokio::test]
async fn failures_are_typed() {
    let fx = Fixture::new();
    let out = fx
        .call(
            "execute_code",
            json!({"language": "javascript", "code": "while (true) {}", "timeout_ms": 300}),
        )
        .await;
    assert!(out.starts_with(r#"{"ok":false,"error":"timeout""#), "{out}");
    let out = fx.call("execute_code", json!({"language": "javascript", "code": "console.log('before'); throw new Error('boom')"})).await;
    assert!(out.starts_with(r#"{"ok":false,"error":"exception""#), "{out}");
    assert!(out.contains("boom") && out.contains("before"), "{out}");
    let out = fx.call("execute_code", json!({"language": "javascript", "code": "let = ;"})).await;
    assert!(out.starts_with(r#"{"ok":false,"error":"syntax_error""#), "{out}");
    assert_snapshot!(fx.call("execute_code", json!({"language": "ruby", "code": "1"})).await);
}
