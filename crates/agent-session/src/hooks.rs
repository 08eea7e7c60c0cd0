//! The session's hooks: the config file's `[[hooks.EVENT]]` tables, and a project's
//! `.agent/hooks.toml` once the user has trusted it.
//!
//! A project's hooks are commands that a repository asks to run on the user's machine, outside
//! the sandbox, so they run only after the user said yes to exactly that file: the REPL asks once
//! and remembers the file's text; `exec` and `tools call` never ask and leave untrusted project
//! hooks out, saying so on stderr. A file that changed since it was trusted is asked about again.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    str::FromStr,
    sync::Arc,
    time::Duration,
};

use crate::error::Context;
use agent_exec::{Hook, HookEvent, Hooks, hooks::HookProblem};
use serde::Deserialize;

use crate::{
    Frontend,
    config::{HookEntry, HookTables},
    log::SessionLog,
};

/// Where a project keeps its hooks, relative to the workspace.
pub const PROJECT_HOOKS: &str = ".agent/hooks.toml";

/// Whether untrusted project hooks may be put to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Ask on the terminal (the REPL).
    Ask,
    /// Never ask: only hooks trusted before run (`exec`, `tools call`).
    OnlyTrusted,
}

/// The project hooks file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    #[serde(default)]
    hooks: HookTables,
}

/// The hooks of a session: the config file's, then the project's if it is trusted.
pub fn load(
    tables: &HookTables,
    workspace: &Path,
    trust: Trust,
    frontend: &Arc<dyn Frontend>,
) -> crate::Result<Hooks> {
    let mut hooks = build(tables, "the config file")?;
    let path = workspace.join(PROJECT_HOOKS);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let project: ProjectFile =
                toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
            let origin = path.display().to_string();
            let project_hooks = build(&project.hooks, &origin)?;
            if !project_hooks.is_empty()
                && trusted(workspace, &text, &project_hooks, trust, frontend.as_ref())?
            {
                hooks.extend(project_hooks);
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    }
    let frontend = frontend.clone();
    let sink = Arc::new(move |problem: &HookProblem| frontend.say(&format!("warning: {problem}")));
    Ok(Hooks::new(hooks).on_problem(sink))
}

fn build(tables: &HookTables, origin: &str) -> crate::Result<Vec<Hook>> {
    let mut hooks = Vec::new();
    for (name, entries) in tables {
        let event = HookEvent::from_str(name).with_context(|| format!("in {origin}"))?;
        for entry in entries {
            hooks.push(hook(event, entry).with_context(|| format!("in {origin}"))?);
        }
    }
    // A BTreeMap orders events by name; within one event the file's order is kept, which is
    // the order that matters (each hook sees the input the one before replaced).
    Ok(hooks)
}

fn hook(event: HookEvent, entry: &HookEntry) -> crate::Result<Hook> {
    let mut hook = Hook::new(event, entry.command.clone()).fail_closed(entry.fail_closed);
    if let Some(matcher) = &entry.matcher {
        hook = hook.matcher(matcher)?;
    }
    if let Some(secs) = entry.timeout_sec {
        hook = hook.timeout(Duration::from_secs(secs));
    }
    Ok(hook)
}

/// The file remembering which project hook files the user trusted: workspace path → file text.
fn trust_file() -> crate::Result<PathBuf> {
    let root = SessionLog::root()?;
    Ok(root.parent().unwrap_or(&root).join("trusted-hooks.json"))
}

fn trusted(
    workspace: &Path,
    text: &str,
    hooks: &[Hook],
    trust: Trust,
    frontend: &dyn Frontend,
) -> crate::Result<bool> {
    let file = trust_file()?;
    let mut known: BTreeMap<String, String> = match std::fs::read_to_string(&file) {
        Ok(json) => serde_json::from_str(&json).unwrap_or_default(),
        Err(_) => BTreeMap::new(),
    };
    let key = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let key = key.display().to_string();
    if known.get(&key).is_some_and(|trusted| trusted == text) {
        return Ok(true);
    }
    if trust == Trust::OnlyTrusted || !frontend.can_ask() {
        frontend.say(&format!(
            "{} has {} hook(s) that are not trusted yet, so they do not run; start `agent` (the \
             REPL) in this workspace to review and trust them",
            PROJECT_HOOKS,
            hooks.len()
        ));
        return Ok(false);
    }
    let mut lines = vec![format!(
        "{PROJECT_HOOKS} asks to run these commands on your machine, outside the sandbox:"
    )];
    // The project's file is not the user's writing: a command that hides itself behind escape
    // sequences must still show in full before it is trusted.
    for hook in hooks {
        let command = crate::visible::visible_line(&hook.command);
        lines.push(format!("  {}: {command}", hook.event));
    }
    if !frontend.confirm(&lines, "trust them for this workspace?") {
        frontend.say("the project's hooks will not run");
        return Ok(false);
    }
    known.insert(key, text.to_owned());
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(&known)?;
    std::fs::write(&file, json).with_context(|| format!("writing {}", file.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(toml: &str, expect: Result<usize, &str>) {
        let file: Result<ProjectFile, _> = toml::from_str(toml);
        let built = file.map_err(crate::Error::from).and_then(|file| build(&file.hooks, "test"));
        match (built, expect) {
            (Ok(hooks), Ok(count)) => assert_eq!(hooks.len(), count),
            (Err(err), Err(text)) => assert!(format!("{err:#}").contains(text), "{err:#}"),
            (got, expect) => panic!("got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn hook_tables_parse_and_refuse_mistakes() {
        check("[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"true\"\n", Ok(1));
        check(
            "[[hooks.PreToolUse]]\ncommand = \"a\"\ntimeout_sec = 5\nfail_closed = true\n\
             [[hooks.PreToolUse]]\ncommand = \"b\"\n[[hooks.Stop]]\ncommand = \"c\"\n",
            Ok(3),
        );
        check("[[hooks.PreToolUze]]\ncommand = \"a\"\n", Err("unknown hook event `PreToolUze`"));
        check(
            "[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"a\"\n",
            Err("not a valid regular"),
        );
        check("[[hooks.PreToolUse]]\ncommand = \"a\"\ntimeout = 5\n", Err("unknown field"));
    }
}
