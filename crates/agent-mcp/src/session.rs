//! All configured servers of one session: started concurrently, their tools named and built.

use std::{collections::BTreeMap, sync::Arc};

use crate::{
    config::{ConfigError, ServerConfig},
    name,
    questions::Questions,
    server::{Server, ServerEnv, StartError},
    tool::{BadTool, McpTool},
};

/// The servers of a session (enabled ones only).
#[derive(Debug)]
pub struct McpSession {
    servers: Vec<Arc<Server>>,
    env: ServerEnv,
    questions: Arc<Questions>,
}

/// One server's start: its tools, or why it did not start.
#[derive(Debug)]
pub struct Started {
    /// The server.
    pub server: Arc<Server>,
    /// Its tools, named for the model, or the start failure.
    pub tools: Result<Vec<McpTool>, StartError>,
    /// Tools left out because their schema does not compile or nests too deep to be read.
    pub skipped: Vec<BadTool>,
}

/// What `agent mcp list` shows about one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Configured with `enabled = false`.
    Disabled,
    /// Started and listed its tools.
    Ready,
    /// Did not start.
    Failed(String),
}

impl McpSession {
    /// The enabled servers of `configs`; a broken table is an error naming the server.
    pub fn new(
        configs: &BTreeMap<String, ServerConfig>,
        env: ServerEnv,
    ) -> Result<Self, ConfigError> {
        let mut servers = Vec::new();
        let questions = Arc::<Questions>::default();
        for (name, config) in configs {
            config.check(name)?;
            if config.enabled {
                servers.push(Server::asking(name, config.clone(), env.clone(), questions.clone()));
            }
        }
        Ok(Self { servers, env, questions })
    }

    /// Who answers the servers' questions (elicitations, in both protocol eras): give it an
    /// [`Elicit`](crate::Elicit) before the servers start, so that they know they may ask.
    pub fn questions(&self) -> &Arc<Questions> {
        &self.questions
    }

    /// The enabled servers.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// Starts every server at once and waits for all of them (each within its own startup
    /// timeout); results come in configuration order.
    pub async fn start_all(&self) -> Vec<Started> {
        let mut set = tokio::task::JoinSet::new();
        for (index, server) in self.servers.iter().enumerate() {
            let server = server.clone();
            let env = self.env.clone();
            set.spawn(async move { (index, start_one(server, &env).await) });
        }
        let mut done: Vec<(usize, Started)> = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(pair) = joined {
                done.push(pair);
            }
        }
        done.sort_by_key(|(index, _)| *index);
        done.into_iter().map(|(_, started)| started).collect()
    }

    /// Starts one server and builds its tools.
    pub async fn start_one(&self, server: Arc<Server>) -> Started {
        start_one(server, &self.env).await
    }

    /// Lists `server`'s tools again (after `tools/list_changed`).
    pub async fn refresh(&self, server: &Arc<Server>) -> Started {
        let tools = match server.peer().await {
            Ok(peer) => server.list_tools(&peer).await,
            Err(err) => Err(StartError {
                server: server.name().to_owned(),
                reason: err.message,
                tail: None,
                timed_out: false,
            }),
        };
        build(server.clone(), tools, &self.env)
    }
}

async fn start_one(server: Arc<Server>, env: &ServerEnv) -> Started {
    let tools = server.start().await;
    build(server, tools, env)
}

/// Names and builds the offered tools of a listing.
fn build(
    server: Arc<Server>,
    listed: Result<Vec<rmcp::model::Tool>, StartError>,
    env: &ServerEnv,
) -> Started {
    let listed = match listed {
        Ok(listed) => listed,
        Err(err) => return Started { server, tools: Err(err), skipped: Vec::new() },
    };
    let files_dir = env.session_dir.as_ref().map(|dir| dir.join("mcp").join("files"));
    let mut tools = Vec::new();
    let mut skipped = Vec::new();
    // Tools the relay left out before rmcp read the listing.
    for tool in server.take_dropped() {
        skipped.push(BadTool {
            server: server.name().to_owned(),
            tool: tool.name,
            reason: format!(
                "its definition nests too deep to be read (the listing nests {} levels deep with \
                 it, more than the {} a message may have)",
                tool.depth,
                crate::incoming::MAX_DEPTH
            ),
        });
    }
    let mut names = std::collections::HashSet::new();
    for tool in listed.iter().filter(|tool| server.config().offers(&tool.name)) {
        let mut model_name = name::tool_name(server.name(), &tool.name);
        if !names.insert(model_name.clone()) {
            model_name = name::hashed_name(server.name(), &tool.name);
            names.insert(model_name.clone());
        }
        match McpTool::new(model_name, server.clone(), tool, files_dir.clone()) {
            Ok(tool) => tools.push(tool),
            Err(err) => skipped.push(err),
        }
    }
    Started { server, tools: Ok(tools), skipped }
}
