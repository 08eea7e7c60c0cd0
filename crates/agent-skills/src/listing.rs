//! The skills list the model reads in its instructions, inside a token budget, and `$name`
//! mentions in a prompt.
//!
//! The rule past the budget: skills are taken in precedence order, each with its description and
//! path while the described part fits the budget; every skill left over is then named on one
//! closing line, since a model that does not know a skill exists can never pick it, and names are
//! cheap. The names may cost at most as much again as the budget; past that, the closing line
//! counts the rest and points to the `skills` call ([`crate::SKILLS_TOOL`]), which lists every
//! skill the list does not describe. So the list costs at most twice the budget, and every skill
//! is reachable by the model.

use agent_core::TokenCounter;

use crate::{Catalog, SKILLS_TOOL, Skill};

/// The list for the instructions and what it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillList {
    /// The text (empty when there are no skills).
    pub text: String,
    /// Skills listed with their description.
    pub described: usize,
    /// Skills listed by name only.
    pub named: usize,
    /// Skills not named in the text: the `skills` call lists them.
    pub unnamed: usize,
    /// The tokens the text takes, by the counter given.
    pub tokens: usize,
    /// The tokens the described part takes (the heading, the described skills and the closing
    /// line without its names): at most the budget unless the budget cannot hold even the
    /// heading and the closing line.
    pub described_tokens: usize,
}

impl SkillList {
    /// Whether some skill is not described, so the model needs the `skills` call to learn its
    /// description and path.
    pub fn needs_call(&self) -> bool {
        self.named + self.unnamed > 0
    }
}

// Short because it goes with every request (the first request's budget, docs/BENCHMARKS.md).
const HEADING: &str = "# Skills\n\nWhen a task matches a skill below, or the user names it as \
    `$name`, read its SKILL.md first and follow it; its paths are relative to its folder.\n\n";

impl Catalog {
    /// The skills list: descriptions inside `budget` tokens as `counter` counts them, then the
    /// remaining skills' names inside as much again.
    pub fn listing(&self, budget: usize, counter: &dyn TokenCounter) -> SkillList {
        let total = self.skills.len();
        if total == 0 {
            return SkillList::default();
        }
        // Each piece is counted once and the counts added: a byte-level BPE never needs more
        // tokens for a concatenation than for its parts, so the sum errs on the safe side, and
        // 200 skills cost 200 counts, not 200 counts of a growing text.
        let mut text = HEADING.to_owned();
        let mut used = counter.count(HEADING);
        let mut described = 0;
        // Room is kept for the closing line, which every list past the budget has. The heading
        // and that line always go out, even past a budget too small for them: the model must
        // learn that skills exist and how to reach them.
        let reserve = counter.count(&tail(&[], total));
        for skill in &self.skills {
            let line = entry(skill);
            let cost = counter.count(&line);
            let rest_after = total - described - 1;
            let room = if rest_after == 0 { 0 } else { reserve };
            if used + cost + room > budget {
                break;
            }
            text.push_str(&line);
            used += cost;
            described += 1;
        }
        let rest = &self.skills[described..];
        let described_tokens = if rest.is_empty() { used } else { used + reserve };
        let mut named: Vec<&str> = Vec::new();
        if !rest.is_empty() {
            let mut names_cost = 0;
            for skill in rest {
                // Each name adds itself and a separator to the closing line.
                let cost = counter.count(&skill.name) + 1;
                if names_cost + cost > budget {
                    break;
                }
                names_cost += cost;
                named.push(skill.name.as_str());
            }
            let described_text = text.len();
            text.push_str(&tail(&named, rest.len()));
            // The sum above leaves out the few words around the names; one exact count checks
            // the end, and names are dropped until it fits.
            while counter.count(&text) > described_tokens + budget && !named.is_empty() {
                named.pop();
                text.truncate(described_text);
                text.push_str(&tail(&named, rest.len()));
            }
        }
        let tokens = counter.count(&text);
        SkillList {
            text,
            described,
            named: named.len(),
            unnamed: rest.len() - named.len(),
            tokens,
            described_tokens,
        }
    }

    /// The `skills` call's answer: the skills the list does not describe (the first `described`
    /// are), from `offset`, one line each with its description and path, at most `page`.
    pub fn undescribed(&self, described: usize, offset: usize, page: usize) -> String {
        let rest = self.skills.get(described..).unwrap_or_default();
        if rest.is_empty() {
            return "Every installed skill is described in the instructions.".to_owned();
        }
        let shown: String = rest.iter().skip(offset).take(page).map(entry).collect();
        let end = (offset + page).min(rest.len());
        let mut text = format!(
            "{} skill(s) not described in the instructions; {}–{} here.\n\n{shown}",
            rest.len(),
            (offset + 1).min(end),
            end
        );
        if end < rest.len() {
            text.push_str(&format!("\nCall `{SKILLS_TOOL}` with offset {end} for the rest.\n"));
        }
        text
    }
}

impl Skill {
    /// What this skill's line in the list costs, in tokens as `counter` counts them.
    pub fn listed_tokens(&self, counter: &dyn TokenCounter) -> usize {
        counter.count(&entry(self))
    }
}

fn entry(skill: &Skill) -> String {
    format!("- {}: {} ({})\n", skill.name, skill.description, skill.path.display())
}

/// The line after the described skills: the names that fit, a count of the others, and the call
/// that lists them all.
fn tail(named: &[&str], rest: usize) -> String {
    let unnamed = rest - named.len();
    let mut line = format!(
        "\nThe skills list is over its budget, so {rest} more skill(s) are not described here"
    );
    if !named.is_empty() {
        line.push_str(&format!(" (by name: {})", named.join(", ")));
    }
    if unnamed > 0 {
        line.push_str(&format!("; {unnamed} are not named either"));
    }
    line.push_str(&format!(
        ". Call `{SKILLS_TOOL}` to list them with their descriptions and paths.\n"
    ));
    line
}

/// The skills a prompt names as `$name` (Codex's syntax), in the order first named, each once.
/// A `$` must start the prompt or follow a space or punctuation, and the name must end there
/// (`$pdf2` does not name `pdf`).
pub fn mentioned<'a>(catalog: &'a Catalog, prompt: &str) -> Vec<&'a Skill> {
    let mut found: Vec<&Skill> = Vec::new();
    for (at, _) in prompt.match_indices('$') {
        let before = prompt[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &prompt[at + 1..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '-')).unwrap_or(rest.len());
        // A sentence may end right after the name: `use $pdf-tools.` or `$pdf-`.
        let name = rest[..end].trim_end_matches('-');
        if let Some(skill) = catalog.get(name)
            && !found.iter().any(|known| known.name == skill.name)
        {
            found.push(skill);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use agent_core::CharEstimate;

    use super::*;
    use crate::SkillSource;

    fn catalog(count: usize) -> Catalog {
        let skills = (0..count)
            .map(|i| Skill {
                name: format!("skill-{i:02}"),
                description: format!("Does task number {i} of the team's usual work."),
                path: PathBuf::from(format!("/s/skill-{i:02}/SKILL.md")),
                source: SkillSource::User,
                allowed_tools: vec![],
                license: None,
                body: String::new(),
                warnings: vec![],
                text: String::new(),
            })
            .collect();
        Catalog { skills, ..Catalog::default() }
    }

    #[test]
    fn a_list_inside_the_budget_describes_every_skill() {
        let list = catalog(3).listing(10_000, &CharEstimate);
        assert_eq!((list.described, list.named, list.unnamed), (3, 0, 0));
        assert!(!list.needs_call());
        insta::assert_snapshot!(list.text);
    }

    /// Every skill is described, named, or (past twice the budget) behind the `skills` call,
    /// and the call's pages give every skill not described.
    #[test]
    fn past_the_budget_the_rest_are_named_then_reachable_by_the_call() {
        for budget in [20, 150, 250, 400, 700] {
            let skills = catalog(40);
            let list = skills.listing(budget, &CharEstimate);
            assert!(list.tokens <= list.described_tokens + budget, "{budget}: {list:?}");
            // The described part keeps to the budget once the budget holds its fixed words.
            assert!(budget < 80 || list.described_tokens <= budget, "{budget}: {list:?}");
            assert_eq!(list.described + list.named + list.unnamed, 40);
            assert!(list.text.contains("Call `skills`"), "{}", list.text);
            let mut called = String::new();
            let mut offset = 0;
            while offset < 40 {
                called.push_str(&skills.undescribed(list.described, offset, 7));
                offset += 7;
            }
            for skill in &skills.skills[list.described..] {
                assert!(
                    called.contains(&entry(skill)),
                    "{budget}: {} not in\n{called}",
                    skill.name
                );
            }
        }
        let list = catalog(40).listing(110, &CharEstimate);
        assert!(list.described > 0 && list.named > 0 && list.unnamed > 0, "{list:?}");
        insta::assert_snapshot!(list.text);
        let list = catalog(40).listing(400, &CharEstimate);
        assert!(list.named > 0 && list.unnamed == 0, "{list:?}");
        insta::assert_snapshot!("forty_at_400_tokens", list.text);
        insta::assert_snapshot!(
            "the_call_first_page",
            catalog(40).undescribed(list.described, 0, 3)
        );
    }

    #[test]
    fn mentions_need_a_boundary_and_a_known_name() {
        let skills = catalog(3);
        let names = |prompt: &str| -> Vec<String> {
            mentioned(&skills, prompt).iter().map(|s| s.name.clone()).collect()
        };
        assert_eq!(names("use $skill-01 then $skill-02."), ["skill-01", "skill-02"]);
        assert_eq!(names("$skill-00 and again ($skill-00)"), ["skill-00"]);
        assert!(names("costs $5, a$skill-01, $skill-011, $$skill-01").is_empty());
    }
}
