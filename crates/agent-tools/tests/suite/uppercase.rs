//! uppercase: full Unicode case mapping, and the argument errors every tool shares.

use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

#[tokio::test]
async fn full_unicode_uppercase() {
    let fx = Fixture::new();
    assert_eq!(fx.call("uppercase", json!({"text": "straße ǆ ﬁ"})).await, "STRASSE Ǆ FI");
}

#[tokio::test]
async fn argument_errors_are_observations() {
    let fx = Fixture::new();
    assert_snapshot!(fx.call("uppercase", json!({})).await);
    assert_snapshot!(fx.call("uppercase", json!({"text": 5})).await);
    let long = "a".repeat(100_001);
    assert_snapshot!(fx.call("uppercase", json!({ "text": long })).await);
}
