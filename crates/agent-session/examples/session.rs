//! The agent the `agent` binary runs, opened by a program of your own: the configuration file,
//! model server and workspace named on the command line, one prompt, the answer on stdout.
//!
//! `cargo run -p agent-session --example session -- URL MODEL chat|responses CONFIG PROMPT`
//! (docs/library.md). A test runs it beside `agent exec` and compares their first requests.

#![allow(clippy::print_stdout)] // The answer is this program's output.

use std::sync::Arc;

use agent_exec::{PermissionMode, agent::Finish};
use agent_session::{Launch, Overrides, Session, Silent, config::Api, hooks::Trust};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, model, api, config, prompt] = args.as_slice() else {
        return Err("usage: session URL MODEL chat|responses CONFIG PROMPT".into());
    };
    let overrides = Overrides {
        base_url: Some(url.clone()),
        model: Some(model.clone()),
        api: Some(if api == "chat" { Api::Chat } else { Api::Responses }),
        config: Some(config.into()),
        no_project_doc: true,
        ..Overrides::default()
    };
    let launch = Launch {
        resume: None,
        replay: None,
        // Nobody is there to answer, as in `agent exec`: calls that would ask are refused.
        default_mode: PermissionMode::DontAsk,
        approver: None,
        asker: None,
        trust: Trust::OnlyTrusted,
        frontend: Arc::new(Silent),
        mcp_servers: Vec::new(),
    };
    let runtime = agent_session::tokio_runtime()?;
    let mut session = Session::open(&overrides, launch, &runtime)?;
    let finish = runtime.block_on(session.prompt(prompt.clone(), &mut |_| {}))?;
    match finish {
        Finish::Answered(text) => println!("{text}"),
        other => return Err(format!("the prompt ended without an answer: {other:?}").into()),
    }
    Ok(())
}
