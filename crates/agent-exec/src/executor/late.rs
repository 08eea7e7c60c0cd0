//! The executor's tool list and look-up, with late tools: tools that join a running session (see
//! [`LateTools`]), looked up after the registry's and offered after them.

use std::{borrow::Cow, sync::Arc};

use agent_core::ToolSpec;

use super::Executor;
use crate::registry::{Entry, LateTools};

impl Executor {
    /// The same executor, also offering and running `late`'s tools (see [`LateTools`]).
    pub fn with_late_tools(mut self, late: Arc<dyn LateTools>) -> Self {
        self.late = Some(late);
        self
    }

    /// Takes in late tools that became ready; `true` when [`Executor::specs`] changed.
    pub async fn refresh_late_tools(&self) -> bool {
        match &self.late {
            Some(late) => late.refresh().await,
            None => false,
        }
    }

    /// The registry's entry for `name`, else a late tool's.
    pub(super) fn entry(&self, name: &str) -> Option<Cow<'_, Entry>> {
        if let Some(entry) = self.registry.entry(name) {
            return Some(Cow::Borrowed(entry));
        }
        let (tool, limits) = self.late.as_ref()?.get(name)?;
        Some(Cow::Owned(Entry { tool, limits }))
    }

    /// The specs to send to the model: registration order, then the late tools, without the
    /// tools the policy hides (bare deny rules; mutating tools in plan mode).
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> =
            self.registry.specs().filter(|spec| self.policy.offers(spec)).cloned().collect();
        if let Some(late) = &self.late {
            let tools = late.tools();
            let late = tools.iter().map(|(tool, _)| tool.spec());
            specs.extend(late.filter(|spec| self.policy.offers(spec)).cloned());
        }
        specs
    }
}
