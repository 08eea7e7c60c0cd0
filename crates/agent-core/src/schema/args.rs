//! Argument validation (docs/schema.md, "The validation pipeline"): read the text, drop the nulls that mean
//! "default", validate against the original schema with every object closed, and let serde
//! have the final word.

use std::{fmt, sync::Arc};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    ArgsError, InvalidSchema, cache::TypeCache, json::parse_object, nulls::NullPlan,
    plain_schema_arc, report,
};

/// A compiled validator for one input type or one JSON Schema; build once, use for every call.
///
/// The schema it checks is the original one (not the strict one), so every constraint schemars
/// wrote is enforced, including those strict mode cannot carry (`minLength`, `maxLength`,
/// `uniqueItems`, formats such as `uri`); and every object in it is closed, so unknown keys are
/// refused at any depth even where serde would ignore them.
pub struct ArgsValidator {
    schema: Value,
    validator: Result<jsonschema::Validator, InvalidSchema>,
    nulls: NullPlan,
}

impl fmt::Debug for ArgsValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgsValidator").field("schema", &self.schema).finish_non_exhaustive()
    }
}

impl ArgsValidator {
    /// The validator of `T`, compiled once per type.
    ///
    /// A schema that does not compile (an invalid `#[schemars(regex)]`, say) does not panic: the
    /// validator then refuses every call with the reason, and [`ArgsValidator::schema_error`]
    /// says why, so a registry can refuse the tool up front.
    pub fn for_type<T: JsonSchema + 'static>() -> Arc<ArgsValidator> {
        static CACHE: TypeCache<Arc<ArgsValidator>> = TypeCache::new();
        CACHE.get_or_insert_with::<T>(|| Arc::new(Self::build(&plain_schema_arc::<T>())))
    }

    /// A validator for a tool defined only by a JSON Schema (MCP, configuration).
    pub fn from_schema(schema: &Value) -> Result<ArgsValidator, InvalidSchema> {
        let validator = Self::build(schema);
        match validator.validator {
            Err(err) => Err(err),
            Ok(_) => Ok(validator),
        }
    }

    fn build(schema: &Value) -> ArgsValidator {
        let mut schema = schema.clone();
        let declared = schema.as_object_mut().and_then(|map| map.remove("$schema"));
        // Schemas from MCP servers often declare an older draft; honour it, since `items` and
        // `dependencies` mean different things there. Everything else is read as 2020-12.
        let draft = match declared.as_ref().and_then(Value::as_str) {
            Some(uri) if uri.contains("draft-04") => jsonschema::Draft::Draft4,
            Some(uri) if uri.contains("draft-06") => jsonschema::Draft::Draft6,
            Some(uri) if uri.contains("draft-07") => jsonschema::Draft::Draft7,
            Some(uri) if uri.contains("2019-09") => jsonschema::Draft::Draft201909,
            _ => jsonschema::Draft::Draft202012,
        };
        close(&mut schema, false);
        let validator = jsonschema::options()
            .with_draft(draft)
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|err| InvalidSchema { message: err.to_string() });
        let nulls = NullPlan::build(&schema);
        ArgsValidator { schema, validator, nulls }
    }

    /// The schema this validator checks: the given one, with `$schema` removed and every
    /// object closed.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Why the schema did not compile, if it did not.
    pub fn schema_error(&self) -> Option<&InvalidSchema> {
        self.validator.as_ref().err()
    }

    /// Parses, validates and deserializes `json`.
    ///
    /// The text must be one JSON object with no repeated key. A `null` for an optional field
    /// whose schema does not take null (a `#[serde(default)]` field) means "use the default"
    /// and is removed. What is left must fit the schema, and then `T` (serde is the final
    /// arbiter: it refuses `3.0` for an integer and out-of-range numbers for `u8`).
    pub fn parse<T: DeserializeOwned>(&self, json: &str) -> Result<T, ArgsError> {
        let value = self.parse_value(json)?;
        // Deserializing straight from the value moves its strings into `T` instead of copying.
        serde_json::from_value(value).map_err(|_| self.serde_error::<T>(json))
    }

    /// Parses and validates `json` as a plain JSON value (for schema-only tools); nulls that
    /// mean "default" are removed from the result.
    pub fn parse_value(&self, json: &str) -> Result<Value, ArgsError> {
        let mut value = Value::Object(parse_object(json)?);
        let validator = match &self.validator {
            Ok(validator) => validator,
            Err(err) => {
                return Err(ArgsError::Invalid {
                    path: "$".to_owned(),
                    message: format!(
                        "the tool's input schema is broken ({err}); this tool cannot be called"
                    ),
                });
            }
        };
        self.nulls.apply(&mut value);
        if !validator.is_valid(&value) {
            return Err(report::invalid(&self.schema, validator.iter_errors(&value)));
        }
        Ok(value)
    }

    /// Reruns the failed deserialization with path tracking to say where serde gave up. This
    /// costs a second parse, but only on the error path.
    fn serde_error<T: DeserializeOwned>(&self, json: &str) -> ArgsError {
        let mut value = match parse_object(json) {
            Ok(map) => Value::Object(map),
            Err(err) => return err,
        };
        self.nulls.apply(&mut value);
        match serde_path_to_error::deserialize::<_, T>(value) {
            Ok(_) => ArgsError::Invalid {
                path: "$".to_owned(),
                message: "the arguments do not fit the input type".to_owned(),
            },
            Err(err) => {
                let mut path = String::from("$");
                for segment in err.path().iter() {
                    match segment {
                        serde_path_to_error::Segment::Seq { index } => {
                            path.push_str(&format!("[{index}]"))
                        }
                        serde_path_to_error::Segment::Map { key } => {
                            super::node::push_key(&mut path, key)
                        }
                        serde_path_to_error::Segment::Enum { variant } => {
                            super::node::push_key(&mut path, variant)
                        }
                        serde_path_to_error::Segment::Unknown => {}
                    }
                }
                ArgsError::Invalid { path, message: json_wording(&err.into_inner().to_string()) }
            }
        }
    }
}

/// serde names Rust types (`invalid type: floating point `3.0`, expected u8`); the model reads JSON
/// and the schema's words, so a numeric type becomes "an integer" or "a number", as in every other
/// message (`expected an integer, got 3.0`). Other messages pass unchanged.
fn json_wording(message: &str) -> String {
    let Some((head, expected)) = message.rsplit_once(", expected ") else {
        return message.to_owned();
    };
    // The range matters when the type was right but the value did not fit (`invalid value`).
    let (noun, range) = match expected {
        "u8" => ("an integer", Some((0, i128::from(u8::MAX)))),
        "u16" => ("an integer", Some((0, i128::from(u16::MAX)))),
        "u32" => ("an integer", Some((0, i128::from(u32::MAX)))),
        "u64" | "usize" => ("an integer", Some((0, i128::from(u64::MAX)))),
        "i8" => ("an integer", Some((i128::from(i8::MIN), i128::from(i8::MAX)))),
        "i16" => ("an integer", Some((i128::from(i16::MIN), i128::from(i16::MAX)))),
        "i32" => ("an integer", Some((i128::from(i32::MIN), i128::from(i32::MAX)))),
        "i64" | "isize" => ("an integer", Some((i128::from(i64::MIN), i128::from(i64::MAX)))),
        "u128" | "i128" => ("an integer", None),
        "f32" | "f64" => ("a number", None),
        _ => return message.to_owned(),
    };
    // `floating point `3.0`` → `3.0`: the JSON text, as the schema messages show it.
    let shown = |got: &str| got.split('`').nth(1).unwrap_or(got).to_owned();
    if let Some(got) = head.strip_prefix("invalid type: ") {
        return format!("expected {noun}, got {}", shown(got));
    }
    match (head.strip_prefix("invalid value: "), range) {
        (Some(got), Some((min, max))) => {
            format!("expected {noun} from {min} to {max}, got {}", shown(got))
        }
        (Some(got), None) => format!("expected {noun}, got {}", shown(got)),
        (None, _) => format!("{head}, expected {noun}"),
    }
}

/// Closes every object of a schema so that unknown keys are refused: `additionalProperties:
/// false` on plain objects, and `unevaluatedProperties: false` on objects that combine
/// `properties` with `anyOf`/`oneOf`/`allOf`/`$ref` (a flattened enum), whose keys are spread
/// over several subschemas. The branches of such a combination are left open, since their
/// parent already closes them; objects nested inside them are closed as usual. Maps
/// (`additionalProperties` with a schema) stay maps.
fn close(node: &mut Value, open: bool) {
    let Value::Object(map) = node else { return };
    let combined = ["anyOf", "oneOf", "allOf", "$ref"].iter().any(|k| map.contains_key(*k));
    let object = super::node::is_object_node(map);
    let unset =
        !map.contains_key("additionalProperties") && !map.contains_key("unevaluatedProperties");
    let closes_branches = object && combined;
    if object && unset && !open {
        let keyword = if combined { "unevaluatedProperties" } else { "additionalProperties" };
        map.insert(keyword.to_owned(), Value::Bool(false));
    }
    for (key, child) in map.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" | "dependentSchemas" => {
                if let Value::Object(children) = child {
                    children.values_mut().for_each(|c| close(c, false));
                }
            }
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(branches) = child {
                    branches.iter_mut().for_each(|b| close(b, closes_branches || open));
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "unevaluatedItems"
            | "propertyNames" => close(child, false),
            "prefixItems" => {
                if let Value::Array(items) = child {
                    items.iter_mut().for_each(|c| close(c, false));
                }
            }
            _ => {}
        }
    }
}
