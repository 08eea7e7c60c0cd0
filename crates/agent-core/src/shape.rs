//! Tool and call shapes: how a tool is offered to a model (a JSON function, freeform text that
//! matches a grammar, or a provider's built-in tool), and which of those shapes a call came in.
//!
//! One tool has one input type whatever its shape. A tool that can take raw text names the one
//! string argument of its JSON Schema that holds it ([`TextInput::argument`]); the executor runs a
//! raw-text call as the JSON call `{"<argument>": "<text>"}`, so validation, hooks, permission
//! rules and approvals see the same input for every shape.

use serde::{Deserialize, Serialize};

/// How a tool is offered to the model. An adapter that cannot send a shape sends the function
/// shape instead (Chat Completions has no built-in tools; a server that refuses custom tools),
/// which is why every tool keeps its JSON Schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolShape {
    /// A function tool with a JSON Schema (`{"type": "function", …}`), the default.
    #[default]
    Function,
    /// A custom tool (`{"type": "custom", "format": …}`): the model writes raw text that matches
    /// the tool's [`TextInput::format`]. Needs [`crate::ToolSpec::text_input`].
    Freeform,
    /// A provider's built-in tool type, which the provider describes to the model itself.
    Builtin(BuiltinTool),
}

impl ToolShape {
    /// Whether this is the function shape (the default, left out of serialized specs).
    pub fn is_function(&self) -> bool {
        *self == ToolShape::Function
    }

    /// The shape's name as settings and `agent tools list` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolShape::Function => "function",
            ToolShape::Freeform => "freeform",
            ToolShape::Builtin(BuiltinTool::ApplyPatch) => "builtin:apply_patch",
            ToolShape::Builtin(BuiltinTool::Shell) => "builtin:shell",
        }
    }
}

/// A built-in tool type of the Responses API that a local tool answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinTool {
    /// `{"type": "apply_patch"}`: the model sends `apply_patch_call` file operations.
    ApplyPatch,
    /// `{"type": "shell"}`: the model sends `shell_call` command lists.
    Shell,
}

/// What raw text a tool takes, for a tool that can be called with text instead of JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TextInput {
    /// The string argument of the tool's JSON Schema that holds the whole text (`patch` for
    /// `apply_patch`).
    pub argument: String,
    /// What the text must look like, sent with the freeform shape.
    pub format: TextFormat,
}

impl TextInput {
    /// Text without a grammar in `argument`.
    pub fn text(argument: &str) -> Self {
        Self { argument: argument.to_owned(), format: TextFormat::Text }
    }

    /// Text in `argument` that must match `definition`, written in `syntax`.
    pub fn grammar(argument: &str, syntax: GrammarSyntax, definition: &str) -> Self {
        let grammar = Grammar { syntax, definition: definition.to_owned() };
        Self { argument: argument.to_owned(), format: TextFormat::Grammar(grammar) }
    }
}

/// The format of a custom tool's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    /// Any text.
    Text,
    /// Text the model's sampling is constrained to.
    Grammar(Grammar),
}

/// A grammar the model's text is constrained to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Grammar {
    /// The grammar language.
    pub syntax: GrammarSyntax,
    /// The grammar itself.
    pub definition: String,
}

/// The language of a [`Grammar`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrammarSyntax {
    /// A Lark context-free grammar; the tool parses the text itself.
    Lark,
    /// A regular expression (the `regex` crate's syntax) that the whole text must match; the
    /// executor checks it before the tool runs.
    Regex,
}

/// Which shape a tool call came in, which decides what its `arguments` hold and which item
/// type answers it on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallShape {
    /// A function call: `arguments` is the model's JSON text.
    #[default]
    Function,
    /// A custom tool call: `arguments` is the raw text the model wrote.
    Custom,
    /// A Responses `apply_patch_call`: `arguments` is the patch text its file operation
    /// amounts to (`*** Begin Patch` … `*** End Patch`).
    ApplyPatch,
    /// A Responses `shell_call`: `arguments` is the JSON of its action (`commands`,
    /// `timeout_ms`, `max_output_length`).
    Shell,
}

impl CallShape {
    /// Whether this is the function shape (the default, left out of serialized calls).
    pub fn is_function(&self) -> bool {
        *self == CallShape::Function
    }

    /// Whether `arguments` holds raw text rather than JSON.
    pub fn is_text(self) -> bool {
        matches!(self, CallShape::Custom | CallShape::ApplyPatch)
    }
}

/// A tool offered in another shape than its own spec says: the profile's choice of how a model
/// gets a tool (`apply_patch` as a function, freeform text, or the Responses built-in), made
/// without the tool knowing.
pub struct Reshaped {
    inner: std::sync::Arc<dyn crate::Tool>,
    spec: crate::ToolSpec,
}

impl Reshaped {
    /// `tool`, offered as `shape`. A freeform shape needs the tool's
    /// [`crate::ToolSpec::text_input`]; without it the tool stays a function.
    pub fn new(tool: std::sync::Arc<dyn crate::Tool>, shape: ToolShape) -> Self {
        Self::with_default_text(tool, shape, None)
    }

    /// `tool`, offered as `shape`, taking raw text as `text_input` says when the tool itself
    /// declares no text input (a front end that knows the tool's one string argument).
    pub fn with_default_text(
        tool: std::sync::Arc<dyn crate::Tool>,
        shape: ToolShape,
        text_input: Option<TextInput>,
    ) -> Self {
        let mut spec = tool.spec().clone();
        if spec.text_input.is_none() {
            spec.text_input = text_input;
        }
        spec.shape = match shape {
            ToolShape::Freeform if spec.text_input.is_none() => ToolShape::Function,
            shape => shape,
        };
        Self { inner: tool, spec }
    }
}

impl crate::Tool for Reshaped {
    fn spec(&self) -> &crate::ToolSpec {
        &self.spec
    }

    fn prepare(&self, arguments: &str) -> Result<crate::PreparedCall, crate::schema::ArgsError> {
        self.inner.prepare(arguments)
    }

    fn run<'a>(
        &'a self,
        call: crate::PreparedCall,
        ctx: crate::ToolContext,
    ) -> crate::BoxFuture<'a, Result<crate::ToolOutput, crate::ToolError>> {
        self.inner.run(call, ctx)
    }
}

impl std::fmt::Debug for Reshaped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reshaped")
            .field("name", &self.spec.name)
            .field("shape", &self.spec.shape)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde::Deserialize;

    use super::*;
    use crate::{Effects, Tool, ToolContext, ToolError, ToolOutput, Typed, TypedTool};

    #[derive(Deserialize, schemars::JsonSchema)]
    struct Input {
        /// The text.
        text: String,
    }

    struct Echo;

    impl TypedTool for Echo {
        type Input = Input;
        const NAME: &'static str = "echo";
        fn description(&self) -> String {
            "Echoes.".to_owned()
        }
        fn effects(&self) -> Effects {
            Effects::READ_ONLY
        }
        async fn run(&self, input: Input, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(input.text))
        }
    }

    #[track_caller]
    fn check(shape: ToolShape, text: Option<TextInput>, expect: ToolShape) {
        let tool: Arc<dyn Tool> = Arc::new(Typed::new(Echo).unwrap());
        let reshaped = Reshaped::with_default_text(tool, shape, text.clone());
        assert_eq!(reshaped.spec().shape, expect);
        assert_eq!(reshaped.spec().text_input, text);
    }

    /// A tool becomes freeform only with a text input to put the text in.
    #[test]
    fn freeform_needs_a_text_input() {
        check(ToolShape::Freeform, None, ToolShape::Function);
        check(ToolShape::Freeform, Some(TextInput::text("text")), ToolShape::Freeform);
        let shell = ToolShape::Builtin(BuiltinTool::Shell);
        check(shell, None, shell);
    }
}
