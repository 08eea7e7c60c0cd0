//! The REPL's Tab completion of slash commands: the built-ins and the custom commands.

use agent_session::commands::Commands;

/// The REPL's completion of slash commands: Tab after `/` offers the built-ins and the custom
/// commands that start with what was typed.
pub(crate) struct SlashCompleter {
    names: Vec<String>,
}

impl SlashCompleter {
    /// Completes `builtins` and `commands`' names.
    pub(crate) fn new(builtins: &[&str], commands: &Commands) -> Self {
        let mut names: Vec<String> = builtins.iter().map(|name| (*name).to_owned()).collect();
        names.extend(commands.list.iter().map(|command| command.name.clone()));
        Self { names }
    }

    /// The names that complete `line` up to `pos`, and where the replaced word starts.
    fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let typed = &line[..pos];
        let Some(word) = typed.strip_prefix('/').filter(|word| !word.contains(char::is_whitespace))
        else {
            return (pos, Vec::new());
        };
        let found =
            self.names.iter().filter(|name| name.starts_with(word)).map(|name| format!("/{name}"));
        (0, found.collect())
    }
}

impl rustyline::completion::Completer for SlashCompleter {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates(line, pos))
    }
}

impl rustyline::hint::Hinter for SlashCompleter {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for SlashCompleter {}
impl rustyline::validate::Validator for SlashCompleter {}
impl rustyline::Helper for SlashCompleter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_completes_builtins_and_custom_commands() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("git")).unwrap();
        std::fs::write(dir.path().join("git/commit.md"), "Commit the staged changes.\n").unwrap();
        let commands = Commands::discover(&[(dir.path().to_path_buf(), false)]);
        let completer = SlashCompleter::new(&["help", "git-log"], &commands);
        assert_eq!(
            completer.candidates("/gi", 3),
            (0, vec!["/git-log".into(), "/git:commit".into()])
        );
        assert_eq!(completer.candidates("/git:c", 6), (0, vec!["/git:commit".into()]));
        assert_eq!(completer.candidates("/help me", 8).1, Vec::<String>::new());
        assert_eq!(completer.candidates("plain", 5).1, Vec::<String>::new());
    }
}
