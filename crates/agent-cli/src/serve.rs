//! `agent serve`: many sessions behind one HTTP door, each built exactly as `agent exec` builds
//! its one, with their events streamed over SSE in the `exec --json` schema (docs/serve.md).

use std::{net::SocketAddr, process::ExitCode, sync::Arc};

use anyhow::Context;
use clap::Args;

use crate::Options;

mod api;
mod approvals;
mod door;
mod guard;
mod history;
mod hub;
mod journal;
pub(crate) mod openapi;
mod page;
mod questions;
mod routes;
mod stream;
mod token;

pub(crate) use api::QuestionChoice;

/// The flags of `agent serve`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on; anything but a loopback address also needs `--token-env`
    /// set and `--exposed` (docs/serve.md).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:4848")]
    listen: SocketAddr,
    /// Where to write the generated token (default: `AGENT_DATA_DIR/serve/PORT.token`), readable
    /// only by you. Not written when `AGENT_SERVE_TOKEN` sets the token.
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
    /// A browser origin allowed to call the API from its pages (CORS), e.g.
    /// `http://127.0.0.1:3000`; repeatable. The server's own page needs none.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// A `Host` name the server answers to besides its loopback names (a name that points at
    /// a non-loopback bind); repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Acknowledges that a non-loopback address is reachable from the network and that the
    /// traffic, token included, is plain HTTP unless a TLS proxy carries it.
    #[arg(long)]
    exposed: bool,
    /// The most sessions open at once.
    #[arg(long, value_name = "N", default_value_t = hub::MAX_SESSIONS,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    max_sessions: u16,
}

/// The environment variable that sets the token instead of generating one.
pub(crate) const TOKEN_VAR: &str = "AGENT_SERVE_TOKEN";

/// Serves until Ctrl-C or SIGTERM; then closes every session (their jobs are killed).
pub(crate) fn run(options: &Options, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let explicit = std::env::var(TOKEN_VAR).ok().filter(|token| !token.is_empty());
    if let Err(refusal) = guard::check_bind(args.listen, explicit.is_some(), args.exposed) {
        eprintln!("agent: serve: {refusal}");
        return Ok(ExitCode::from(2));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("agent-serve")
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(args.listen))
        .with_context(|| format!("listening on {}", args.listen))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let (secret, written) = match explicit {
        Some(token) => (token, None),
        None => {
            let token = token::generate()?;
            let path = match &args.token_file {
                Some(path) => path.clone(),
                None => token::default_path(addr.port())?,
            };
            token::write(&path, &token)?;
            (token, Some(path))
        }
    };
    let hub = Arc::new(hub::Hub::new(options.clone(), usize::from(args.max_sessions)));
    let guard = Arc::new(guard::Guard::new(secret, addr, &args.allow_hosts, &args.allow_origins));
    let app = routes::router(hub.clone(), guard);
    match &written {
        Some(path) => eprintln!(
            "agent serve: listening on http://{addr}/ ; token in {} (mode 0600)",
            path.display()
        ),
        None => eprintln!("agent serve: listening on http://{addr}/ ; token from ${TOKEN_VAR}"),
    }
    let closing = hub.clone();
    let served = runtime.block_on(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(async move {
                stopped().await;
                // Closing the sessions ends their event streams, which would otherwise hold
                // the graceful shutdown open for as long as a client keeps reading.
                closing.close_all().await;
            })
            .await
    });
    if let Some(path) = written {
        // The token dies with the server; a stale file would only mislead a client.
        let _ = std::fs::remove_file(path);
    }
    served.context("serving")?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}
