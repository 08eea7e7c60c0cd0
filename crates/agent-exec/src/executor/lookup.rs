//! The executor's tool list and look-up, with late tools: tools that join a running session (see
//! [`LateTools`]), looked up after the registry's and offered after them.

use std::{borrow::Cow, sync::Arc};

use agent_core::{ToolError, ToolErrorKind, ToolSpec};

use super::Executor;
use crate::registry::{Entry, LateTools};

impl Executor {
    /// The same executor, also offering and running `late`'s tools (see [`LateTools`]).
    pub fn with_late_tools(mut self, late: Arc<dyn LateTools>) -> Self {
        self.late = Some(late);
        self
    }

    /// The same executor, offering the registered tool `name` only once `relevant` says so
    /// (see [`Relevant`](super::deferred::Relevant)); it can be called before that.
    pub fn with_deferred(mut self, name: &str, relevant: super::deferred::Relevant) -> Self {
        self.deferred.add(name.to_owned(), relevant);
        self
    }

    /// Takes in late tools that became ready and opens deferred tools that became relevant;
    /// `true` when [`Executor::specs`] changed.
    pub async fn refresh_late_tools(&self) -> bool {
        let late = match &self.late {
            Some(late) => late.refresh().await,
            None => false,
        };
        let deferred = self.deferred.refresh();
        late || deferred
    }

    /// The registry's entry for `name`, else a late tool's.
    pub(super) fn entry(&self, name: &str) -> Option<Cow<'_, Entry>> {
        if let Some(entry) = self.registry.entry(name) {
            return Some(Cow::Borrowed(entry));
        }
        let (tool, limits) = self.late.as_ref()?.get(name)?;
        Some(Cow::Owned(Entry { tool, limits }))
    }

    /// The specs to send to the model: registration order, then the late tools, then the
    /// deferred tools that opened (in the order they opened), without the tools the policy hides
    /// (bare deny rules; mutating tools in plan mode).
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .registry
            .specs()
            .filter(|spec| !self.deferred.is_deferred(&spec.name) && self.policy.offers(spec))
            .cloned()
            .collect();
        if let Some(late) = &self.late {
            let tools = late.tools();
            let late = tools.iter().map(|(tool, _)| tool.spec());
            specs.extend(late.filter(|spec| self.policy.offers(spec)).cloned());
        }
        for name in self.deferred.opened() {
            let spec = self.registry.get(&name).map(|tool| tool.spec());
            specs.extend(spec.filter(|spec| self.policy.offers(spec)).cloned());
        }
        specs
    }

    /// The observation for a call of a tool that is not offered: the late tools' reason when
    /// they know the name, else `unknown_tool` with the names there are.
    pub(super) fn unknown_tool(&self, name: &str) -> ToolError {
        if let Some(err) = self.late.as_ref().and_then(|late| late.unavailable(name)) {
            return err;
        }
        let mut names: Vec<&str> = self.registry.specs().map(|spec| spec.name.as_str()).collect();
        names.truncate(50);
        let hint = match self.registry.near_miss(name) {
            Some(near) => format!("did you mean `{near}`? "),
            None => String::new(),
        };
        let shown: String = name.chars().take(100).collect();
        ToolError::new(
            ToolErrorKind::UnknownTool,
            format!(
                "no tool is named `{shown}`; {hint}call one of the available tools by its exact name: {}",
                names.join(", ")
            ),
        )
    }
}
