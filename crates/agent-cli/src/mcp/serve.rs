//! `agent mcp serve`: the built-in tools as an MCP server, over stdio or streamable HTTP.

use std::{
    net::{Ipv4Addr, SocketAddr},
    process::ExitCode,
    sync::Arc,
};

use agent_mcp::{HttpAccess, HttpServer, ToolServer};
use agent_session::{Frontend, Toolbox, ToolboxUse};
use anyhow::{Context, bail};
use clap::Args;

use crate::{Options, render::allow_flags};

#[derive(Debug, Args)]
#[command(next_help_heading = "Serving")]
pub(crate) struct ServeArgs {
    /// Serve over streamable HTTP at http://ADDR/mcp instead of stdin and stdout. ADDR is
    /// `IP:PORT`, `localhost:PORT` or a bare port (on 127.0.0.1); port 0 picks a free one, and the
    /// URL is printed on stderr. Any address that is not loopback must be given explicitly, and
    /// is warned about.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// Require `Authorization: Bearer TOKEN` on every HTTP request, TOKEN being the value of this
    /// environment variable (the token is never printed). Requests without it get 401.
    #[arg(long, value_name = "VAR", requires = "http")]
    pub(crate) bearer_token_env: Option<String>,
    /// Also accept this Host header (`name` or `name:port`), for clients that reach a
    /// non-loopback server under a name (repeatable). Other hosts get 403.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub(crate) allow_hosts: Vec<String>,
    /// Also accept browser requests from this origin (`https://app.example:443`; repeatable).
    /// Requests with any other Origin header get 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub(crate) allow_origins: Vec<String>,
}

pub(crate) fn run(options: &Options, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let runtime = crate::setup::tokio_runtime()?;
    let frontend: Arc<dyn Frontend> = Arc::new(crate::setup::Terminal);
    let toolbox = Toolbox::open(&options.overrides(), ToolboxUse::Serve, &frontend, &runtime)?;
    // The question an MCP client's user is asked names the rules as this program takes them.
    let advice =
        Arc::new(|rules: &[String]| format!("start the server with {}", allow_flags(rules)));
    // Full outputs of capped calls are kept for the life of the server (the toolbox's).
    let server = ToolServer::with_rule_advice(toolbox.executor, advice);
    match &args.http {
        None => runtime.block_on(server.serve_stdio())?,
        Some(addr) => runtime.block_on(serve_http(server, addr, args))?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve_http(server: ToolServer, addr: &str, args: &ServeArgs) -> anyhow::Result<()> {
    let addr = parse_addr(addr)?;
    let bearer_token = match &args.bearer_token_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => Some(token),
            // Serving without the token the user asked for would open what they meant to close.
            _ => bail!("--bearer-token-env {var}: the variable is not set or empty"),
        },
    };
    let access = HttpAccess {
        bearer_token,
        extra_hosts: args.allow_hosts.clone(),
        extra_origins: args.allow_origins.clone(),
    };
    let http = HttpServer::bind(addr, access).await?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "agent: warning: serving on {}, which is not a loopback address: other machines may \
             reach these tools{}",
            addr.ip(),
            if args.bearer_token_env.is_none() {
                " (and no --bearer-token-env is set)"
            } else {
                ""
            }
        );
    }
    eprintln!("agent: serving MCP at {}", http.url());
    tokio::select! {
        served = http.serve(server) => served?,
        interrupted = tokio::signal::ctrl_c() => interrupted.context("waiting for Ctrl-C")?,
    }
    Ok(())
}

/// `IP:PORT`, `localhost:PORT` or a bare port (on 127.0.0.1). Names other than localhost are not
/// resolved: what the server binds must be what the user wrote.
fn parse_addr(text: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port.parse().with_context(|| format!("--http {text}: not a port"))?;
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    text.parse().with_context(|| format!("--http {text}: expected IP:PORT, localhost:PORT or PORT"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        for (text, addr) in [
            ("8765", "127.0.0.1:8765"),
            ("localhost:0", "127.0.0.1:0"),
            ("[::1]:80", "[::1]:80"),
            ("0.0.0.0:80", "0.0.0.0:80"),
        ] {
            assert_eq!(parse_addr(text).unwrap(), addr.parse::<SocketAddr>().unwrap(), "{text}");
        }
        for bad in ["example.com:80", "localhost", "127.0.0.1", "localhost:x"] {
            assert!(parse_addr(bad).is_err(), "{bad}");
        }
    }
}
