//! `[agents]`: the session's limits on child agents (docs/agents.md, docs/limits.md).

use std::time::Duration;

use agent_exec::child::ChildLimits;
use serde::Deserialize;

use super::Range;

/// The bounds of `[agents]`, checked when the file is read.
pub const RANGES: &[(&str, Range)] = &[
    ("agents.max_concurrent", Range { min: 1, max: 64, unit: "children" }),
    ("agents.max_depth", Range { min: 0, max: 8, unit: "levels" }),
    ("agents.max_turns", Range { min: 1, max: 10_000, unit: "turns" }),
    ("agents.max_tokens", Range { min: 1, max: 1_000_000_000, unit: "tokens" }),
    ("agents.wall_time_secs", Range { min: 1, max: 86_400, unit: "seconds" }),
    ("agents.session_tokens", Range { min: 1, max: 100_000_000_000, unit: "tokens" }),
];

/// `[agents]` in the config file; every field falls back to [`ChildLimits::default`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agents {
    /// Offer the model `update_plan` and `task` (default on; together they add about 200 tokens
    /// to every request, see docs/BENCHMARKS.md "First request").
    pub enabled: Option<bool>,
    /// How many children may run at once.
    pub max_concurrent: Option<u64>,
    /// How deep children may start children.
    pub max_depth: Option<u64>,
    /// The most model turns one child may take.
    pub max_turns: Option<u64>,
    /// The most tokens one child may spend.
    pub max_tokens: Option<u64>,
    /// The longest one child may run, in seconds.
    pub wall_time_secs: Option<u64>,
    /// The most tokens all of a session's children may spend together.
    pub session_tokens: Option<u64>,
}

impl Agents {
    /// Refuses a value outside its range.
    pub fn check(&self) -> crate::Result<()> {
        let values = [
            ("max_concurrent", self.max_concurrent),
            ("max_depth", self.max_depth),
            ("max_turns", self.max_turns),
            ("max_tokens", self.max_tokens),
            ("wall_time_secs", self.wall_time_secs),
            ("session_tokens", self.session_tokens),
        ];
        for (key, value) in values {
            let Some(value) = value else { continue };
            let Some((_, range)) = RANGES.iter().find(|(name, _)| name.ends_with(key)) else {
                continue;
            };
            if !(range.min..=range.max).contains(&value) {
                crate::error::bail!(
                    "[agents] {key} = {value} is out of range: it takes {} to {} {}",
                    range.min,
                    range.max,
                    range.unit
                );
            }
        }
        Ok(())
    }

    /// The limits these settings give.
    pub fn limits(&self) -> ChildLimits {
        let base = ChildLimits::default();
        let size = |value: Option<u64>, default: usize| {
            value.and_then(|v| usize::try_from(v).ok()).unwrap_or(default)
        };
        ChildLimits {
            max_turns: size(self.max_turns, base.max_turns),
            max_tokens: self.max_tokens.unwrap_or(base.max_tokens),
            wall_time: self.wall_time_secs.map_or(base.wall_time, Duration::from_secs),
            max_concurrent: size(self.max_concurrent, base.max_concurrent),
            max_depth: size(self.max_depth, base.max_depth),
            session_tokens: self.session_tokens.unwrap_or(base.session_tokens),
        }
    }
}
