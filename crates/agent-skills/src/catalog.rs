//! The skills of a session: folders holding a `SKILL.md` (frontmatter with `name` and
//! `description`, instructions in the body, optional `scripts/`, `references/`, `assets/`),
//! found in a list of roots, validated, and offered to the model by name and description only.
//!
//! Finding the roots is the front end's: this module reads the folders it is given, in the order
//! given, and the first skill of a name wins (later ones are reported as shadowed).

use std::path::{Path, PathBuf};

use crate::frontmatter::{self, SkillProblem};

/// The name of the call that lists the skills the instructions do not describe.
pub const SKILLS_TOOL: &str = "skills";

/// The largest `SKILL.md` read, in bytes; a bigger one is refused.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// The most skill folders read from one root; the rest are reported as left out.
pub const MAX_SKILLS_PER_ROOT: usize = 1000;

/// Where a skill was found, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkillSource {
    /// The project's `.agents/skills/` or `.agent/skills/`.
    Project,
    /// The user's configuration directory's `skills/`.
    User,
    /// The project's `.claude/skills/` (Claude Code's place).
    ClaudeProject,
    /// `~/.claude/skills/`.
    ClaudeUser,
    /// An enabled plugin's skills (docs/plugins.md).
    Plugin,
}

impl SkillSource {
    /// The source's name in `agent skills list`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
            Self::ClaudeProject => "claude-project",
            Self::ClaudeUser => "claude-user",
            Self::Plugin => "plugin",
        }
    }

    /// Whether skills from here came with the repository (untrusted text) rather than from the
    /// user's own folders.
    pub fn is_project(self) -> bool {
        matches!(self, Self::Project | Self::ClaudeProject)
    }
}

impl std::fmt::Display for SkillSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A folder whose sub-folders are skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    /// The folder.
    pub dir: PathBuf,
    /// What kind of place it is.
    pub source: SkillSource,
}

/// A usable skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (`$name` in a prompt).
    pub name: String,
    /// What it is for and when to use it.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: PathBuf,
    /// Where it was found.
    pub source: SkillSource,
    /// `allowed-tools` as written: it narrows the tools of the turn the skill is invoked in
    /// ([`crate::tool_limit`]) and never approves a call.
    pub allowed_tools: Vec<String>,
    /// `license`, if given.
    pub license: Option<String>,
    /// The body (the instructions after the frontmatter).
    pub body: String,
    /// Broken rules that do not refuse it.
    pub warnings: Vec<SkillProblem>,
    /// The whole file's text, for trust by content.
    pub text: String,
}

impl Skill {
    /// The skill's folder (where the paths in its body are relative to).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    /// Reads and checks the skill in `dir`.
    pub fn load(dir: &Path, source: SkillSource) -> Result<Self, Vec<SkillProblem>> {
        let path = skill_file(dir).ok_or_else(|| {
            vec![SkillProblem::Unreadable("the folder has no SKILL.md".to_owned())]
        })?;
        let size = std::fs::metadata(&path)
            .map_err(|err| vec![SkillProblem::Unreadable(err.to_string())])?
            .len();
        if size > MAX_SKILL_FILE_BYTES {
            return Err(vec![SkillProblem::TooBig(size)]);
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|err| vec![SkillProblem::Unreadable(err.to_string())])?;
        let front = frontmatter::parse(&text).map_err(|problem| vec![problem])?;
        let folder = dir.file_name().map(|name| name.to_string_lossy().into_owned());
        let problems = frontmatter::validate(&front, folder.as_deref());
        if problems.iter().any(SkillProblem::refuses) {
            return Err(problems);
        }
        Ok(Self {
            name: front.text("name").unwrap_or_default().to_owned(),
            // One line in the list: a folded description may still hold line breaks.
            description: front
                .text("description")
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            source,
            allowed_tools: front.words("allowed-tools"),
            license: front.text("license").map(Into::into),
            body: front.body,
            warnings: problems,
            path,
            text,
        })
    }
}

/// `SKILL.md` in `dir`, or the lower-case `skill.md` the reference validator also takes.
fn skill_file(dir: &Path) -> Option<PathBuf> {
    ["SKILL.md", "skill.md"].into_iter().map(|name| dir.join(name)).find(|path| path.is_file())
}

/// A skill folder that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The folder.
    pub dir: PathBuf,
    /// Where it was found.
    pub source: SkillSource,
    /// Why (every broken rule, the refusing ones among them).
    pub problems: Vec<SkillProblem>,
}

/// The skills of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// Usable skills, in precedence order (root order, then by name within a root).
    pub skills: Vec<Skill>,
    /// Folders that hold a broken skill.
    pub refused: Vec<Refused>,
    /// Skills whose name an earlier one already had: (the later skill, the winner's path).
    pub shadowed: Vec<(Skill, PathBuf)>,
}

impl Catalog {
    /// Reads every skill folder under `roots`, in order. A root that does not exist is skipped;
    /// nothing here fails: a broken skill is a [`Refused`] entry.
    pub fn discover(roots: &[SkillRoot]) -> Self {
        let mut catalog = Self::default();
        let mut seen_roots: Vec<PathBuf> = Vec::new();
        for root in roots {
            let canonical = root.dir.canonicalize().unwrap_or_else(|_| root.dir.clone());
            if seen_roots.contains(&canonical) {
                continue;
            }
            seen_roots.push(canonical);
            let Ok(entries) = std::fs::read_dir(&root.dir) else { continue };
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect();
            dirs.sort();
            dirs.truncate(MAX_SKILLS_PER_ROOT);
            for dir in dirs {
                // A folder without a SKILL.md is not a skill (a README, a shared `lib/`).
                if skill_file(&dir).is_none() {
                    continue;
                }
                match Skill::load(&dir, root.source) {
                    Ok(skill) => catalog.add(skill),
                    Err(problems) => {
                        catalog.refused.push(Refused { dir, source: root.source, problems });
                    }
                }
            }
        }
        catalog
    }

    fn add(&mut self, skill: Skill) {
        match self.skills.iter().find(|known| known.name == skill.name) {
            Some(winner) => {
                let path = winner.path.clone();
                self.shadowed.push((skill, path));
            }
            None => self.skills.push(skill),
        }
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// Leaves out the skills `keep` says no to (a front end drops untrusted project skills).
    pub fn retain(&mut self, keep: impl Fn(&Skill) -> bool) {
        self.skills.retain(&keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn roots_are_read_in_order_and_broken_skills_are_reported() {
        let top = tempfile::tempdir().unwrap();
        let (project, user) = (top.path().join("p"), top.path().join("u"));
        write(&project, "pdf", "---\nname: pdf\ndescription: Project PDF.\n---\nP\n");
        write(&user, "pdf", "---\nname: pdf\ndescription: User PDF.\n---\nU\n");
        write(&user, "notes", "---\nname: notes\ndescription: |\n  Two\n  lines.\n---\nN\n");
        write(&user, "broken", "---\nname: Broken\n---\n");
        std::fs::create_dir_all(user.join("lib")).unwrap();
        let catalog = Catalog::discover(&[
            SkillRoot { dir: project.clone(), source: SkillSource::Project },
            SkillRoot { dir: user.clone(), source: SkillSource::User },
            SkillRoot { dir: top.path().join("missing"), source: SkillSource::ClaudeUser },
        ]);
        let names: Vec<_> = catalog
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.source, s.description.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("pdf", SkillSource::Project, "Project PDF."),
                ("notes", SkillSource::User, "Two lines.")
            ]
        );
        assert_eq!(catalog.shadowed.len(), 1);
        assert_eq!(catalog.shadowed[0].1, project.join("pdf/SKILL.md"));
        assert_eq!(catalog.refused.len(), 1);
        let words: Vec<_> = catalog.refused[0].problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "name `Broken` must be lowercase",
                "name `Broken` differs from its folder `broken`",
                "missing required field `description`"
            ]
        );
    }

    #[test]
    fn a_huge_skill_file_is_refused_unread() {
        let top = tempfile::tempdir().unwrap();
        write(
            top.path(),
            "big",
            &format!("---\nname: big\ndescription: d\n---\n{}", "x".repeat(300_000)),
        );
        let catalog =
            Catalog::discover(&[SkillRoot { dir: top.path().into(), source: SkillSource::User }]);
        assert!(matches!(catalog.refused[0].problems[..], [SkillProblem::TooBig(_)]));
    }
}
