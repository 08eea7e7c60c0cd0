//! Raw-text calls: a custom tool call (or a built-in's call whose input the adapter turned into
//! text) runs as the JSON call `{"<argument>": "<text>"}` of the tool's
//! [`TextInput`](agent_core::TextInput), so hooks, validation, permission rules and approvals
//! see one input whatever shape the model used. A `regex` grammar is checked here first: the
//! model's sampler is meant to follow it, and text that does not match never reaches the tool.

use std::borrow::Cow;

use agent_core::{GrammarSyntax, TextFormat, ToolCall, ToolError, ToolErrorKind, ToolSpec};

/// The call as the tool takes it: unchanged for JSON calls, its text wrapped as its tool's text
/// argument otherwise.
pub(super) fn json_call<'a>(
    call: &'a ToolCall,
    spec: &ToolSpec,
) -> Result<Cow<'a, ToolCall>, ToolError> {
    if !call.shape.is_text() {
        return Ok(Cow::Borrowed(call));
    }
    let Some(input) = &spec.text_input else {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!(
                "{} takes JSON arguments, not raw text; call it with one JSON object that fits its schema",
                spec.name
            ),
        ));
    };
    if let TextFormat::Grammar(grammar) = &input.format
        && grammar.syntax == GrammarSyntax::Regex
    {
        check_regex(&call.arguments, &grammar.definition, &spec.name)?;
    }
    let mut object = serde_json::Map::new();
    object.insert(input.argument.clone(), serde_json::Value::String(call.arguments.clone()));
    let arguments = serde_json::Value::Object(object).to_string();
    Ok(Cow::Owned(ToolCall { arguments, ..call.clone() }))
}

/// Whether the whole `text` matches `pattern`.
fn check_regex(text: &str, pattern: &str, tool: &str) -> Result<(), ToolError> {
    // Anchored at both ends: the grammar describes the whole input, as OpenAI applies it.
    let anchored = format!(r"\A(?:{pattern})\z");
    let regex = regex::Regex::new(&anchored).map_err(|err| {
        ToolError::new(
            ToolErrorKind::ToolError,
            format!("the {tool} tool's regex grammar does not compile ({err}); the tool cannot be called until it is fixed"),
        )
    })?;
    if regex.is_match(text) {
        return Ok(());
    }
    let shown: String = text.chars().take(200).collect();
    Err(ToolError::new(
        ToolErrorKind::InvalidArguments,
        format!(
            "the input does not match the {tool} tool's grammar `{pattern}` (input: {shown:?}); write text that matches it whole"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use agent_core::{CallShape, Effects, TextInput, ToolShape};

    use super::*;

    fn spec(text_input: Option<TextInput>) -> ToolSpec {
        ToolSpec {
            name: "ticket".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
            strict: false,
            aliases: Vec::new(),
            effects: Effects::READ_ONLY,
            rule_name: "Ticket".into(),
            text_input,
            shape: ToolShape::Freeform,
        }
    }

    #[track_caller]
    fn check(
        shape: CallShape,
        text: &str,
        input: Option<TextInput>,
        expect: Result<&str, ToolErrorKind>,
    ) {
        let call = ToolCall { shape, ..ToolCall::function("c", "ticket", text) };
        let got = json_call(&call, &spec(input))
            .map(|call| call.arguments.clone())
            .map_err(|err| err.kind);
        assert_eq!(got.as_deref().map_err(Clone::clone), expect);
    }

    #[test]
    fn text_becomes_the_text_argument_after_its_grammar_is_checked() {
        let regex = || Some(TextInput::grammar("id", GrammarSyntax::Regex, "[A-Z]+-[0-9]+"));
        check(CallShape::Custom, "AB-12", regex(), Ok(r#"{"id":"AB-12"}"#));
        check(CallShape::Custom, "AB-12 and more", regex(), Err(ToolErrorKind::InvalidArguments));
        check(CallShape::Custom, "xAB-12", regex(), Err(ToolErrorKind::InvalidArguments));
        check(
            CallShape::Custom,
            "say \"hi\"\n",
            Some(TextInput::text("text")),
            Ok(r#"{"text":"say \"hi\"\n"}"#),
        );
        // A Lark grammar is the tool's to parse; the executor does not judge it.
        let lark = Some(TextInput::grammar("patch", GrammarSyntax::Lark, "start: /x/"));
        check(CallShape::ApplyPatch, "anything", lark, Ok(r#"{"patch":"anything"}"#));
        check(CallShape::Custom, "AB-12", None, Err(ToolErrorKind::InvalidArguments));
        check(CallShape::Function, r#"{"id":"x"}"#, None, Ok(r#"{"id":"x"}"#));
        let broken = Some(TextInput::grammar("id", GrammarSyntax::Regex, "(unclosed"));
        check(CallShape::Custom, "x", broken, Err(ToolErrorKind::ToolError));
    }
}
