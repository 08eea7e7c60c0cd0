//! The status line's rendering, its config checks, the command's JSON and what is drawn of its
//! output.

use super::*;

fn snapshot() -> Snapshot {
    Snapshot {
        model: "gpt-4.1".to_owned(),
        mode: "default".to_owned(),
        context: Some(ContextFill { tokens: 12_000, window: 128_000 }),
        tokens: Tally { input: 15_321, cached: 12_288, output: 842, reported: true },
        cost: None,
        jobs: 0,
        session: "1796055729-18ea210".to_owned(),
        transcript: "/data/sessions/1796055729-18ea210/transcript.jsonl".to_owned(),
        workspace: "/src/project".to_owned(),
    }
}

/// The line `toml` (a `[status_line]` table's body) draws for `snapshot`, 200 columns wide.
#[track_caller]
fn line(toml: &str, snapshot: &Snapshot) -> Option<String> {
    let parsed: toml::Table = toml.parse().unwrap();
    StatusLine::new(&table(Some(&parsed)).unwrap()).unwrap().next(snapshot, 200)
}

/// The error `toml` is refused with.
#[track_caller]
fn refused(toml: &str) -> String {
    let parsed: toml::Table = toml.parse().unwrap();
    format!("{:#}", table(Some(&parsed)).unwrap_err())
}

#[test]
fn the_default_line() {
    let mut shown = snapshot();
    insta::assert_snapshot!(line("", &shown).unwrap());
    shown.jobs = 2;
    shown.context = None;
    shown.tokens = Tally::default();
    insta::assert_snapshot!("the_default_line_with_nothing_known", line("", &shown).unwrap());
}

#[test]
fn the_default_line_with_prices_shows_the_cost() {
    let toml = "[prices]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n";
    let parsed: toml::Table = toml.parse().unwrap();
    let status = StatusLine::new(&table(Some(&parsed)).unwrap()).unwrap();
    // 3,033 fresh input at $2, 12,288 cached at $0.50 and 842 out at $8 per million.
    let facts_cost = status.prices.unwrap().cost(&snapshot().tokens);
    assert!((facts_cost - 0.018_946).abs() < 1e-9, "{facts_cost}");
    let shown = Snapshot { cost: Some(facts_cost), ..snapshot() };
    insta::assert_snapshot!(line(toml, &shown).unwrap());
}

#[test]
fn a_format_with_every_placeholder_and_braces() {
    let format = "format = \"{{{model}}} {mode} {context} {context_tokens}/{window} {tokens} \
                  ({input} in, {output} out) {cost} {jobs} {session}\"";
    let shown = Snapshot { cost: Some(12.345), jobs: 1, ..snapshot() };
    insta::assert_snapshot!(line(format, &shown).unwrap());
}

#[test]
fn bad_tables_are_refused_with_the_reason() {
    insta::assert_snapshot!(refused("format = \"{modle}\""));
    assert!(refused("format = \"a } b\"").contains("lone }"));
    assert!(refused("format = \"{x\"").contains("no placeholder {x}"));
    assert!(refused("format = \"x\"\ncommand = \"y\"").contains("both format and command"));
    assert!(refused("command = \"  \"").contains("command is empty"));
    assert!(refused("timeout_ms = 0").contains("from 1 to 5000"));
    assert!(refused("timeout_ms = 60000").contains("from 1 to 5000"));
    assert!(refused("colour = true").contains("unknown field"));
}

#[test]
fn an_unchanged_line_is_not_drawn_again_and_off_draws_nothing() {
    let mut status = StatusLine::new(&table(None).unwrap()).unwrap();
    let first = snapshot();
    assert!(status.next(&first, 200).is_some());
    assert_eq!(status.next(&first, 200), None, "the same line twice");
    let later = Snapshot { jobs: 1, ..first.clone() };
    assert!(status.next(&later, 200).unwrap().contains("1 job"));
    assert_eq!(line("enabled = false", &first), None);
}

#[test]
fn the_command_reads_claude_codes_fields() {
    let shown = Snapshot { cost: Some(0.25), jobs: 1, ..snapshot() };
    let mut input = command::input(&shown);
    input["version"] = "VERSION".into();
    insta::assert_json_snapshot!(input);
}

#[test]
fn a_command_shows_its_first_line_and_a_failing_or_slow_one_nothing() {
    let check = |command: &str, expect: &str| {
        let ran = command::run(command, "{\"model\":{\"id\":\"m\"}}", Duration::from_secs(5), ".");
        assert_eq!(ran, expect, "{command}");
    };
    check("jq -r '\"[\" + .model.id + \"]\"'; echo second line", "[m]");
    check("echo shown; exit 3", "");
    check("true", "");
    let started = std::time::Instant::now();
    let ran = command::run("sleep 30", "{}", Duration::from_millis(200), ".");
    assert_eq!(ran, "");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn what_is_drawn_keeps_colours_and_drops_every_other_control() {
    let check = |line: &str, width: usize, expect: &str| {
        assert_eq!(command::fit(line, width), expect, "{line:?}");
    };
    check("plain", 80, "plain");
    check("\x1b[1;32mok\x1b[0m done", 80, "\x1b[1;32mok\x1b[0m done\x1b[0m");
    // Cursor moves, a screen clear, a title and a bell: gone, their text with them.
    check("a\x1b[2J\x1b[Hb\x1b]0;title\x07c\x07\rd", 80, "abcd");
    check("\x1b]8;;https://x\x1b\\link", 80, "link");
    check("wide 中文 text", 7, "wide 中");
    check("abcdef", 3, "abc");
}
