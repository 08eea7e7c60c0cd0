//! Turns validator errors into messages a model can act on: the JSON path of the value, what was
//! expected there, and what was sent (`expected an integer ≤ 14, got 20`).

use std::{collections::HashSet, io};

use jsonschema::{ValidationError, error::ValidationErrorKind, paths::LocationSegment};
use serde_json::Value;

use super::{ArgsError, node::push_key};

/// How many problems one error message lists; the first is the main one.
const MAX_LISTED: usize = 4;

/// One problem: where, and what was wrong.
struct Problem {
    path: String,
    message: String,
}

/// Builds an [`ArgsError`] from the validator's errors (at least one is expected).
pub(crate) fn invalid<'i>(
    schema: &Value,
    errors: impl Iterator<Item = ValidationError<'i>>,
) -> ArgsError {
    let mut problems: Vec<Problem> = Vec::new();
    let mut more = 0;
    for error in errors {
        if problems.len() < MAX_LISTED {
            problems.extend(describe(schema, &error));
        } else {
            more += 1;
        }
    }
    let mut problems = problems.into_iter();
    let Some(first) = problems.next() else {
        return ArgsError::Invalid {
            path: "$".to_owned(),
            message: "the arguments do not match the schema".to_owned(),
        };
    };
    let mut message = first.message;
    for other in problems {
        message.push_str(&format!("; also at `{}`: {}", other.path, other.message));
    }
    if more > 0 {
        message.push_str(&format!("; and {more} more"));
    }
    ArgsError::Invalid { path: first.path, message }
}

/// The problem (or problems, for an unmatched union) one validator error stands for.
fn describe(schema: &Value, error: &ValidationError<'_>) -> Vec<Problem> {
    let path = instance_path(error);
    let got = render(error.instance());
    let keyword = schema.pointer(error.schema_path().as_str());
    let parent = parent_node(schema, error.schema_path().as_str());
    let noun = if parent.and_then(|p| p.get("type")).is_some_and(|t| t == "integer") {
        "an integer"
    } else {
        "a number"
    };
    let message = match error.kind() {
        ValidationErrorKind::Type { .. } => format!(
            "expected {}, got {got}",
            keyword.map_or_else(|| "another type".to_owned(), type_names)
        ),
        ValidationErrorKind::Required { property } => {
            format!("missing required field `{}`", property.as_str().unwrap_or_default())
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            return vec![unknown_fields(path, unexpected, parent)];
        }
        ValidationErrorKind::Minimum { limit } => format!("expected {noun} ≥ {limit}, got {got}"),
        ValidationErrorKind::Maximum { limit } => format!("expected {noun} ≤ {limit}, got {got}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("expected {noun} > {limit}, got {got}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("expected {noun} < {limit}, got {got}")
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("expected a multiple of {multiple_of}, got {got}")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "expected a string of at least {limit} characters, got {}",
                length(error.instance())
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "expected a string of at most {limit} characters, got {}",
                length(error.instance())
            )
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("expected at least {limit} items, got {}", count(error.instance()))
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("expected at most {limit} items, got {}", count(error.instance()))
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("expected a string matching `{pattern}`, got {got}")
        }
        ValidationErrorKind::Format { format } => {
            format!("expected a valid `{format}` string, got {got}")
        }
        ValidationErrorKind::Enum { options } => format!("expected {}, got {got}", one_of(options)),
        ValidationErrorKind::Constant { expected_value } => {
            format!("expected {}, got {got}", render(expected_value))
        }
        ValidationErrorKind::UniqueItems => {
            "expected unique items, found a repeated one".to_owned()
        }
        ValidationErrorKind::FalseSchema => "no value is allowed here".to_owned(),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            return union(schema, &path, &got, context);
        }
        _ => lowercase_first(&error.to_string()),
    };
    vec![Problem { path, message }]
}

/// Explains why no branch of a union matched. A branch that was refused "at the door" (wrong
/// type, or a tag `const` that differs) is not what the model meant; if some branch got past
/// the door, its errors are the useful ones. Otherwise the message lists what each branch wanted.
fn union(
    schema: &Value,
    path: &str,
    got: &str,
    branches: &[Vec<ValidationError<'static>>],
) -> Vec<Problem> {
    let depth = path_depth(path);
    let at_door = |e: &ValidationError<'_>| {
        let d = e.instance_path().iter().count();
        match e.kind() {
            ValidationErrorKind::Type { .. } | ValidationErrorKind::Enum { .. } => d == depth,
            ValidationErrorKind::Constant { .. } => d == depth || d == depth + 1,
            _ => false,
        }
    };
    let candidate = branches
        .iter()
        .filter(|errors| !errors.iter().any(at_door))
        .min_by_key(|errors| errors.len());
    if let Some(errors) = candidate {
        let mut problems: Vec<Problem> = errors.iter().flat_map(|e| describe(schema, e)).collect();
        problems.truncate(MAX_LISTED);
        if !problems.is_empty() {
            return problems;
        }
    }
    // Every branch was refused at the door: say what the door wanted, at the most common place.
    let doors: Vec<&ValidationError<'static>> =
        branches.iter().filter_map(|errors| errors.iter().find(|e| at_door(e))).collect();
    let deepest = doors.iter().map(|e| e.instance_path().iter().count()).max().unwrap_or(depth);
    let mut wanted: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut place = (path.to_owned(), got.to_owned());
    for error in doors.iter().filter(|e| e.instance_path().iter().count() == deepest) {
        place = (instance_path(error), render(error.instance()));
        let fragment = match error.kind() {
            ValidationErrorKind::Type { .. } => schema
                .pointer(error.schema_path().as_str())
                .map_or_else(|| "another type".to_owned(), type_names),
            ValidationErrorKind::Enum { options } => one_of(options),
            ValidationErrorKind::Constant { expected_value } => render(expected_value),
            _ => continue,
        };
        if seen.insert(fragment.clone()) {
            wanted.push(fragment);
        }
    }
    if wanted.is_empty() {
        wanted.push("a value of another shape".to_owned());
    }
    let (path, got) = place;
    vec![Problem { path, message: format!("expected {}, got {got}", wanted.join(" or ")) }]
}

fn unknown_fields<'a>(path: String, unexpected: &[String], parent: Option<&'a Value>) -> Problem {
    let mut known: Vec<&'a str> = Vec::new();
    if let Some(parent) = parent {
        let mut collect = |node: &'a Value| {
            if let Some(Value::Object(properties)) = node.get("properties") {
                known.extend(properties.keys().map(String::as_str));
            }
        };
        collect(parent);
        for keyword in ["anyOf", "oneOf", "allOf"] {
            for branch in parent.get(keyword).and_then(Value::as_array).into_iter().flatten() {
                collect(branch);
            }
        }
    }
    let expected = if known.is_empty() {
        "this object takes no fields".to_owned()
    } else {
        format!("expected one of `{}`", known.join("`, `"))
    };
    match unexpected {
        [one] => {
            let mut path = path;
            push_key(&mut path, one);
            Problem { path, message: format!("unknown field `{one}`; {expected}") }
        }
        many => {
            Problem { path, message: format!("unknown fields `{}`; {expected}", many.join("`, `")) }
        }
    }
}

/// The node holding the keyword that failed (`/properties/days` for `/properties/days/maximum`).
fn parent_node<'a>(schema: &'a Value, keyword_path: &str) -> Option<&'a Value> {
    let end = keyword_path.rfind('/')?;
    schema.pointer(&keyword_path[..end])
}

fn instance_path(error: &ValidationError<'_>) -> String {
    let mut path = String::from("$");
    for segment in error.instance_path().iter() {
        match segment {
            LocationSegment::Property(key) => push_key(&mut path, &key),
            LocationSegment::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

/// How many segments a path written by [`instance_path`] has.
fn path_depth(path: &str) -> usize {
    let mut depth = 0;
    let mut in_string = false;
    let mut escaped = false;
    for c in path.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '.' | '[' if !in_string => depth += 1,
            _ => {}
        }
    }
    depth
}

fn type_names(types: &Value) -> String {
    let name = |t: &Value| match t.as_str() {
        Some("string") => "a string",
        Some("integer") => "an integer",
        Some("number") => "a number",
        Some("boolean") => "a boolean",
        Some("object") => "an object",
        Some("array") => "an array",
        Some("null") => "null",
        _ => "another type",
    };
    match types {
        Value::Array(list) => list.iter().map(name).collect::<Vec<_>>().join(" or "),
        single => name(single).to_owned(),
    }
}

fn one_of(options: &Value) -> String {
    let Value::Array(options) = options else { return render(options) };
    let shown: Vec<String> = options.iter().take(20).map(render).collect();
    let rest = options.len().saturating_sub(shown.len());
    let tail = if rest > 0 { format!(" (and {rest} more)") } else { String::new() };
    format!("one of {}{tail}", shown.join(", "))
}

fn length(value: &Value) -> String {
    value.as_str().map_or_else(|| render(value), |s| format!("{} characters", s.chars().count()))
}

fn count(value: &Value) -> String {
    value.as_array().map_or_else(|| render(value), |a| format!("{} items", a.len()))
}

/// Compact JSON of a value, cut after about 60 characters so that a huge argument does not end
/// up in full in the message.
pub(crate) fn render(value: &Value) -> String {
    const LIMIT: usize = 60;
    let mut out = Bounded { bytes: Vec::new(), limit: LIMIT * 4 };
    // The writer refuses input past its limit; the error only means "cut here".
    let _ = serde_json::to_writer(&mut out, value);
    let text = String::from_utf8_lossy(&out.bytes);
    if text.chars().count() <= LIMIT && out.bytes.len() < out.limit {
        return text.into_owned();
    }
    let cut: String = text.chars().take(LIMIT).collect();
    format!("{cut}…")
}

struct Bounded {
    bytes: Vec<u8>,
    limit: usize,
}

impl io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.limit.saturating_sub(self.bytes.len());
        if room == 0 {
            return Err(io::Error::other("long enough"));
        }
        let n = room.min(buf.len());
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{path_depth, render};

    #[test]
    fn renders_short_and_cuts_long_values() {
        assert_eq!(render(&json!("kelvin")), r#""kelvin""#);
        let long = render(&json!("x".repeat(10_000_000)));
        assert_eq!(long.chars().count(), 61);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn counts_path_segments() {
        assert_eq!(path_depth("$"), 0);
        assert_eq!(path_depth("$.a.b[2]"), 3);
        assert_eq!(path_depth(r#"$["a.b"].c"#), 2);
    }
}
