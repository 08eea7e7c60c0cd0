//! Typed tools: one Rust input type gives the schema, the strict schema and the validation.

use std::{
    future::Future,
    sync::{Arc, OnceLock},
};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{
    context::ToolContext,
    error::{ToolError, ToolErrorKind},
    schema::{self, ArgsError, ArgsValidator, StrictError},
    shape::{TextInput, ToolShape},
    tool::{Access, BoxFuture, Effects, PreparedCall, Tool, ToolOutput, ToolSpec},
};

/// A tool defined by its input type. Wrap it in [`Typed`] to register it.
///
/// The input type is the single source of truth: its schemars schema becomes the model-facing
/// schema (made strict unless [`TypedTool::STRICT`] is false), and arguments are validated against
/// that same schema before serde deserializes them.
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments, as the model sends them.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;

    /// The name the model calls.
    const NAME: &'static str;

    /// Whether to send the schema with `strict: true`. A type with no strict form then fails at
    /// [`Typed::new`]; set this to false to send the plain schema instead, by explicit choice.
    const STRICT: bool = true;

    /// What the tool does and when to use it, written for the model.
    fn description(&self) -> String;

    /// What running the tool may do.
    fn effects(&self) -> Effects;

    /// Other names the model may use for this tool.
    fn aliases(&self) -> Vec<String> {
        Vec::new()
    }

    /// The name permission rules use for this tool.
    fn rule_name(&self) -> String {
        ToolSpec::default_rule_name(Self::NAME)
    }

    /// The raw text the tool also takes instead of JSON (the string argument that holds it, and
    /// the grammar it follows), for the freeform shape; `None`, the default, for JSON only.
    fn text_input(&self) -> Option<TextInput> {
        None
    }

    /// What a call with this input will touch, for the permission policy.
    fn access(&self, _input: &Self::Input) -> Vec<Access> {
        Vec::new()
    }

    /// Runs the tool. Failures are values the model reads.
    fn run(
        &self,
        input: Self::Input,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// Adapts a [`TypedTool`] to the object-safe [`Tool`] trait.
pub struct Typed<T: TypedTool> {
    tool: T,
    spec: ToolSpec,
    /// Compiled on the tool's first call, not when it is registered: a session registers every
    /// tool before its first request and calls few of them, and compiling a JSON Schema validator
    /// is the largest part of start-up's own work (`startup.first_request`).
    validator: OnceLock<Arc<ArgsValidator>>,
}

impl<T: TypedTool> Typed<T> {
    /// Builds the spec from the tool's input type. Fails when [`TypedTool::STRICT`] is set and the
    /// type has no strict form; the error names the JSON path and the fix.
    pub fn new(tool: T) -> Result<Self, StrictError> {
        let (mut parameters, strict) = if T::STRICT {
            (schema::strict_schema_for::<T::Input>()?, true)
        } else {
            (schema::plain_schema_for::<T::Input>(), false)
        };
        // The root title is the Rust type name and the root description the input type's doc
        // comment; the tool's own description already says what the model needs, so both would
        // only cost tokens on every request.
        if let Some(root) = parameters.as_object_mut() {
            root.shift_remove("title");
            root.shift_remove("description");
        }
        let spec = ToolSpec {
            name: T::NAME.to_owned(),
            description: tool.description(),
            parameters,
            strict,
            aliases: tool.aliases(),
            effects: tool.effects(),
            rule_name: tool.rule_name(),
            text_input: tool.text_input(),
            shape: ToolShape::Function,
        };
        Ok(Self { tool, spec, validator: OnceLock::new() })
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }

    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, arguments: &str) -> Result<PreparedCall, ArgsError> {
        let validator = self.validator.get_or_init(ArgsValidator::for_type::<T::Input>);
        let input: T::Input = validator.parse(arguments)?;
        let access = self.tool.access(&input);
        Ok(PreparedCall::new(input, access))
    }

    fn run<'a>(
        &'a self,
        call: PreparedCall,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(input) = call.into_input::<T::Input>() else {
                // Only reachable if a caller mixes up tools; answer the model instead of panicking.
                return Err(ToolError::new(
                    ToolErrorKind::ToolError,
                    format!(
                        "internal error: the call was prepared for another tool than {}",
                        T::NAME
                    ),
                ));
            };
            self.tool.run(input, ctx).await
        })
    }
}
