//! Arbitrary (tool name, argument string) pairs: the executor never panics and always answers
//! with exactly one outcome carrying the call's id.

use agent_core::CancellationToken;
use proptest::prelude::*;

use super::support::{Setup, call, fixture};

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("uppercase".to_owned()),
        Just("shout".to_owned()),
        Just("echo".to_owned()),
        Just("read_file".to_owned()),
        Just("write_file".to_owned()),
        Just("bash".to_owned()),
        Just("web_search".to_owned()),
        Just("panicker".to_owned()),
        ".{0,20}",
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,64}",
        r#"\{"(text|path|command|domain|content)": ?"[^"\\]{0,40}"\}"#,
        r#"\{"path": ?"[a-z./]{0,20}", ?"content": ?"x"\}"#,
        any::<i64>().prop_map(|n| n.to_string()),
        Just("{\"text\": null}".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_call_gets_exactly_one_outcome(
        calls in proptest::collection::vec((tool_name(), arguments()), 1..6),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let fx = fixture(Setup::default());
        let calls: Vec<_> = calls
            .iter()
            .enumerate()
            .map(|(idx, (name, args))| call(&format!("id-{idx}"), name, args))
            .collect();
        let token = CancellationToken::new();
        let single = runtime.block_on(fx.exec.execute(&calls[0], &token));
        prop_assert_eq!(&single.call_id, "id-0");
        let outcomes = runtime.block_on(fx.exec.execute_batch(&calls, &token));
        prop_assert_eq!(outcomes.len(), calls.len());
        for (outcome, call) in outcomes.iter().zip(&calls) {
            prop_assert_eq!(&outcome.call_id, &call.call_id);
            prop_assert_eq!(outcome.ok, outcome.error_code.is_none());
            if !outcome.ok {
                let observation: serde_json::Value = serde_json::from_str(&outcome.text).unwrap();
                prop_assert_eq!(observation["ok"].as_bool(), Some(false));
            }
        }
    }
}
