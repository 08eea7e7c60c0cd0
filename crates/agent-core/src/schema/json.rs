//! Reads argument text into a JSON object, refusing duplicate keys at any depth.
//!
//! `serde_json::Value` keeps the last of two equal keys without a word, so a model that sends
//! `{"path":"a","path":"b"}` would have one of its values ignored. This reader builds the same
//! value in one pass and reports the duplicate with its path instead.

use std::{cell::RefCell, fmt};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value, map::Entry};

use super::{ArgsError, node::push_key};

/// Parses `text` as a JSON object.
pub(crate) fn parse_object(text: &str) -> Result<Map<String, Value>, ArgsError> {
    if text.trim().is_empty() {
        return Err(ArgsError::Json {
            message: "the arguments are empty; send a JSON object, such as {}".to_owned(),
        });
    }
    let duplicate = RefCell::new(None);
    let mut reader = serde_json::Deserializer::from_str(text);
    let seed = Seed { at: Segment::Root, duplicate: &duplicate };
    let parsed = seed.deserialize(&mut reader).and_then(|value| reader.end().map(|()| value));
    match parsed {
        Ok(Value::Object(map)) => Ok(map),
        // Some models encode the arguments twice; say so, since the fix is easy to make.
        Ok(Value::String(inner)) if inner.trim_start().starts_with('{') => Err(ArgsError::Json {
            message: "expected a JSON object, got a string that contains one; send the object \
                      itself, not encoded as a string"
                .to_owned(),
        }),
        Ok(other) => Err(ArgsError::Json {
            message: format!("expected a JSON object, got {}", kind_of(&other)),
        }),
        Err(err) => Err(match duplicate.take() {
            Some((path, message)) => ArgsError::Invalid { path, message },
            None => ArgsError::Json { message: err.to_string() },
        }),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Where a value sits, as links to its parent on the stack: nothing is allocated unless an error
/// needs the path written out.
#[derive(Clone, Copy)]
enum Segment<'a> {
    Root,
    Key(&'a Segment<'a>, &'a str),
    Index(&'a Segment<'a>, usize),
}

impl Segment<'_> {
    fn write(&self, out: &mut String) {
        match self {
            Segment::Root => out.push('$'),
            Segment::Key(parent, key) => {
                parent.write(out);
                push_key(out, key);
            }
            Segment::Index(parent, index) => {
                parent.write(out);
                out.push_str(&format!("[{index}]"));
            }
        }
    }
}

/// Builds a [`Value`] like serde_json's own visitor, but fails on a repeated key.
struct Seed<'a> {
    at: Segment<'a>,
    duplicate: &'a RefCell<Option<(String, String)>>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        loop {
            let at = Segment::Index(&self.at, items.len());
            match seq.next_element_seed(Seed { at, duplicate: self.duplicate })? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            // One hash per key: the vacant entry both proves the key is new and receives the value.
            let slot = match map.entry(key) {
                Entry::Vacant(slot) => slot,
                Entry::Occupied(taken) => {
                    let key = taken.key();
                    let mut path = String::new();
                    Segment::Key(&self.at, key).write(&mut path);
                    let message = format!("duplicate key `{key}`; send each key once");
                    *self.duplicate.borrow_mut() = Some((path, message));
                    return Err(de::Error::custom(format!("duplicate key `{key}`")));
                }
            };
            let at = Segment::Key(&self.at, slot.key());
            let value = access.next_value_seed(Seed { at, duplicate: self.duplicate })?;
            slot.insert(value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{ArgsError, parse_object};

    fn check(text: &str, expected: Result<serde_json::Value, (&str, &str)>) {
        let got = parse_object(text).map(serde_json::Value::Object);
        match (got, expected) {
            (Ok(value), Ok(want)) => assert_eq!(value, want, "{text}"),
            (Err(err), Err((path, fragment))) => {
                assert_eq!(err.path(), path, "{text}: {err}");
                assert!(err.to_string().contains(fragment), "{text}: {err}");
            }
            (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
        }
    }

    #[test]
    fn reads_objects_and_refuses_the_rest() {
        check(
            r#"{"a":[1,-2,3.5,"x",null,true],"b":{}}"#,
            Ok(json!({"a":[1,-2,3.5,"x",null,true],"b":{}})),
        );
        check(r#"{"a":1,"a":2}"#, Err(("$.a", "duplicate key `a`")));
        check(r#"{"a":[{"b":1},{"c":1,"c":2}]}"#, Err(("$.a[1].c", "duplicate key `c`")));
        check("", Err(("$", "empty")));
        check("null", Err(("$", "got null")));
        check("[]", Err(("$", "got an array")));
        check("42", Err(("$", "got a number")));
        check(r#""{\"a\":1}""#, Err(("$", "got a string that contains one")));
        check(r#"{"a":1} x"#, Err(("$", "trailing characters")));
        check(r#"{"a":"#, Err(("$", "EOF while parsing")));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = "[".repeat(100_000);
        let text = format!("{{\"a\":{text}");
        assert!(matches!(parse_object(&text), Err(ArgsError::Json { .. })));
    }
}
