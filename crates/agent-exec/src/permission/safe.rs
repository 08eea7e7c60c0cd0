//! Commands that only read, and so run unasked in every mode: Codex's `is_known_safe_command`
//! list with its argument checks, plus `rg`/`fd` and version queries.
//!
//! The check sees the words of one segment after wrappers are stripped. A program given with a
//! path (`./sed`) is never on the list: the list names programs found on `PATH`.

/// Programs that are read-only whatever their arguments.
const ALWAYS: &[&str] = &[
    "basename", "cat", "cd", "cmp", "cut", "df", "diff", "dirname", "du", "echo", "expr", "false",
    "file", "grep", "head", "id", "ls", "nl", "numfmt", "paste", "popd", "pushd", "pwd",
    "readlink", "realpath", "rev", "seq", "stat", "tac", "tail", "tr", "true", "uname", "uniq",
    "wc", "which", "whoami",
];

/// Programs whose `--version` is a safe query.
const VERSIONED: &[&str] = &[
    "cargo", "rustc", "rustup", "git", "node", "npm", "python", "python3", "go", "java", "gcc",
    "clang", "make", "cmake", "rg", "fd",
];

/// Whether the segment's words form a command known to only read.
pub(crate) fn is_safe(words: &[String]) -> bool {
    let Some(program) = words.first() else { return false };
    let args = &words[1..];
    let has = |flags: &[&str]| {
        args.iter()
            .any(|arg| flags.iter().any(|flag| arg == flag || arg.starts_with(&format!("{flag}="))))
    };
    if args.len() == 1 && (args[0] == "--version" || args[0] == "-V") {
        return VERSIONED.contains(&program.as_str());
    }
    match program.as_str() {
        program if ALWAYS.contains(&program) => true,
        "sort" => !has(&["-o", "--output"]) && !args.iter().any(|a| a.starts_with("-o")),
        "base64" => !has(&["-o", "--output"]),
        "find" => !has(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0",
            "-fprintf",
        ]),
        "fd" => !has(&["-x", "--exec", "-X", "--exec-batch"]),
        "rg" => !has(&["--pre", "--hostname-bin", "-z", "--search-zip"]),
        "sed" => is_safe_sed(args),
        "git" => is_safe_git(args),
        _ => false,
    }
}

/// `sed -n <line>p` or `sed -n <from>,<to>p`, optionally with files: prints lines, nothing else.
fn is_safe_sed(args: &[String]) -> bool {
    let [flag, script, ..] = args else { return false };
    if flag != "-n" {
        return false;
    }
    let Some(range) = script.strip_suffix('p') else { return false };
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let range_ok = match range.split_once(',') {
        Some((from, to)) => is_number(from) && (is_number(to) || to == "$"),
        None => is_number(range),
    };
    range_ok && args[2..].iter().all(|file| !file.starts_with('-'))
}

/// `git status|log|diff|show` and listing `git branch`, with no global options (such as `-c` or
/// `--git-dir`) before the subcommand and no option that runs an external program or writes.
fn is_safe_git(args: &[String]) -> bool {
    let Some(sub) = args.first() else { return false };
    let rest = &args[1..];
    let forbidden = ["--output", "--ext-diff", "--textconv", "--exec", "-c", "--config"];
    if rest
        .iter()
        .any(|arg| forbidden.iter().any(|f| arg == f || arg.starts_with(&format!("{f}="))))
    {
        return false;
    }
    match sub.as_str() {
        "status" | "log" | "diff" | "show" => true,
        "branch" => {
            let listing = [
                "--list",
                "-l",
                "--show-current",
                "-a",
                "--all",
                "-r",
                "--remotes",
                "-v",
                "-vv",
                "--verbose",
                "--no-color",
            ];
            rest.iter().all(|arg| listing.contains(&arg.as_str()))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(command: &str, expect: bool) {
        let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        assert_eq!(is_safe(&words), expect, "{command}");
    }

    #[test]
    fn read_only_commands_are_safe() {
        check("ls -la", true);
        check("cat src/lib.rs", true);
        check("grep -rn foo src", true);
        check("git status", true);
        check("git diff HEAD~1", true);
        check("git log --oneline -5", true);
        check("git branch --show-current", true);
        check("rg -n foo", true);
        check("find . -name x", true);
        check("sed -n 1,20p file.rs", true);
        check("cargo --version", true);
    }

    #[test]
    fn writing_or_executing_commands_are_not_safe() {
        check("rm -rf x", false);
        check("./sed -n 1p", false);
        check("git push", false);
        check("git branch new-name", false);
        check("git -c core.pager=x log", false);
        check("git diff --output=/tmp/x", false);
        check("find . -delete", false);
        check("find . -exec rm {} ;", false);
        check("rg --pre cat foo", false);
        check("sed -i s/a/b/ f", false);
        check("sed -n 1p;w /tmp/x", false);
        check("sort -o out in", false);
        check("base64 -o out in", false);
        check("python3 --version", true);
        check("bash --version", false);
        check("cargo build", false);
    }
}
