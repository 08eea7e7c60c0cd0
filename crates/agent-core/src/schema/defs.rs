//! Which `$defs` a strict schema still uses once documented references have been inlined.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{
    StrictError,
    node::{child_path, def_name},
};

/// The definitions reachable from the root; unreachable ones (all of whose uses were inlined)
/// are dropped because they still count toward OpenAI's size limits. Also refuses references
/// that do not name a definition, since the output no longer has the shape they pointed into.
pub(crate) fn used_defs<'a>(
    root: &Map<String, Value>,
    defs: &'a Map<String, Value>,
) -> Result<HashSet<&'a str>, StrictError> {
    let mut used = HashSet::new();
    let mut stack: Vec<(&Value, String)> =
        root.iter().map(|(k, v)| (v, child_path("$", "", k))).collect();
    while let Some((value, path)) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str)
                    && reference != "#"
                {
                    let name = def_name(reference).and_then(|n| defs.get_key_value(n.as_str()));
                    let Some((name, def)) = name else {
                        return Err(StrictError::new(
                            &path,
                            format!("`$ref: {reference}` does not name a definition in `$defs`"),
                            "refer to `#` or `#/$defs/Name` only",
                        ));
                    };
                    if used.insert(name.as_str()) {
                        stack.push((def, child_path("$", "$defs", name)));
                    }
                }
                stack.extend(map.iter().map(|(k, v)| (v, child_path(&path, "", k))));
            }
            Value::Array(items) => {
                stack.extend(items.iter().enumerate().map(|(i, v)| (v, format!("{path}[{i}]"))));
            }
            _ => {}
        }
    }
    Ok(used)
}
