//! Shell command analysis: a command line parsed with `brush-parser` and cut into the simple
//! commands it runs, each judged on its own.
//!
//! `git status && rm -rf x` is two segments; a segment inside `$( … )`, behind `eval`, `sh -c`,
//! `xargs` or `find -exec` cannot be seen, so such a segment carries a danger that no allow rule
//! can approve. A command line that does not parse is never approved automatically.

use brush_parser::ast::{
    AndOr, AndOrList, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand,
};

/// One simple command of a command line, after wrappers such as `env X=1` or `timeout 5` are
/// stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The words with quotes removed, wrappers stripped; the first is the program.
    pub(crate) words: Vec<String>,
    /// Why no rule may approve this segment, if anything makes it opaque.
    pub(crate) danger: Option<&'static str>,
    /// Whether some word expands a variable or `~`, so its value is unknown before it runs.
    pub(crate) expands: bool,
    /// Files the segment writes through redirections (`>`, `>>`, `&>`), as written.
    pub(crate) writes: Vec<Target>,
}

/// A redirection target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The path with quotes removed.
    pub(crate) path: String,
    /// Whether the path depends on an expansion.
    pub(crate) expands: bool,
}

impl Segment {
    /// The words joined by single spaces: the text rules such as `Bash(cargo test *)` match.
    pub(crate) fn text(&self) -> String {
        self.words.join(" ")
    }

    fn opaque(what: &'static str) -> Self {
        Self { words: Vec::new(), danger: Some(what), expands: false, writes: Vec::new() }
    }
}

/// Longer command lines are not analysed (and so never approved by a rule).
const MAX_COMMAND_LEN: usize = 64 * 1024;

/// Deeper nesting of `(`, `{` and backticks is not analysed.
const MAX_NESTING: usize = 64;

/// A command line cut into segments, or the reason it could not be parsed.
pub(crate) fn analyze(command: &str) -> Result<Vec<Segment>, String> {
    if command.len() > MAX_COMMAND_LEN {
        return Err(format!("the command is longer than {MAX_COMMAND_LEN} bytes"));
    }
    // The parser recurses on nesting; refusing deep nesting up front keeps a crafted command from
    // exhausting the stack, which no panic handler could catch.
    let mut depth = 0usize;
    for byte in command.bytes() {
        match byte {
            b'(' | b'{' | b'`' => depth += 1,
            b')' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return Err(format!("the command nests deeper than {MAX_NESTING} levels"));
        }
    }
    let options = brush_parser::ParserOptions::default();
    let parse = || {
        let mut parser =
            brush_parser::Parser::new(std::io::Cursor::new(command.as_bytes()), &options);
        parser.parse_program()
    };
    // The parser is third-party code that may panic on input nobody tried; a panic is a parse
    // failure, which never approves anything.
    let program = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse)) {
        Ok(Ok(program)) => program,
        Ok(Err(err)) => return Err(err.to_string()),
        Err(_) => return Err("the shell parser failed on this command".to_owned()),
    };
    let mut out = Vec::new();
    for list in &program.complete_commands {
        walk_list(list, &mut out);
    }
    if out.is_empty() {
        return Err("the command line is empty".to_owned());
    }
    Ok(out)
}

fn walk_list(list: &CompoundList, out: &mut Vec<Segment>) {
    for item in &list.0 {
        walk_and_or(&item.0, out);
    }
}

fn walk_and_or(list: &AndOrList, out: &mut Vec<Segment>) {
    walk_pipeline(&list.first, out);
    for next in &list.additional {
        match next {
            AndOr::And(pipeline) | AndOr::Or(pipeline) => walk_pipeline(pipeline, out),
        }
    }
}

fn walk_pipeline(pipeline: &Pipeline, out: &mut Vec<Segment>) {
    for command in &pipeline.seq {
        match command {
            Command::Simple(simple) => out.push(simple_segment(simple)),
            Command::Compound(compound, redirects) => {
                walk_compound(compound, out);
                if let Some(redirects) = redirects {
                    // Redirections of a compound command apply to every segment inside it; a
                    // segment of its own carries them so they are judged once.
                    let mut carrier = Segment {
                        words: Vec::new(),
                        danger: None,
                        expands: false,
                        writes: Vec::new(),
                    };
                    for redirect in &redirects.0 {
                        apply_redirect(redirect, &mut carrier);
                    }
                    if carrier.danger.is_some() || !carrier.writes.is_empty() {
                        out.push(carrier);
                    }
                }
            }
            Command::Function(_) => out.push(Segment::opaque("a function definition")),
            Command::ExtendedTest(..) => out.push(Segment::opaque("a `[[ … ]]` test")),
        }
    }
}

fn walk_compound(compound: &CompoundCommand, out: &mut Vec<Segment>) {
    match compound {
        CompoundCommand::BraceGroup(group) => walk_list(&group.list, out),
        CompoundCommand::Subshell(subshell) => walk_list(&subshell.list, out),
        CompoundCommand::ForClause(clause) => {
            for value in clause.values.iter().flatten() {
                if scan_word(&value.value).substitution {
                    out.push(Segment::opaque("command substitution"));
                }
            }
            walk_list(&clause.body.list, out);
        }
        CompoundCommand::CaseClause(clause) => {
            if scan_word(&clause.value.value).substitution {
                out.push(Segment::opaque("command substitution"));
            }
            for case in &clause.cases {
                if let Some(cmd) = &case.cmd {
                    walk_list(cmd, out);
                }
            }
        }
        CompoundCommand::IfClause(clause) => {
            walk_list(&clause.condition, out);
            walk_list(&clause.then, out);
            for other in clause.elses.iter().flatten() {
                if let Some(condition) = &other.condition {
                    walk_list(condition, out);
                }
                walk_list(&other.body, out);
            }
        }
        CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
            walk_list(&clause.0, out);
            walk_list(&clause.1.list, out);
        }
        CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
            out.push(Segment::opaque("an arithmetic command"));
        }
        CompoundCommand::Coprocess(_) => out.push(Segment::opaque("a coprocess")),
    }
}

fn simple_segment(simple: &SimpleCommand) -> Segment {
    let mut seg = Segment { words: Vec::new(), danger: None, expands: false, writes: Vec::new() };
    let mut heredoc = false;
    let mut items = Vec::new();
    if let Some(prefix) = &simple.prefix {
        items.extend(prefix.0.iter().map(|item| (item, true)));
    }
    let name = simple.word_or_name.as_ref();
    let suffix = simple.suffix.iter().flat_map(|suffix| suffix.0.iter());
    let add_word = |seg: &mut Segment, raw: &str| {
        let word = scan_word(raw);
        if word.substitution {
            seg.danger = Some("command substitution");
        }
        seg.expands |= word.expands;
        seg.words.push(word.text);
    };
    for (item, in_prefix) in items {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                heredoc |= apply_redirect(redirect, &mut seg);
            }
            // Assignments before the program only set its environment; their values still
            // must not hide a command substitution.
            CommandPrefixOrSuffixItem::AssignmentWord(_, word) if in_prefix => {
                if scan_word(&word.value).substitution {
                    seg.danger = Some("command substitution");
                }
            }
            CommandPrefixOrSuffixItem::AssignmentWord(_, word)
            | CommandPrefixOrSuffixItem::Word(word) => add_word(&mut seg, &word.value),
            CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                seg.danger = Some("process substitution");
            }
        }
    }
    if let Some(name) = name {
        let before = seg.words.len();
        add_word(&mut seg, &name.value);
        if before == 0 && scan_word(&name.value).expands {
            seg.danger = Some("a program name computed at run time");
        }
    }
    for item in suffix {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                heredoc |= apply_redirect(redirect, &mut seg);
            }
            CommandPrefixOrSuffixItem::AssignmentWord(_, word)
            | CommandPrefixOrSuffixItem::Word(word) => add_word(&mut seg, &word.value),
            CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                seg.danger = Some("process substitution");
            }
        }
    }
    strip_wrappers(&mut seg);
    if seg.danger.is_none() {
        seg.danger = command_danger(&seg.words, heredoc);
    }
    seg
}

/// Records a redirection's effect on the segment; returns true for a here-document or string.
fn apply_redirect(redirect: &IoRedirect, seg: &mut Segment) -> bool {
    match redirect {
        IoRedirect::File(_, kind, target) => {
            let writes = match kind {
                IoFileRedirectKind::Write
                | IoFileRedirectKind::Append
                | IoFileRedirectKind::Clobber
                | IoFileRedirectKind::ReadAndWrite => true,
                IoFileRedirectKind::Read
                | IoFileRedirectKind::DuplicateInput
                | IoFileRedirectKind::DuplicateOutput => false,
            };
            match target {
                IoFileRedirectTarget::Filename(word) => {
                    let word = scan_word(&word.value);
                    if word.substitution {
                        seg.danger = Some("command substitution");
                    }
                    if writes {
                        seg.writes.push(Target { path: word.text, expands: word.expands });
                    }
                }
                IoFileRedirectTarget::Duplicate(word) => {
                    if scan_word(&word.value).substitution {
                        seg.danger = Some("command substitution");
                    }
                }
                IoFileRedirectTarget::Fd(_) => {}
                IoFileRedirectTarget::ProcessSubstitution(..) => {
                    seg.danger = Some("process substitution");
                }
            }
            false
        }
        IoRedirect::HereDocument(_, doc) => {
            if doc.requires_expansion && scan_word(&doc.doc.value).substitution {
                seg.danger = Some("command substitution");
            }
            true
        }
        IoRedirect::HereString(_, word) => {
            if scan_word(&word.value).substitution {
                seg.danger = Some("command substitution");
            }
            true
        }
        IoRedirect::OutputAndError(word, _) => {
            let word = scan_word(&word.value);
            if word.substitution {
                seg.danger = Some("command substitution");
            }
            seg.writes.push(Target { path: word.text, expands: word.expands });
            false
        }
    }
}

/// Removes `env VAR=… `, `timeout N`, `nice [-n N]` and `time [-p]` in front of the real
/// program, so that rules and the safe list see the command that actually runs.
fn strip_wrappers(seg: &mut Segment) {
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
                        // Other options (`-S` splits a string into a command) hide what runs.
                        seg.danger = Some("an `env` option that changes how the command runs");
                        return;
                    } else if word.contains('=') && !word.starts_with('=') {
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
fn command_danger(words: &[String], heredoc: bool) -> Option<&'static str> {
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

/// A shell word with its quotes removed and what it expands.
struct ScannedWord {
    text: String,
    substitution: bool,
    expands: bool,
}

/// Removes quotes the way the shell does and notes `$( … )`, backticks, `$VAR` and `~`.
fn scan_word(raw: &str) -> ScannedWord {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut out =
        ScannedWord { text: String::with_capacity(raw.len()), substitution: false, expands: false };
    let mut quote = Quote::None;
    let mut chars = raw.chars().peekable();
    if raw.starts_with('~') {
        out.expands = true;
    }
    while let Some(c) = chars.next() {
        match (&quote, c) {
            (Quote::Single, '\'') => quote = Quote::None,
            (Quote::Single, c) => out.text.push(c),
            (Quote::None, '\'') => quote = Quote::Single,
            (Quote::None, '"') => quote = Quote::Double,
            (Quote::Double, '"') => quote = Quote::None,
            (Quote::None, '\\') => {
                if let Some(next) = chars.next() {
                    out.text.push(next);
                }
            }
            (Quote::Double, '\\') => match chars.peek() {
                Some(&next) if matches!(next, '$' | '`' | '"' | '\\' | '\n') => {
                    chars.next();
                    out.text.push(next);
                }
                _ => out.text.push('\\'),
            },
            (_, '`') => {
                out.substitution = true;
                out.text.push(c);
            }
            (_, '$') => {
                match chars.peek() {
                    Some('(') => out.substitution = true,
                    _ => out.expands = true,
                }
                out.text.push(c);
            }
            (_, c) => out.text.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders segments as `words|danger|writes` lines, one per segment.
    #[track_caller]
    fn check(command: &str, expect: &[&str]) {
        let got: Vec<String> = match analyze(command) {
            Ok(segments) => segments
                .iter()
                .map(|seg| {
                    let writes: Vec<&str> = seg.writes.iter().map(|t| t.path.as_str()).collect();
                    format!("{}|{}|{}", seg.text(), seg.danger.unwrap_or(""), writes.join(","))
                })
                .collect(),
            Err(_) => vec!["<parse error>".to_owned()],
        };
        assert_eq!(got, expect, "{command}");
    }

    #[test]
    fn compound_commands_split_into_segments() {
        check("git status && rm -rf x", &["git status||", "rm -rf x||"]);
        check("ls | wc -l; echo done", &["ls||", "wc -l||", "echo done||"]);
        check("a || b & c", &["a||", "b||", "c||"]);
        check("(cd src && ls)", &["cd src||", "ls||"]);
        check("if true; then rm x; fi", &["true||", "rm x||"]);
        check("for f in a b; do cat $f; done", &["cat $f||"]);
    }

    #[test]
    fn quotes_are_removed() {
        check(r#"git commit -m "it's done""#, &["git commit -m it's done||"]);
        check("echo 'a  b' c\\ d", &["echo a  b c d||"]);
    }

    #[test]
    fn wrappers_are_stripped() {
        check("env RUST_LOG=1 cargo test", &["cargo test||"]);
        check("timeout 5 cargo test", &["cargo test||"]);
        check("timeout -s KILL 5s nice -n 10 time -p ls", &["ls||"]);
        check("FOO=1 BAR=2 ls", &["ls||"]);
    }

    #[test]
    fn opaque_constructs_are_dangers() {
        check("echo $(rm -rf /)", &["echo $(rm -rf /)|command substitution|"]);
        check("echo `id`", &["echo `id`|command substitution|"]);
        check("eval ls", &["eval ls|`eval`|"]);
        check("bash -c 'rm x'", &["bash -c rm x|a shell running a `-c` string|"]);
        check("sh -lc ls", &["sh -lc ls|a shell running a `-c` string|"]);
        check("find . -exec rm {} \\;", &["find . -exec rm {} ;|`find -exec`|"]);
        check("ls | xargs rm", &["ls||", "xargs rm|`xargs`|"]);
        check("diff <(ls) b", &["diff b|process substitution|"]);
        check(
            "python3 <<EOF\nprint(1)\nEOF\n",
            &["python3|a here-document fed to an interpreter|"],
        );
        check("X=$(id) ls", &["ls|command substitution|"]);
        check("$CMD x", &["$CMD x|a program name computed at run time|"]);
    }

    #[test]
    fn redirections_are_recorded() {
        check("ls > out.txt 2>&1", &["ls||out.txt"]);
        check("echo x >> /etc/passwd", &["echo x||/etc/passwd"]);
        check("cat < in.txt", &["cat||"]);
        check("{ ls; } > log", &["ls||", "||log"]);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_command_lines_never_panic(command in r#"[a-z $()`'"|&;<>{}\\\n=*-]{0,40}"#) {
            let _ = analyze(&command);
        }
    }

    #[test]
    fn deep_nesting_and_huge_commands_are_refused() {
        assert!(analyze(&"(".repeat(10_000)).is_err());
        assert!(analyze(&"$(".repeat(100)).is_err());
        assert!(analyze(&"ls ".repeat(30_000)).is_err());
    }

    #[test]
    fn bad_input_is_a_parse_error() {
        check("echo 'unterminated", &["<parse error>"]);
        check("if then fi", &["<parse error>"]);
        check("", &["<parse error>"]);
    }
}
