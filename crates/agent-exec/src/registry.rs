//! The tool registry: every tool registered once, looked up by name or alias.

use std::{
    collections::HashMap,
    hash::{BuildHasherDefault, Hasher},
    sync::Arc,
    time::Duration,
};

use agent_core::{BoxFuture, Tool, ToolError, ToolSpec};

use crate::error::{Error, Result};

/// Per-tool limits that override the executor's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolLimits {
    /// The time limit of one call.
    pub timeout: Option<Duration>,
    /// The output cap of one call, in characters.
    pub output_cap: Option<usize>,
}

/// Tools that join a session after it started: MCP servers that finish starting after the first
/// model request, or whose tool list changed. The executor offers and runs them beside the
/// registry's tools; their names must not clash with those.
pub trait LateTools: Send + Sync {
    /// Takes in what became ready since the last call and says whether the set changed. The
    /// agent loop awaits it before each model request, so new tools join from the next turn; it
    /// should wait for nothing that is still starting.
    fn refresh(&self) -> BoxFuture<'_, bool>;
    /// The current tools and their limits, in a stable order.
    fn tools(&self) -> Vec<(Arc<dyn Tool>, ToolLimits)>;
    /// The tool named `name`, if it is one of these.
    fn get(&self, name: &str) -> Option<(Arc<dyn Tool>, ToolLimits)>;
    /// Why `name`, a tool these tools know but do not offer now, cannot be called: the
    /// observation the model reads instead of `unknown_tool` (an MCP tool that must be loaded
    /// with `tool_search` first). `None`, the default, for a name they do not know.
    fn unavailable(&self, _name: &str) -> Option<ToolError> {
        None
    }
}

/// A registered tool and its limits.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) limits: ToolLimits,
}

/// The tools of a session, in registration order.
///
/// Names and aliases share one namespace: registering a tool whose name or alias is taken fails
/// with an error naming both tools. [`Registry::specs`] keeps registration order, so the tool list
/// sent to the model is stable and provider prompt caches stay warm.
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<Entry>,
    /// Name or alias → index into `entries`.
    index: HashMap<String, usize, BuildHasherDefault<Fnv>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tools `keep` accepts, with their limits, in registration order (a child agent's).
    pub fn filtered(&self, keep: impl Fn(&ToolSpec) -> bool) -> Registry {
        let mut out = Registry::new();
        for entry in self.entries.iter().filter(|entry| keep(entry.tool.spec())) {
            // The names were unique here, so they are unique in a subset.
            let _ = out.register_with_limits(entry.tool.clone(), entry.limits);
        }
        out
    }

    /// Registers a tool with the executor's default limits.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        self.register_with_limits(tool, ToolLimits::default())
    }

    /// Registers a tool with its own time limit and output cap.
    pub fn register_with_limits(&mut self, tool: Arc<dyn Tool>, limits: ToolLimits) -> Result<()> {
        let spec = tool.spec();
        let names = std::iter::once(&spec.name).chain(&spec.aliases);
        for name in names.clone() {
            if let Some(&idx) = self.index.get(name.as_str()) {
                return Err(Error::NameTaken {
                    new: spec.name.clone(),
                    name: name.clone(),
                    existing: self.entries[idx].tool.spec().name.clone(),
                });
            }
        }
        let idx = self.entries.len();
        for name in names {
            self.index.insert(name.clone(), idx);
        }
        self.entries.push(Entry { tool, limits });
        Ok(())
    }

    /// Removes the tool called `name` (its name, not an alias) and returns it.
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let idx = self.entries.iter().position(|entry| entry.tool.spec().name == name)?;
        let entry = self.entries.remove(idx);
        // Indices after the removed entry shift down by one; rebuilding is simpler than patching
        // and unregistering is rare.
        self.index.clear();
        for (idx, entry) in self.entries.iter().enumerate() {
            let spec = entry.tool.spec();
            for name in std::iter::once(&spec.name).chain(&spec.aliases) {
                self.index.insert(name.clone(), idx);
            }
        }
        Some(entry.tool)
    }

    /// The tool called `name`, by exact name or alias.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entry(name).map(|entry| &entry.tool)
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|&idx| &self.entries[idx])
    }

    /// The specs of all tools, in registration order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().map(|entry| entry.tool.spec())
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A registered name that differs from `name` only in case or in `-` versus `_`, to suggest
    /// when a model misspells a tool.
    pub(crate) fn near_miss(&self, name: &str) -> Option<&str> {
        let normalize = |s: &str| s.to_ascii_lowercase().replace('-', "_");
        let wanted = normalize(name);
        self.index.keys().find(|candidate| normalize(candidate) == wanted).map(String::as_str)
    }
}

/// FNV-1a: the look-up runs for every call, and for short names it is several times cheaper than
/// the default SipHash. Flooding is no concern: the table holds a few dozen fixed names.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &byte in bytes {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.specs().map(|spec| &spec.name)).finish()
    }
}
