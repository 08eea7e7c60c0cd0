//! Paths as the tools show them: relative to the workspace root, and what a missing path
//! suggests. Resolution itself is the boundary's job (`ToolContext::workspace`).

use std::path::{Path, PathBuf};

use agent_core::{Boundary, HiddenPath, ToolError, ToolErrorKind};
use agent_sandbox::secret::Hidden;

/// `path` relative to the workspace root, with `/` separators; `.` for the root itself.
pub(crate) fn display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => path.display().to_string(),
    }
}

/// The files a process started for a call must not see: the boundary's secret list, the one the
/// file tools honour (`Read(…)` allow rules applied), so `Read(./.env)` exposes `.env` to both or
/// neither. The process keeps the caller's `HOME`, or its interpreter may live there, so the
/// credential locations are this one's. `None` when the boundary keeps no list.
pub(crate) fn hidden(workspace: &dyn Boundary) -> Option<Vec<Hidden>> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let hidden = workspace.hidden_paths(home.as_deref())?;
    Some(
        hidden
            .into_iter()
            .map(|HiddenPath { path, shown, rule }| Hidden { path, shown, rule })
            .collect(),
    )
}

/// The `not_found` error for a missing path, naming up to five similar existing paths.
pub(crate) fn not_found(root: &Path, asked: &str, resolved: &Path) -> ToolError {
    let similar = similar_paths(root, resolved);
    let mut message = format!("no such file or directory: {asked}");
    if similar.is_empty() {
        message.push_str(". Use list_dir or glob to find the right path.");
    } else {
        message.push_str(&format!(". Similar: {}", similar.join(", ")));
    }
    ToolError::new(ToolErrorKind::NotFound, message)
}

/// Existing paths that look like `missing`: siblings in its nearest existing ancestor whose name
/// is a few edits away, and files with the same name elsewhere in the workspace.
fn similar_paths(root: &Path, missing: &Path) -> Vec<String> {
    use std::path::PathBuf;
    let Some(wanted) = missing.file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut dir = missing.to_path_buf();
    while dir.pop() {
        if dir.is_dir() {
            break;
        }
    }
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let budget = wanted.chars().count() / 3 + 1;
        let mut scored: Vec<(usize, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().to_lowercase();
                let distance = levenshtein(&name, &wanted);
                (distance <= budget.max(2)).then(|| (distance, entry.path()))
            })
            .collect();
        scored.sort();
        found.extend(scored.into_iter().map(|(_, path)| path));
    }
    // The same name elsewhere: a model often guesses the directory wrong, not the file name.
    let walker = ignore::WalkBuilder::new(root).require_git(false).build();
    for entry in walker.filter_map(Result::ok).take(20_000) {
        if found.len() >= 5 {
            break;
        }
        let name_matches = entry.file_name().to_string_lossy().to_lowercase() == wanted;
        if name_matches && !found.iter().any(|p| p == entry.path()) {
            found.push(entry.path().to_path_buf());
        }
    }
    found.truncate(5);
    found.iter().map(|path| display(root, path)).collect()
}

/// Edit distance between two short strings (names), by characters.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(a: &str, b: &str, expect: usize) {
        assert_eq!(levenshtein(a, b), expect);
    }

    #[test]
    fn edit_distance() {
        check("app.rs", "app.rs", 0);
        check("ap.rs", "app.rs", 1);
        check("main.rs", "mian.rs", 2);
        check("", "abc", 3);
    }
}
