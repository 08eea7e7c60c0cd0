//! Facts about one JSON Schema node that the strict transform, the limit checks and the
//! validator all need: how to name its path, where a `$ref` points, whether it accepts `null`.

use serde_json::{Map, Value};

/// The path of a child reached through `keyword` and then `key`, such as `$.properties.city`.
/// Keys that are not plain identifiers are quoted: `$.properties["first name"]`.
pub(crate) fn child_path(parent: &str, keyword: &str, key: &str) -> String {
    let mut path = String::with_capacity(parent.len() + keyword.len() + key.len() + 6);
    path.push_str(parent);
    if !keyword.is_empty() {
        path.push('.');
        path.push_str(keyword);
    }
    push_key(&mut path, key);
    path
}

/// The path of the `index`th entry of an array reached through `keyword`: `$.anyOf[1]`.
pub(crate) fn index_path(parent: &str, keyword: &str, index: usize) -> String {
    format!("{parent}.{keyword}[{index}]")
}

/// Appends `.key` or `["key"]` to a JSON path.
pub(crate) fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        // A JSON string literal is an unambiguous way to quote any key.
        path.push_str(&Value::String(key.to_owned()).to_string());
        path.push(']');
    }
}

/// Resolves a local `$ref` (`#` or a JSON pointer such as `#/$defs/Address`) against `root`.
pub(crate) fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if pointer.contains('%') {
        // schemars percent-encodes unusual definition names; decode before walking the pointer.
        return root.pointer(&percent_decode(pointer)?);
    }
    root.pointer(pointer)
}

/// The definition name in a `#/$defs/Name` reference, unescaped.
pub(crate) fn def_name(reference: &str) -> Option<String> {
    let name = reference.strip_prefix("#/$defs/")?;
    let name = if name.contains('%') { percent_decode(name)? } else { name.to_owned() };
    if name.contains('/') {
        return None;
    }
    Some(name.replace("~1", "/").replace("~0", "~"))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether the `type` keyword value (a string or an array of strings) names `name`.
pub(crate) fn type_includes(types: &Value, name: &str) -> bool {
    match types {
        Value::String(t) => t == name,
        Value::Array(ts) => ts.iter().any(|t| t.as_str() == Some(name)),
        _ => false,
    }
}

/// Whether a node describes an object: it says `type: object` (alone or in a list) or lists
/// `properties`.
pub(crate) fn is_object_node(map: &Map<String, Value>) -> bool {
    map.get("type").is_some_and(|t| type_includes(t, "object")) || map.contains_key("properties")
}

/// Whether `node` accepts `null`, following local `$ref`s into `root`. When unsure (unresolved
/// references, very deep reference chains) it answers yes, which keeps a `null` in place for the
/// validator to judge rather than silently replacing it with a default.
pub(crate) fn accepts_null(node: &Value, root: &Value) -> bool {
    accepts_null_at(node, root, 0)
}

fn accepts_null_at(node: &Value, root: &Value, depth: usize) -> bool {
    let Value::Object(map) = node else {
        return node.as_bool().unwrap_or(true);
    };
    if depth > 32 {
        return true;
    }
    if map.get("type").is_some_and(|t| !type_includes(t, "null")) {
        return false;
    }
    if map.get("enum").is_some_and(|e| !e.as_array().is_some_and(|a| a.contains(&Value::Null))) {
        return false;
    }
    if map.get("const").is_some_and(|c| !c.is_null()) {
        return false;
    }
    if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| resolve(root, r))
        && !accepts_null_at(target, root, depth + 1)
    {
        return false;
    }
    let branches = |keyword: &str| map.get(keyword).and_then(Value::as_array);
    for keyword in ["anyOf", "oneOf"] {
        if let Some(branches) = branches(keyword)
            && !branches.iter().any(|b| accepts_null_at(b, root, depth + 1))
        {
            return false;
        }
    }
    if let Some(branches) = branches("allOf")
        && !branches.iter().all(|b| accepts_null_at(b, root, depth + 1))
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{accepts_null, child_path, resolve};

    fn check_null(node: Value, expected: bool) {
        let root = json!({"$defs": {"Units": {"type": "string", "enum": ["metric"]}, "Any": {}}});
        assert_eq!(accepts_null(&node, &root), expected, "{node}");
    }

    #[test]
    fn null_acceptance() {
        check_null(json!({"type": ["string", "null"]}), true);
        check_null(json!({"type": "boolean"}), false);
        check_null(json!({"$ref": "#/$defs/Units"}), false);
        check_null(json!({"$ref": "#/$defs/Any"}), true);
        check_null(json!({"anyOf": [{"$ref": "#/$defs/Units"}, {"type": "null"}]}), true);
        check_null(json!({"type": ["string", "null"], "enum": ["a"]}), false);
        check_null(json!({"const": "a"}), false);
        check_null(json!(true), true);
        check_null(json!({}), true);
    }

    #[test]
    fn paths_quote_unusual_keys() {
        assert_eq!(child_path("$", "properties", "city"), "$.properties.city");
        assert_eq!(child_path("$", "properties", "first name"), r#"$.properties["first name"]"#);
        assert_eq!(child_path("$", "", "0"), r#"$["0"]"#);
    }

    #[test]
    fn resolves_local_refs() {
        let root = json!({"$defs": {"A<B>": {"type": "string"}}, "type": "object"});
        assert_eq!(resolve(&root, "#/$defs/A%3CB%3E"), Some(&json!({"type": "string"})));
        assert_eq!(resolve(&root, "#"), Some(&root));
        assert_eq!(resolve(&root, "https://example.com/x"), None);
    }
}
