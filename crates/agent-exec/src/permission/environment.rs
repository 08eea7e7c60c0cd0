//! Environment variables a command line sets for the programs it runs (`VAR=… cmd`,
//! `env VAR=… cmd`, `export VAR=…` earlier in the line): which are inert, and why the others need
//! approval.
//!
//! A variable can change what a program runs as much as its arguments can: `PATH` picks the
//! program, `LD_PRELOAD` loads code into it, `GIT_CONFIG_PARAMETERS` hands git a
//! `core.fsmonitor` command. So a segment that sets anything but an inert variable is never
//! approved by a rule that does not name the variable, nor counted as a read-only command.

/// Variables that only change how output is localised, coloured, laid out or how much a program
/// reports. None of them names a program, a library, a configuration file or code to run.
const INERT: &[&str] = &[
    // Locale and time zone (`LC_*` below). A locale or zone names data files, never code.
    "LANG",
    "LANGUAGE",
    "TZ",
    // Colour and terminal settings.
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLORTERM",
    "TERM",
    "COLUMNS",
    "LINES",
    "LS_COLORS",
    "GREP_COLOR",
    "GREP_COLORS",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    // Reporting.
    "CI",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
];

/// Whether setting `name` cannot change what a command runs or which files it touches.
pub(crate) fn is_inert(name: &str) -> bool {
    INERT.contains(&name) || name.strip_prefix("LC_").is_some_and(|rest| !rest.is_empty())
}

/// Why setting `name` needs approval, as a clause after "which", for the message the user and
/// the model read.
pub(crate) fn why(name: &str) -> &'static str {
    let upper = name.to_ascii_uppercase();
    match upper.as_str() {
        "PATH" => "changes which program a command name runs",
        "BASH_ENV" | "ENV" | "SHELLOPTS" | "BASHOPTS" | "PS4" | "PROMPT_COMMAND" | "IFS"
        | "CDPATH" => "changes what the shell runs or how it reads the command",
        "PAGER" | "EDITOR" | "VISUAL" | "BROWSER" | "SHELL" => "names a command that programs run",
        "NODE_OPTIONS" | "NODE_PATH" | "RUBYOPT" | "RUBYLIB" | "GCONV_PATH" | "HOME"
        | "XDG_CONFIG_HOME" => "makes programs load other code or configuration",
        _ if upper.starts_with("LD_") || upper.starts_with("DYLD_") => {
            "makes programs load other code"
        }
        _ if upper.starts_with("GIT_") => "gives git configuration, commands or another repository",
        _ if upper.starts_with("PYTHON") || upper.starts_with("PERL") => {
            "makes the interpreter load other code or options"
        }
        _ if upper.ends_with("_PAGER") || upper.ends_with("_EDITOR") => {
            "names a command that programs run"
        }
        _ => "is not on the short list of variables known to be inert",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, inert: bool) {
        assert_eq!(is_inert(name), inert, "{name}");
    }

    #[test]
    fn only_presentation_variables_are_inert() {
        for name in ["LANG", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR", "TERM", "CI", "RUST_BACKTRACE"]
        {
            check(name, true);
        }
        for name in [
            "PATH",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "GIT_CONFIG_PARAMETERS",
            "GIT_DIR",
            "BASH_ENV",
            "ENV",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "PERL5OPT",
            "RUBYOPT",
            "GIT_PAGER",
            "PAGER",
            "EDITOR",
            "VISUAL",
            "LC_",
            "RUST_LOG",
            "lang",
            "MY_SETTING",
        ] {
            check(name, false);
        }
    }

    #[test]
    fn reasons_name_the_family() {
        assert_eq!(why("PATH"), "changes which program a command name runs");
        assert_eq!(why("LD_PRELOAD"), "makes programs load other code");
        assert_eq!(
            why("GIT_CONFIG_COUNT"),
            "gives git configuration, commands or another repository"
        );
        assert_eq!(why("CARGO_PAGER"), "names a command that programs run");
        assert_eq!(why("FOO"), "is not on the short list of variables known to be inert");
    }
}
