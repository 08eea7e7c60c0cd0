//! [`Agent`]: a model, its executor and the conversation so far, run one prompt at a time.

use std::path::Path;

use agent_core::{CancellationToken, Item, Message, ModelClient};

use super::AgentBuilder;
use crate::{
    Executor,
    agent::{self, AgentConfig, AgentEvent, Finish, FinishReason},
    compaction::{self, CompactionInfo, CompactionReason, ContextUsage},
    conversation::Conversation,
    hooks::HookEvent,
};

/// A model, its tools and policy, and the conversation so far: send it prompts.
///
/// Each [`Agent::prompt`] appends the user's message, runs the loop until the model answers or a
/// stop condition holds, and keeps every item, so the next prompt continues the conversation
/// (with `previous_response_id` when the model supports it).
pub struct Agent {
    pub(super) model: Box<dyn ModelClient>,
    pub(super) executor: Executor,
    pub(super) config: AgentConfig,
    pub(super) conversation: Conversation,
}

impl Agent {
    /// A builder for an agent working in `workspace`.
    pub fn builder(workspace: impl AsRef<Path>) -> AgentBuilder {
        AgentBuilder::new(workspace)
    }

    /// Runs one prompt to its end, with no event callback and no way to cancel it early.
    pub async fn prompt(&mut self, prompt: impl Into<String>) -> Finish {
        self.prompt_with(prompt, &CancellationToken::new(), |_| {}).await
    }

    /// Runs one prompt to its end, calling `on_event` as things happen (the user's message and
    /// every other item as [`AgentEvent::ItemAdded`], text deltas, tool calls, usage, the finish).
    /// Cancelling `cancel` stops the model and the running tools; the conversation stays valid.
    pub async fn prompt_with(
        &mut self,
        prompt: impl Into<String>,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(AgentEvent) + Send,
    ) -> Finish {
        let mut prompt = prompt.into();
        let hooks = self.executor.hooks();
        if hooks.wants(HookEvent::UserPromptSubmit, None) {
            let mut fields = serde_json::Map::new();
            fields.insert("prompt".into(), prompt.clone().into());
            let result = hooks.run(HookEvent::UserPromptSubmit, None, fields, cancel).await;
            // A blocked prompt never reaches the model or the conversation, as in Claude Code.
            if let Some(reason) = result.stop.or(result.block) {
                let finish = Finish::Stopped(reason.clone());
                on_event(AgentEvent::Finished {
                    reason: FinishReason::Stopped,
                    text: Some(reason),
                });
                return finish;
            }
            for context in result.context {
                prompt.push_str("\n\n");
                prompt.push_str(&context);
            }
        }
        let user = Item::Message(Message::user(prompt));
        on_event(AgentEvent::ItemAdded { item: user.clone() });
        self.conversation.items.push(user);
        agent::run(
            self.model.as_ref(),
            &self.executor,
            &self.config,
            &mut self.conversation,
            cancel,
            &mut on_event,
        )
        .await
    }

    /// Compacts the conversation now (the REPL's `/compact`): old outputs shrink, and the older
    /// turns are replaced by a summary and the ledger. `None` when the agent manages no context
    /// window.
    pub async fn compact(
        &mut self,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(AgentEvent) + Send,
    ) -> Option<CompactionInfo> {
        let ctx = self.config.context.as_ref()?;
        let (instructions, tools) = compaction::count::fixed(
            &*ctx.counter,
            &self.config.instructions,
            &self.executor.specs(),
        );
        let reason = CompactionReason::Manual;
        let info = compaction::compact(
            self.model.as_ref(),
            ctx,
            &self.executor,
            &mut self.conversation,
            instructions + tools,
            reason,
            cancel,
        )
        .await;
        self.conversation.continuation = None;
        on_event(AgentEvent::Compaction {
            info: info.clone(),
            items: self.conversation.items.clone(),
            ledger: self.conversation.ledger.clone(),
        });
        Some(info)
    }

    /// What the next request would carry, by part (the REPL's `/context`); `None` when the
    /// agent manages no context window.
    pub fn context_usage(&self) -> Option<ContextUsage> {
        let ctx = self.config.context.as_ref()?;
        let counter = &*ctx.counter;
        let (instructions, tools) =
            compaction::count::fixed(counter, &self.config.instructions, &self.executor.specs());
        let transcript =
            self.conversation.items.iter().map(|item| compaction::count::item(counter, item)).sum();
        Some(ContextUsage {
            instructions,
            tools,
            transcript,
            window: ctx.current_window(),
            window_source: ctx.current_source().to_owned(),
            counter: counter.name().to_owned(),
            threshold: ctx.threshold_tokens(),
        })
    }

    /// The conversation so far.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// Replaces the conversation, for example with a transcript read back to resume a session.
    pub fn set_conversation(&mut self, conversation: Conversation) {
        self.conversation = conversation;
    }

    /// The executor, for direct calls and its policy.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The model client.
    pub fn model(&self) -> &dyn ModelClient {
        self.model.as_ref()
    }

    /// Replaces the model for the next prompt (the REPL's `/model`). The conversation is kept
    /// and sent whole to the new model: a stored response to continue belongs to the old one.
    pub fn set_model(&mut self, model: Box<dyn ModelClient>) {
        self.model = model;
        self.conversation.continuation = None;
    }

    /// The loop's settings.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The loop's settings, to change between prompts.
    pub fn config_mut(&mut self) -> &mut AgentConfig {
        &mut self.config
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model.name())
            .field("tools", &self.executor.registry().len())
            .field("items", &self.conversation.items.len())
            .finish_non_exhaustive()
    }
}
