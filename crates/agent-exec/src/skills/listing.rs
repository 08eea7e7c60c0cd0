//! The skills list the model reads in its instructions, inside a token budget, and `$name`
//! mentions in a prompt.
//!
//! The rule past the budget: skills are taken in precedence order, each with its description and
//! path while the whole list fits; the rest are named only, on one line that says so, while that
//! fits; whatever still does not fit is counted, not named. The list never passes the budget, so
//! forty skills or four hundred cost the first request the same at most.

use agent_core::TokenCounter;

use super::{Catalog, Skill};

/// The list for the instructions and what it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillList {
    /// The text (empty when there are no skills or the budget holds not even the heading).
    pub text: String,
    /// Skills listed with their description.
    pub described: usize,
    /// Skills listed by name only.
    pub named: usize,
    /// Skills not listed at all.
    pub left_out: usize,
    /// The tokens the text takes, by the counter given.
    pub tokens: usize,
}

// Short because it goes with every request (issue 37's budget, docs/BENCHMARKS.md).
const HEADING: &str = "# Skills\n\nWhen a task matches a skill below, or the user names it as \
    `$name`, read its SKILL.md first and follow it; its paths are relative to its folder.\n\n";

impl Catalog {
    /// The skills list inside `budget` tokens as `counter` counts them.
    pub fn listing(&self, budget: usize, counter: &dyn TokenCounter) -> SkillList {
        let total = self.skills.len();
        let heading = counter.count(HEADING);
        if total == 0 || heading > budget {
            return SkillList { left_out: total, ..SkillList::default() };
        }
        // Each piece is counted once and the counts added: a byte-level BPE never needs more
        // tokens for a concatenation than for its parts, so the sum errs on the safe side, and
        // 200 skills cost 200 counts, not 200 counts of a growing text.
        let mut text = HEADING.to_owned();
        let mut used = heading;
        let mut described = 0;
        // Room is kept for the closing line, which every list past the budget has.
        let reserve = counter.count(&tail(&[], total));
        for skill in &self.skills {
            let line = entry(skill);
            let cost = counter.count(&line);
            if used + cost + reserve > budget {
                break;
            }
            text.push_str(&line);
            used += cost;
            described += 1;
        }
        let rest = &self.skills[described..];
        let mut named: Vec<&str> = Vec::new();
        if !rest.is_empty() {
            let mut names_cost = 0;
            for skill in rest {
                // Each name adds itself and a separator to the closing line.
                let cost = counter.count(&skill.name) + 1;
                if used + reserve + names_cost + cost > budget {
                    break;
                }
                names_cost += cost;
                named.push(skill.name.as_str());
            }
            let described_text = text.len();
            text.push_str(&tail(&named, rest.len()));
            // The sum above leaves out the few words around the names; one exact count checks
            // the end, and names are dropped until it fits.
            while counter.count(&text) > budget && !named.is_empty() {
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
            left_out: rest.len() - named.len(),
            tokens,
        }
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

/// The line after the described skills: the names that fit and a count of the others.
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
    line.push_str(". A skill named by the user as `$name` is still loaded.\n");
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
    use crate::skills::SkillSource;

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
        assert_eq!((list.described, list.named, list.left_out), (3, 0, 0));
        insta::assert_snapshot!(list.text);
    }

    #[test]
    fn past_the_budget_the_rest_are_named_then_counted() {
        for budget in [150, 250, 400, 700] {
            let list = catalog(40).listing(budget, &CharEstimate);
            assert!(list.tokens <= budget, "{budget}: {} tokens\n{}", list.tokens, list.text);
            assert_eq!(list.described + list.named + list.left_out, 40);
            assert!(list.text.contains("over its budget"), "{}", list.text);
        }
        let list = catalog(40).listing(250, &CharEstimate);
        assert!(list.described > 0 && list.named > 0 && list.left_out > 0, "{list:?}");
        insta::assert_snapshot!(list.text);
        assert_eq!(
            catalog(2).listing(10, &CharEstimate),
            SkillList { left_out: 2, ..SkillList::default() }
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
