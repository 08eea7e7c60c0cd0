//! Custom slash commands: Markdown prompts the user runs by name (`/review`, `/git:commit msg`).
//!
//! Found in `.agent/commands/` (the project's), the config directory's `commands/`, then Claude
//! Code's `.claude/commands/` and `~/.claude/commands/`; a sub-folder is a namespace
//! (`git/commit.md` is `/git:commit`) and the first file of a name wins. The frontmatter's
//! `description` and `argument-hint` show in `/help`; the body is the prompt, with `$ARGUMENTS`
//! replaced by everything after the name and `$1`…`$9` by its words (quotes group words).
//! A placeholder used again may repeat the arguments only so far ([`MAX_REPEATED_BYTES`]): a
//! project's command is untrusted text, and 6,000 `$ARGUMENTS` would turn a pasted megabyte into
//! gigabytes.
//! A command is only text for the model: any other field (Claude Code's `allowed-tools`,
//! `model`) is ignored, so a command never widens a permission.

use std::path::{Path, PathBuf};

use agent_skills::frontmatter;

/// The largest command file read, in bytes.
pub const MAX_COMMAND_BYTES: u64 = 64 * 1024;

/// How many bytes the placeholders used a second time or more may substitute in all: a command
/// file's size. The first use of each (`$ARGUMENTS`, `$1`…`$9`) is free, which is at most twice
/// the arguments; a body that repeats them past this is refused ([`ExpansionTooLarge`]) rather
/// than expanded.
pub const MAX_REPEATED_BYTES: usize = 64 * 1024;

/// How deep namespaces go below a commands folder.
const MAX_DEPTH: usize = 3;

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// `git:commit` for `git/commit.md`.
    pub name: String,
    /// The frontmatter's `description`, shown in `/help`.
    pub description: Option<String>,
    /// The frontmatter's `argument-hint`, shown after the name.
    pub argument_hint: Option<String>,
    /// The prompt, before substitution.
    pub body: String,
    /// The Markdown file the command was read from.
    pub path: PathBuf,
    /// Whether it came with the repository.
    pub project: bool,
    /// The file's whole text, for trust by content.
    pub text: String,
}

/// The session's custom commands.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    /// Every command found, the first root's winning a name.
    pub list: Vec<Command>,
    /// Files that could not be used, with the reason.
    pub refused: Vec<(PathBuf, Unusable)>,
}

/// Why a command file was not used.
#[derive(Debug, Clone)]
pub enum Unusable {
    /// The file could not be read (shared, since an I/O error cannot be cloned).
    Io(std::sync::Arc<std::io::Error>),
    /// The file is larger than [`MAX_COMMAND_BYTES`] (its size).
    TooBig(u64),
    /// Its frontmatter was refused for its shape (an alias, nesting too deep).
    Hostile(frontmatter::SkillProblem),
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(err) => write!(f, "{err}"),
            Self::TooBig(size) => {
                write!(f, "is {size} bytes, over the {MAX_COMMAND_BYTES} byte limit")
            }
            Self::Hostile(problem) => write!(f, "{problem}"),
        }
    }
}

impl std::error::Error for Unusable {}

/// A command whose repeated placeholders would substitute more than [`MAX_REPEATED_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "/{name} was not run: its placeholders repeat the {args} bytes of arguments past {limit} bytes"
)]
pub struct ExpansionTooLarge {
    /// The command's name.
    pub name: String,
    /// The length of the arguments, in bytes.
    pub args: usize,
    /// The most repeated placeholders may substitute, in bytes ([`MAX_REPEATED_BYTES`]).
    pub limit: usize,
}

impl Commands {
    /// Reads the commands folders, in precedence order: `(folder, from the project)`.
    pub fn discover(roots: &[(PathBuf, bool)]) -> Self {
        let mut commands = Self::default();
        for (root, project) in roots {
            let mut files = Vec::new();
            walk(root, 0, &mut files);
            files.sort();
            for path in files {
                let Some(name) = name_of(root, &path) else { continue };
                if commands.get(&name).is_some() {
                    continue;
                }
                match read(&path).and_then(|text| parse(name, &text, path.clone(), *project)) {
                    Ok(command) => commands.list.push(command),
                    Err(why) => commands.refused.push((path, why)),
                }
            }
        }
        commands.list.sort_by(|a, b| a.name.cmp(&b.name));
        commands
    }

    /// The command called `name` (`git:commit` for `git/commit.md`).
    pub fn get(&self, name: &str) -> Option<&Command> {
        self.list.iter().find(|command| command.name == name)
    }

    /// The prompt a line typed as `/name args` runs, when `name` is a custom command.
    pub fn expand_line(&self, line: &str) -> Option<Result<String, ExpansionTooLarge>> {
        let rest = line.trim().strip_prefix('/')?;
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        Some(self.get(name)?.expand(args.trim()))
    }

    /// `/help`'s section, one line each; empty without commands.
    pub fn help(&self) -> String {
        let mut text = String::new();
        for command in &self.list {
            let hint =
                command.argument_hint.as_deref().map(|h| format!(" {h}")).unwrap_or_default();
            let about = command.description.as_deref().unwrap_or("(no description)");
            let line = format!("  /{}{hint}  {about}", command.name);
            text.push_str(&crate::visible::visible_line(&line));
            text.push('\n');
        }
        text
    }
}

/// The custom commands' part of `/help`: a heading and one line each, or nothing.
pub fn help_section(commands: &Commands) -> String {
    if commands.list.is_empty() {
        return String::new();
    }
    format!("\nCustom commands (docs/skills.md):\n{}", commands.help().trim_end())
}

fn walk(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() && depth < MAX_DEPTH {
            walk(&path, depth + 1, files);
        } else if path.extension().is_some_and(|ext| ext == "md") && path.is_file() {
            files.push(path);
        }
    }
}

/// `git:commit` for `root/git/commit.md`; `None` for a name that could not be typed.
fn name_of(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?.with_extension("");
    let parts: Vec<&str> = relative.iter().map(|part| part.to_str()).collect::<Option<_>>()?;
    let name = parts.join(":");
    let typeable = name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'));
    (typeable && !name.is_empty()).then_some(name)
}

fn read(path: &Path) -> Result<String, Unusable> {
    let size = std::fs::metadata(path).map_err(|err| Unusable::Io(err.into()))?.len();
    if size > MAX_COMMAND_BYTES {
        return Err(Unusable::TooBig(size));
    }
    std::fs::read_to_string(path).map_err(|err| Unusable::Io(err.into()))
}

pub(crate) fn parse(
    name: String,
    text: &str,
    path: PathBuf,
    project: bool,
) -> Result<Command, Unusable> {
    // A command without frontmatter is all prompt.
    let (description, argument_hint, body) = match frontmatter::parse(text) {
        Ok(front) => {
            // Claude Code's hints are often written bare, `[message]`, which YAML reads as a list.
            let hint = match front.get("argument-hint") {
                Some(frontmatter::Value::List(items)) => Some(format!("[{}]", items.join(", "))),
                _ => front.text("argument-hint").map(Into::into),
            };
            (front.text("description").map(Into::into), hint, front.body)
        }
        Err(frontmatter::SkillProblem::NoFrontmatter) => (None, None, text.trim().to_owned()),
        // An alias bomb or a nesting too deep is refused, not run as a prompt without its fields.
        Err(refused @ frontmatter::SkillProblem::Refused(_)) => {
            return Err(Unusable::Hostile(refused));
        }
        // Frontmatter that is not YAML (`argument-hint: [a] [b]`) is still not prompt text.
        Err(_) => (None, None, after_frontmatter(text).trim().to_owned()),
    };
    Ok(Command { name, description, argument_hint, body, path, project, text: text.to_owned() })
}

/// The text after the closing `---` line, or all of it when there is none.
fn after_frontmatter(text: &str) -> &str {
    let mut at = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        at += line.len();
        if index > 0 && line.trim_end() == "---" {
            return &text[at..];
        }
    }
    text
}

impl Command {
    /// The prompt for `args`: `$ARGUMENTS` is all of them, `$1`…`$9` one word each (empty when
    /// missing), in one pass, so an argument holding `$1` is not expanded again. A body that
    /// names no argument gets them appended (as Claude Code does), so none is lost. Refused
    /// when placeholders used again would substitute more than [`MAX_REPEATED_BYTES`], so a
    /// prompt is at most the body, twice the arguments and 64 KiB.
    pub fn expand(&self, args: &str) -> Result<String, ExpansionTooLarge> {
        self.expand_within(args, MAX_REPEATED_BYTES)
    }

    /// [`Command::expand`] with the most repeated placeholders may substitute, in bytes, as a
    /// parameter (the fuzz target explores small limits with small inputs).
    pub(crate) fn expand_within(
        &self,
        args: &str,
        limit: usize,
    ) -> Result<String, ExpansionTooLarge> {
        let words = split_words(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut rest = self.body.as_str();
        let mut used = false;
        // `$ARGUMENTS` is slot 0, `$1`…`$9` slots 1 to 9.
        let mut seen = [false; 10];
        let mut repeated = 0usize;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (slot, text, tail) = if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                (0, args, tail)
            } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
                let slot = digit as usize - '0' as usize;
                (slot, words.get(slot - 1).map_or("", String::as_str), &after[1..])
            } else {
                out.push('$');
                rest = after;
                continue;
            };
            // Counted before it is copied, so a refused prompt is never built.
            if std::mem::replace(&mut seen[slot], true) {
                repeated = repeated.saturating_add(text.len());
            }
            if repeated > limit {
                let name = self.name.clone();
                return Err(ExpansionTooLarge { name, args: args.len(), limit });
            }
            out.push_str(text);
            rest = tail;
            used = true;
        }
        out.push_str(rest);
        if !used && !args.is_empty() {
            out.push_str("\n\nARGUMENTS: ");
            out.push_str(args);
        }
        Ok(out)
    }
}

/// Words split on white space, with `"…"` and `'…'` holding a word together.
fn split_words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for c in args.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (Some(open), c) if c == open => quote = None,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(body: &str) -> Command {
        parse("c".into(), body, PathBuf::from("/c.md"), false).unwrap()
    }

    #[track_caller]
    fn check(body: &str, args: &str, expect: &str) {
        assert_eq!(command(body).expand(args).unwrap(), expect);
    }

    #[test]
    fn arguments_are_substituted_once() {
        check(
            "Fix issue $1 in $2: $ARGUMENTS",
            "42 \"src/a b.rs\" x",
            "Fix issue 42 in src/a b.rs: 42 \"src/a b.rs\" x",
        );
        check("Only $3.", "a b", "Only .");
        check("Costs $5 and $$ and $x", "", "Costs  and $$ and $x");
        check("Say $1", "$ARGUMENTS $2", "Say $ARGUMENTS");
        check("No placeholders", "extra words", "No placeholders\n\nARGUMENTS: extra words");
        check("---\ndescription: d\n---\nBody $ARGUMENTS\n", "x", "Body x");
        check("---\nargument-hint: [a] [b]\n---\nBody $1\n", "x", "Body x");
    }

    /// Found in stating the `command` fuzz target's bound: 1,000 `$1` made a 1 KiB argument a
    /// 1 MiB prompt (and 6,000 `$ARGUMENTS` a pasted megabyte 6 GB). Now refused past 64 KiB of
    /// repeats, while every placeholder once, even with a megabyte of arguments, expands.
    #[test]
    fn regression_expansion_unbounded() {
        let word = "x".repeat(1024);
        let refused = command(&"$1".repeat(1000)).expand(&word).unwrap_err();
        assert_eq!((refused.args, refused.limit), (1024, MAX_REPEATED_BYTES));
        assert!(command(&"$ARGUMENTS".repeat(70)).expand(&word).is_err());
        assert!(command(&"$1".repeat(65)).expand(&word).is_ok());
        let pasted = "y".repeat(1 << 20);
        let honest = command("Review $1: $ARGUMENTS").expand(&pasted).unwrap();
        assert_eq!(honest.len(), "Review : ".len() + 2 * pasted.len());
    }

    #[test]
    fn folders_are_namespaces_and_the_first_root_wins() {
        let top = tempfile::tempdir().unwrap();
        let (project, user) = (top.path().join("p"), top.path().join("u"));
        std::fs::create_dir_all(project.join("git")).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            project.join("git/commit.md"),
            "---\ndescription: Commit\nargument-hint: [msg]\n---\nCommit $1",
        )
        .unwrap();
        std::fs::write(project.join("review.md"), "Review the diff").unwrap();
        std::fs::write(user.join("review.md"), "User review").unwrap();
        std::fs::write(user.join("notes.txt"), "not a command").unwrap();
        let commands = Commands::discover(&[(project, true), (user, false)]);
        let names: Vec<_> = commands.list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:commit", "review"]);
        assert_eq!(commands.get("review").unwrap().body, "Review the diff");
        assert_eq!(commands.expand_line("/git:commit  fix it "), Some(Ok("Commit fix".into())));
        assert_eq!(commands.expand_line("/nope x"), None);
        assert_eq!(commands.help(), "  /git:commit [msg]  Commit\n  /review  (no description)\n");
    }

    #[test]
    fn a_yaml_bomb_command_is_refused_and_named() {
        let top = tempfile::tempdir().unwrap();
        let mut bomb =
            String::from("---\ndescription: d\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
        for (prev, name) in ('a'..='h').zip('b'..='i') {
            bomb.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{prev}"); 9].join(",")
            ));
        }
        bomb.push_str("---\nBody\n");
        std::fs::write(top.path().join("bomb.md"), &bomb).unwrap();
        let deep =
            format!("---\ndescription: {}{}\n---\nBody\n", "[".repeat(30_000), "]".repeat(30_000));
        std::fs::write(top.path().join("deep.md"), deep).unwrap();
        std::fs::write(top.path().join("fine.md"), "---\ndescription: d\n---\nBody\n").unwrap();
        let commands = Commands::discover(&[(top.path().into(), true)]);
        let names: Vec<&str> = commands.list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fine"]);
        let why: Vec<String> = commands.refused.iter().map(|(_, why)| why.to_string()).collect();
        assert_eq!(
            why,
            [
                "frontmatter uses a yaml anchor or alias (`&name`, `*name`), which is not accepted",
                "frontmatter nests lists or mappings deeper than 16 levels",
            ]
        );
    }
}
