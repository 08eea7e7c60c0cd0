//! Shell command analysis: a command line parsed with `brush-parser` and cut into the simple
//! commands it runs, each judged on its own.
//!
//! `git status && rm -rf x` is two segments; a segment inside `$( … )`, behind `eval`, `sh -c`,
//! `xargs` or `find -exec` cannot be seen, so such a segment carries a danger that no allow rule
//! can approve. A command line that does not parse is never approved automatically.
//!
//! The walk also follows what earlier segments do to later ones: variables assigned or exported
//! (`export PATH=…; ls`) travel with every later segment, and each `cd`/`pushd` adds the
//! directories later segments may run in. Both are over-approximations on purpose: a `cd` may
//! fail, so the directory before it stays possible; a subshell's changes are not undone; a loop
//! body is walked again with what its first pass changed.

mod program;
mod word;

use std::path::{Component, Path, PathBuf};

use brush_parser::ast::{
    AndOr, AndOrList, AssignmentName, Command, CommandPrefixOrSuffixItem, CompoundCommand,
    CompoundList, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand,
};

pub(crate) use self::program::INTERPRETERS;
use self::{
    program::Move,
    word::{ScannedWord, scan_word},
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
    /// Variables set for the program: assigned or exported earlier in the line, then its own
    /// `VAR=…` prefixes and `env VAR=…`.
    pub(crate) assigns: Vec<Assign>,
    /// Whether the segment only sets variables (`X=1`, `export X=1`): what it sets is judged on
    /// the later segments, which carry it in `assigns`.
    pub(crate) sets_only: bool,
    /// The directories the segment may run in, relative to the one the line starts in (the
    /// empty path is that one), lexically normalised as `cd` does.
    pub(crate) dirs: Vec<PathBuf>,
    /// Whether an earlier `cd`/`pushd`/`popd` moved to a directory known only at run time.
    pub(crate) dir_unknown: bool,
}

/// A redirection target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The path with quotes removed.
    pub(crate) path: String,
    /// Whether the path depends on an expansion.
    pub(crate) expands: bool,
}

/// One variable assignment, `NAME=value`, with the value's quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assign {
    pub(crate) name: String,
    pub(crate) value: String,
}

impl Assign {
    /// `NAME=value` (or `NAME+=value`) with a valid variable name; `None` for other words.
    pub(crate) fn parse(word: &str) -> Option<Self> {
        let (name, value) = word.split_once('=')?;
        let name = name.strip_suffix('+').unwrap_or(name);
        let mut chars = name.chars();
        let first = chars.next()?;
        let valid = (first.is_ascii_alphabetic() || first == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        valid.then(|| Assign { name: name.to_owned(), value: value.to_owned() })
    }
}

impl Segment {
    /// The words joined by single spaces: the text rules such as `Bash(cargo test *)` match.
    pub(crate) fn text(&self) -> String {
        self.words.join(" ")
    }

    fn empty() -> Self {
        Self {
            words: Vec::new(),
            danger: None,
            expands: false,
            writes: Vec::new(),
            assigns: Vec::new(),
            sets_only: false,
            dirs: Vec::new(),
            dir_unknown: false,
        }
    }
}

/// Longer command lines are not analysed (and so never approved by a rule).
const MAX_COMMAND_LEN: usize = 64 * 1024;

/// Deeper nesting of `(`, `{` and backticks is not analysed. The shell parser backtracks on
/// unclosed parentheses in time that doubles with each one: 20 took 0.13 s, 29 took 18 s and 53
/// more than 30 s (the fuzz finding `regression-shell-parens-hang`, docs/fuzzing.md), so the bound
/// is low; real command lines nest a few levels.
const MAX_NESTING: usize = 16;

/// More possible directories than this make the directory unknown.
const MAX_DIRS: usize = 16;

/// Why a command line was not cut into segments. Such a line is never approved by a rule.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnalysisError {
    #[error("the command is longer than {MAX_COMMAND_LEN} bytes")]
    TooLong,
    #[error("the command nests deeper than {MAX_NESTING} levels")]
    TooDeep,
    #[error(transparent)]
    Syntax(#[from] brush_parser::ParseError),
    #[error("the shell parser failed on this command")]
    ParserPanicked,
    #[error("the command line is empty")]
    Empty,
}

/// A command line cut into segments, or the reason it could not be parsed.
pub(crate) fn analyze(command: &str) -> Result<Vec<Segment>, AnalysisError> {
    if command.len() > MAX_COMMAND_LEN {
        return Err(AnalysisError::TooLong);
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
            return Err(AnalysisError::TooDeep);
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
        Ok(Err(err)) => return Err(err.into()),
        Err(_) => return Err(AnalysisError::ParserPanicked),
    };
    let mut walker =
        Walker { out: Vec::new(), env: Vec::new(), dirs: vec![PathBuf::new()], dir_unknown: false };
    for list in &program.complete_commands {
        walker.list(list);
    }
    if walker.out.is_empty() {
        return Err(AnalysisError::Empty);
    }
    Ok(walker.out)
}

/// Walks the parsed line in order, carrying what earlier segments change for later ones.
struct Walker {
    out: Vec<Segment>,
    /// Variables assigned or exported so far.
    env: Vec<Assign>,
    /// Directories the shell may be in by now, relative to the start.
    dirs: Vec<PathBuf>,
    dir_unknown: bool,
}

impl Walker {
    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            self.and_or(&item.0);
        }
    }

    fn and_or(&mut self, list: &AndOrList) {
        self.pipeline(&list.first);
        for next in &list.additional {
            match next {
                AndOr::And(pipeline) | AndOr::Or(pipeline) => self.pipeline(pipeline),
            }
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline) {
        for command in &pipeline.seq {
            match command {
                Command::Simple(simple) => self.simple(simple),
                Command::Compound(compound, redirects) => {
                    self.compound(compound);
                    if let Some(redirects) = redirects {
                        // Redirections of a compound command apply to every segment inside it;
                        // a segment of its own carries them so they are judged once.
                        let mut carrier = self.segment();
                        for redirect in &redirects.0 {
                            apply_redirect(redirect, &mut carrier);
                        }
                        if carrier.danger.is_some() || !carrier.writes.is_empty() {
                            self.out.push(carrier);
                        }
                    }
                }
                Command::Function(_) => self.opaque("a function definition"),
                Command::ExtendedTest(..) => self.opaque("a `[[ … ]]` test"),
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list),
            CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    if scan_word(&value.value).substitution {
                        self.opaque("command substitution");
                    }
                }
                self.repeat(|walker| walker.list(&clause.body.list));
            }
            CompoundCommand::CaseClause(clause) => {
                if scan_word(&clause.value.value).substitution {
                    self.opaque("command substitution");
                }
                for case in &clause.cases {
                    if let Some(cmd) = &case.cmd {
                        self.list(cmd);
                    }
                }
            }
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition);
                self.list(&clause.then);
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition);
                    }
                    self.list(&other.body);
                }
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.repeat(|walker| {
                    walker.list(&clause.0);
                    walker.list(&clause.1.list);
                });
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                self.opaque("an arithmetic command");
            }
            CompoundCommand::Coprocess(_) => self.opaque("a coprocess"),
        }
    }

    /// Walks a loop body; when it changed variables or directories, walks it again so its first
    /// segments are judged with what a later iteration sees. A directory change in a loop makes
    /// the directory unknown, since each iteration may move further.
    fn repeat(&mut self, body: impl Fn(&mut Self)) {
        let (env, dirs) = (self.env.len(), self.dirs.len());
        body(self);
        if self.dirs.len() != dirs {
            self.dir_unknown = true;
        }
        if self.env.len() != env || self.dirs.len() != dirs {
            body(self);
        }
    }

    /// A segment carrying the variables and directories in effect here.
    fn segment(&self) -> Segment {
        Segment {
            assigns: self.env.clone(),
            dirs: self.dirs.clone(),
            dir_unknown: self.dir_unknown,
            ..Segment::empty()
        }
    }

    fn opaque(&mut self, what: &'static str) {
        let mut seg = self.segment();
        seg.danger = Some(what);
        self.out.push(seg);
    }

    fn set(&mut self, assign: Assign) {
        if !self.env.contains(&assign) {
            self.env.push(assign);
        }
    }

    fn simple(&mut self, simple: &SimpleCommand) {
        let mut seg = self.segment();
        let mut heredoc = false;
        let mut assigned = Vec::new();
        let add_word = |seg: &mut Segment, raw: &str| {
            let word = scan_word(raw);
            if word.substitution {
                seg.danger = Some("command substitution");
            }
            seg.expands |= word.expands;
            seg.words.push(word.text);
        };
        for item in simple.prefix.iter().flat_map(|prefix| prefix.0.iter()) {
            match item {
                CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                    heredoc |= apply_redirect(redirect, &mut seg);
                }
                // Assignments before the program set its environment (or, with no program,
                // the shell's variables); their values must not hide a command substitution.
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                    let raw_value = word.value.split_once('=').map_or("", |(_, value)| value);
                    let value = scan_word(raw_value);
                    if value.substitution {
                        seg.danger = Some("command substitution");
                    }
                    let name = match &assignment.name {
                        AssignmentName::VariableName(name)
                        | AssignmentName::ArrayElementName(name, _) => name.clone(),
                    };
                    assigned.push((Assign { name, value: value.text }, scan_word(&word.value)));
                }
                CommandPrefixOrSuffixItem::Word(word) => add_word(&mut seg, &word.value),
                CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                    seg.danger = Some("process substitution");
                }
            }
        }
        if let Some(name) = &simple.word_or_name {
            let before = seg.words.len();
            add_word(&mut seg, &name.value);
            if before == 0 && scan_word(&name.value).expands {
                seg.danger = Some("a program name computed at run time");
            }
        }
        for item in simple.suffix.iter().flat_map(|suffix| suffix.0.iter()) {
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
        if seg.words.is_empty() && !assigned.is_empty() {
            // `X=1` alone sets a shell variable, which later segments see (and `PATH=…` changes
            // the shell's own command lookup).
            for (assign, word) in assigned {
                seg.words.push(word.text);
                self.set(assign);
            }
            seg.sets_only = seg.writes.is_empty();
            self.out.push(seg);
            return;
        }
        seg.assigns.extend(assigned.into_iter().map(|(assign, _)| assign));
        program::strip_wrappers(&mut seg);
        if let Some(declared) = program::declared(&seg.words) {
            for assign in declared {
                self.set(assign);
            }
            seg.sets_only = seg.writes.is_empty();
        }
        if seg.danger.is_none() {
            seg.danger = program::command_danger(&seg.words, heredoc);
        }
        match program::directory_move(&seg) {
            Move::Stay => {}
            Move::Unknown => self.dir_unknown = true,
            Move::To(target) => {
                let moved: Vec<PathBuf> =
                    self.dirs.iter().map(|dir| join_logical(dir, &target)).collect();
                for dir in moved {
                    if !self.dirs.contains(&dir) {
                        self.dirs.push(dir);
                    }
                }
                if self.dirs.len() > MAX_DIRS {
                    self.dir_unknown = true;
                }
            }
        }
        self.out.push(seg);
    }
}

/// `base/target` with `.` and `..` applied to the text, the way `cd` (without `-P`) moves; a
/// `..` above a relative start is kept.
pub(crate) fn join_logical(base: &Path, target: impl AsRef<Path>) -> PathBuf {
    let mut out = PathBuf::new();
    for component in base.join(target.as_ref()).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
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
            let ScannedWord { text, substitution, expands } = scan_word(&word.value);
            if substitution {
                seg.danger = Some("command substitution");
            }
            seg.writes.push(Target { path: text, expands });
            false
        }
    }
}

#[cfg(test)]
mod tests;
