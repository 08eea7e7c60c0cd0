//! OpenAI's size limits for strict schemas, checked on the converted schema.

use std::collections::HashSet;

use serde_json::Value;

use super::{
    StrictError,
    node::{child_path, def_name, index_path, is_object_node},
};

/// The size limits a strict schema must respect. [`StrictLimits::default`] holds the values of
/// OpenAI's current Structured Outputs guide; lower them for stricter providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictLimits {
    /// Levels of object nesting, the root object being level 1, counted after resolving `$ref`s
    /// (a reference back into an object being walked ends the count: recursion is allowed).
    pub max_depth: usize,
    /// Object properties in the whole schema, each definition counted once.
    pub max_properties: usize,
    /// `enum` values in the whole schema.
    pub max_enum_values: usize,
    /// Total characters of property names, definition names, string enum values and string
    /// `const` values.
    pub max_string_length: usize,
    /// A string enum with more values than this must respect
    /// [`StrictLimits::max_large_enum_length`].
    pub large_enum_values: usize,
    /// Total characters of the values of one large string enum.
    pub max_large_enum_length: usize,
}

impl Default for StrictLimits {
    fn default() -> Self {
        Self {
            max_depth: 10,
            max_properties: 5000,
            max_enum_values: 1000,
            max_string_length: 120_000,
            large_enum_values: 250,
            max_large_enum_length: 15_000,
        }
    }
}

impl StrictLimits {
    /// Checks a strict schema (the output of the strict transform) against these limits.
    pub fn check(&self, schema: &Value) -> Result<(), StrictError> {
        let mut totals = Totals::default();
        self.sizes(schema, "$", &mut totals)?;
        let mut depth = Depth {
            root: schema,
            limit: self.max_depth,
            seen: HashSet::new(),
            stack: vec![schema],
        };
        depth.walk(schema, "$", 0)
    }

    /// Counts properties, enum values and string lengths over the schema as written.
    fn sizes(&self, node: &Value, path: &str, totals: &mut Totals) -> Result<(), StrictError> {
        let Value::Object(map) = node else { return Ok(()) };
        if let Some(Value::Object(properties)) = map.get("properties") {
            totals.properties += properties.len();
            let here = format!("{path}.properties");
            if totals.properties > self.max_properties {
                return Err(too_big(
                    &here,
                    "object properties",
                    self.max_properties,
                    "split the tool",
                ));
            }
            totals.strings += properties.keys().map(|k| k.chars().count()).sum::<usize>();
            self.check_strings(totals, &here)?;
            for (key, property) in properties {
                self.sizes(property, &child_path(path, "properties", key), totals)?;
            }
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            let here = format!("{path}.enum");
            totals.enum_values += values.len();
            if totals.enum_values > self.max_enum_values {
                let fix = "use fewer enum values, or a plain string checked by the tool";
                return Err(too_big(&here, "enum values", self.max_enum_values, fix));
            }
            let length: usize =
                values.iter().filter_map(Value::as_str).map(|v| v.chars().count()).sum();
            let all_strings = values.iter().all(Value::is_string);
            if all_strings
                && values.len() > self.large_enum_values
                && length > self.max_large_enum_length
            {
                return Err(StrictError::new(
                    &here,
                    format!(
                        "a string enum with {} values (more than {}) has {length} characters, \
                         more than the limit of {}",
                        values.len(),
                        self.large_enum_values,
                        self.max_large_enum_length
                    ),
                    "shorten the values, or use a plain string checked by the tool",
                ));
            }
            totals.strings += length;
            self.check_strings(totals, &here)?;
        }
        if let Some(Value::String(value)) = map.get("const") {
            totals.strings += value.chars().count();
            self.check_strings(totals, &format!("{path}.const"))?;
        }
        if let Some(items) = map.get("items") {
            self.sizes(items, &format!("{path}.items"), totals)?;
        }
        if let Some(Value::Array(branches)) = map.get("anyOf") {
            for (i, branch) in branches.iter().enumerate() {
                self.sizes(branch, &index_path(path, "anyOf", i), totals)?;
            }
        }
        if let Some(Value::Object(defs)) = map.get("$defs") {
            for (name, def) in defs {
                let here = child_path(path, "$defs", name);
                totals.strings += name.chars().count();
                self.check_strings(totals, &here)?;
                self.sizes(def, &here, totals)?;
            }
        }
        Ok(())
    }

    fn check_strings(&self, totals: &Totals, path: &str) -> Result<(), StrictError> {
        if totals.strings > self.max_string_length {
            let what = "characters of property names, definition names and enum/const values";
            return Err(too_big(
                path,
                what,
                self.max_string_length,
                "use shorter names or fewer values",
            ));
        }
        Ok(())
    }
}

#[derive(Default)]
struct Totals {
    properties: usize,
    enum_values: usize,
    strings: usize,
}

/// Walks object nesting through `$ref`s. Each (definition, level) pair is walked once, which
/// keeps the walk linear even when many properties refer to the same large type.
struct Depth<'a> {
    root: &'a Value,
    limit: usize,
    seen: HashSet<(*const Value, usize)>,
    /// Definitions (and the root) on the current path; a reference back to one is recursion.
    stack: Vec<&'a Value>,
}

impl<'a> Depth<'a> {
    fn walk(&mut self, node: &'a Value, path: &str, level: usize) -> Result<(), StrictError> {
        let Value::Object(map) = node else { return Ok(()) };
        let level = if is_object_node(map) { level + 1 } else { level };
        if level > self.limit {
            return Err(StrictError::new(
                path,
                format!(
                    "objects are nested {level} levels deep, more than the limit of {}",
                    self.limit
                ),
                "flatten the input type: move fields of inner structs up a level",
            ));
        }
        if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| self.target(r)) {
            if self.stack.iter().any(|t| std::ptr::eq(*t, target))
                || !self.seen.insert((std::ptr::from_ref(target), level))
            {
                return Ok(());
            }
            self.stack.push(target);
            // The walk goes on as if the reference were inlined, so the path stays readable.
            let result = self.walk(target, path, level);
            self.stack.pop();
            return result;
        }
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (key, property) in properties {
                self.walk(property, &child_path(path, "properties", key), level)?;
            }
        }
        if let Some(items) = map.get("items") {
            self.walk(items, &format!("{path}.items"), level)?;
        }
        if let Some(Value::Array(branches)) = map.get("anyOf") {
            for (i, branch) in branches.iter().enumerate() {
                self.walk(branch, &index_path(path, "anyOf", i), level)?;
            }
        }
        Ok(())
    }

    fn target(&self, reference: &str) -> Option<&'a Value> {
        if reference == "#" {
            return Some(self.root);
        }
        let name = def_name(reference)?;
        self.root.get("$defs").and_then(|defs| defs.get(&name))
    }
}

fn too_big(path: &str, what: &str, limit: usize, fix: &str) -> StrictError {
    StrictError::new(path, format!("the schema has more than {limit} {what}"), fix)
}
