//! The REPL's status line: the model, the permission mode, how full the context is, the
//! session's tokens and cost, and the background jobs, drawn as one line above the prompt
//! whenever it changed (docs/cli.md, "Status line"). It is a format string with placeholders,
//! or a command of the user's that reads the session as JSON and prints the line (Claude Code's
//! `statusLine` contract).

mod command;

use std::{fmt::Write as _, path::Path, time::Duration};

use anyhow::Context as _;
use serde::Deserialize;

use crate::status::{ContextFill, Facts, Tally, grouped};

/// The line drawn without a `format` or `command`.
const DEFAULT_FORMAT: &str = "{model} · {mode} · context {context} · {tokens} tokens · {jobs}";
/// The same with the cost, when `prices` are set.
const DEFAULT_FORMAT_WITH_COST: &str =
    "{model} · {mode} · context {context} · {tokens} tokens · {cost} · {jobs}";
/// How long a status command may take when the table does not say.
const DEFAULT_TIMEOUT_MS: u64 = 500;
/// The longest a status command may delay the prompt, whatever the table says.
const MAX_TIMEOUT_MS: u64 = 5000;

/// `[status_line]` in the config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusLineTable {
    /// Off: no status line.
    #[serde(default = "yes")]
    enabled: bool,
    /// The line, with `{placeholders}`.
    format: Option<String>,
    /// A command run by `bash -c` with the session as JSON on stdin; its first line is shown.
    command: Option<String>,
    /// How long the command may run before it is killed and the line left blank.
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
    /// Dollars per million tokens, for `{cost}` and the command's `cost.total_cost_usd`.
    prices: Option<Prices>,
}

fn yes() -> bool {
    true
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// What a model's tokens cost, in dollars per million.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Prices {
    input: f64,
    /// Cached input tokens; the input price when absent.
    cached_input: Option<f64>,
    output: f64,
}

impl Prices {
    /// What `tokens` cost.
    fn cost(&self, tokens: &Tally) -> f64 {
        let cached = tokens.cached.min(tokens.input);
        let fresh = tokens.input - cached;
        let per_token = |price: f64| price / 1_000_000.0;
        fresh as f64 * per_token(self.input)
            + cached as f64 * per_token(self.cached_input.unwrap_or(self.input))
            + tokens.output as f64 * per_token(self.output)
    }
}

/// What the status line shows, gathered from the session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    pub(crate) model: String,
    pub(crate) mode: String,
    pub(crate) context: Option<ContextFill>,
    /// The session's tokens, child agents' included.
    pub(crate) tokens: Tally,
    /// The tokens' cost in dollars, when prices are configured.
    pub(crate) cost: Option<f64>,
    /// Background jobs running.
    pub(crate) jobs: usize,
    pub(crate) session: String,
    pub(crate) transcript: String,
    pub(crate) workspace: String,
}

/// One placeholder of a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Model,
    Mode,
    Context,
    ContextTokens,
    Window,
    Tokens,
    Input,
    Output,
    Cost,
    Jobs,
    Session,
}

impl Field {
    const ALL: [(&'static str, Field); 11] = [
        ("model", Field::Model),
        ("mode", Field::Mode),
        ("context", Field::Context),
        ("context_tokens", Field::ContextTokens),
        ("window", Field::Window),
        ("tokens", Field::Tokens),
        ("input", Field::Input),
        ("output", Field::Output),
        ("cost", Field::Cost),
        ("jobs", Field::Jobs),
        ("session", Field::Session),
    ];

    fn value(self, snapshot: &Snapshot) -> String {
        let unknown = || "?".to_owned();
        let tokens = &snapshot.tokens;
        let reported = |count: u64| if tokens.reported { grouped(count) } else { unknown() };
        match self {
            Field::Model => snapshot.model.clone(),
            Field::Mode => snapshot.mode.clone(),
            Field::Context => {
                snapshot.context.map_or_else(unknown, |fill| format!("{}%", fill.percent()))
            }
            Field::ContextTokens => snapshot.context.map_or_else(unknown, |f| grouped(f.tokens)),
            Field::Window => snapshot.context.map_or_else(unknown, |fill| grouped(fill.window)),
            Field::Tokens => reported(tokens.input + tokens.output),
            Field::Input => reported(tokens.input),
            Field::Output => reported(tokens.output),
            Field::Cost => snapshot.cost.map_or_else(unknown, dollars),
            Field::Jobs => match snapshot.jobs {
                0 => "no jobs".to_owned(),
                1 => "1 job".to_owned(),
                n => format!("{n} jobs"),
            },
            Field::Session => snapshot.session.clone(),
        }
    }
}

/// A format string, read once: text and placeholders in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Format(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field(Field),
}

impl Format {
    /// Reads `text`: `{name}` is a placeholder, `{{` and `}}` are braces; an unknown name or an
    /// unclosed brace is an error naming the placeholders there are.
    pub(crate) fn parse(text: &str) -> anyhow::Result<Self> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    let field = Field::ALL.iter().find(|(known, _)| closed && *known == name);
                    let Some((_, field)) = field else {
                        let known: Vec<&str> = Field::ALL.iter().map(|(name, _)| *name).collect();
                        anyhow::bail!(
                            "no placeholder {{{name}}} in the status line format; there are: {}",
                            known.join(", ")
                        );
                    };
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Field(*field));
                }
                '}' => anyhow::bail!("a lone }} in the status line format (write }}}} for one)"),
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Self(pieces))
    }

    /// The line for `snapshot`.
    pub(crate) fn render(&self, snapshot: &Snapshot) -> String {
        let mut line = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(text) => line.push_str(text),
                Piece::Field(field) => {
                    let _ = write!(line, "{}", field.value(snapshot));
                }
            }
        }
        line
    }
}

/// Where the line comes from.
#[derive(Debug)]
enum Source {
    Off,
    Format(Format),
    Command { command: String, timeout: Duration },
}

/// The status line of one REPL: what it draws, and what it drew last, so an unchanged line is
/// not drawn again.
#[derive(Debug)]
pub(crate) struct StatusLine {
    source: Source,
    prices: Option<Prices>,
    /// The last line drawn.
    drawn: Option<String>,
    /// What the command was last given and the line it printed: it runs again only when the
    /// session changed.
    last_run: Option<(String, String)>,
}

impl StatusLine {
    /// The status line of the config file at `config` (none: the default line).
    pub(crate) fn load(config: Option<&Path>) -> anyhow::Result<Self> {
        let table = match config.map(std::fs::read_to_string) {
            Some(Ok(text)) => {
                let mut file: toml::Table = text.parse().context("parsing the config file")?;
                let table = file.remove("status_line");
                self::table(table.as_ref().and_then(toml::Value::as_table)).with_context(|| {
                    format!("[status_line] in {}", config.unwrap_or(Path::new("")).display())
                })?
            }
            _ => self::table(None)?,
        };
        Self::new(&table)
    }

    fn new(table: &StatusLineTable) -> anyhow::Result<Self> {
        let source = match (table.enabled, &table.format, &table.command) {
            (false, ..) => Source::Off,
            (true, _, Some(command)) => Source::Command {
                command: command.clone(),
                timeout: Duration::from_millis(table.timeout_ms),
            },
            (true, Some(format), None) => Source::Format(Format::parse(format)?),
            (true, None, None) => Source::Format(Format::parse(match table.prices {
                Some(_) => DEFAULT_FORMAT_WITH_COST,
                None => DEFAULT_FORMAT,
            })?),
        };
        Ok(Self { source, prices: table.prices, drawn: None, last_run: None })
    }

    /// What the status line shows of the session `facts` describe, with `jobs` running.
    pub(crate) fn snapshot(&self, facts: &Facts<'_>, jobs: usize) -> Snapshot {
        Snapshot {
            model: facts.model.to_owned(),
            mode: facts.permission_mode.clone(),
            context: facts.context,
            tokens: facts.tokens,
            cost: self.prices.map(|prices| prices.cost(&facts.tokens)),
            jobs,
            session: facts.session.to_owned(),
            transcript: facts.transcript.display().to_string(),
            workspace: facts.workspace.display().to_string(),
        }
    }

    /// The line to draw above the prompt now, `width` columns at most: `None` when the line is
    /// off or the same as the last one drawn. A command runs here, for at most its timeout.
    pub(crate) fn next(&mut self, snapshot: &Snapshot, width: usize) -> Option<String> {
        let line = match &self.source {
            Source::Off => return None,
            Source::Format(format) => {
                let line = command::fit(&format.render(snapshot), width);
                crate::status::dim_on_stderr(&line)
            }
            Source::Command { command, timeout } => {
                let input = command::input(snapshot).to_string();
                match &self.last_run {
                    Some((given, line)) if *given == input => line.clone(),
                    _ => {
                        let line = command::run(command, &input, *timeout, &snapshot.workspace);
                        let line = command::fit(&line, width);
                        self.last_run = Some((input, line.clone()));
                        line
                    }
                }
            }
        };
        if self.drawn.as_ref() == Some(&line) || line.is_empty() {
            return None;
        }
        self.drawn = Some(line.clone());
        Some(line)
    }
}

/// `[status_line]` as the config file holds it, checked; the defaults when there is none.
pub(crate) fn table(status_line: Option<&toml::Table>) -> anyhow::Result<StatusLineTable> {
    let table: StatusLineTable = match status_line {
        Some(table) => toml::Value::Table(table.clone()).try_into()?,
        None => toml::Value::Table(toml::Table::new()).try_into()?,
    };
    if table.format.is_some() && table.command.is_some() {
        anyhow::bail!("[status_line] has both format and command; keep one");
    }
    if table.command.as_deref().is_some_and(|command| command.trim().is_empty()) {
        anyhow::bail!("[status_line] command is empty");
    }
    if !(1..=MAX_TIMEOUT_MS).contains(&table.timeout_ms) {
        anyhow::bail!("[status_line] timeout_ms must be from 1 to {MAX_TIMEOUT_MS}");
    }
    if let Some(format) = &table.format {
        Format::parse(format)?;
    }
    Ok(table)
}

/// A cost in dollars: cents and below to four places, the rest to two.
fn dollars(cost: f64) -> String {
    if cost < 1.0 { format!("${cost:.4}") } else { format!("${cost:.2}") }
}

#[cfg(test)]
mod tests;
