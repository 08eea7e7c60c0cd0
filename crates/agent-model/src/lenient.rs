//! Lenient serde helpers for what compatible servers send where OpenAI's spec is strict.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A field that may be `null` where a value is expected: `null` becomes the default.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Tool-call arguments: OpenAI sends a JSON string, some servers (Ollama, some vLLM parsers) send
/// the object itself. Either way the result is the argument text, which is what [`string`] gives.
pub(crate) fn arguments<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    string(deserializer)
}

/// Message content: a string, or an array of parts whose `text` fields are joined.
pub(crate) fn text<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str).or(part.as_str()))
                .collect(),
        ),
        Some(other) => Some(other.to_string()),
    })
}

/// A string field that a server may fill with a number or another value.
pub(crate) fn string<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(other) => Some(other.to_string()),
    })
}

/// A token count that may be missing, `null`, or a float.
pub(crate) fn count<'de, D>(deserializer: D) -> Result<u64, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match Option::<Value>::deserialize(deserializer)? {
        Some(Value::Number(number)) => number
            .as_u64()
            .or_else(|| number.as_f64().map(|float| float.max(0.0) as u64))
            .unwrap_or(0),
        _ => 0,
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Probe {
        #[serde(default, deserialize_with = "super::arguments")]
        arguments: Option<String>,
        #[serde(default, deserialize_with = "super::text")]
        content: Option<String>,
        #[serde(default, deserialize_with = "super::count")]
        tokens: u64,
        #[serde(default, deserialize_with = "super::nullable")]
        parts: Vec<u8>,
    }

    #[track_caller]
    fn check(
        input: serde_json::Value,
        arguments: Option<&str>,
        content: Option<&str>,
        tokens: u64,
    ) {
        let probe: Probe = serde_json::from_value(input).unwrap();
        assert_eq!(probe.arguments.as_deref(), arguments);
        assert_eq!(probe.content.as_deref(), content);
        assert_eq!(probe.tokens, tokens);
        assert!(probe.parts.is_empty());
    }

    #[test]
    fn arguments_as_string_or_object() {
        check(json!({"arguments": "{\"a\":1}"}), Some("{\"a\":1}"), None, 0);
        check(json!({"arguments": {"a": 1}}), Some("{\"a\":1}"), None, 0);
        check(json!({"arguments": null, "parts": null}), None, None, 0);
    }

    #[test]
    fn content_as_string_or_parts_and_float_counts() {
        check(json!({"content": "hi"}), None, Some("hi"), 0);
        check(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            None,
            Some("ab"),
            0,
        );
        check(json!({"tokens": 12.0}), None, None, 12);
    }
}
