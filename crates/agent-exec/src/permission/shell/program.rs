//! What the program of one segment is once wrappers are stripped, and what the shell built-ins
//! that change later segments (`export`, `cd`) do.

use super::{Assign, Segment};

/// Removes `env VAR=… `, `timeout N`, `nice [-n N]` and `time [-p]` in front of the real
/// program, so that rules and the safe list see the command that actually runs. The variables
/// `env` sets are kept in the segment's `assigns`, where they are judged.
pub(super) fn strip_wrappers(seg: &mut Segment) {
    loop {
        let Some(program) = seg.words.first() else { return };
        let skip = match program.as_str() {
            "env" => {
                let mut idx = 1;
                while let Some(word) = seg.words.get(idx) {
                    if word == "-i" || word == "-" || word == "--ignore-environment" {
                        idx += 1;
                    } else if word == "-u" || word == "--unset" {
                        idx += 2;
                    } else if word.starts_with('-') {
                        // Other options (`-S` splits a string into a command, `-C` changes the
                        // directory) hide what runs.
                        seg.danger = Some("an `env` option that changes how the command runs");
                        return;
                    } else if let Some(assign) = Assign::parse(word) {
                        seg.assigns.push(assign);
                        idx += 1;
                    } else {
                        break;
                    }
                }
                idx
            }
            "timeout" => {
                let mut idx = 1;
                while let Some(word) = seg.words.get(idx) {
                    if word == "-s" || word == "-k" || word == "--signal" || word == "--kill-after"
                    {
                        idx += 2;
                    } else if word.starts_with('-') {
                        idx += 1;
                    } else {
                        break;
                    }
                }
                // The duration.
                idx + 1
            }
            "nice" => match seg.words.get(1).map(String::as_str) {
                Some("-n") => 3,
                Some(word) if word.starts_with('-') => 2,
                _ => 1,
            },
            "time" => match seg.words.get(1).map(String::as_str) {
                Some("-p") => 2,
                _ => 1,
            },
            _ => return,
        };
        let skip = skip.min(seg.words.len());
        seg.words.drain(..skip);
    }
}

/// The variables an `export`/`declare`/`typeset`/`local`/`readonly` segment sets, or `None`
/// when the segment is another command.
pub(super) fn declared(words: &[String]) -> Option<Vec<Assign>> {
    let program = words.first()?;
    if !matches!(program.as_str(), "export" | "declare" | "typeset" | "local" | "readonly") {
        return None;
    }
    // Options and bare names (`export PATH`, which exports the value the shell already has)
    // set nothing new.
    Some(
        words[1..]
            .iter()
            .filter(|word| !word.starts_with('-'))
            .filter_map(|w| Assign::parse(w))
            .collect(),
    )
}

/// Where a `cd`/`pushd`/`popd` segment moves the shell.
pub(super) enum Move {
    /// Not a directory change.
    Stay,
    /// To this path, relative to the current directory (or absolute).
    To(String),
    /// Somewhere the judge cannot know before the line runs: `cd` alone (`$HOME`), `cd -`,
    /// `popd`, `pushd +1`, or a target that expands a variable.
    Unknown,
}

/// The directory change a segment makes.
pub(super) fn directory_move(seg: &Segment) -> Move {
    let Some(program) = seg.words.first() else { return Move::Stay };
    match program.as_str() {
        "cd" | "pushd" => {}
        "popd" => return Move::Unknown,
        _ => return Move::Stay,
    }
    // `cd "$X"`, `cd ~/x`, `cd $(…)`: the target is known only when the line runs.
    if seg.expands || seg.danger.is_some() {
        return Move::Unknown;
    }
    let mut args = seg.words[1..].iter().map(String::as_str);
    let mut target = None;
    while let Some(arg) = args.next() {
        if arg == "--" {
            target = args.next();
            break;
        }
        if arg == "-" {
            return Move::Unknown;
        }
        if arg.len() > 1 && (arg.starts_with('-') || arg.starts_with('+')) {
            // `pushd +1`/`-1` rotate the directory stack; `-L`, `-P`, `-e`, `-@` and pushd's
            // `-n` are options.
            if arg[1..].bytes().all(|b| b.is_ascii_digit()) {
                return Move::Unknown;
            }
            continue;
        }
        target = Some(arg);
        break;
    }
    match target {
        Some(target) if !target.is_empty() => Move::To(target.to_owned()),
        _ => Move::Unknown,
    }
}

/// Programs that run code from their arguments or standard input.
pub(crate) const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "python",
    "python3",
    "node",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "lua",
    "Rscript",
    "osascript",
];

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish"];

/// Why a command can never be approved by a rule, judged on its stripped words.
pub(super) fn command_danger(words: &[String], heredoc: bool) -> Option<&'static str> {
    let program = words.first()?.as_str();
    let args = &words[1..];
    match program {
        "eval" => Some("`eval`"),
        "exec" => Some("`exec`"),
        "source" | "." => Some("`source`"),
        "xargs" => Some("`xargs`"),
        "sudo" | "doas" | "su" => Some("a privilege change"),
        "find" => {
            let exec = ["-exec", "-execdir", "-ok", "-okdir"];
            args.iter().any(|arg| exec.contains(&arg.as_str())).then_some("`find -exec`")
        }
        _ if SHELLS.contains(&program)
            && args.iter().any(|arg| {
                arg == "-c" || (arg.starts_with('-') && !arg.starts_with("--") && arg.contains('c'))
            }) =>
        {
            Some("a shell running a `-c` string")
        }
        _ if heredoc && INTERPRETERS.contains(&program) => {
            Some("a here-document fed to an interpreter")
        }
        _ => None,
    }
}
