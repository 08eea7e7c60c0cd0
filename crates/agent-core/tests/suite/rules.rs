//! A checker of OpenAI's strict rules, independent of the converter, so that a converter bug
//! cannot hide in its own tests.

use serde_json::{Map, Value};

const ALLOWED: [&str; 21] = [
    "title",
    "description",
    "type",
    "const",
    "enum",
    "format",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
    "$ref",
    "$defs",
];
const FORMATS: [&str; 9] =
    ["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Panics with the path of the first node that breaks a strict rule.
pub(crate) fn assert_strict(schema: &Value) {
    let root = schema.as_object().unwrap_or_else(|| panic!("root is not an object: {schema}"));
    assert_eq!(root.get("type"), Some(&Value::from("object")), "root type");
    assert!(!root.contains_key("anyOf"), "root anyOf");
    jsonschema::meta::validate(schema).unwrap_or_else(|e| panic!("not a valid JSON Schema: {e}"));
    node(schema, schema, "$");
    if let Some(Value::Object(defs)) = root.get("$defs") {
        for (name, def) in defs {
            node(schema, def, &format!("$.$defs.{name}"));
        }
    }
}

fn node(root: &Value, schema: &Value, path: &str) {
    let map: &Map<String, Value> =
        schema.as_object().unwrap_or_else(|| panic!("{path}: boolean schema"));
    for key in map.keys() {
        assert!(ALLOWED.contains(&key.as_str()), "{path}: keyword `{key}` is not allowed");
        if key == "$defs" {
            assert_eq!(path, "$", "{path}: nested $defs");
        }
    }
    if let Some(format) = map.get("format") {
        assert!(FORMATS.contains(&format.as_str().unwrap_or_default()), "{path}: format {format}");
    }
    if let Some(reference) = map.get("$ref") {
        assert_eq!(map.len(), 1, "{path}: $ref with siblings");
        let reference = reference.as_str().unwrap_or_default();
        let target = reference
            .strip_prefix('#')
            .and_then(|p| if p.is_empty() { Some(root) } else { root.pointer(p) });
        assert!(target.is_some(), "{path}: dangling $ref {reference}");
        return;
    }
    assert!(
        ["type", "anyOf", "enum", "const"].iter().any(|k| map.contains_key(*k)),
        "{path}: node without a type"
    );
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    };
    if is_object {
        assert_eq!(
            map.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{path}: not closed"
        );
        let properties = map.get("properties").and_then(Value::as_object);
        let properties = properties.unwrap_or_else(|| panic!("{path}: object without properties"));
        let keys: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
        assert_eq!(map.get("required"), Some(&Value::Array(keys)), "{path}: required != keys");
        for (key, child) in properties {
            node(root, child, &format!("{path}.properties.{key}"));
        }
    } else {
        assert!(!map.contains_key("properties"), "{path}: properties without type object");
    }
    if let Some(items) = map.get("items") {
        node(root, items, &format!("{path}.items"));
    }
    if let Some(branches) = map.get("anyOf") {
        let branches =
            branches.as_array().unwrap_or_else(|| panic!("{path}: anyOf is not an array"));
        for (i, branch) in branches.iter().enumerate() {
            node(root, branch, &format!("{path}.anyOf[{i}]"));
        }
    }
}
