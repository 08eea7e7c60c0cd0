//! The tasks of the real-server tier: which server, which flags, which prompt, and how the run
//! may end.

use super::servers::Kind;

/// How one run may end, as the case expects it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    /// An answer (exit 0) or the turn limit named (exit 1): the model's choice.
    Clean,
    /// An answer (exit 0) whose text contains this.
    AnswerWith(&'static str),
    /// The turn limit, named (exit 1).
    TurnLimit,
    /// A model error (exit 1) whose message contains this.
    ModelError(&'static str),
    /// Anything clean or a named model error: a server whose later turns are not ours to fix.
    Clear,
}

/// One end-to-end task against one server.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) server: Kind,
    /// The model name, when not the server's default.
    pub(crate) model: Option<&'static str>,
    pub(crate) api: &'static str,
    pub(crate) stream: bool,
    pub(crate) args: &'static [&'static str],
    pub(crate) prompt: &'static str,
    /// The tool that must have run (with its output in the transcript), if any.
    pub(crate) tool: Option<&'static str>,
    pub(crate) end: End,
}

pub(crate) const UPPERCASE: &str = "Convert the text 'hello world' to upper case.";
const READ: &str = "Read the file notes.txt and tell me what it says.";
/// The tasks with their arguments as JSON, for llama-server (see its cases).
pub(crate) const UPPERCASE_JSON: &str =
    r#"Use the uppercase tool on "hello world": {"text": "hello world"}"#;
const READ_JSON: &str = r#"Read the file notes.txt: {"path": "notes.txt"}"#;
pub(crate) const NOTES: &str = "The meeting moved to Thursday at 10:00.\n";

pub(crate) fn cases() -> Vec<Case> {
    use End::{AnswerWith, Clean, Clear, ModelError, TurnLimit};
    use Kind::{Chatml, Gguf, Litellm, LlamaServer};
    let case = |name, server, api, stream, args, prompt, tool, end| Case {
        name,
        server,
        model: None,
        api,
        stream,
        args,
        prompt,
        tool,
        end,
    };
    let up = Some("uppercase");
    let read = Some("read_file");
    vec![
        case(
            "uppercase, whole",
            Chatml,
            "chat",
            false,
            &["--tools", "uppercase", "--max-turns", "3"],
            UPPERCASE,
            up,
            Clean,
        ),
        // Streaming with tool_choice "auto" is unsupported in this mode: the server answers 200
        // with an empty body. Turn 1 is forced, so the tool runs; turn 2 must fail clearly.
        case(
            "uppercase, streamed (server gap)",
            Chatml,
            "chat",
            true,
            &["--tools", "uppercase", "--tool-choice", "uppercase"],
            UPPERCASE,
            up,
            ModelError("empty event stream"),
        ),
        case(
            "read_file, whole",
            Chatml,
            "chat",
            false,
            &["--tools", "read_file,grep", "--max-turns", "3"],
            READ,
            read,
            Clean,
        ),
        case(
            "turn limit",
            Chatml,
            "chat",
            false,
            &["--tools", "uppercase", "--tool-choice", "uppercase", "--max-turns", "1"],
            UPPERCASE,
            up,
            TurnLimit,
        ),
        case(
            "uppercase round trip, whole",
            Gguf,
            "chat",
            false,
            &["--tools", "uppercase", "--tool-choice", "uppercase"],
            UPPERCASE,
            up,
            AnswerWith("HELLO WORLD"),
        ),
        case(
            "uppercase, streamed",
            Gguf,
            "chat",
            true,
            &["--tools", "uppercase", "--tool-choice", "uppercase"],
            UPPERCASE,
            up,
            // The streamed answer does not reliably repeat the result (seen: a Python snippet).
            Clean,
        ),
        case(
            "read_file, streamed",
            Gguf,
            "chat",
            true,
            &["--tools", "read_file", "--tool-choice", "read_file"],
            READ,
            read,
            Clean,
        ),
        // llama-server runs with the tier's own ChatML template with tools
        // (`scripts/realmodel/tools-chatml.jinja`): a call is JSON between triple backticks, and
        // under `required` (first turn only) the server's grammar forces a valid call from the
        // first "```" the model writes. Prompts with the arguments as JSON make the model open a
        // code block early; with prose alone it writes prose until its token limit.
        case(
            "uppercase, whole",
            LlamaServer,
            "chat",
            false,
            &["--tools", "uppercase", "--tool-choice", "required", "--max-turns", "3"],
            UPPERCASE_JSON,
            up,
            Clean,
        ),
        case(
            "uppercase, streamed",
            LlamaServer,
            "chat",
            true,
            &["--tools", "uppercase", "--tool-choice", "required", "--max-turns", "3"],
            UPPERCASE_JSON,
            up,
            Clean,
        ),
        case(
            "read_file, whole",
            LlamaServer,
            "chat",
            false,
            &["--tools", "read_file", "--tool-choice", "required", "--max-turns", "3"],
            READ_JSON,
            read,
            Clean,
        ),
        case(
            "uppercase, whole",
            LlamaServer,
            "responses",
            false,
            &["--tools", "uppercase", "--max-turns", "3"],
            UPPERCASE,
            None,
            Clean,
        ),
        case(
            "uppercase, streamed",
            LlamaServer,
            "responses",
            true,
            &["--tools", "uppercase", "--max-turns", "3"],
            UPPERCASE,
            None,
            Clean,
        ),
        case(
            "uppercase, whole",
            Litellm,
            "responses",
            false,
            &["--tools", "uppercase", "--max-turns", "3"],
            UPPERCASE,
            up,
            Clear,
        ),
        // Streamed through llama-server: LiteLLM fails on llama-cpp-python's streamed tool calls.
        // `required` passes through the bridge as the string llama-server reads.
        Case {
            model: Some("smollm2-llama-server"),
            ..case(
                "uppercase, streamed (via llama-server)",
                Litellm,
                "responses",
                true,
                &["--tools", "uppercase", "--tool-choice", "required", "--max-turns", "3"],
                UPPERCASE_JSON,
                up,
                Clear,
            )
        },
        // The upstream streams nothing with "auto"; the bridge turns that into an empty
        // `response.completed`, which must end in exit 1, never in exit 0 with no answer.
        case(
            "empty streamed completion",
            Litellm,
            "responses",
            true,
            &["--tools", "uppercase"],
            UPPERCASE,
            None,
            ModelError("empty answer"),
        ),
    ]
}
