//! The model a session talks to: server, model, API and key, resolved flag over environment over
//! profile over default, and what counts as a server on this machine.

use agent_model::ApiKey;

use super::{Api, ConfigFile, Profile};
use crate::error::bail;

/// The default model server.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when nothing names one.
pub(crate) const DEFAULT_MODEL: &str = "gpt-4.1-mini";

/// The model settings after precedence is applied.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    /// The model server's base URL.
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// Which OpenAI API to speak.
    pub api: Api,
    /// The key, when one was found; its `Debug` is a redaction.
    pub api_key: Option<ApiKey>,
    /// Whether responses are streamed.
    pub stream: bool,
    /// The deadlines and size caps of each response (`[limits]` and flags; set after resolving).
    pub response: agent_model::ResponseLimits,
    /// The profile's `vision`, when it sets one ([`ModelSettings::sees_images`] decides).
    pub vision: Option<bool>,
}

impl ModelSettings {
    /// Whether the model takes image input: the profile's `vision`, else the table by model
    /// family, else yes on OpenAI's own API (whose current models all see) and no elsewhere (a
    /// local or third-party server most often serves a text-only model, which would refuse the
    /// request with an image in it).
    pub fn sees_images(&self) -> bool {
        self.vision
            .or_else(|| agent_model::sees_images(&self.model))
            .unwrap_or_else(|| is_openai(&self.base_url))
    }
}

/// Flags that override everything else (all optional on the command line).
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    /// `--profile`.
    pub profile: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--api`.
    pub api: Option<Api>,
    /// `--no-stream`.
    pub no_stream: bool,
}

/// Resolves the model settings: flag > environment > profile > default. `env` is a lookup so
/// tests never touch the process environment.
pub fn resolve_model(
    flags: &ModelFlags,
    env: &dyn Fn(&str) -> Option<String>,
    config: &ConfigFile,
) -> crate::Result<(ModelSettings, Profile)> {
    let profile_name = flags.profile.clone().or_else(|| config.default_profile.clone());
    let profile = match &profile_name {
        Some(name) => match config.profiles.get(name) {
            Some(profile) => profile.clone(),
            None => {
                let known: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
                bail!(
                    "no profile `{name}` in the config file (known: {})",
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                )
            }
        },
        None => Profile::default(),
    };
    let non_empty = |name: &str| env(name).filter(|value| !value.is_empty());
    let base_url = flags
        .base_url
        .clone()
        .or_else(|| non_empty("OPENAI_BASE_URL"))
        .or_else(|| profile.base_url.clone())
        .unwrap_or_else(|| OPENAI_BASE_URL.to_owned());
    let model = flags
        .model
        .clone()
        .or_else(|| non_empty("AGENT_MODEL"))
        .or_else(|| profile.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    // The Responses API is OpenAI's own; other servers reliably speak only Chat Completions.
    let api = flags.api.or(profile.api).unwrap_or(if is_openai(&base_url) {
        Api::Responses
    } else {
        Api::Chat
    });
    let key_env = profile.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
    let api_key = non_empty(key_env).map(ApiKey::new);
    let stream = !flags.no_stream && profile.stream.unwrap_or(true);
    let response = agent_model::ResponseLimits::default();
    let vision = profile.vision;
    Ok((ModelSettings { base_url, model, api, api_key, stream, response, vision }, profile))
}

/// Whether a base URL points at OpenAI itself.
pub fn is_openai(base_url: &str) -> bool {
    base_url.trim_end_matches('/').starts_with(OPENAI_BASE_URL)
}

/// Whether `base_url` names a server on this machine or its private network: `localhost`, a
/// loopback, private or link-local address.
pub fn is_local(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.is_unique_local() || ip.is_unicast_link_local()
        }
        Err(_) => false,
    }
}

/// The message shown when no model server is configured: how to set one up, and the demo.
pub const NO_PROVIDER: &str = "\
no model server is configured.

  OpenAI:        export OPENAI_API_KEY=sk-...
  Ollama:        agent --base-url http://localhost:11434/v1 --model qwen3:8b exec '...'
  llama.cpp:     agent --base-url http://localhost:8080/v1 exec '...'
  named profile: add [profiles.NAME] to the config file and pass --profile NAME

Try it offline first: cargo xtask demo";
