//! `SchemaTool`: a tool defined only by a JSON Schema and an async handler (MCP, configuration).

use std::{future::Future, sync::Arc};

use agent_core::{
    BoxFuture, Effects, PreparedCall, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
    schema::{ArgsError, ArgsValidator},
};
use serde_json::Value;

use crate::error::{Error, Result};

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool whose arguments are a JSON value checked against a JSON Schema, for tools that have no
/// Rust input type. It is sent with `strict: false`: schemas from elsewhere rarely satisfy
/// OpenAI's strict rules, and the validator enforces them at call time anyway.
pub struct SchemaTool {
    spec: ToolSpec,
    validator: ArgsValidator,
    handler: Arc<Handler>,
}

impl SchemaTool {
    /// A tool called `name` whose arguments must fit `schema`; `handler` receives the validated
    /// arguments. Fails when the schema does not compile.
    pub fn new<F, Fut>(
        name: &str,
        description: &str,
        schema: Value,
        effects: Effects,
        handler: F,
    ) -> Result<Self>
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let validator = match ArgsValidator::from_schema(&schema) {
            Ok(validator) => validator,
            Err(source) => return Err(Error::Schema { tool: name.to_owned(), source }),
        };
        let spec = ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters: schema,
            strict: false,
            aliases: Vec::new(),
            effects,
            rule_name: ToolSpec::default_rule_name(name),
            text_input: None,
            shape: agent_core::ToolShape::Function,
        };
        let handler: Arc<Handler> = Arc::new(move |args, ctx| Box::pin(handler(args, ctx)));
        Ok(Self { spec, validator, handler })
    }

    /// The same tool, also answering to `aliases`.
    pub fn with_aliases(mut self, aliases: &[&str]) -> Self {
        self.spec.aliases = aliases.iter().map(|alias| (*alias).to_owned()).collect();
        self
    }

    /// The same tool under another permission-rule name.
    pub fn with_rule_name(mut self, rule_name: &str) -> Self {
        rule_name.clone_into(&mut self.spec.rule_name);
        self
    }
}

impl Tool for SchemaTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, arguments: &str) -> Result<PreparedCall, ArgsError> {
        let value = self.validator.parse_value(arguments)?;
        Ok(PreparedCall::new(value, Vec::new()))
    }

    fn run<'a>(
        &'a self,
        call: PreparedCall,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match call.into_input::<Value>() {
            Some(args) => (self.handler)(args, ctx),
            None => Box::pin(async {
                Err(ToolError::new(
                    agent_core::ToolErrorKind::ToolError,
                    "internal error: the call was prepared for another tool",
                ))
            }),
        }
    }
}

impl std::fmt::Debug for SchemaTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaTool").field("name", &self.spec.name).finish_non_exhaustive()
    }
}
