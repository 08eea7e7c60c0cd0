//! Files a command changed reach the language servers: a tool that starts processes (`bash`,
//! `shell`) is wrapped so that, after each call, the documents the servers have open are
//! compared with the disk and any a command rewrote is checked like an edit, its report appended
//! to the call's observation ("This command introduced 1 error in a.py …").
//!
//! Only the open documents are looked at: a file the servers have not seen would only become a
//! baseline (nothing to report), and the next edit of it brings its text before anyway.

use std::sync::Arc;

use agent_core::{
    BoxFuture, PreparedCall, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, schema::ArgsError,
};

use crate::LspSession;

/// A process-starting tool whose calls are followed by a look at the open documents.
struct AfterCommands {
    inner: Arc<dyn Tool>,
    session: LspSession,
}

impl LspSession {
    /// `tool` wrapped so that the files its commands change are sent to the servers, when it
    /// starts processes; any other tool unchanged.
    pub fn watch_commands(&self, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        if !tool.spec().effects.runs_processes {
            return tool;
        }
        Arc::new(AfterCommands { inner: tool, session: self.clone() })
    }
}

impl Tool for AfterCommands {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn prepare(&self, arguments: &str) -> Result<PreparedCall, ArgsError> {
        self.inner.prepare(arguments)
    }

    fn run<'a>(
        &'a self,
        call: PreparedCall,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            let mut output = self.inner.run(call, ctx).await?;
            // A cancelled call's answer must come at once; the next command or edit looks.
            if cancel.is_cancelled() {
                return Ok(output);
            }
            let note = self.session.after_command().await;
            if !note.is_empty() {
                output.text.push('\n');
                output.text.push_str(&note);
            }
            Ok(output)
        })
    }
}
