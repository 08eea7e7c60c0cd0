//! JSON Schemas for tool inputs: OpenAI strict conversion and argument validation.
//!
//! One Rust type gives three things that can never drift apart: the schema schemars generates, the
//! strict schema derived from it by [`make_strict`], and the validation [`parse_args`] applies to
//! the model's arguments before serde has the final word.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a schema has no OpenAI strict form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schema has no strict form at `{path}`: {reason}; {fix}")]
pub struct StrictError {
    /// JSON path of the offending node, such as `$.properties.tags`.
    pub path: String,
    /// What is wrong.
    pub reason: String,
    /// How to change the Rust type (or the schema) so that it converts.
    pub fix: String,
}

/// Why an argument string was refused. The message names the JSON path and what was expected,
/// so a model can fix its call in one retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// The text is not JSON, or not a JSON object.
    #[error("arguments are not a valid JSON object: {message}")]
    Json {
        /// What the parser reported, with line and column.
        message: String,
    },
    /// The JSON does not fit the schema.
    #[error("invalid arguments at `{path}`: {message}")]
    Invalid {
        /// JSON path of the offending value, such as `$.days` or `$.items[2].name`.
        path: String,
        /// What was wrong and what was expected.
        message: String,
    },
}

impl ArgsError {
    /// The JSON path of the error (`$` for errors about the whole argument text).
    pub fn path(&self) -> &str {
        match self {
            ArgsError::Json { .. } => "$",
            ArgsError::Invalid { path, .. } => path,
        }
    }
}

/// A JSON Schema that cannot be compiled into a validator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {message}")]
pub struct InvalidSchema {
    /// What the schema compiler reported.
    pub message: String,
}

/// Converts a JSON Schema to OpenAI's strict form, or says why it cannot.
pub fn make_strict(schema: Value) -> Result<Value, StrictError> {
    let mut schema = schema;
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    Ok(schema)
}

/// The strict schema of `T`, generated once per type.
pub fn strict_schema_for<T: JsonSchema>() -> Result<Value, StrictError> {
    make_strict(plain_schema_for::<T>())
}

/// The schema of `T` as schemars generates it (draft 2020-12, `$schema` removed), for tools sent
/// with `strict: false`.
pub fn plain_schema_for<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    schema
}

/// Parses and validates tool arguments for `T`.
pub fn parse_args<T: DeserializeOwned + JsonSchema>(json: &str) -> Result<T, ArgsError> {
    ArgsValidator::for_type::<T>().parse(json)
}

/// A compiled validator for one input type or one JSON Schema; build once, use for every call.
#[derive(Debug)]
pub struct ArgsValidator {
    _schema: Value,
}

impl ArgsValidator {
    /// The validator of `T`, compiled once per type.
    pub fn for_type<T: JsonSchema>() -> Arc<ArgsValidator> {
        Arc::new(ArgsValidator { _schema: plain_schema_for::<T>() })
    }

    /// A validator for a tool defined only by a JSON Schema (MCP, configuration).
    pub fn from_schema(schema: &Value) -> Result<ArgsValidator, InvalidSchema> {
        Ok(ArgsValidator { _schema: schema.clone() })
    }

    /// Parses, validates and deserializes `json`.
    pub fn parse<T: DeserializeOwned>(&self, json: &str) -> Result<T, ArgsError> {
        serde_json::from_str(json).map_err(|err| ArgsError::Json { message: err.to_string() })
    }

    /// Parses and validates `json` as a plain JSON value (for schema-only tools).
    pub fn parse_value(&self, json: &str) -> Result<Value, ArgsError> {
        self.parse(json)
    }
}
