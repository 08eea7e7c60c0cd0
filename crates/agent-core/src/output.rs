//! `OutputSchema`: a JSON Schema the model's final answer must match (structured output).
//!
//! One definition gives both halves: the schema sent to the model, in OpenAI's strict form
//! ([`crate::schema::make_strict`]), and the local check of the answer against the schema as the
//! user wrote it, whose messages the model can read when it is asked to try again.

use std::sync::Arc;

use serde_json::Value;

use crate::schema::{ArgsError, ArgsValidator, InvalidSchema, StrictError, make_strict};

/// Why a final answer was refused. Its text is written for the model, which reads it when it is
/// asked to answer again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The output schema itself cannot be compiled, so no answer can be checked against it.
    #[error(transparent)]
    Schema(#[from] InvalidSchema),
    /// The answer is not one JSON object that fits the schema.
    #[error(transparent)]
    Mismatch(#[from] ArgsError),
}

/// A schema for the final answer, sent as Chat Completions' `response_format` or Responses'
/// `text.format`, and checked locally when the answer arrives.
#[derive(Clone)]
pub struct OutputSchema {
    name: String,
    strict: Value,
    validator: Arc<Result<ArgsValidator, InvalidSchema>>,
}

impl OutputSchema {
    /// The schema `schema`, named `name` on the wire (`[A-Za-z0-9_-]`, at most 64 characters, as
    /// the APIs require; other characters become `_`). A schema with no strict form is refused
    /// with the reason, so it is never sent in a form the server would reject or ignore.
    pub fn new(name: &str, schema: Value) -> Result<Self, StrictError> {
        let strict = make_strict(schema.clone())?;
        let name: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
            .take(64)
            .collect();
        let validator = Arc::new(ArgsValidator::from_schema(&schema));
        Ok(Self { name, strict, validator })
    }

    /// The name sent with the schema.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema in strict form, as sent.
    pub fn strict_schema(&self) -> &Value {
        &self.strict
    }

    /// Checks an answer: one JSON object that fits the schema. Returns the parsed value, or what
    /// is wrong, in words written for the model.
    pub fn check(&self, answer: &str) -> Result<Value, AnswerError> {
        let validator = self.validator.as_ref().as_ref().map_err(InvalidSchema::clone)?;
        // Models like to wrap JSON in a Markdown fence even when told not to; the fence is not
        // part of the answer.
        let text = answer.trim();
        let text = text
            .strip_prefix("```json")
            .or_else(|| text.strip_prefix("```"))
            .and_then(|rest| rest.strip_suffix("```"))
            .unwrap_or(text);
        Ok(validator.parse_value(text.trim())?)
    }
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema").field("name", &self.name).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(answer: &str, ok: bool) {
        let schema = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["city", "population"]
        });
        let output = OutputSchema::new("final answer", schema).unwrap();
        assert_eq!(output.name(), "final_answer");
        assert_eq!(output.check(answer).is_ok(), ok, "{answer}: {:?}", output.check(answer));
    }

    #[test]
    fn answers_are_checked_against_the_schema() {
        check(r#"{"city":"Oslo","population":709000}"#, true);
        check("```json\n{\"city\":\"Oslo\",\"population\":709000}\n```", true);
        check(r#"{"city":"Oslo"}"#, false);
        check(r#"{"city":"Oslo","population":"many"}"#, false);
        check("Oslo has 709000 people.", false);
    }

    #[test]
    fn a_refused_answer_says_where_it_does_not_fit() {
        let schema = json!({
            "type": "object",
            "properties": {"population": {"type": "integer"}},
            "required": ["population"]
        });
        let output = OutputSchema::new("answer", schema).unwrap();
        let Err(err) = output.check(r#"{"population":"many"}"#) else {
            panic!("a string population fits an integer schema");
        };
        assert!(matches!(err, AnswerError::Mismatch(ArgsError::Invalid { .. })), "{err:?}");
        // The model reads this text: it is the argument error's, word for word.
        assert!(err.to_string().starts_with("invalid arguments at `$.population`"), "{err}");
        let Err(err) = output.check("Oslo") else { panic!("prose fits an object schema") };
        assert!(err.to_string().starts_with("arguments are not a valid JSON object"), "{err}");
    }

    #[test]
    fn a_schema_with_no_strict_form_is_refused() {
        let schema = json!({"type": "object", "additionalProperties": {"type": "string"}});
        assert!(OutputSchema::new("x", schema).is_err());
    }
}
