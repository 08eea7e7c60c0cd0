//! JSON Schemas for tool inputs: OpenAI strict conversion and argument validation.
//!
//! One Rust type gives three things that can never drift apart: the schema schemars generates, the
//! strict schema derived from it by [`make_strict`], and the validation [`parse_args`] applies to
//! the model's arguments before serde has the final word.
//!
//! Schemas and validators are built once per type and cached for the life of the process, so a
//! registry can ask for them freely; the hot path ([`ArgsValidator::parse`]) takes no lock.

mod args;
mod cache;
mod defs;
mod json;
mod limits;
mod node;
mod nulls;
mod report;
mod strict;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use self::cache::TypeCache;
pub use self::{args::ArgsValidator, limits::StrictLimits};

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

impl StrictError {
    pub(crate) fn new(path: &str, reason: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { path: path.to_owned(), reason: reason.into(), fix: fix.into() }
    }
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

/// Converts a JSON Schema to OpenAI's strict form, or says why it cannot, checking the current
/// OpenAI limits ([`StrictLimits::default`]).
pub fn make_strict(schema: Value) -> Result<Value, StrictError> {
    make_strict_with(schema, &StrictLimits::default())
}

/// Converts a JSON Schema to OpenAI's strict form and checks it against `limits`.
pub fn make_strict_with(schema: Value, limits: &StrictLimits) -> Result<Value, StrictError> {
    let strict = strict::transform(schema)?;
    limits.check(&strict)?;
    Ok(strict)
}

/// The strict schema of `T`, generated once per type.
pub fn strict_schema_for<T: JsonSchema + 'static>() -> Result<Value, StrictError> {
    strict_schema_arc::<T>().as_ref().clone()
}

/// The strict schema of `T` as a shared, cached value (no copy).
pub fn strict_schema_arc<T: JsonSchema + 'static>() -> Arc<Result<Value, StrictError>> {
    static CACHE: TypeCache<Arc<Result<Value, StrictError>>> = TypeCache::new();
    CACHE
        .get_or_insert_with::<T>(|| Arc::new(make_strict(plain_schema_arc::<T>().as_ref().clone())))
}

/// The schema of `T` as schemars generates it (draft 2020-12, `$schema` removed), for tools sent
/// with `strict: false`. Generated once per type.
pub fn plain_schema_for<T: JsonSchema + 'static>() -> Value {
    plain_schema_arc::<T>().as_ref().clone()
}

/// The plain schema of `T` as a shared, cached value (no copy).
pub fn plain_schema_arc<T: JsonSchema + 'static>() -> Arc<Value> {
    static CACHE: TypeCache<Arc<Value>> = TypeCache::new();
    CACHE.get_or_insert_with::<T>(|| {
        let mut schema = schemars::schema_for!(T).to_value();
        if let Some(map) = schema.as_object_mut() {
            map.remove("$schema");
        }
        Arc::new(schema)
    })
}

/// Parses and validates tool arguments for `T` (see [`ArgsValidator::parse`]).
///
/// The validator is looked up in a per-type cache on every call; a dispatcher that validates
/// many calls should hold the [`ArgsValidator::for_type`] handle instead, as [`crate::Typed`] does.
pub fn parse_args<T: DeserializeOwned + JsonSchema + 'static>(json: &str) -> Result<T, ArgsError> {
    ArgsValidator::for_type::<T>().parse(json)
}
