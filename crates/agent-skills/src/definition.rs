//! Agent definition files: Markdown with a frontmatter (`name`, `description`, `tools`, `model`,
//! `permission_mode`, `max_turns`) whose body is the child's instructions, found in the project's
//! `.agent/agents/` and `.claude/agents/` and in the user's `agents/` folder, read into the
//! runtime's [`AgentDefinition`].
//!
//! The frontmatter is the flat `key: value` subset of YAML that such files use (a value may be a
//! `[a, b]` list, a comma-separated list, or `- item` lines below the key); Claude Code's field
//! names (`permissionMode`, `maxTurns`, `disallowedTools`) are read as ours.

use std::path::{Path, PathBuf};

use agent_exec::child::{AgentDefinition, DefinitionSource};

use crate::bounded_yaml::{self, YamlError};

/// The largest definition file read, in bytes.
pub const MAX_DEFINITION_BYTES: u64 = 64 * 1024;

/// Claude Code's model aliases: in a `.claude/agents/` file they mean the parent's model.
const CLAUDE_MODEL_ALIASES: &[&str] = &["sonnet", "opus", "haiku", "opusplan", "default"];

/// Why a definition file was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// No `---` frontmatter at the top.
    #[error("no frontmatter: the file must start with a `---` line")]
    NoFrontmatter,
    /// A required field is missing.
    #[error("the frontmatter has no `{0}`")]
    Missing(&'static str),
    /// A field's value is not what it must be.
    #[error("`{0}`: {1}")]
    Bad(String, String),
    /// The file could not be read or is too large.
    #[error("{0}")]
    Unreadable(String),
    /// The frontmatter has a YAML anchor or alias, or is nested too deep or too large.
    #[error("frontmatter {0}")]
    Refused(YamlError),
}

/// Parses one definition file's text.
pub fn parse(
    text: &str,
    source: DefinitionSource,
    path: Option<&Path>,
) -> Result<AgentDefinition, DefinitionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---").ok_or(DefinitionError::NoFrontmatter)?;
    let rest = rest.strip_prefix('\r').unwrap_or(rest);
    let rest = rest.strip_prefix('\n').ok_or(DefinitionError::NoFrontmatter)?;
    let (front, body) = match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            (&rest[..end], after.split_once('\n').map_or("", |(_, body)| body))
        }
        None => return Err(DefinitionError::NoFrontmatter),
    };
    // The fields are read line by line below, which expands nothing, but the file is still YAML
    // to other tools (Claude Code's loader) and must not be a bomb to them either; YAML this
    // reader cannot parse (`tools: [a] [b]`) is still read flat.
    if let Err(err) = bounded_yaml::load(front)
        && err.is_limit()
    {
        return Err(DefinitionError::Refused(err));
    }
    let mut definition = AgentDefinition {
        name: String::new(),
        description: String::new(),
        tools: None,
        disallowed: Vec::new(),
        read_only: false,
        model: None,
        permission_mode: None,
        max_turns: None,
        instructions: body.trim().to_owned(),
        ignored: Vec::new(),
        source,
        path: path.map(Path::to_path_buf),
    };
    for (key, value) in fields(front) {
        let bad = |why: &str| DefinitionError::Bad(key.clone(), why.to_owned());
        match key.as_str() {
            "name" => definition.name = scalar(&value),
            "description" => definition.description = scalar(&value),
            "tools" => definition.tools = Some(list(&value)),
            "disallowed_tools" | "disallowedTools" => definition.disallowed = list(&value),
            "model" => {
                let model = scalar(&value);
                // Claude Code's `inherit` means the parent's model, as no value does; its
                // aliases name Anthropic's families, which the session's server need not have,
                // so a Claude Code file asking for one gets the parent's model too.
                let alias = source == DefinitionSource::Claude
                    && CLAUDE_MODEL_ALIASES.contains(&model.as_str());
                definition.model =
                    (!model.is_empty() && model != "inherit" && !alias).then_some(model);
            }
            "permission_mode" | "permissionMode" => {
                let mode = scalar(&value);
                definition.permission_mode = Some(mode.parse().map_err(|_| {
                    bad("not a mode (default, accept-edits, plan, dont-ask, bypass)")
                })?);
            }
            "max_turns" | "maxTurns" => {
                let turns: usize = scalar(&value).parse().map_err(|_| bad("not a number"))?;
                if turns == 0 {
                    return Err(bad("must be at least 1"));
                }
                definition.max_turns = Some(turns);
            }
            // Other keys of Claude Code's files (`color`, `skills`, `hooks`, `mcpServers`, …) are
            // not ours to honour (a definition can only narrow, and a project file that brought
            // its own hooks or servers would widen), so they are left aside and listed.
            _ => definition.ignored.push(key.clone()),
        }
    }
    if definition.name.is_empty() {
        return Err(DefinitionError::Missing("name"));
    }
    let valid = definition.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid || definition.name.len() > 64 {
        return Err(DefinitionError::Bad(
            "name".into(),
            "use up to 64 letters, digits, `-` and `_`".into(),
        ));
    }
    if definition.description.is_empty() {
        return Err(DefinitionError::Missing("description"));
    }
    Ok(definition)
}

/// The frontmatter's `key: value` pairs, with `- item` lines joined to the key above them.
fn fields(front: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in front.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            if let Some((_, value)) = out.last_mut() {
                if !value.is_empty() {
                    value.push(',');
                }
                value.push_str(item.trim());
            }
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            out.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    out
}

fn scalar(value: &str) -> String {
    let value = value.trim();
    let unquoted = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')));
    unquoted.unwrap_or(value).to_owned()
}

fn list(value: &str) -> Vec<String> {
    let value = value.trim();
    let inner = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or(value);
    inner.split(',').map(scalar).filter(|item| !item.is_empty()).collect()
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Definitions {
    /// The definitions in force, one per name, built-ins first.
    pub found: Vec<AgentDefinition>,
    /// Files that were refused, with why.
    pub refused: Vec<(PathBuf, DefinitionError)>,
    /// Definitions another of the same name replaced.
    pub shadowed: Vec<AgentDefinition>,
}

impl Definitions {
    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.found.iter().find(|definition| definition.name == name)
    }
}

/// The built-ins, then the user's `<user_dir>/agents/*.md`, the project's
/// `.claude/agents/*.md` and `.agent/agents/*.md` (each folder in file-name order); a later
/// one replaces an earlier one of the same name.
pub fn discover(workspace: &Path, user_dir: Option<&Path>) -> Definitions {
    let mut out = Definitions { found: AgentDefinition::builtins(), ..Definitions::default() };
    let mut folders = Vec::new();
    if let Some(dir) = user_dir {
        folders.push((dir.join("agents"), DefinitionSource::User));
    }
    folders.push((workspace.join(".claude/agents"), DefinitionSource::Claude));
    folders.push((workspace.join(".agent/agents"), DefinitionSource::Project));
    for (folder, source) in folders {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        paths.sort();
        for path in paths {
            match read(&path, source) {
                Ok(definition) => {
                    if let Some(at) = out.found.iter().position(|d| d.name == definition.name) {
                        out.shadowed.push(std::mem::replace(&mut out.found[at], definition));
                    } else {
                        out.found.push(definition);
                    }
                }
                Err(err) => out.refused.push((path, err)),
            }
        }
    }
    out
}

fn read(path: &Path, source: DefinitionSource) -> Result<AgentDefinition, DefinitionError> {
    let unreadable = |err: std::io::Error| DefinitionError::Unreadable(err.to_string());
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.len() > MAX_DEFINITION_BYTES {
        return Err(DefinitionError::Unreadable(format!(
            "{} bytes, more than the {MAX_DEFINITION_BYTES} a definition may have",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    parse(&text, source, Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &str) {
        let got = match parse(text, DefinitionSource::Project, None) {
            Ok(d) => format!(
                "{} tools={:?} mode={:?} turns={:?} model={:?} body={:?}",
                d.name, d.tools, d.permission_mode, d.max_turns, d.model, d.instructions
            ),
            Err(err) => format!("refused: {err}"),
        };
        assert_eq!(got, expected);
    }

    #[test]
    fn ours_and_claude_codes_fields() {
        check(
            "---\nname: reviewer\ndescription: Reviews.\ntools: Read, Grep\npermission_mode: plan\nmax_turns: 3\n---\nLook hard.\n",
            "reviewer tools=Some([\"Read\", \"Grep\"]) mode=Some(Plan) turns=Some(3) model=None body=\"Look hard.\"",
        );
        check(
            "---\nname: x\ndescription: \"Y.\"\ntools:\n  - read_file\n  - grep\npermissionMode: bypassPermissions\nmaxTurns: 2\nmodel: inherit\n---\n",
            "x tools=Some([\"read_file\", \"grep\"]) mode=Some(Bypass) turns=Some(2) model=None body=\"\"",
        );
        let claude = "---\nname: c\ndescription: d\nmodel: sonnet\ncolor: blue\nhooks: x\n---\n";
        let parsed = parse(claude, DefinitionSource::Claude, None).unwrap();
        assert_eq!((parsed.model, parsed.ignored), (None, vec!["color".into(), "hooks".into()]));
        // In our own files a model name is the name the server is asked for.
        let ours = parse(claude, DefinitionSource::Project, None).unwrap();
        assert_eq!(ours.model.as_deref(), Some("sonnet"));
    }

    #[test]
    fn bad_files_are_refused_with_why() {
        check("name: x\n", "refused: no frontmatter: the file must start with a `---` line");
        check("---\ndescription: d\n---\n", "refused: the frontmatter has no `name`");
        check(
            "---\nname: a b\ndescription: d\n---\n",
            "refused: `name`: use up to 64 letters, digits, `-` and `_`",
        );
        check(
            "---\nname: a\ndescription: d\nmax_turns: many\n---\n",
            "refused: `max_turns`: not a number",
        );
        check(
            "---\nname: a\ndescription: d\npermission_mode: god\n---\n",
            "refused: `permission_mode`: not a mode (default, accept-edits, plan, dont-ask, bypass)",
        );
    }
}
