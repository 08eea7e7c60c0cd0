//! The batch's own options as flags for each task's `agent exec`, so `agent batch --base-url U
//! --model M TASKS.jsonl` runs every task against U with M unless the task names its own.

use std::ffi::OsString;

use anyhow::bail;
use clap::ValueEnum;

use crate::Options;

/// The flags that give a child `options`; `--workspace` and `--fork` are refused, since each
/// task has its own workspace and a fresh session.
pub(crate) fn flags(options: &Options) -> anyhow::Result<Vec<OsString>> {
    if options.workspace.is_some() {
        bail!("`agent batch` takes each task's workspace from its line; drop --workspace");
    }
    if options.fork.is_some() {
        bail!("`agent batch` starts every task in a fresh session; drop --fork");
    }
    let mut args = Flags::default();
    args.value("--profile", options.profile.as_deref());
    args.value("--model", options.model.as_deref());
    args.value("--base-url", options.base_url.as_deref());
    args.value("--api", options.api.as_ref().map(name).as_deref());
    args.value("--sandbox", options.sandbox.as_ref().map(name).as_deref());
    if let Some(network) = options.network {
        args.0.push(format!("--network={}", name(&network)).into());
    }
    args.value("--permission-mode", options.permission_mode.as_ref().map(name).as_deref());
    for (flag, rules) in
        [("--allow", &options.allow), ("--ask", &options.ask), ("--deny", &options.deny)]
    {
        for rule in rules {
            args.value(flag, Some(rule));
        }
    }
    args.value("--tools", options.tools.as_ref().map(|tools| tools.join(",")).as_deref());
    args.value("--max-turns", options.max_turns.map(|turns| turns.to_string()).as_deref());
    args.switch("--no-stream", options.no_stream);
    args.value("--tool-choice", options.tool_choice.as_deref());
    args.value("--context-window", options.context_window.map(|n| n.to_string()).as_deref());
    args.switch("--no-project-doc", options.no_project_doc);
    let secs = |value: Option<u64>| value.map(|secs| secs.to_string());
    args.value("--model-first-byte-timeout", secs(options.model_first_byte_timeout).as_deref());
    args.value("--model-idle-timeout", secs(options.model_idle_timeout).as_deref());
    args.value("--model-total-timeout", secs(options.model_total_timeout).as_deref());
    if let Some(config) = &options.config {
        // Absolute, since each child runs in its own directory.
        args.0.push("--config".into());
        args.0.push(std::path::absolute(config).unwrap_or_else(|_| config.clone()).into());
    }
    Ok(args.0)
}

#[derive(Default)]
struct Flags(Vec<OsString>);

impl Flags {
    fn value(&mut self, flag: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.0.push(flag.into());
            self.0.push(value.into());
        }
    }

    fn switch(&mut self, flag: &str, on: bool) {
        if on {
            self.0.push(flag.into());
        }
    }
}

/// A value's spelling on the command line.
fn name(value: &impl ValueEnum) -> String {
    value.to_possible_value().map(|value| value.get_name().to_owned()).unwrap_or_default()
}
