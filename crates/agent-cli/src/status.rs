//! What the REPL tells about its session: `/status`, the tokens the server reported, and the
//! one dim line after each turn.

use std::{io::IsTerminal, path::Path, time::Duration};

use agent_core::Usage;
use agent_session::{Session, config::Api};

use crate::organizer::Shown as _;

/// Tokens as the model server reported them, summed over responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) input: u64,
    pub(crate) cached: u64,
    pub(crate) output: u64,
    /// Whether any response carried usage at all; a server that reports none is not counted
    /// as zero.
    pub(crate) reported: bool,
}

impl Tally {
    /// Adds one response's usage.
    pub(crate) fn add(&mut self, usage: &Usage) {
        self.input += usage.input_tokens;
        self.cached += usage.cached_input_tokens;
        self.output += usage.output_tokens;
        self.reported = true;
    }

    /// Adds another tally (a turn's, to the session's).
    pub(crate) fn merge(&mut self, other: &Tally) {
        self.input += other.input;
        self.cached += other.cached;
        self.output += other.output;
        self.reported |= other.reported;
    }

    /// `1,234 in (1,000 cached) · 56 out`, or that the server reported none.
    fn words(&self) -> String {
        if !self.reported {
            return "not reported by the server".to_owned();
        }
        let cached = if self.cached > 0 {
            format!(" ({} cached)", grouped(self.cached))
        } else {
            String::new()
        };
        format!("{} in{cached} · {} out", grouped(self.input), grouped(self.output))
    }
}

/// How full the context is: the agent's own count of what the next request carries, and the
/// window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextFill {
    pub(crate) tokens: u64,
    pub(crate) window: u64,
}

impl ContextFill {
    pub(crate) fn percent(&self) -> u64 {
        self.tokens * 100 / self.window.max(1)
    }
}

/// Everything `/status` shows.
#[derive(Debug)]
pub(crate) struct Facts<'a> {
    pub(crate) model: &'a str,
    /// `chat` or `responses`; `replay` for a recorded transcript played back.
    pub(crate) api: &'a str,
    pub(crate) base_url: &'a str,
    pub(crate) session: &'a str,
    pub(crate) transcript: &'a Path,
    pub(crate) workspace: &'a Path,
    pub(crate) sandbox: String,
    pub(crate) permission_mode: String,
    pub(crate) tokens: Tally,
    /// The child agents started and their tokens, which `tokens` already counts.
    pub(crate) children: Option<(u64, Tally)>,
    pub(crate) context: Option<ContextFill>,
}

impl<'a> Facts<'a> {
    /// What `/status` shows of `session`, with the session's `tokens`.
    pub(crate) fn of(session: &'a Session, mut tokens: Tally) -> Self {
        let children = session.organizer.child_tally();
        if let Some((_, child)) = &children {
            tokens.merge(child);
        }
        let policy = session.agent.executor().policy();
        let (sandbox, network) = session.sandbox();
        let network = crate::network::words(network);
        let model = session.model_settings();
        let replay = session.replays();
        let api = match (replay, model.api) {
            (true, _) => "replay",
            (false, Api::Chat) => "chat",
            (false, Api::Responses) => "responses",
        };
        Facts {
            model: &model.model,
            api,
            base_url: if replay { "none (a recorded transcript)" } else { &model.base_url },
            session: session.log.id(),
            transcript: session.log.transcript().path(),
            workspace: policy.workspace().root(),
            sandbox: format!("{sandbox}, {network}"),
            permission_mode: policy.mode().to_string(),
            tokens,
            children,
            context: fill(session),
        }
    }
}

/// How full the session's context is; `None` when no window is managed.
pub(crate) fn fill(session: &Session) -> Option<ContextFill> {
    session.context_fill().map(|(tokens, window)| ContextFill { tokens, window })
}

/// The `/status` report, one fact a line.
pub(crate) fn report(facts: &Facts<'_>) -> String {
    let context = match facts.context {
        Some(fill) => format!(
            "{} of {} tokens ({}%), by the agent's count",
            grouped(fill.tokens),
            grouped(fill.window),
            fill.percent()
        ),
        None => "not known (no context window is managed)".to_owned(),
    };
    let children = facts.children.map(|(count, tokens)| {
        let agents = if count == 1 { "child agent" } else { "child agents" };
        format!("{count} {agents}: {} (in the tokens above)", tokens.words())
    });
    let rows = [
        ("model", facts.model.to_owned()),
        ("api", facts.api.to_owned()),
        ("base url", facts.base_url.to_owned()),
        ("session", facts.session.to_owned()),
        ("transcript", facts.transcript.display().to_string()),
        ("workspace", facts.workspace.display().to_string()),
        ("sandbox", facts.sandbox.clone()),
        ("permissions", facts.permission_mode.clone()),
        (
            "tokens",
            match facts.tokens.reported {
                true => format!("{} this session", facts.tokens.words()),
                false => facts.tokens.words(),
            },
        ),
        ("children", children.unwrap_or_default()),
        ("context", context),
    ];
    rows.iter()
        .filter(|(name, value)| *name != "children" || !value.is_empty())
        .map(|(name, value)| format!("  {name:<12} {value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The line after a turn: its tokens, its time, and how full the context is.
pub(crate) fn turn_line(tokens: &Tally, elapsed: Duration, context: Option<ContextFill>) -> String {
    let counts =
        if tokens.reported { tokens.words() } else { format!("tokens {}", tokens.words()) };
    let mut line = format!("  {counts} · {:.1} s", elapsed.as_secs_f64());
    if let Some(fill) = context {
        line.push_str(&format!(" · context {}% of {}", fill.percent(), grouped(fill.window)));
    }
    line
}

/// `text` dimmed when stderr is a terminal and `NO_COLOR` is unset.
pub(crate) fn dim_on_stderr(text: &str) -> String {
    let no_colour = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    if no_colour || !std::io::stderr().is_terminal() {
        return text.to_owned();
    }
    let dim = anstyle::Style::new().dimmed();
    format!("{}{text}{}", dim.render(), dim.render_reset())
}

/// `1234567` as `1,234,567`.
pub(crate) fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(input: u64, cached: u64, output: u64) -> Tally {
        Tally { input, cached, output, reported: true }
    }

    #[track_caller]
    fn check(tokens: Tally, context: Option<ContextFill>, expect: &str) {
        assert_eq!(turn_line(&tokens, Duration::from_millis(2345), context), expect);
    }

    #[test]
    fn the_turn_line_says_tokens_time_and_context() {
        let fill = Some(ContextFill { tokens: 12_000, window: 128_000 });
        check(tally(1234, 0, 56), fill, "  1,234 in · 56 out · 2.3 s · context 9% of 128,000");
        check(tally(42, 40, 7), None, "  42 in (40 cached) · 7 out · 2.3 s");
        check(Tally::default(), None, "  tokens not reported by the server · 2.3 s");
    }

    #[test]
    fn usage_adds_up_and_a_report_of_zero_is_still_a_report() {
        let mut turn = Tally::default();
        turn.add(&Usage { input_tokens: 0, output_tokens: 0, ..Usage::default() });
        assert!(turn.reported);
        turn.add(&Usage {
            input_tokens: 10,
            cached_input_tokens: 4,
            output_tokens: 3,
            ..Usage::default()
        });
        let mut session = tally(1, 0, 1);
        session.merge(&turn);
        assert_eq!(session, tally(11, 4, 4));
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn the_status_report() {
        let facts = Facts {
            model: "gpt-4.1",
            api: "responses",
            base_url: "https://api.openai.com/v1",
            session: "1796055729-18ea210",
            transcript: Path::new("/data/sessions/1796055729-18ea210/transcript.jsonl"),
            workspace: Path::new("/src/project"),
            sandbox: "workspace-write, network off".to_owned(),
            permission_mode: "default".to_owned(),
            tokens: tally(15_321, 12_288, 842),
            children: None,
            context: Some(ContextFill { tokens: 9_876, window: 1_047_576 }),
        };
        insta::assert_snapshot!(report(&facts));
        let with_children = Facts { children: Some((2, tally(4_000, 0, 120))), ..facts };
        insta::assert_snapshot!("the_status_report_with_children", report(&with_children));
        let unknown =
            Facts { tokens: Tally::default(), context: None, children: None, ..with_children };
        insta::assert_snapshot!("the_status_report_with_nothing_reported", report(&unknown));
    }
}
