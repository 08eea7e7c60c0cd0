//! Settings: command-line flags over environment over the config file's profile over defaults.
//!
//! The config file is TOML in the platform config directory (`~/.config/agent/config.toml` on
//! Linux): permission rules, web search and limits at the top level, and named profiles that may
//! add to or replace them. `docs/cli.md` has a full example, which a test parses.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

pub mod agents;
mod checkpoints;
pub mod lsp;
mod model;
mod network;
mod ranges;
pub mod skills;
pub mod telemetry;

use crate::error::{Context, bail};
use serde::Deserialize;

pub use self::{
    checkpoints::Checkpoints,
    model::{
        ModelFlags, ModelSettings, NO_PROVIDER, OPENAI_BASE_URL, is_local, is_openai, resolve_model,
    },
    network::{NetworkTable, ProfileNetwork},
    ranges::{Range, check_range},
};

/// Which OpenAI API to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// Chat Completions: every compatible server speaks it.
    Chat,
    /// Responses: stored responses continued with `previous_response_id`.
    Responses,
}

/// Permission rules in the flags' syntax (`Bash(cargo test *)`, `Read(./.env)`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    /// Rules that allow without asking (`Bash(cargo test *)`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that always ask.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules that refuse, whatever the mode.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Which web search API the `web_search` tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchProvider {
    /// A SearXNG instance (`base_url` required).
    Searxng,
    /// Brave Search's API.
    Brave,
    /// Tavily's API.
    Tavily,
}

/// The `[web_search]` table: without it, web_search answers `not_configured`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearch {
    /// Which search service answers.
    pub provider: SearchProvider,
    /// The API base URL (required for SearXNG).
    pub base_url: Option<String>,
    /// The environment variable holding the provider's key (Brave, Tavily).
    pub api_key_env: Option<String>,
    /// How long one search may take, in seconds.
    pub timeout_secs: Option<u64>,
}

/// The `[limits]` table: time limits and output caps of tool calls.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The time limit of a call whose tool sets none, in seconds.
    pub tool_timeout_secs: Option<u64>,
    /// The output cap of a call, in characters.
    pub output_cap: Option<usize>,
    /// bash's default time limit, in seconds.
    pub bash_timeout_secs: Option<u64>,
    /// The largest time limit a bash call may ask for, in seconds.
    pub bash_max_timeout_secs: Option<u64>,
    /// The longest wait for the first byte of a model response, in seconds (docs/limits.md).
    pub model_first_byte_timeout_secs: Option<u64>,
    /// The longest silence inside a model response once it started, in seconds.
    pub model_idle_timeout_secs: Option<u64>,
    /// The longest one model response may take in all, retries included, in seconds.
    pub model_total_timeout_secs: Option<u64>,
    /// The largest whole (`--no-stream`) model response body, in bytes.
    pub model_max_body_bytes: Option<u64>,
    /// The most bytes one streamed model response may send.
    pub model_max_stream_bytes: Option<u64>,
    /// The most events one streamed model response may send.
    pub model_max_stream_events: Option<u64>,
    /// The largest single event of a streamed model response, in bytes.
    pub model_max_event_bytes: Option<u64>,
    /// How often "still waiting for the model" is said while the model is silent, in seconds
    /// (0: never).
    pub model_waiting_notice_secs: Option<u64>,
}

impl Limits {
    /// Refuses a field outside its range; `table` is where the fields are written
    /// (`[limits]`, `[profiles.NAME.limits]`).
    pub fn check(&self, table: &str) -> crate::Result<()> {
        let as_u64 = |value: Option<usize>| value.map(|v| u64::try_from(v).unwrap_or(u64::MAX));
        for (key, value) in [
            ("tool_timeout_secs", self.tool_timeout_secs),
            ("output_cap", as_u64(self.output_cap)),
            ("bash_timeout_secs", self.bash_timeout_secs),
            ("bash_max_timeout_secs", self.bash_max_timeout_secs),
            ("model_first_byte_timeout_secs", self.model_first_byte_timeout_secs),
            ("model_idle_timeout_secs", self.model_idle_timeout_secs),
            ("model_total_timeout_secs", self.model_total_timeout_secs),
            ("model_max_body_bytes", self.model_max_body_bytes),
            ("model_max_stream_bytes", self.model_max_stream_bytes),
            ("model_max_stream_events", self.model_max_stream_events),
            ("model_max_event_bytes", self.model_max_event_bytes),
            ("model_waiting_notice_secs", self.model_waiting_notice_secs),
        ] {
            check_range(&format!("{table} {key}"), key, value)?;
        }
        Ok(())
    }

    /// `self`, with each field that `over` sets replaced.
    pub fn overridden_by(self, over: Limits) -> Limits {
        Limits {
            tool_timeout_secs: over.tool_timeout_secs.or(self.tool_timeout_secs),
            output_cap: over.output_cap.or(self.output_cap),
            bash_timeout_secs: over.bash_timeout_secs.or(self.bash_timeout_secs),
            bash_max_timeout_secs: over.bash_max_timeout_secs.or(self.bash_max_timeout_secs),
            model_first_byte_timeout_secs: over
                .model_first_byte_timeout_secs
                .or(self.model_first_byte_timeout_secs),
            model_idle_timeout_secs: over.model_idle_timeout_secs.or(self.model_idle_timeout_secs),
            model_total_timeout_secs: over
                .model_total_timeout_secs
                .or(self.model_total_timeout_secs),
            model_max_body_bytes: over.model_max_body_bytes.or(self.model_max_body_bytes),
            model_max_stream_bytes: over.model_max_stream_bytes.or(self.model_max_stream_bytes),
            model_max_stream_events: over.model_max_stream_events.or(self.model_max_stream_events),
            model_max_event_bytes: over.model_max_event_bytes.or(self.model_max_event_bytes),
            model_waiting_notice_secs: over
                .model_waiting_notice_secs
                .or(self.model_waiting_notice_secs),
        }
    }
}

/// One `[[hooks.EVENT]]` table: a command run at that point of a session (docs/hooks.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// A regex over the tool's names (`Bash|Edit`, `mcp__github__.*`); absent = every tool.
    pub matcher: Option<String>,
    /// The command, run by `bash -c` in the workspace.
    pub command: String,
    /// Its time limit in seconds (default 60).
    pub timeout_sec: Option<u64>,
    /// Block when the hook crashes, hangs or prints unreadable JSON, instead of going on.
    #[serde(default)]
    pub fail_closed: bool,
}

/// Hooks by event name (`PreToolUse`, …), each a list run in order.
pub type HookTables = BTreeMap<String, Vec<HookEntry>>;

/// The settings of one profile in the config file; every field optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The model server's base URL.
    pub base_url: Option<String>,
    /// The model's name.
    pub model: Option<String>,
    /// Which OpenAI API the server speaks.
    pub api: Option<Api>,
    /// The environment variable that holds this server's key (default `OPENAI_API_KEY`).
    pub api_key_env: Option<String>,
    /// The OS sandbox of commands (`read-only`, `workspace-write`, `danger-full-access`).
    pub sandbox: Option<String>,
    /// The profile's `[network]` table, over the file's.
    pub network: Option<ProfileNetwork>,
    /// The permission mode (`default`, `acceptEdits`, `plan`, `dontAsk`, `bypass`).
    pub permission_mode: Option<String>,
    /// The most model turns a prompt may take.
    pub max_turns: Option<usize>,
    /// Whether responses are streamed (default yes).
    pub stream: Option<bool>,
    /// Offer only these tools to the model.
    pub tools: Option<Vec<String>>,
    /// The context window of the profile's model as served, in tokens, when the built-in table
    /// does not know it or the server serves a smaller one.
    pub context_window: Option<u64>,
    /// Whether the model takes image input, when the built-in table does not know or is wrong
    /// (docs/models.md, "Images").
    pub vision: Option<bool>,
    /// Rules added to the file's top-level `[permissions]`.
    #[serde(default)]
    pub permissions: Permissions,
    /// Replaces the top-level `[web_search]`.
    pub web_search: Option<WebSearch>,
    /// Fields set here replace the top-level `[limits]`.
    #[serde(default)]
    pub limits: Limits,
    /// The edit tool the model gets (default by model family, see docs/models.md).
    pub edit_tool: Option<crate::shapes::EditTool>,
    /// The shape `apply_patch` is offered in.
    pub apply_patch_shape: Option<crate::shapes::PatchShape>,
    /// Offer the Responses API's `shell` built-in (default off).
    pub shell_tool: Option<bool>,
}

/// The config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The profile used when no `--profile` is given.
    pub default_profile: Option<String>,
    /// Rules for every profile and every command.
    #[serde(default)]
    pub permissions: Permissions,
    /// The `web_search` tool's provider; without it the tool is not offered.
    pub web_search: Option<WebSearch>,
    /// `[network]`: the mode, allow and deny lists, and resolver pins (docs/network.md).
    #[serde(default)]
    pub network: NetworkTable,
    /// The `[limits]` table: caps and timeouts (docs/limits.md).
    #[serde(default)]
    pub limits: Limits,
    /// `[[hooks.EVENT]]` tables.
    #[serde(default)]
    pub hooks: HookTables,
    /// The named profiles.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
    /// MCP servers whose tools join every session (`[mcp_servers.NAME]`, see docs/mcp.md).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, agent_mcp::ServerConfig>,
    /// The most tokens the MCP tools' schemas may take together before the model gets
    /// `tool_search` in their place (default 8000; docs/mcp.md).
    pub mcp_tool_budget_tokens: Option<usize>,
    /// Diagnostics after edits from language servers (`[lsp]`, `[lsp.<language>]`; docs/lsp.md).
    #[serde(default)]
    pub lsp: lsp::LspTable,
    /// `[skills]` (docs/skills.md).
    #[serde(default)]
    pub skills: skills::SkillsTable,
    /// `[telemetry]`: OpenTelemetry export (docs/telemetry.md).
    #[serde(default)]
    pub telemetry: telemetry::TelemetryTable,
    /// `[agents]`: the limits on child agents (docs/agents.md).
    #[serde(default)]
    pub agents: agents::Agents,
    /// `[checkpoints]`: what turns' checkpoints cover and keep (docs/checkpoints.md).
    #[serde(default)]
    pub checkpoints: Checkpoints,
    /// `[plugins]`: whether installed plugins load, and whether untrusted ones may run
    /// (docs/plugins.md).
    #[serde(default)]
    pub plugins: crate::plugins::PluginsTable,
    /// `[notify]`, read and checked by the CLI's notifier (its `notify.rs`); accepted here so a
    /// config file holding it loads.
    #[serde(default)]
    pub notify: Option<toml::Table>,
    /// `[status_line]`, read and checked by the CLI's REPL (its `status_line.rs`); accepted here
    /// so a config file holding it loads.
    #[serde(default)]
    pub status_line: Option<toml::Table>,
}

/// A TOML error in words. toml's own message quotes the offending line whole, which for a file
/// of one 600 KB line (100,000 nested tables) floods the terminal; past a screenful the place is
/// given as line and column instead.
fn parse_error(err: &toml::de::Error, text: &str) -> String {
    let words = err.to_string();
    if words.len() <= 2048 {
        return words;
    }
    let at = err.span().map_or(0, |span| span.start).min(text.len());
    let before = text.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or_default().chars().count() + 1;
    format!("TOML parse error at line {line}, column {column}: {}", err.message().trim_end())
}

impl ConfigFile {
    /// Reads the config file; a broken one, or one with a value out of range, is an error
    /// naming it. A missing default file is an empty config, but a file the user `named` (with
    /// `--config`) must exist: a typo in the path would otherwise drop every rule, hook and limit
    /// in the intended file without a word.
    pub fn load(path: &Path, named: bool) -> crate::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !named => {
                return Ok(Self::default());
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                bail!("the config file {} (named by --config) does not exist", path.display())
            }
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        let file: Self = toml::from_str(&text)
            .map_err(|err| crate::Error::Invalid(parse_error(&err, &text)))
            .with_context(|| format!("parsing {}", path.display()))?;
        file.check().with_context(|| format!("in {}", path.display()))?;
        Ok(file)
    }

    /// Refuses every bounded value outside its range (the bounds table of `config/ranges.rs`).
    pub fn check(&self) -> crate::Result<()> {
        self.limits.check("[limits]")?;
        self.skills.check()?;
        self.telemetry.check()?;
        self.agents.check()?;
        self.checkpoints.check()?;
        check_web_search("[web_search]", self.web_search.as_ref())?;
        for (event, entries) in &self.hooks {
            for entry in entries {
                check_range(
                    &format!("[[hooks.{event}]] timeout_sec"),
                    "hooks.timeout_sec",
                    entry.timeout_sec,
                )?;
            }
        }
        for (name, server) in &self.mcp_servers {
            for (key, secs) in [
                ("startup_timeout_sec", server.startup_timeout_sec),
                ("tool_timeout_sec", server.tool_timeout_sec),
                ("tool_max_sec", server.tool_max_sec),
            ] {
                if !(secs.is_finite() && secs > 0.0 && secs <= agent_mcp::MAX_TIMEOUT_SECS) {
                    bail!(
                        "[mcp_servers.{name}] {key} = {secs} is out of range: it takes more than \
                         0 to {} seconds",
                        agent_mcp::MAX_TIMEOUT_SECS
                    );
                }
            }
        }
        self.lsp.check()?;
        let budget = self.mcp_tool_budget_tokens.map(|v| u64::try_from(v).unwrap_or(u64::MAX));
        check_range("mcp_tool_budget_tokens", "mcp_tool_budget_tokens", budget)?;
        for (name, profile) in &self.profiles {
            let table = format!("[profiles.{name}]");
            profile.limits.check(&format!("[profiles.{name}.limits]"))?;
            check_web_search(
                &format!("[profiles.{name}.web_search]"),
                profile.web_search.as_ref(),
            )?;
            let turns = profile.max_turns.map(|v| u64::try_from(v).unwrap_or(u64::MAX));
            check_range(&format!("{table} max_turns"), "max_turns", turns)?;
            check_range(
                &format!("{table} context_window"),
                "context_window",
                profile.context_window,
            )?;
        }
        Ok(())
    }

    /// Where the config file lives on this platform.
    pub fn default_path() -> Option<PathBuf> {
        dirs::config_dir().map(|dir| dir.join("agent").join("config.toml"))
    }
}

fn check_web_search(table: &str, web_search: Option<&WebSearch>) -> crate::Result<()> {
    let secs = web_search.and_then(|table| table.timeout_secs);
    check_range(&format!("{table} timeout_secs"), "web_search.timeout_secs", secs)
}

#[cfg(test)]
mod tests {
    use agent_model::ApiKey;

    use super::{model::DEFAULT_MODEL, ranges::RANGES, *};

    #[test]
    fn only_servers_on_this_machine_or_its_network_are_local() {
        let local = [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:1234/v1",
            "https://10.0.0.5/v1",
            "http://LOCALHOST/v1",
        ];
        let remote = [
            "https://api.deepseek.com/v1",
            "https://api.openai.com/v1",
            "http://8.8.8.8/v1",
            "https://localhost.example.com/v1",
            "http://[2001:db8::1]:80/v1",
        ];
        for url in local {
            assert!(is_local(url), "{url}");
        }
        for url in remote {
            assert!(!is_local(url), "{url}");
        }
    }

    #[track_caller]
    fn check(flags: ModelFlags, env: &[(&str, &str)], config: &str, expect: ModelSettings) {
        let config: ConfigFile = toml::from_str(config).unwrap();
        let lookup = |name: &str| {
            env.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
        };
        let (settings, _) = resolve_model(&flags, &lookup, &config).unwrap();
        // The key has no `PartialEq` (a secret is not compared by accident), so the settings are
        // compared as their plain parts.
        let parts = |settings: &ModelSettings| {
            let key = settings.api_key.as_ref().map(|key| key.expose().to_owned());
            (settings.base_url.clone(), settings.model.clone(), settings.api, key, settings.stream)
        };
        assert_eq!(parts(&settings), parts(&expect));
    }

    fn settings(base_url: &str, model: &str, api: Api, key: Option<&str>) -> ModelSettings {
        ModelSettings {
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            api,
            api_key: key.map(ApiKey::new),
            stream: true,
            response: agent_model::ResponseLimits::default(),
            vision: None,
        }
    }

    const OLLAMA: &str = r#"
        default_profile = "ollama"
        [profiles.ollama]
        base_url = "http://localhost:11434/v1"
        model = "qwen3:8b"
        [profiles.deepseek]
        base_url = "https://api.deepseek.com/v1"
        model = "deepseek-chat"
        api_key_env = "DEEPSEEK_API_KEY"
    "#;

    #[test]
    fn defaults_speak_responses_to_openai() {
        check(
            ModelFlags::default(),
            &[],
            "",
            settings(OPENAI_BASE_URL, DEFAULT_MODEL, Api::Responses, None),
        );
    }

    #[test]
    fn the_default_profile_applies_and_picks_chat_for_other_servers() {
        check(
            ModelFlags::default(),
            &[],
            OLLAMA,
            settings("http://localhost:11434/v1", "qwen3:8b", Api::Chat, None),
        );
    }

    #[test]
    fn environment_beats_profile() {
        let env = [("AGENT_MODEL", "llama3"), ("OPENAI_API_KEY", "k")];
        check(
            ModelFlags::default(),
            &env,
            OLLAMA,
            settings("http://localhost:11434/v1", "llama3", Api::Chat, Some("k")),
        );
    }

    #[test]
    fn flags_beat_environment() {
        let flags = ModelFlags {
            model: Some("m".into()),
            api: Some(Api::Responses),
            ..ModelFlags::default()
        };
        check(
            flags,
            &[("AGENT_MODEL", "llama3")],
            OLLAMA,
            settings("http://localhost:11434/v1", "m", Api::Responses, None),
        );
    }

    #[test]
    fn a_profile_reads_its_own_key_variable() {
        let flags = ModelFlags { profile: Some("deepseek".into()), ..ModelFlags::default() };
        let env = [("DEEPSEEK_API_KEY", "ds"), ("OPENAI_API_KEY", "oa")];
        check(
            flags,
            &env,
            OLLAMA,
            settings("https://api.deepseek.com/v1", "deepseek-chat", Api::Chat, Some("ds")),
        );
    }

    #[test]
    fn an_unknown_profile_names_the_known_ones() {
        let flags = ModelFlags { profile: Some("vllm".into()), ..ModelFlags::default() };
        let config: ConfigFile = toml::from_str(OLLAMA).unwrap();
        let err = resolve_model(&flags, &|_| None, &config).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no profile `vllm` in the config file (known: deepseek, ollama)"
        );
    }

    #[test]
    fn an_unknown_key_in_the_config_file_is_an_error() {
        let err = toml::from_str::<ConfigFile>("[profiles.x]\nmodle = \"y\"\n").unwrap_err();
        assert!(err.to_string().contains("unknown field `modle`"), "{err}");
    }

    #[test]
    fn the_example_config_in_the_docs_parses() {
        let doc = include_str!("../../../docs/cli.md");
        let block =
            doc.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).unwrap();
        let config: ConfigFile = toml::from_str(block).unwrap();
        let names: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
        assert_eq!(names, ["deepseek", "llamacpp", "lmstudio", "ollama", "vllm"]);
        assert_eq!(config.default_profile.as_deref(), Some("ollama"));
        assert_eq!(config.permissions.deny, ["Bash(git push *)", "Read(./secrets/**)"]);
        assert_eq!(config.web_search.map(|w| w.provider), Some(SearchProvider::Searxng));
        let lmstudio = &config.profiles["lmstudio"];
        assert_eq!(lmstudio.tools.as_ref().map(Vec::len), Some(5));
        let limits = config.limits.overridden_by(lmstudio.limits);
        assert_eq!((limits.tool_timeout_secs, limits.bash_timeout_secs), (Some(300), Some(60)));
        let deepseek = &config.profiles["deepseek"];
        assert_eq!(deepseek.permissions.ask, ["Bash(cargo publish *)"]);
        assert_eq!(deepseek.web_search.as_ref().map(|w| w.provider), Some(SearchProvider::Brave));
    }

    #[track_caller]
    fn check_limits(config: &str, expect: Result<(), &str>) {
        let file: ConfigFile = toml::from_str(config).unwrap();
        let got = file.check().map_err(|err| err.to_string());
        assert_eq!(got, expect.map_err(str::to_owned), "{config}");
    }

    #[test]
    fn every_limit_out_of_range_is_refused_naming_the_key_and_the_range() {
        let secs = "is out of range: it takes 1 to 86400 seconds";
        check_limits("[limits]\ntool_timeout_secs = 1\nbash_timeout_secs = 86400\n", Ok(()));
        check_limits(
            "[limits]\ntool_timeout_secs = 0\n",
            Err(&format!("[limits] tool_timeout_secs = 0 {secs}")),
        );
        check_limits(
            "[profiles.p.limits]\nbash_timeout_secs = 18446744073709551615\n",
            Err(&format!("[profiles.p.limits] bash_timeout_secs = 18446744073709551615 {secs}")),
        );
        check_limits(
            "[limits]\noutput_cap = 5\n",
            Err("[limits] output_cap = 5 is out of range: it takes 100 to 10000000 characters"),
        );
        check_limits(
            "[[hooks.PreToolUse]]\ncommand = \"x\"\ntimeout_sec = 0\n",
            Err(&format!("[[hooks.PreToolUse]] timeout_sec = 0 {secs}")),
        );
        check_limits(
            "[web_search]\nprovider = \"brave\"\ntimeout_secs = 601\n",
            Err("[web_search] timeout_secs = 601 is out of range: it takes 1 to 600 seconds"),
        );
        check_limits(
            "[profiles.p]\nmax_turns = 0\n",
            Err("[profiles.p] max_turns = 0 is out of range: it takes 1 to 10000 turns"),
        );
        check_limits(
            "[mcp_servers.s]\ncommand = \"x\"\ntool_timeout_sec = 1e30\n",
            Err("[mcp_servers.s] tool_timeout_sec = 1000000000000000000000000000000 is out of \
                 range: it takes more than 0 to 86400 seconds"),
        );
        check_limits(
            "[profiles.p]\ncontext_window = 10\n",
            Err(
                "[profiles.p] context_window = 10 is out of range: it takes 1024 to 100000000 tokens",
            ),
        );
    }

    #[test]
    fn a_named_config_file_must_exist_and_the_default_one_may_not() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("typo.toml");
        let err = ConfigFile::load(&missing, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the config file {} (named by --config) does not exist", missing.display())
        );
        assert!(ConfigFile::load(&missing, false).is_ok());
    }

    /// docs/limits.md lists every bounded key of the config file with its range.
    #[test]
    fn the_limits_doc_lists_every_range() {
        let doc = include_str!("../../../docs/limits.md");
        // `[agents]` keeps its bounds beside its table; its rows name the table.
        for (key, Range { min, max, .. }) in RANGES.iter().chain(agents::RANGES) {
            let short = key.rsplit('.').next().unwrap_or(key);
            let named = match key.strip_prefix("agents.") {
                Some(_) => format!("`[agents] {short}`"),
                None => format!("`{short}`"),
            };
            let row = doc.lines().find(|line| line.starts_with('|') && line.contains(&named));
            let row = row.unwrap_or_else(|| panic!("docs/limits.md has no row for `{key}`"));
            let range = format!("{} – {}", thousands(*min), thousands(*max));
            assert!(row.contains(&range), "the row of `{key}` does not say {range}: {row}");
        }
    }

    /// `n` with commas between thousands, as the docs write numbers.
    fn thousands(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    /// The resolved settings are printed in debug logs and error reports; the key never is.
    #[test]
    fn debug_of_the_settings_never_shows_the_key() {
        let config: ConfigFile = toml::from_str(OLLAMA).unwrap();
        let env =
            |name: &str| (name == "DEEPSEEK_API_KEY").then(|| "sk-deepseek-secret".to_owned());
        let flags = ModelFlags { profile: Some("deepseek".to_owned()), ..ModelFlags::default() };
        let (settings, _) = resolve_model(&flags, &env, &config).unwrap();
        assert_eq!(settings.api_key.as_ref().map(ApiKey::expose), Some("sk-deepseek-secret"));
        let shown = format!("{settings:?} {settings:#?}");
        assert!(!shown.contains("sk-deepseek-secret"), "{shown}");
        assert!(shown.contains("ApiKey(<redacted>)"), "{shown}");
    }
}
