//! `agent acp`: the agent as an Agent Client Protocol server on stdio, for editors (Zed,
//! JetBrains IDEs, Neovim plugins, headless clients). The protocol side is agent-acp; this
//! module builds its sessions exactly as `exec` and the REPL do (docs/acp.md).

use std::{
    io::Write,
    path::PathBuf,
    process::ExitCode,
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use agent_acp::{ClientMcpServer, Error, Frames, Host, HostSession, Listed, Open, Opening};
use agent_core::{BoxFuture, CancellationToken, Item, Role};
use agent_exec::{
    PermissionMode, Transcript,
    agent::{AgentEvent, Finish},
};
use anyhow::Context;

use crate::{
    Options,
    hooks::Trust,
    session::SessionLog,
    setup::{self, Launch},
};

/// Serves one client on stdin/stdout until it closes the connection.
pub(crate) fn run(options: &Options) -> anyhow::Result<ExitCode> {
    let protocol = protect_stdout()?;
    let runtime = Arc::new(setup::tokio_runtime()?);
    let host = Arc::new(AcpHost { options: options.clone(), runtime: runtime.clone() });
    let frames = Frames { input: Box::pin(stdin_lines()), output: Box::pin(line_sink(protocol)) };
    let served = runtime.block_on(agent_acp::serve(host, frames));
    // Sessions still running end with the process: their prompts were cancelled when the client
    // left, which ends every command they started.
    match served {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            eprintln!("agent: acp: {err}");
            Ok(ExitCode::from(1))
        }
    }
}

/// Takes stdout for the protocol alone: the frames go to a copy of it, and the descriptor 1
/// itself is pointed at stderr. So nothing else can reach the client's stream, whoever writes
/// to stdout: a stray print, a library, a hook or an MCP server that inherited it.
fn protect_stdout() -> anyhow::Result<std::fs::File> {
    use std::os::fd::AsFd;
    let protocol = rustix::io::dup(std::io::stdout().as_fd()).context("duplicating stdout")?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd()).context("pointing stdout at stderr")?;
    Ok(std::fs::File::from(protocol))
}

/// How many frames read ahead of the connection may wait for it: with each under
/// [`agent_acp::MAX_FRAME_BYTES`], a client that writes faster than it is served holds a
/// bounded amount of memory.
const FRAMES_AHEAD: usize = 4;

/// The client's lines, read on a thread of their own (stdin blocks), each held to
/// [`agent_acp::MAX_FRAME_BYTES`] (a longer one is read without being kept).
fn stdin_lines() -> impl futures_util::Stream<Item = std::io::Result<String>> + Send {
    let (sender, receiver) = tokio::sync::mpsc::channel(FRAMES_AHEAD);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let frame = agent_acp::read_frame(&mut stdin).transpose();
            let Some(frame) = frame else { break };
            let failed = frame.is_err();
            if sender.blocking_send(frame).is_err() || failed {
                break;
            }
        }
    });
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|line| (line, receiver))
    })
}

/// Writes each frame as one line, flushed, to the protocol's descriptor.
fn line_sink(
    file: std::fs::File,
) -> impl futures_util::Sink<String, Error = std::io::Error> + Send {
    futures_util::sink::unfold(file, |mut file, line: String| async move {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        file.write_all(&bytes)?;
        file.flush()?;
        Ok(file)
    })
}

/// Sessions built from the command line's options, with the client's directory as workspace.
struct AcpHost {
    options: Options,
    runtime: Arc<tokio::runtime::Runtime>,
}

impl Host for AcpHost {
    fn open(&self, open: Open) -> BoxFuture<'static, Result<Box<dyn HostSession>, Error>> {
        let mut options = self.options.clone();
        options.workspace = Some(open.cwd.clone());
        let runtime = self.runtime.clone();
        Box::pin(async move {
            // Opening reads files and may wait for required MCP servers: on a blocking thread,
            // whose `block_on` shares the session's runtime.
            let opened =
                tokio::task::spawn_blocking(move || open_session(&options, open, &runtime))
                    .await
                    .map_err(|err| Error::Host(format!("opening the session failed: {err}")))??;
            Ok(Box::new(opened) as Box<dyn HostSession>)
        })
    }

    fn list(&self, cwd: Option<PathBuf>) -> Result<Vec<Listed>, Error> {
        let root = SessionLog::root().map_err(host_error)?;
        let Ok(entries) = std::fs::read_dir(&root) else { return Ok(Vec::new()) };
        let mut listed = Vec::new();
        for entry in entries.flatten() {
            let dir = entry.path();
            let transcript = dir.join("transcript.jsonl");
            let Ok(workspace) = std::fs::read(dir.join("workspace")) else { continue };
            let workspace = PathBuf::from(String::from_utf8_lossy(&workspace).into_owned());
            if cwd.as_ref().is_some_and(|cwd| *cwd != workspace) || !transcript.is_file() {
                continue;
            }
            let modified = std::fs::metadata(&transcript).and_then(|meta| meta.modified()).ok();
            listed.push((
                modified,
                Listed {
                    id: entry.file_name().to_string_lossy().into_owned(),
                    cwd: workspace,
                    title: title(&transcript),
                    updated_at: modified.map(rfc3339),
                },
            ));
        }
        listed.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        Ok(listed.into_iter().map(|(_, listed)| listed).collect())
    }

    fn models(&self) -> Vec<String> {
        Vec::new()
    }
}

fn host_error(err: impl Into<anyhow::Error>) -> Error {
    Error::Host(crate::terminal::error_text(&err.into()))
}

/// Builds the session as `exec` and the REPL do, asking the client where they ask the terminal.
fn open_session(
    options: &Options,
    open: Open,
    runtime: &tokio::runtime::Runtime,
) -> Result<AcpSession, Error> {
    let files = open.files.clone();
    let resume = match &open.opening {
        Opening::New => None,
        Opening::Load(id) | Opening::Resume(id) => Some(id.as_str()),
    };
    let launch = Launch {
        resume,
        replay: None,
        // An editor is there to answer, as in the REPL.
        default_mode: PermissionMode::Default,
        approver: Some(open.approver),
        asker: Some(open.asker),
        trust: Trust::OnlyTrusted,
        mcp_servers: open.mcp_servers.into_iter().map(mcp_config).collect(),
    };
    let mut session = match setup::open(options, launch, runtime).map_err(host_error)? {
        Ok(session) => session,
        Err(_) => {
            return Err(Error::Host(
                "the session could not start (the reason is on the agent's stderr)".to_owned(),
            ));
        }
    };
    // The client's file system, when it offers one, is where the file tools read and write.
    session.agent.set_file_system(files);
    #[cfg(debug_assertions)]
    if std::env::var_os(PANIC_TOOL_VAR).is_some() {
        let tool = agent_core::Typed::new(PanicTool).map_err(|err| Error::Host(err.to_string()))?;
        let registry = session.agent.executor_mut().registry_mut();
        registry.register(Arc::new(tool)).map_err(|err| Error::Host(err.to_string()))?;
    }
    let source = if resume.is_some() { "resume" } else { "startup" };
    if let Err(stopped) = runtime.block_on(session.start(source)) {
        return Err(Error::Host(format!("a SessionStart hook stopped the session: {}", stopped.0)));
    }
    Ok(AcpSession(session))
}

/// A client's MCP server as our configuration names one. It is `required`: the editor chose it
/// for this session, so the session opens with its tools in the first request, or fails naming
/// it, rather than starting without them (docs/acp.md).
fn mcp_config(server: ClientMcpServer) -> (String, agent_mcp::ServerConfig) {
    let (name, mut config) = match server {
        ClientMcpServer::Stdio { name, command, args, env } => {
            let mut config =
                agent_mcp::ServerConfig::stdio(command.to_string_lossy().into_owned(), args);
            config.env = env.into_iter().collect();
            (name, config)
        }
        ClientMcpServer::Http { name, url, headers } => {
            let mut config = agent_mcp::ServerConfig::http(url);
            config.http_headers = headers.into_iter().collect();
            (name, config)
        }
    };
    config.required = true;
    (name, config)
}

/// A session's first prompt, on one line and shortened, as its title.
fn title(transcript: &std::path::Path) -> Option<String> {
    let items = Transcript::read_items(transcript).ok()?;
    let first = items.iter().find_map(|item| match item {
        Item::Message(message) if message.role == Role::User => Some(message.content.as_str()),
        _ => None,
    })?;
    let line = first.lines().next().unwrap_or_default();
    Some(match line.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    })
}

/// A time as RFC 3339 in UTC (`2026-12-01T15:04:05Z`).
fn rfc3339(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's days-to-civil conversion.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// An open session driven by the client.
struct AcpSession(setup::Session);

impl HostSession for AcpSession {
    fn id(&self) -> String {
        self.0.log.id().to_owned()
    }

    fn workspace(&self) -> PathBuf {
        self.0.agent.executor().policy().workspace().root().to_path_buf()
    }

    fn history(&self) -> Vec<Item> {
        self.0.agent.conversation().items.clone()
    }

    fn prompt<'a>(
        &'a mut self,
        text: String,
        cancel: &'a CancellationToken,
        on_event: &'a mut (dyn FnMut(&AgentEvent) + Send),
    ) -> BoxFuture<'a, Result<Finish, Error>> {
        Box::pin(
            async move { self.0.prompt_until(text, cancel, on_event).await.map_err(host_error) },
        )
    }

    fn mode(&self) -> PermissionMode {
        self.0.agent.executor().policy().mode()
    }

    fn set_mode(&mut self, mode: PermissionMode) {
        self.0.agent.set_permission_mode(mode);
    }

    fn model(&self) -> String {
        self.0.model_name().to_owned()
    }

    fn set_model(&mut self, name: &str) -> Result<(), Error> {
        self.0.switch_model(name).map_err(host_error)
    }

    fn plan(&self) -> Option<Arc<agent_exec::plan::PlanBook>> {
        Some(self.0.organizer.plan.clone())
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.0.end_jobs(agent_exec::jobs::EndPolicy::Kill).await;
            self.0.end("exit").await;
            // The process lives on to serve other sessions: nothing of this one may.
            self.0.stop_mcp().await;
        })
    }
}

/// Set, it adds a tool that writes to stdout and then panics (`panic_now`): the suite's proof
/// that neither a stray print nor a panic reaches the protocol's stream. Nothing else sets it,
/// and only debug builds (the ones tests run) have it: tidy's `switches.rs` keeps every
/// `AGENT_TEST_` switch out of release builds.
#[cfg(debug_assertions)]
const PANIC_TOOL_VAR: &str = "AGENT_TEST_ACP_PANIC_TOOL";

/// The tool [`PANIC_TOOL_VAR`] adds.
#[cfg(debug_assertions)]
#[derive(Debug, Clone, Copy)]
struct PanicTool;

/// It takes nothing.
#[cfg(debug_assertions)]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct PanicInput {}

#[cfg(debug_assertions)]
impl agent_core::TypedTool for PanicTool {
    type Input = PanicInput;
    const NAME: &'static str = "panic_now";

    fn description(&self) -> String {
        "Prints to stdout, then panics (a test of the ACP stream).".to_owned()
    }

    fn effects(&self) -> agent_core::Effects {
        agent_core::Effects::READ_ONLY
    }

    #[allow(clippy::panic)]
    async fn run(
        &self,
        _input: PanicInput,
        _ctx: agent_core::ToolContext,
    ) -> Result<agent_core::ToolOutput, agent_core::ToolError> {
        println!("a stray line on stdout");
        panic!("the test tool panicked, as it was made to");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        let check = |secs: u64, text: &str| {
            assert_eq!(rfc3339(UNIX_EPOCH + std::time::Duration::from_secs(secs)), text);
        };
        check(0, "1970-01-01T00:00:00Z");
        check(951_782_400, "2000-02-29T00:00:00Z");
        check(1_796_137_445, "2026-12-01T15:04:05Z");
    }
}
