//! The frontmatter of a `SKILL.md` (and of a custom command's Markdown): the YAML between the
//! two `---` lines at the top, checked against the Agent Skills specification (agentskills.io).
//!
//! The specification's rules, which the Python reference validator `skills-ref` applies the same
//! way (the differential test in agent-cli's suite keeps the two in step): `name` (required, at
//! most 64 characters, lowercase letters, digits and hyphens, no hyphen at either end and no two
//! in a row, the same as the folder's name), `description` (required, non-empty, at most 1,024
//! characters), `compatibility` (at most 500 characters), and no fields but those and `license`,
//! `metadata` and `allowed-tools`.
//!
//! Not every broken rule refuses a skill: a skill without a usable name or description, or whose
//! name is not its folder's (the specification: the name must match its parent directory, and
//! `skills-ref` refuses it), cannot be listed; an extra field (Claude Code's skills carry several)
//! or a long `compatibility` only earns a warning, as in Codex and Claude Code.

use std::collections::BTreeMap;

use yaml_rust2::Yaml;

use crate::bounded_yaml::{self, YamlError};

/// The longest `name` the specification allows, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// The longest `description`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// The fields the specification defines.
pub const SPEC_FIELDS: [&str; 6] =
    ["name", "description", "license", "compatibility", "metadata", "allowed-tools"];

/// One way a `SKILL.md` breaks the specification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillProblem {
    /// The file could not be read (its error, in words).
    #[error("cannot be read: {0}")]
    Unreadable(String),
    /// The file is larger than [`crate::MAX_SKILL_FILE_BYTES`].
    #[error("is {0} bytes, over the {max} byte limit", max = crate::MAX_SKILL_FILE_BYTES)]
    TooBig(u64),
    /// The file does not start with a `---` line.
    #[error("does not start with YAML frontmatter (a `---` line)")]
    NoFrontmatter,
    /// No closing `---` line.
    #[error("frontmatter is not closed with a `---` line")]
    Unclosed,
    /// The YAML does not parse.
    #[error("frontmatter is not valid YAML: {0}")]
    BadYaml(String),
    /// The YAML has an anchor or alias, or is nested too deep or too large to read safely.
    #[error("frontmatter {0}")]
    Refused(YamlError),
    /// The YAML is not a mapping of fields.
    #[error("frontmatter is not a mapping of fields")]
    NotMapping,
    /// A required field is absent.
    #[error("missing required field `{0}`")]
    Missing(&'static str),
    /// A field is empty or not text.
    #[error("field `{0}` must be a non-empty string")]
    NotText(&'static str),
    /// A field is longer than the specification allows.
    #[error("field `{field}` has {chars} characters, over the limit of {max}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its length in characters.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// `name` has an upper-case letter.
    #[error("name `{0}` must be lowercase")]
    NameCase(String),
    /// `name` starts or ends with a hyphen, or has two in a row.
    #[error("name `{0}` may not start or end with a hyphen or have two in a row")]
    NameHyphens(String),
    /// `name` has a character other than letters, digits and hyphens.
    #[error("name `{0}` may hold only letters, digits and hyphens")]
    NameChars(String),
    /// `name` differs from the skill's folder name.
    #[error("name `{name}` differs from its folder `{folder}`")]
    NameNotFolder {
        /// The name in the frontmatter.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// Fields the specification does not define.
    #[error("fields the specification does not define: {}", .0.join(", "))]
    UnknownFields(Vec<String>),
}

impl SkillProblem {
    /// Whether the skill cannot be used at all (no usable name or description, a name that is
    /// not its folder's, or no frontmatter); the others are warnings.
    pub fn refuses(&self) -> bool {
        !matches!(self, Self::UnknownFields(_) | Self::TooLong { field: "compatibility", .. })
    }
}

/// The fields of one frontmatter, every scalar as text (as the reference validator reads them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontmatter {
    /// Top-level scalar fields by name, in file order.
    pub fields: Vec<(String, Value)>,
    /// The Markdown after the closing `---`.
    pub body: String,
}

/// One field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar (strings, numbers and booleans alike, as written).
    Text(String),
    /// A list of scalars.
    List(Vec<String>),
    /// A mapping of scalars.
    Map(BTreeMap<String, String>),
    /// Empty (`key:` with nothing after it).
    Null,
}

impl Frontmatter {
    /// The field `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(name, _)| name == key).map(|(_, value)| value)
    }

    /// The field `key` as trimmed text; `None` when absent, empty or not a scalar.
    pub fn text(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Value::Text(text)) if !text.trim().is_empty() => Some(text.trim()),
            _ => None,
        }
    }

    /// A list-like field: a list, or a scalar split on white space (Claude Code also takes
    /// commas, which are split too when the scalar has them).
    pub fn words(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::List(items)) => items.clone(),
            Some(Value::Text(text)) if text.contains(',') => {
                text.split(',').map(str::trim).filter(|w| !w.is_empty()).map(Into::into).collect()
            }
            Some(Value::Text(text)) => text.split_whitespace().map(Into::into).collect(),
            _ => Vec::new(),
        }
    }
}

/// Splits `text` into its frontmatter fields and body.
pub fn parse(text: &str) -> Result<Frontmatter, SkillProblem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(SkillProblem::NoFrontmatter);
    }
    let mut yaml_end = first.len();
    let mut body_start = None;
    for line in lines {
        if line.trim_end() == "---" {
            body_start = Some(yaml_end + line.len());
            break;
        }
        yaml_end += line.len();
    }
    let body_start = body_start.ok_or(SkillProblem::Unclosed)?;
    let yaml = &text[first.len()..yaml_end];
    let document = bounded_yaml::load(yaml).map_err(|err| match err {
        YamlError::Syntax(words) => SkillProblem::BadYaml(words),
        limit => SkillProblem::Refused(limit),
    })?;
    let body = text[body_start..].trim().to_owned();
    let hash = match document {
        Some(Yaml::Hash(hash)) => hash,
        // An empty frontmatter is a mapping with no fields, so the missing ones are named.
        None | Some(Yaml::Null) => return Ok(Frontmatter { fields: Vec::new(), body }),
        Some(_) => return Err(SkillProblem::NotMapping),
    };
    let mut fields = Vec::new();
    for (key, value) in hash {
        let Some(key) = scalar(&key) else { return Err(SkillProblem::NotMapping) };
        let value = match value {
            Yaml::Null => Value::Null,
            Yaml::Array(items) => Value::List(items.iter().filter_map(scalar).collect()),
            Yaml::Hash(map) => {
                Value::Map(map.iter().filter_map(|(k, v)| Some((scalar(k)?, scalar(v)?))).collect())
            }
            other => Value::Text(scalar(&other).unwrap_or_default()),
        };
        fields.push((key, value));
    }
    Ok(Frontmatter { fields, body })
}

/// A scalar as the text it was written as.
fn scalar(yaml: &Yaml) -> Option<String> {
    match yaml {
        Yaml::String(text) | Yaml::Real(text) => Some(text.clone()),
        Yaml::Integer(number) => Some(number.to_string()),
        Yaml::Boolean(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// Every way `front` breaks the specification, for a skill in the folder named `folder`.
pub fn validate(front: &Frontmatter, folder: Option<&str>) -> Vec<SkillProblem> {
    let mut problems = Vec::new();
    let unknown: Vec<String> = front
        .fields
        .iter()
        .map(|(key, _)| key)
        .filter(|key| !SPEC_FIELDS.contains(&key.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        problems.push(SkillProblem::UnknownFields(unknown));
    }
    match front.get("name") {
        None => problems.push(SkillProblem::Missing("name")),
        Some(_) => match front.text("name") {
            None => problems.push(SkillProblem::NotText("name")),
            Some(name) => problems.extend(name_problems(name, folder)),
        },
    }
    match front.get("description") {
        None => problems.push(SkillProblem::Missing("description")),
        Some(_) => match front.text("description") {
            None => problems.push(SkillProblem::NotText("description")),
            Some(text) => {
                problems.extend(too_long("description", text, MAX_DESCRIPTION_CHARS));
            }
        },
    }
    if let Some(Value::Text(text)) = front.get("compatibility") {
        problems.extend(too_long("compatibility", text, MAX_COMPATIBILITY_CHARS));
    }
    problems
}

fn too_long(field: &'static str, text: &str, max: usize) -> Option<SkillProblem> {
    let chars = text.chars().count();
    (chars > max).then_some(SkillProblem::TooLong { field, chars, max })
}

fn name_problems(name: &str, folder: Option<&str>) -> Vec<SkillProblem> {
    let mut problems = Vec::from_iter(too_long("name", name, MAX_NAME_CHARS));
    if name.to_lowercase() != name {
        problems.push(SkillProblem::NameCase(name.to_owned()));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        problems.push(SkillProblem::NameHyphens(name.to_owned()));
    }
    if !name.chars().all(|c| c.is_alphanumeric() || c == '-') {
        problems.push(SkillProblem::NameChars(name.to_owned()));
    }
    if let Some(folder) = folder.filter(|folder| *folder != name) {
        problems
            .push(SkillProblem::NameNotFolder { name: name.to_owned(), folder: folder.to_owned() });
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The problems of `text` in folder `folder`, in words.
    #[track_caller]
    fn check(text: &str, folder: &str, expect: &[&str]) {
        let problems = match parse(text) {
            Ok(front) => validate(&front, Some(folder)),
            Err(problem) => vec![problem],
        };
        let words: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(words, expect, "{text}");
    }

    #[test]
    fn the_specification_rules() {
        check("---\nname: pdf\ndescription: Reads PDFs.\n---\nBody\n", "pdf", &[]);
        check(
            "---\nname: pdf\ndescription: >\n  Folded\n  text.\nlicense: MIT\nmetadata:\n  \
             author: x\n  version: 1.0\nallowed-tools: Bash(git:*) Read\ncompatibility: linux\n\
             ---\n",
            "pdf",
            &[],
        );
        check("no frontmatter\n", "x", &["does not start with YAML frontmatter (a `---` line)"]);
        check("---\nname: x\n", "x", &["frontmatter is not closed with a `---` line"]);
        check("---\n- a\n---\n", "x", &["frontmatter is not a mapping of fields"]);
        check("---\ndescription: d\n---\n", "x", &["missing required field `name`"]);
        check(
            "---\nname: x\ndescription:\n---\n",
            "x",
            &["field `description` must be a non-empty string"],
        );
        check("---\nname: PDF\ndescription: d\n---\n", "PDF", &["name `PDF` must be lowercase"]);
        check(
            "---\nname: -a--b\ndescription: d\n---\n",
            "-a--b",
            &["name `-a--b` may not start or end with a hyphen or have two in a row"],
        );
        check(
            "---\nname: a_b\ndescription: d\n---\n",
            "a_b",
            &["name `a_b` may hold only letters, digits and hyphens"],
        );
        check(
            "---\nname: a\ndescription: d\n---\n",
            "b",
            &["name `a` differs from its folder `b`"],
        );
        check(
            "---\nname: a\ndescription: d\nmodel: x\n---\n",
            "a",
            &["fields the specification does not define: model"],
        );
        let long = "x".repeat(65);
        check(
            &format!("---\nname: {long}\ndescription: d\n---\n"),
            &long,
            &["field `name` has 65 characters, over the limit of 64"],
        );
        check(
            &format!("---\nname: a\ndescription: {}\n---\n", "é".repeat(1025)),
            "a",
            &["field `description` has 1025 characters, over the limit of 1024"],
        );
    }

    #[test]
    fn only_unusable_names_and_descriptions_refuse() {
        assert!(SkillProblem::Missing("name").refuses());
        assert!(SkillProblem::NameCase("A".into()).refuses());
        assert!(!SkillProblem::UnknownFields(vec!["model".into()]).refuses());
        assert!(SkillProblem::NameNotFolder { name: "a".into(), folder: "b".into() }.refuses());
    }

    #[test]
    fn list_fields_are_words() {
        let front =
            parse("---\na: Read Grep\nb: [Read, Bash(git *)]\nc: Read, Grep\n---\n").unwrap();
        assert_eq!(front.words("a"), ["Read", "Grep"]);
        assert_eq!(front.words("b"), ["Read", "Bash(git *)"]);
        assert_eq!(front.words("c"), ["Read", "Grep"]);
    }
}
