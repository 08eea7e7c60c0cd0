//! Project instructions: the `AGENTS.md` files from the repository root down to the workspace,
//! plus the user's own, sent after the instructions on every request.
//!
//! The files are read once, when a session starts, most general first: the user's own file (in
//! the configuration directory), then the repository root's, then each directory's on the way
//! down to the workspace. Each is introduced by its path, so the model knows which directory a
//! rule is about, and a later (more specific) file can override an earlier one. The whole text
//! is capped at [`PROJECT_DOC_CAP`] bytes with a notice saying what was left out.

use std::path::{Path, PathBuf};

/// The file name looked for in every directory.
pub const FILE_NAME: &str = "AGENTS.md";

/// The most bytes of project instructions sent.
pub const PROJECT_DOC_CAP: usize = 32 * 1024;

/// The project instructions found for a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectDocs {
    /// The files read, in the order they are sent.
    pub files: Vec<PathBuf>,
    /// The text to send after the instructions (empty when no file was found).
    pub text: String,
    /// How many bytes the cap left out.
    pub cut_bytes: usize,
}

impl ProjectDocs {
    /// Finds and reads the files for `workspace`: `AGENTS.md` in every directory from the
    /// repository root (the nearest ancestor holding `.git`; without one, the workspace alone)
    /// down to the workspace, after `user_dir`'s own `AGENTS.md` when given. Unreadable files
    /// are skipped.
    pub fn discover(workspace: &Path, user_dir: Option<&Path>) -> Self {
        let workspace = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
        let root = workspace
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&workspace)
            .to_path_buf();
        let mut dirs: Vec<&Path> =
            workspace.ancestors().take_while(|dir| dir.starts_with(&root)).collect();
        dirs.reverse();
        let candidates = user_dir.into_iter().chain(dirs).map(|dir| dir.join(FILE_NAME));
        let mut docs = Self::default();
        let mut body = String::new();
        for path in candidates {
            if docs.files.contains(&path) || !path.is_file() {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else { continue };
            let text = String::from_utf8_lossy(&bytes);
            body.push_str(&format!("\n## {}\n\n{}\n", path.display(), text.trim_end()));
            docs.files.push(path);
        }
        if docs.files.is_empty() {
            return docs;
        }
        if body.len() > PROJECT_DOC_CAP {
            let mut end = PROJECT_DOC_CAP;
            while !body.is_char_boundary(end) {
                end -= 1;
            }
            docs.cut_bytes = body.len() - end;
            body.truncate(end);
            body.push_str(&format!(
                "\n\n[harness] Project instructions are capped at {} KiB; the last {} bytes were \
                 left out. Read the files above with read_file for the rest.\n",
                PROJECT_DOC_CAP / 1024,
                docs.cut_bytes
            ));
        }
        docs.text = format!(
            "# Project instructions\n\nThese come from the AGENTS.md files below, most general \
             first; where they disagree, the later (more specific) file wins.\n{body}"
        );
        docs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn files_are_read_root_first_up_to_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        // Above the repository: never read.
        write(&top.join("AGENTS.md"), "OUTSIDE");
        std::fs::create_dir_all(top.join("repo/.git")).unwrap();
        write(&top.join("repo/AGENTS.md"), "ROOT rules");
        write(&top.join("repo/crates/AGENTS.md"), "CRATES rules");
        std::fs::create_dir_all(top.join("repo/crates/one/src")).unwrap();
        write(&top.join("user/AGENTS.md"), "USER rules");
        let docs = ProjectDocs::discover(&top.join("repo/crates/one/src"), Some(&top.join("user")));
        assert_eq!(
            docs.files,
            vec![
                top.join("user/AGENTS.md"),
                top.join("repo/AGENTS.md"),
                top.join("repo/crates/AGENTS.md")
            ]
        );
        let order =
            ["USER rules", "ROOT rules", "CRATES rules"].map(|t| docs.text.find(t).unwrap());
        assert!(order.is_sorted(), "{}", docs.text);
        assert!(!docs.text.contains("OUTSIDE"));
        assert!(docs.text.contains(&format!("## {}", top.join("repo/crates/AGENTS.md").display())));
        assert_eq!(docs.cut_bytes, 0);
    }

    #[test]
    fn without_files_there_is_no_text() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ProjectDocs::discover(dir.path(), None), ProjectDocs::default());
    }

    #[test]
    fn the_text_is_capped_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        write(&dir.path().join("AGENTS.md"), &format!("FIRST {}LAST", "é".repeat(40_000)));
        let docs = ProjectDocs::discover(dir.path(), None);
        assert!(docs.text.contains("FIRST") && !docs.text.contains("LAST"));
        assert!(docs.cut_bytes > 40_000, "{}", docs.cut_bytes);
        assert!(docs.text.contains("capped at 32 KiB"), "{}", &docs.text[docs.text.len() - 300..]);
        assert!(docs.text.len() < PROJECT_DOC_CAP + 1000);
    }
}
