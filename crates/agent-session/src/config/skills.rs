//! The `[skills]` table: whether skills and custom commands are read, and the budget of the
//! skills list in the instructions (docs/skills.md).

use serde::Deserialize;

/// The share of the context window the skills list may take by default, in percent (Codex's).
pub const DEFAULT_BUDGET_PERCENT: u64 = 2;

/// `[skills]`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsTable {
    /// `false` reads no skills and no custom commands (default `true`).
    pub enabled: Option<bool>,
    /// The skills list's budget as a share of the context window, in percent (default 2).
    pub budget_percent: Option<u64>,
    /// The budget in tokens; outranks `budget_percent`.
    pub budget_tokens: Option<u64>,
}

impl SkillsTable {
    /// Refuses values outside their ranges (`config::RANGES`).
    pub fn check(&self) -> crate::Result<()> {
        super::check_range(
            "[skills] budget_percent",
            "skills.budget_percent",
            self.budget_percent,
        )?;
        super::check_range("[skills] budget_tokens", "skills.budget_tokens", self.budget_tokens)
    }

    /// The budget in tokens for a context window of `window` tokens.
    pub fn budget(&self, window: u64) -> usize {
        let tokens = self.budget_tokens.unwrap_or_else(|| {
            window.saturating_mul(self.budget_percent.unwrap_or(DEFAULT_BUDGET_PERCENT)) / 100
        });
        usize::try_from(tokens).unwrap_or(usize::MAX)
    }
}
