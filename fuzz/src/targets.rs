//! The targets, one module per kind of input.

mod command;
mod config;
mod frames;
mod html;
mod patch;
mod proxy;
mod shell;
mod skill;
mod stream;
mod transcript;

use crate::Target;

pub(crate) const ALL: &[Target] = &[
    Target {
        name: "sse",
        about: "agent-model's SSE decoder: split anywhere or byte by byte, the same events and cap",
        run: stream::sse,
    },
    Target {
        name: "chat_stream",
        about: "the Chat Completions stream assembler: split anywhere, the same events or error",
        run: stream::chat,
    },
    Target {
        name: "responses_stream",
        about: "the Responses stream assembler: split anywhere, the same events or error",
        run: stream::responses,
    },
    Target {
        name: "apply_patch",
        about: "apply_patch's grammar: a parsed plan, printed and parsed again, is the same plan",
        run: patch::round_trip,
    },
    Target {
        name: "acp_frames",
        about: "agent-acp's frame reader: any read size, the same frames; over the cap, a stand-in \
                and no allocation of the frame",
        run: frames::acp,
    },
    Target {
        name: "mcp_frames",
        about: "agent-mcp's stdio relay: any read size, the same output; nothing over the cap or \
                too deep passes, the rest passes unchanged",
        run: frames::mcp,
    },
    Target {
        name: "lsp_frames",
        about: "agent-lsp's framing codec: split anywhere, the same messages; a body over the cap \
                refused without reserving it",
        run: frames::lsp,
    },
    Target {
        name: "html",
        about: "web_fetch's HTML to Markdown: no panic or stack overflow, a bounded title, \
                flattening only where tags nest",
        run: html::markdown,
    },
    Target {
        name: "proxy_hello",
        about: "the proxy's ClientHello reader: a verdict once reached never changes with more \
                bytes; a server name is a host name",
        run: proxy::hello,
    },
    Target {
        name: "proxy_host",
        about: "the proxy's Host check: an authority reprinted splits the same; a Host matches \
                the target it names and no other",
        run: proxy::host,
    },
    Target {
        name: "transcript",
        about: "a transcript loaded on resume: cut at any byte it still loads, dropping only the \
                torn last record",
        run: transcript::truncated,
    },
    Target {
        name: "skill",
        about: "skill and command frontmatter (bounded YAML): the bounded reader agrees with \
                yaml-rust2 on what it accepts, within its limits",
        run: skill::frontmatter,
    },
    Target {
        name: "command",
        about: "custom-command templates: the expansion is the reference's, deterministic, and \
                refused exactly past its limit of repeated substitution, so bounded",
        run: command::expansion,
    },
    Target {
        name: "config",
        about: "config files (TOML): the reader (toml) and the editor (toml_edit) accept the same \
                files; an edited file prints back to itself",
        run: config::toml,
    },
    Target {
        name: "shell",
        about: "the shell analyzer behind permission rules: bounded, deterministic, refuses what \
                it cannot read",
        run: shell::analyze,
    },
];
