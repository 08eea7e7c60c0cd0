//! The strict transform (docs/schema.md, "What strict conversion does"): from a schemars schema to one that OpenAI
//! accepts with `strict: true`, or a [`StrictError`] naming the node and the Rust-side fix.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{
    StrictError,
    defs::used_defs,
    node::{accepts_null, child_path, index_path, is_object_node, resolve, type_includes},
};

/// The nine `format` values strict mode accepts; every other format is removed.
const ALLOWED_FORMATS: [&str; 9] =
    ["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Keywords strict mode accepts, in the order the output writes them.
const KEPT: [&str; 21] = [
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

/// Annotations that may sit beside a `$ref`; the target is then inlined with them.
const REF_ANNOTATIONS: [&str; 2] = ["title", "description"];

/// How many schema nodes one conversion may visit. Inlining `$ref`s that carry descriptions can
/// multiply a schema; past this budget the schema is refused instead of taking unbounded time.
const NODE_BUDGET: usize = 100_000;

/// How many documented references may be inlined inside one another; bounds the recursion.
const MAX_INLINE_DEPTH: usize = 64;

const NON_STRICT: &str = "or send the tool with `strict: false` (`const STRICT: bool = false`)";

/// Runs the §2.3 transform. Limits are checked separately, on the output.
pub(crate) fn transform(schema: Value) -> Result<Value, StrictError> {
    let original = schema.clone();
    let Value::Object(mut root) = schema else {
        return Err(any_value("$"));
    };
    root.remove("$schema");
    let defs = match root.remove("$defs") {
        None => Map::new(),
        Some(Value::Object(defs)) => defs,
        Some(_) => {
            return Err(StrictError::new("$.$defs", "`$defs` is not an object", "fix the schema"));
        }
    };
    if root.contains_key("definitions") {
        return Err(StrictError::new(
            "$.definitions",
            "`definitions` is not supported",
            "move the definitions to `$defs` (draft 2020-12)",
        ));
    }
    let mut walker = Walker { original: &original, inlining: vec![&original], visited: 0 };
    walker.merge_all_of(&mut root, "$")?;
    check_root(&root)?;
    let mut root = Value::Object(root);
    walker.node(&mut root, "$")?;
    let mut strict_defs = Map::new();
    for (name, mut def) in defs {
        let path = child_path("$", "$defs", &name);
        // A definition that refers to itself is recursive: mark it as being walked so that
        // documented self-references are wrapped rather than inlined.
        let target = original.get("$defs").and_then(|d| d.get(&name));
        walker.inlining.extend(target);
        walker.node(&mut def, &path)?;
        walker.inlining.truncate(1);
        strict_defs.insert(name, def);
    }
    let Value::Object(mut root) = root else {
        return Err(any_value("$"));
    };
    let used: HashSet<String> =
        used_defs(&root, &strict_defs)?.into_iter().map(str::to_owned).collect();
    strict_defs.retain(|name, _| used.contains(name));
    if !strict_defs.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(strict_defs));
    }
    Ok(Value::Object(root))
}

/// Strict mode needs an object at the root, and not a union.
fn check_root(root: &Map<String, Value>) -> Result<(), StrictError> {
    let types = root.get("type");
    if types.is_some_and(|t| t == "null") {
        return Err(StrictError::new(
            "$",
            "a unit struct takes `null`, and the root must be an object",
            "write `struct NoArgs {}` instead of `struct NoArgs;`",
        ));
    }
    let union = ["anyOf", "oneOf", "enum", "const"].into_iter().find(|k| root.contains_key(*k));
    if let Some(keyword) = union {
        if is_object_node(root) {
            return Err(StrictError::new(
                "$",
                format!("the root object also has `{keyword}` (a `#[serde(flatten)]` enum)"),
                "make the enum a named field instead of flattening it",
            ));
        }
        return Err(StrictError::new(
            "$",
            format!("the root is an enum (`{keyword}`), and the root must be an object"),
            "wrap the enum in a struct field: `struct Input { choice: MyEnum }`",
        ));
    }
    if types != Some(&json!("object")) {
        let found = types.map_or_else(|| "no `type`".to_owned(), |t| format!("`type: {t}`"));
        return Err(StrictError::new(
            "$",
            format!("the root must be an object, found {found}"),
            "use a struct with named fields as the tool input",
        ));
    }
    Ok(())
}

struct Walker<'a> {
    /// The untouched input, which `$ref`s resolve against.
    original: &'a Value,
    /// Targets being walked right now (the root, a definition, inlined references); meeting one
    /// of them again through a `$ref` means recursion.
    inlining: Vec<&'a Value>,
    visited: usize,
}

impl<'a> Walker<'a> {
    fn node(&mut self, node: &mut Value, path: &str) -> Result<(), StrictError> {
        self.visited += 1;
        if self.visited > NODE_BUDGET {
            return Err(StrictError::new(
                path,
                format!("the schema expands to more than {NODE_BUDGET} nodes"),
                "use fewer documented references to large types",
            ));
        }
        let Value::Object(map) = node else {
            return Err(any_value(path));
        };
        self.merge_all_of(map, path)?;
        reject_untranslatable(map, path)?;
        // Everything else strict mode does not know is an annotation or a constraint that the
        // argument validator still enforces from the original schema (`default`, `minLength`,
        // `uniqueItems`, `examples`, ...), so it is dropped rather than refused.
        if map.get("format").and_then(Value::as_str).is_some_and(|f| !ALLOWED_FORMATS.contains(&f))
        {
            map.remove("format");
        }
        map.retain(|key, _| KEPT.contains(&key.as_str()) || key == "oneOf");
        if let Some(reference) = map.get("$ref").and_then(Value::as_str).map(str::to_owned) {
            return self.reference(node, &reference, path);
        }
        if map.contains_key("$ref") {
            return Err(StrictError::new(path, "`$ref` is not a string", "fix the schema"));
        }
        if let Some(one_of) = map.remove("oneOf") {
            if map.contains_key("anyOf") {
                return Err(StrictError::new(
                    path,
                    "the node has both `oneOf` and `anyOf`",
                    format!("use a single union {NON_STRICT}"),
                ));
            }
            // The branches of a serde enum never overlap, so "any" means the same as "one".
            map.insert("anyOf".to_owned(), one_of);
        }
        if map.contains_key("$defs") {
            return Err(StrictError::new(
                path,
                "nested `$defs` are not supported",
                "move them to the root",
            ));
        }
        if is_object_node(map) {
            self.object(map, path)?;
        }
        match map.get_mut("items") {
            Some(Value::Array(_)) => return Err(tuple(&format!("{path}.items"))),
            Some(items) => self.node(items, &format!("{path}.items"))?,
            None => {}
        }
        if let Some(branches) = map.get_mut("anyOf") {
            let Value::Array(branches) = branches else {
                return Err(StrictError::new(path, "`anyOf` is not an array", "fix the schema"));
            };
            for (i, branch) in branches.iter_mut().enumerate() {
                self.node(branch, &index_path(path, "anyOf", i))?;
            }
        }
        if !["type", "anyOf", "enum", "const"].iter().any(|k| map.contains_key(*k)) {
            return Err(any_value(path));
        }
        reorder(map);
        Ok(())
    }

    /// A `$ref` stays as it is when it stands alone. With annotation siblings it is replaced by
    /// its target, annotations kept (strict mode refuses `$ref` siblings); a recursive target is
    /// wrapped as `{description, anyOf: [{$ref}]}` instead, since inlining it would never end.
    fn reference(
        &mut self,
        node: &mut Value,
        reference: &str,
        path: &str,
    ) -> Result<(), StrictError> {
        let Value::Object(map) = node else {
            return Err(any_value(path));
        };
        let Some(target) = resolve(self.original, reference) else {
            return Err(StrictError::new(
                path,
                format!("`$ref: {reference}` does not point into this schema"),
                "use local references only (`#` or `#/$defs/Name`)",
            ));
        };
        let constraints: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "$ref" && !REF_ANNOTATIONS.contains(k))
            .collect();
        if !constraints.is_empty() {
            return Err(StrictError::new(
                path,
                format!("`$ref` has constraining siblings `{}`", constraints.join("`, `")),
                format!("move the constraint into the referenced type {NON_STRICT}"),
            ));
        }
        if map.len() == 1 {
            return Ok(());
        }
        let target: &'a Value = target;
        let recursive = self.inlining.iter().any(|walked| std::ptr::eq(*walked, target));
        let mut annotations = Map::new();
        for key in REF_ANNOTATIONS {
            if let Some(value) = map.remove(key) {
                annotations.insert(key.to_owned(), value);
            }
        }
        if recursive {
            annotations.insert("anyOf".to_owned(), json!([{"$ref": reference}]));
            *node = Value::Object(annotations);
            return Ok(());
        }
        let Value::Object(mut inlined) = target.clone() else {
            return Err(any_value(path));
        };
        inlined.remove("$defs");
        inlined.remove("$schema");
        inlined.extend(annotations);
        *node = Value::Object(inlined);
        if self.inlining.len() > MAX_INLINE_DEPTH {
            return Err(StrictError::new(
                path,
                format!("documented references nest more than {MAX_INLINE_DEPTH} levels deep"),
                "remove doc comments from some struct-typed fields",
            ));
        }
        self.inlining.push(target);
        let result = self.node(node, path);
        self.inlining.pop();
        result
    }

    /// Closes an object: every property required, optional ones made nullable, no other keys.
    fn object(&mut self, map: &mut Map<String, Value>, path: &str) -> Result<(), StrictError> {
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(StrictError::new(
                    path,
                    "a map (free-form keys, `additionalProperties`) cannot be expressed in strict mode",
                    format!(
                        "use a Vec<KeyValue> (a struct with `key` and `value` fields) instead of a \
                         HashMap or BTreeMap, {NON_STRICT}"
                    ),
                ));
            }
        }
        if let Some(keyword) = ["anyOf", "oneOf"].into_iter().find(|k| map.contains_key(*k)) {
            return Err(StrictError::new(
                path,
                format!(
                    "an object with both `properties` and `{keyword}` (a `#[serde(flatten)]` enum)"
                ),
                "make the enum a named field instead of flattening it",
            ));
        }
        if !map.get("type").is_some_and(|t| type_includes(t, "object")) {
            map.insert("type".to_owned(), json!("object"));
        }
        let required: HashSet<String> = match map.get("required") {
            Some(Value::Array(keys)) => {
                keys.iter().filter_map(Value::as_str).map(str::to_owned).collect()
            }
            _ => HashSet::new(),
        };
        let mut properties = match map.remove("properties") {
            None => Map::new(),
            Some(Value::Object(properties)) => properties,
            Some(_) => {
                let path = format!("{path}.properties");
                return Err(StrictError::new(
                    &path,
                    "`properties` is not an object",
                    "fix the schema",
                ));
            }
        };
        for (key, property) in &mut properties {
            let property_path = child_path(path, "properties", key);
            self.node(property, &property_path)?;
            if !required.contains(key) && !accepts_null(property, self.original) {
                make_nullable(property);
            }
        }
        let keys = properties.keys().cloned().map(Value::String).collect();
        map.insert("properties".to_owned(), Value::Object(properties));
        map.insert("required".to_owned(), Value::Array(keys));
        map.insert("additionalProperties".to_owned(), Value::Bool(false));
        Ok(())
    }

    /// Merges a one-entry `allOf` into its node; a longer `allOf` has no strict form.
    fn merge_all_of(
        &mut self,
        map: &mut Map<String, Value>,
        path: &str,
    ) -> Result<(), StrictError> {
        while let Some(all_of) = map.remove("allOf") {
            let entry = match all_of {
                Value::Array(mut entries) if entries.len() == 1 => entries.remove(0),
                Value::Array(entries) => {
                    return Err(StrictError::new(
                        path,
                        format!(
                            "`allOf` with {} entries cannot be expressed in strict mode",
                            entries.len()
                        ),
                        format!("combine the parts into one struct {NON_STRICT}"),
                    ));
                }
                _ => {
                    return Err(StrictError::new(
                        path,
                        "`allOf` is not an array",
                        "fix the schema",
                    ));
                }
            };
            let Value::Object(entry) = entry else {
                return Err(any_value(&format!("{path}.allOf[0]")));
            };
            for (key, value) in entry {
                match map.get(&key) {
                    Some(existing) if *existing != value => {
                        return Err(StrictError::new(
                            path,
                            format!("`allOf` and its parent disagree on `{key}`"),
                            format!("merge the two schemas by hand {NON_STRICT}"),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        map.insert(key, value);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Keywords strict mode cannot express, and how to avoid each.
fn reject_untranslatable(map: &Map<String, Value>, path: &str) -> Result<(), StrictError> {
    for keyword in map.keys() {
        let fix = match keyword.as_str() {
            "prefixItems" | "additionalItems" => return Err(tuple(path)),
            "patternProperties"
            | "propertyNames"
            | "minProperties"
            | "maxProperties"
            | "unevaluatedProperties" => {
                "use a struct with named fields, or a Vec<KeyValue> instead of a map,"
            }
            "not" | "if" | "then" | "else" | "dependentRequired" | "dependentSchemas"
            | "dependencies" | "contains" | "minContains" | "maxContains" | "unevaluatedItems"
            | "$dynamicRef" | "$recursiveRef" => "remove the constraint from the Rust type",
            _ => continue,
        };
        return Err(StrictError::new(
            path,
            format!("`{keyword}` cannot be expressed in strict mode"),
            format!("{fix} {NON_STRICT}"),
        ));
    }
    Ok(())
}

/// Lets an optional property take `null`: add `"null"` to a plain `type`, add a null branch to
/// an `anyOf`, or wrap a `$ref`/`enum`/`const` node as `anyOf: [node, {type: null}]`.
fn make_nullable(node: &mut Value) {
    let Value::Object(map) = node else { return };
    let plain = !["$ref", "enum", "const", "anyOf"].iter().any(|k| map.contains_key(*k));
    if plain && let Some(types) = map.get_mut("type") {
        match types {
            Value::Array(list) => list.push(json!("null")),
            single => *single = json!([single.take(), "null"]),
        }
        return;
    }
    if !map.contains_key("type")
        && let Some(Value::Array(branches)) = map.get_mut("anyOf")
    {
        branches.push(json!({"type": "null"}));
        return;
    }
    // The description belongs to the field, so it moves to the wrapper the model reads first.
    let mut wrapper = Map::new();
    for key in REF_ANNOTATIONS {
        if let Some(value) = map.remove(key) {
            wrapper.insert(key.to_owned(), value);
        }
    }
    let inner = Value::Object(std::mem::take(map));
    wrapper.insert("anyOf".to_owned(), json!([inner, {"type": "null"}]));
    *node = Value::Object(wrapper);
}

/// Writes the keywords in one fixed order so that equal schemas print equally.
fn reorder(map: &mut Map<String, Value>) {
    let mut ordered = Map::with_capacity(map.len());
    for key in KEPT {
        if let Some(value) = map.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.append(map);
    *map = ordered;
}

fn any_value(path: &str) -> StrictError {
    StrictError::new(
        path,
        "the schema accepts any JSON value (a `serde_json::Value` field), which strict mode cannot express",
        format!("give the field a concrete type {NON_STRICT}"),
    )
}

fn tuple(path: &str) -> StrictError {
    StrictError::new(
        path,
        "a tuple (`prefixItems`) cannot be expressed in strict mode",
        "use a struct with named fields instead of a tuple",
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::transform;

    /// Transforms a root object with the given properties (all of them required unless listed
    /// in `optional`) and compares the resulting properties and definitions.
    fn check(properties: Value, optional: &[&str], defs: Value, expected: Value) {
        let required: Vec<&String> = properties
            .as_object()
            .map(|p| p.keys().filter(|k| !optional.contains(&k.as_str())).collect())
            .unwrap_or_default();
        let schema = json!({"type": "object", "properties": properties, "required": required, "$defs": defs});
        let strict = transform(schema).unwrap_or_else(|e| panic!("{e}"));
        let got = json!({"properties": strict["properties"], "$defs": strict.get("$defs").cloned().unwrap_or(json!({}))});
        assert_eq!(got, expected);
    }

    #[test]
    fn optional_fields_become_nullable_in_the_right_form() {
        check(
            json!({
                "plain": {"type": "string", "description": "d"},
                "list": {"type": ["integer", "null"]},
                "choice": {"type": "string", "enum": ["a", "b"], "description": "pick"},
                "tag": {"const": "x"},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "target": {"$ref": "#/$defs/T"}
            }),
            &["plain", "list", "choice", "tag", "either", "target"],
            json!({"T": {"type": "string", "enum": ["t"]}}),
            json!({
                "properties": {
                    "plain": {"description": "d", "type": ["string", "null"]},
                    "list": {"type": ["integer", "null"]},
                    "choice": {"description": "pick", "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
                    "tag": {"anyOf": [{"const": "x"}, {"type": "null"}]},
                    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                    "target": {"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]}
                },
                "$defs": {"T": {"type": "string", "enum": ["t"]}}
            }),
        );
    }

    #[test]
    fn documented_references_are_inlined_or_wrapped_when_recursive() {
        check(
            json!({
                "home": {"$ref": "#/$defs/Address", "description": "Home", "default": {"street": "x"}},
                "me": {"$ref": "#", "description": "Myself"}
            }),
            &[],
            json!({
                "Address": {"description": "An address", "type": "object", "properties": {
                    "street": {"type": "string", "format": "uint8"},
                    "next": {"$ref": "#/$defs/Address", "title": "Next"}
                }, "required": ["street", "next"]}
            }),
            json!({
                "properties": {
                    "home": {"description": "Home", "type": "object", "properties": {
                        "street": {"type": "string"},
                        "next": {"title": "Next", "anyOf": [{"$ref": "#/$defs/Address"}]}
                    }, "required": ["street", "next"], "additionalProperties": false},
                    "me": {"description": "Myself", "anyOf": [{"$ref": "#"}]}
                },
                "$defs": {"Address": {"description": "An address", "type": "object", "properties": {
                    "street": {"type": "string"},
                    "next": {"title": "Next", "anyOf": [{"$ref": "#/$defs/Address"}]}
                }, "required": ["street", "next"], "additionalProperties": false}}
            }),
        );
    }

    #[test]
    fn unreferenced_definitions_are_dropped() {
        check(
            json!({"a": {"$ref": "#/$defs/A", "description": "only use, inlined"}}),
            &[],
            json!({"A": {"type": "boolean"}, "Unused": {"type": "string"}}),
            json!({"properties": {"a": {"description": "only use, inlined", "type": "boolean"}}, "$defs": {}}),
        );
    }

    #[test]
    fn union_keywords() {
        check(
            json!({"u": {"oneOf": [{"type": "string"}, {"type": "object"}]}}),
            &[],
            json!({}),
            json!({"properties": {"u": {"anyOf": [
                {"type": "string"},
                {"type": "object", "properties": {}, "required": [], "additionalProperties": false}
            ]}}, "$defs": {}}),
        );
        let both = json!({"type": "object", "properties": {"u": {"oneOf": [{"type": "string"}], "anyOf": [{"type": "string"}]}}});
        assert_eq!(transform(both).map_err(|e| e.path), Err("$.properties.u".to_owned()));
        let conflict = json!({"type": "object", "properties": {"u": {"type": "string", "allOf": [{"type": "integer"}]}}});
        assert_eq!(transform(conflict).map_err(|e| e.path), Err("$.properties.u".to_owned()));
    }

    #[test]
    fn the_output_order_does_not_depend_on_the_input_order() {
        let a = json!({"type": "object", "properties": {"n": {"maximum": 3, "type": "integer", "description": "n"}}, "required": ["n"], "additionalProperties": false});
        let b = json!({"additionalProperties": false, "required": ["n"], "properties": {"n": {"description": "n", "type": "integer", "maximum": 3}}, "type": "object"});
        let (a, b) = (transform(a).map(|v| v.to_string()), transform(b).map(|v| v.to_string()));
        assert_eq!(a, b);
    }
}
