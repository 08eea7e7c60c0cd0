//! `cargo xtask bench [--json] [--quick]`: every benchmark of the harness, one table (or one JSON
//! array), each figure beside its target.
//!
//! In-process figures come from the crates' examples, built in release mode and run with
//! `--json`, each printing `{"name","unit","median","min","max","runs"}` lines. Whole-process
//! figures (start-up, end to end, long sessions) come from repeated runs of the installed `agent`
//! binary against the release scripted server, driven as processes so xtask depends on no
//! workspace crate. Timing is hand-rolled (repeated runs, median, min and max) rather than
//! criterion: the figures are milliseconds of whole processes or rounds of 200,000 calls, where
//! criterion's statistics add minutes of build and run time on two cores and nothing we use.

mod acp;
mod batch;
mod binary;
mod checkpoint;
mod http;
mod lsp;
mod mcp;
mod process;
mod serve;
mod skills;
mod task;
mod telemetry;
mod tokens;

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// One measured figure: the median, min and max of `runs` repetitions.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) unit: String,
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) runs: usize,
}

impl Figure {
    /// The figure of repeated measurements `values` (at least one).
    pub(crate) fn of(name: &str, unit: &str, mut values: Vec<f64>) -> Self {
        values.sort_by(f64::total_cmp);
        let median = values.get(values.len() / 2).copied().unwrap_or(f64::NAN);
        let min = values.first().copied().unwrap_or(f64::NAN);
        let max = values.last().copied().unwrap_or(f64::NAN);
        Self { name: name.to_owned(), unit: unit.to_owned(), median, min, max, runs: values.len() }
    }

    fn from_json(value: &Value) -> Option<Self> {
        Some(Self {
            name: value["name"].as_str()?.to_owned(),
            unit: value["unit"].as_str()?.to_owned(),
            median: value["median"].as_f64()?,
            min: value["min"].as_f64()?,
            max: value["max"].as_f64()?,
            runs: usize::try_from(value["runs"].as_u64()?).ok()?,
        })
    }

    fn to_json(&self) -> Value {
        json!({"name": self.name, "unit": self.unit, "median": self.median, "min": self.min, "max": self.max, "runs": self.runs})
    }
}

/// Options of one bench run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub(crate) json: bool,
    pub(crate) quick: bool,
    /// `--only GROUP,…`: run only these groups (an example's name, `tool_bench`, `binary`,
    /// `startup`, `e2e`, `session`, `tokens`, `serve`), for a loaded machine where the whole run does not
    /// fit.
    pub(crate) only: Option<Vec<String>>,
    /// `--debug`: run the debug binaries already built (`target/debug/agent`, `scripted-server`)
    /// instead of building release ones, on a machine shared with other builds. The figures are
    /// then a debug build's, not comparable with the release table.
    pub(crate) debug: bool,
}

impl Options {
    /// Whether the group `name` runs.
    pub(crate) fn wants(&self, name: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.iter().any(|group| group == name))
    }
}

/// The release binaries the benchmarks run.
pub(crate) struct Bins {
    pub(crate) agent: PathBuf,
    pub(crate) server: PathBuf,
    examples: PathBuf,
}

/// The benchmark examples that run as they are; `tool_bench` (built too) needs a generated tree.
const IN_PROCESS: &[&str] = &[
    "dispatch",
    "batch",
    "spawn_cost",
    "hook_cost",
    "job_cost",
    "sse_throughput",
    "token_count",
    "compaction",
    "mcp_call",
    // agent-tools: apply_patch.ms (20 files of a 1 MB tree in one patch) beside edit_file.ms.
    "apply_patch",
    telemetry::EXAMPLE,
    // agent-tools: web_fetch.ms (a 1 MB page from loopback, converted) and proxy.overhead_ms.
    "web_bench",
    task::EXAMPLE,
    // agent-checkpoints: checkpoint.command_scan_ms and checkpoint.bytes (3 files of a 50,000-file tree).
    "checkpoint",
];

/// Builds everything, runs every benchmark and prints the table or the JSON array.
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => options.json = true,
            "--quick" => options.quick = true,
            "--debug" => options.debug = true,
            "--only" => {
                let Some(groups) = args.next() else { bail!("--only needs GROUP,…") };
                options.only = Some(groups.split(',').map(str::to_owned).collect());
            }
            other => {
                bail!("unknown bench option `{other}` (expected --json, --quick, --debug, --only)")
            }
        }
    }
    // Only the whole-process groups run the installed binary; `--only apply_patch` and the other
    // in-process groups need no release build of agent-cli.
    let whole_process =
        ["binary", "startup", "e2e", "session", "skills", "tokens", "serve", "agent_batch"];
    let bins = if options.debug {
        // Built here (two `cargo build`s, so neither's features change the other's).
        let (agent, server) = batch::debug_bins(root)?;
        Bins { agent, server, examples: target_dir(root).join("debug").join("examples") }
    } else {
        let agent = if whole_process.iter().any(|group| options.wants(group)) {
            install(root)?
        } else {
            PathBuf::new()
        };
        build(root, agent, &options)?
    };
    let load_before = load_average();
    let started = std::time::Instant::now();
    let mut figures = Vec::new();
    if options.wants("binary") {
        figures.extend(binary::figures(&bins.agent)?);
    }
    let mut notes = Vec::new();
    let quick: &[&str] = if options.quick { &["--quick"] } else { &[] };

    for example in IN_PROCESS.iter().filter(|example| options.wants(example)) {
        progress(&format!("running example {example}…"));
        run_example(&bins, example, quick, &[], &mut figures, &mut notes)?;
    }
    if options.wants("tool_bench") {
        tool_bench(root, &bins, quick, &mut figures, &mut notes)?;
    }
    if options.wants("lsp_edit") {
        lsp::run(&bins, quick, &mut figures, &mut notes)?;
    }

    progress("running whole-process benchmarks (start-up, end to end, long sessions)…");
    in_scratch("process", |dir| process::run_in(&bins, &options, &mut figures, dir))?;
    if options.wants("skills") {
        in_scratch("skills", |dir| skills::measure(&bins, &options, &mut figures, dir))?;
    }
    if options.wants("tokens") {
        in_scratch("tokens", |dir| tokens::measure(&bins, &mut figures, dir))?;
    }
    if options.wants("serve") {
        in_scratch("serve", |dir| serve::run_in(&bins, &options, &mut figures, dir))?;
    }
    if options.wants("agent_batch") {
        in_scratch("batch", |dir| batch::measure(&bins, &options, &mut figures, dir))?;
    }
    let load_after = load_average();
    notes.push(format!(
        "load average {load_before} before, {load_after} after; {} s of benchmarks",
        started.elapsed().as_secs()
    ));

    if options.json {
        let array: Vec<Value> = figures.iter().map(Figure::to_json).collect();
        println!("{}", Value::Array(array));
        for note in &notes {
            eprintln!("note: {note}");
        }
    } else {
        print_table(&figures, &notes);
    }
    Ok(())
}

/// The grep benchmark, on a tree generated once.
fn tool_bench(
    root: &Path,
    bins: &Bins,
    quick: &[&str],
    figures: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    progress("running example tool_bench (grep; the tree is generated once)…");
    let tree = target_dir(root).join("bench-data/grep-tree");
    let mut tree_args = vec!["--tree".to_owned(), tree.display().to_string()];
    tree_args.extend(quick.iter().map(|arg| (*arg).to_owned()));
    let rg = find_rg();
    if rg.is_none() {
        notes.push("rg not installed: grep.rg and grep.ratio_vs_rg skipped".to_owned());
    }
    let env: Vec<(&str, String)> = rg.iter().map(|rg| ("RG", rg.clone())).collect();
    let tree_args: Vec<&str> = tree_args.iter().map(String::as_str).collect();
    run_example(bins, "tool_bench", &tree_args, &env, figures, notes)
}

/// Runs one benchmark in a scratch folder of its own, removed afterwards whether it passed or not.
fn in_scratch(name: &str, measure: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let scratch = std::env::temp_dir().join(format!("agent-bench-{name}-{}", std::process::id()));
    let result = measure(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn progress(message: &str) {
    eprintln!("bench: {message}");
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// One release build of the scripted server and the examples, so their features are unified once.
/// The `agent` binary is the one [`install`] put in place.
fn build(root: &Path, agent: PathBuf, options: &Options) -> anyhow::Result<Bins> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    progress("building the scripted server and benchmark examples…");
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "--quiet"])
        // `--features scripted-server`, not `agent-model/scripted-server`: on the command line the
        // `pkg/feature` form names a dependency's feature, and agent-model reaches itself only as a
        // dev-dependency, so without an example in the build (`--only e2e,binary`) the server's
        // required feature stayed off. The plain form turns the feature on in each selected package
        // that has it, which is agent-model alone.
        .args(["-p", "agent-model", "--features", "scripted-server"])
        .args(["-p", "agent-sandbox", "-p", "agent-exec", "-p", "agent-tools", "-p", "agent-mcp"])
        .args(["-p", "agent-lsp", "-p", "agent-checkpoints"]);
    let mut targets = 0;
    if options.wants("e2e")
        || options.wants("session")
        || options.wants("serve")
        || options.wants("agent_batch")
    {
        command.args(["--bin", "scripted-server"]);
        targets += 1;
    }
    for example in
        IN_PROCESS.iter().chain(&["tool_bench", "lsp_edit"]).filter(|name| options.wants(name))
    {
        command.args(["--example", example]);
        targets += 1;
    }
    let release = target_dir(root).join("release");
    let bins =
        Bins { agent, server: release.join("scripted-server"), examples: release.join("examples") };
    if targets == 0 {
        return Ok(bins);
    }
    let status = command.current_dir(root).status().context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --release failed");
    }
    Ok(bins)
}

/// Installs `agent` as a user does (`cargo install --path crates/agent-cli`, into
/// `target/bench-install`) and returns its path: the start-up and session figures run that binary,
/// and `binary.size` is its size. Installing builds `agent-cli` alone, so no feature of the
/// examples' build (the scripted server) is unified into it; the install shares the workspace's
/// target directory, so after the first run it only relinks what changed.
fn install(root: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    progress("installing agent as a user does (cargo install --path crates/agent-cli)…");
    let install_root = target_dir(root).join("bench-install");
    let status = Command::new(cargo)
        .args(["install", "--quiet", "--locked", "--force", "--path", "crates/agent-cli"])
        .arg("--root")
        .arg(&install_root)
        .current_dir(root)
        .status()
        .context("running cargo install")?;
    if !status.success() {
        bail!("cargo install --path crates/agent-cli failed");
    }
    Ok(install_root.join("bin/agent"))
}

/// Runs one example with `--json` and collects its figures; other output lines become notes.
fn run_example(
    bins: &Bins,
    name: &str,
    args: &[&str],
    env: &[(&str, String)],
    figures: &mut Vec<Figure>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let path = bins.examples.join(name);
    let output = Command::new(&path)
        .arg("--json")
        .args(args)
        .envs(env.iter().map(|(key, value)| (*key, value)))
        .output()
        .with_context(|| format!("running {}", path.display()))?;
    if !output.status.success() {
        bail!(
            "example {name} failed with {}:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        match serde_json::from_str::<Value>(line).ok().as_ref().and_then(Figure::from_json) {
            Some(figure) => figures.push(figure),
            None if !line.trim().is_empty() => notes.push(format!("{name}: {}", line.trim())),
            None => {}
        }
    }
    Ok(())
}

/// `rg` on the PATH, or where an earlier session installed it.
fn find_rg() -> Option<String> {
    if let Ok(rg) = std::env::var("RG") {
        return Some(rg);
    }
    let on_path = Command::new("which").arg("rg").output().ok().filter(|o| o.status.success());
    if let Some(output) = on_path {
        return Some(String::from_utf8_lossy(&output.stdout).trim().to_owned());
    }
    let fallback = Path::new("/tmp/rg-install/bin/rg");
    fallback.exists().then(|| fallback.display().to_string())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The target for a figure, as text, and whether the figure meets it.
fn target(figure: &Figure) -> Option<(String, bool)> {
    let at_most = |limit: f64, text: &str| Some((text.to_owned(), figure.median <= limit));
    let name = figure.name.as_str();
    match name {
        "dispatch.valid" | "dispatch.mixed" | "dispatch.validate_only" => {
            at_most(1000.0, "≤ 1000 ns")
        }
        _ if name.starts_with("binary.") => binary::target(figure),
        "telemetry.overhead_per_call_us" => at_most(telemetry::TARGET_US, "≤ 20 µs"),
        "task.start_ms" => at_most(task::TARGET_MS, "< 5 ms"),
        "first_request.tokens" => at_most(tokens::TARGET_ALL, "≤ 2,000"),
        "first_request.tokens.five_tools" => at_most(tokens::TARGET_FIVE, "< 1,000"),
        "startup.version" => at_most(5.0, "≤ 5 ms"),
        // Against the scripted server on http://127.0.0.1: no TLS trust store is loaded.
        "startup.first_request" => at_most(8.0, "≤ 8 ms (local server)"),
        // Three MCP servers configured, one taking 5 s to start: the request waits for none.
        "startup.first_request_mcp.diff" => at_most(5.0, "≤ 5 ms over startup.first_request"),
        "mcp.call_overhead.ratio" => Some(("< 1× (ours faster)".to_owned(), figure.median < 1.0)),
        "e2e.two_turn" => at_most(60.0, "≤ 60 ms"),
        // Eight 200 ms calls cannot finish before 200 ms; anything close means they overlapped.
        "batch.eight_reads" => at_most(220.0, "≈ 200 ms (≤ 220)"),
        "grep.ratio_vs_rg" => at_most(1.3, "≤ 1.3×"),
        // A warm server answers well inside the edit's default deadline; our share is framing,
        // the line diff and the text.
        "lsp.edit_to_diagnostics_ms" => at_most(1500.0, "≤ 1500 ms (the default wait)"),
        "lsp.harness_share_ms" => at_most(5.0, "≤ 5 ms"),
        "sandbox.overhead.read_only" | "sandbox.overhead.workspace_write" => at_most(2.0, "≤ 2 ms"),
        "sandbox.overhead.exec_allowlist" => at_most(0.3, "≤ 0.3 ms"),
        _ if name.starts_with("checkpoint.") => checkpoint::target(figure),
        _ if name.starts_with("session.rss.") => at_most(64.0, "≤ 64 MiB"),
        // Every request of the 200-turn sessions, by the agent's own count, inside the window.
        _ if name.starts_with("session.max_request_tokens.") => {
            at_most(process::WINDOW as f64, "≤ 32768 (the window)")
        }
        _ if name.starts_with("session.compactions.") => {
            Some(("≥ 3".to_owned(), figure.min >= 3.0))
        }
        _ if name.starts_with("session.request_bytes.") && name.ends_with(".turn200") => {
            // With a 32k window every request body stays near the window's size in characters
            // (four characters a token, plus the JSON framing), however many turns came before.
            at_most(process::WINDOW as f64 * 4.4, "≤ 4.4 × 32768 bytes")
        }
        _ => None,
    }
}

fn print_table(figures: &[Figure], notes: &[String]) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\n{:<46} {:>12} {:>12} {:>12} {:>5}  {:<6} target",
        "benchmark", "median", "min", "max", "runs", "unit"
    );
    let _ = writeln!(out, "{}", "─".repeat(118));
    for figure in figures {
        let (target, mark) = match target(figure) {
            Some((text, true)) => (text, "✔"),
            Some((text, false)) => (text, "✘"),
            None => (String::new(), ""),
        };
        let _ = writeln!(
            out,
            "{:<46} {:>12} {:>12} {:>12} {:>5}  {:<6} {mark} {target}",
            figure.name,
            format_value(figure.median),
            format_value(figure.min),
            format_value(figure.max),
            figure.runs,
            figure.unit,
        );
    }
    for note in notes {
        let _ = writeln!(out, "note: {note}");
    }
}

fn format_value(value: f64) -> String {
    if value.abs() >= 100.0 { format!("{value:.0}") } else { format!("{value:.2}") }
}
