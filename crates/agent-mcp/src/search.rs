//! `tool_search`: the one tool the model gets in place of the MCP tools when their schemas
//! together pass the session's budget ([`crate::ToolBudget`]). It finds tools by name and
//! description, and loads the chosen ones for the rest of the session; their schemas are sent
//! from the next request on.

use std::sync::Weak;

use agent_core::{Effects, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::late::McpTools;

/// The tool's name.
pub(crate) const NAME: &str = "tool_search";

/// The most matches one search returns.
const MAX_MATCHES: usize = 8;

/// The score of a query that is a tool's whole name.
const EXACT: usize = 1000;

/// The most characters of a tool's description a match shows.
const SHORT_DESCRIPTION: usize = 160;

/// Input of `tool_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchInput {
    /// Words for what you want to do (`create issue`), or a tool's exact name; null to only load.
    pub(crate) query: Option<String>,
    /// Exact names of tools to load, as a search returned them; null to only search.
    pub(crate) load: Option<Vec<String>>,
}

/// One MCP tool as the search sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The model-facing name (`mcp__server__tool`).
    pub(crate) name: String,
    pub(crate) description: String,
    /// Whether it is loaded (offered) already.
    pub(crate) loaded: bool,
}

/// What loading one name did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loaded {
    Now,
    Already,
    Unknown,
}

/// `tool_search` over the tools of one session. Its description names the servers and their
/// tool counts, so it is built again whenever they change.
#[derive(Debug)]
pub(crate) struct ToolSearch {
    tools: Weak<McpTools>,
    /// `everything (13 tools), github (40 tools)`.
    servers: String,
}

impl ToolSearch {
    pub(crate) fn new(tools: Weak<McpTools>, servers: &[(String, usize)]) -> Self {
        let servers = servers
            .iter()
            .map(|(server, count)| {
                format!("{server} ({count} tool{})", if *count == 1 { "" } else { "s" })
            })
            .collect::<Vec<_>>()
            .join(", ");
        Self { tools, servers }
    }
}

impl TypedTool for ToolSearch {
    type Input = SearchInput;
    const NAME: &'static str = NAME;

    fn description(&self) -> String {
        format!(
            "Finds and loads the tools of the connected MCP servers: {}. Their schemas are too \
             large to send all at once, so they are not in your tool list until you load them. \
             `query`: words for what you want to do, matched against tool names and descriptions; \
             the best matches come back with a short description each. `load`: exact names of \
             tools to load; a loaded tool stays for the rest of the session, and its schema \
             comes with your next request, so call it from then on. Give either or both.",
            self.servers
        )
    }

    fn effects(&self) -> Effects {
        // It only changes which schemas the next request carries; every loaded tool still
        // passes the permission policy when it is called.
        Effects::READ_ONLY
    }

    async fn run(&self, input: SearchInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(tools) = self.tools.upgrade() else {
            return Err(ToolError::new(
                ToolErrorKind::ToolError,
                "the session's MCP tools are gone; answer without them",
            ));
        };
        let query = input.query.filter(|query| !query.trim().is_empty());
        let load = input.load.unwrap_or_default();
        if query.is_none() && load.is_empty() {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "give a `query` to search, names to `load`, or both",
            ));
        }
        let mut parts = Vec::new();
        if !load.is_empty() {
            let results: Vec<(String, Loaded)> =
                load.iter().map(|name| (name.clone(), tools.load(name))).collect();
            parts.push(render_loads(&results));
        }
        if let Some(query) = query {
            let catalog = tools.catalog();
            parts.push(render_matches(&query, &rank(&catalog, &query), catalog.len()));
        }
        Ok(ToolOutput::text(parts.join("\n\n")))
    }
}

/// The best matches of `query` in `catalog`, best first (ties in catalog order), at most
/// [`MAX_MATCHES`]; a tool that matches no word is left out.
pub(crate) fn rank<'a>(catalog: &'a [Entry], query: &str) -> Vec<&'a Entry> {
    let wanted = query.trim().to_lowercase();
    let terms = words(&wanted);
    let mut scored: Vec<(usize, usize, &Entry)> = catalog
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| {
            let score = score(entry, &wanted, &terms);
            (score > 0).then_some((score, index, entry))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    // An exact name is the answer: the words every name shares (`mcp`, the server's) would
    // only bury it among the other tools.
    if scored.first().is_some_and(|(score, _, _)| *score >= EXACT) {
        scored.retain(|(score, _, _)| *score >= EXACT);
    }
    scored.into_iter().take(MAX_MATCHES).map(|(_, _, entry)| entry).collect()
}

/// How well `entry` matches: its whole name is the only answer, the tool's part of the name
/// (the server's own name for it) comes first; then a word of the name, a part of the name, a
/// word of the description, a part of it.
fn score(entry: &Entry, wanted: &str, terms: &[String]) -> usize {
    let name = entry.name.to_lowercase();
    let tool_part = name.rsplit("__").next().unwrap_or(&name);
    if name == wanted {
        return EXACT;
    }
    if tool_part == wanted {
        return EXACT / 10;
    }
    let name_words = words(&name);
    let description = entry.description.to_lowercase();
    let description_words = words(&description);
    terms
        .iter()
        .map(|term| {
            let in_name = if name_words.contains(term) {
                6
            } else if name.contains(term.as_str()) {
                3
            } else {
                0
            };
            let in_description = if description_words.contains(term) {
                2
            } else if term.len() >= 3 && description.contains(term.as_str()) {
                1
            } else {
                0
            };
            in_name + in_description
        })
        .sum()
}

/// The lowercase words of a text: runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn render_matches(query: &str, matches: &[&Entry], total: usize) -> String {
    if matches.is_empty() {
        return format!(
            "No MCP tool matches {query:?} ({total} tools in all). Try other words: a verb, an \
             object, or a server's name."
        );
    }
    let mut text = format!("{} of {total} MCP tools match {query:?}:\n", matches.len());
    for entry in matches {
        let loaded = if entry.loaded { " (loaded)" } else { "" };
        text.push_str(&format!("- {}{loaded}: {}\n", entry.name, short(&entry.description)));
    }
    text.push_str(
        "Load the ones you need with tool_search {\"load\": [\"<name>\", ...]}; their schemas \
         come with your next request.",
    );
    text
}

fn render_loads(results: &[(String, Loaded)]) -> String {
    let mut lines = Vec::new();
    let now: Vec<&str> = results
        .iter()
        .filter(|(_, loaded)| *loaded == Loaded::Now)
        .map(|(name, _)| name.as_str())
        .collect();
    if !now.is_empty() {
        lines.push(format!(
            "Loaded {}: the schema comes with your next request; call it from then on.",
            now.join(", ")
        ));
    }
    for (name, loaded) in results {
        match loaded {
            Loaded::Now => {}
            Loaded::Already => lines.push(format!("{name} was loaded already; call it.")),
            Loaded::Unknown => lines.push(format!(
                "No MCP tool is named {name:?}; search with `query` and load a name it returns."
            )),
        }
    }
    lines.join("\n")
}

/// The first line of a description, cut to [`SHORT_DESCRIPTION`] characters.
fn short(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or_default().trim();
    if line.chars().count() <= SHORT_DESCRIPTION {
        return line.to_owned();
    }
    let cut: String = line.chars().take(SHORT_DESCRIPTION - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str) -> Entry {
        Entry { name: name.to_owned(), description: description.to_owned(), loaded: false }
    }

    fn catalog() -> Vec<Entry> {
        vec![
            entry("mcp__everything__echo", "Echoes back the input string"),
            entry("mcp__everything__get-sum", "Returns the sum of two numbers"),
            entry("mcp__github__create_issue", "Create a new issue in a GitHub repository"),
            entry("mcp__github__list_issues", "List issues in a GitHub repository"),
            entry("mcp__github__search_code", "Search code across repositories; echo-free"),
        ]
    }

    #[track_caller]
    fn check(query: &str, expect: &[&str]) {
        let catalog = catalog();
        let names: Vec<&str> = rank(&catalog, query).iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, expect, "{query:?}");
    }

    #[test]
    fn ranks_names_over_descriptions_and_leaves_out_non_matches() {
        check("echo", &["mcp__everything__echo", "mcp__github__search_code"]);
        check("create issue", &["mcp__github__create_issue", "mcp__github__list_issues"]);
        check("SUM", &["mcp__everything__get-sum"]);
        check("get-sum", &["mcp__everything__get-sum"]);
        check("mcp__github__list_issues", &["mcp__github__list_issues"]);
        check("weather", &[]);
        check("", &[]);
    }

    #[test]
    fn a_long_description_is_cut_to_its_first_line_and_a_limit() {
        assert_eq!(short("One line.\nMore detail."), "One line.");
        let long = "x".repeat(500);
        assert_eq!(short(&long).chars().count(), SHORT_DESCRIPTION);
    }

    #[test]
    fn model_visible_texts() {
        let mut catalog = catalog();
        catalog[2].loaded = true;
        let matches = rank(&catalog, "issue");
        insta::assert_snapshot!("matches", render_matches("issue", &matches, catalog.len()));
        insta::assert_snapshot!("no_match", render_matches("weather", &[], catalog.len()));
        let loads = [
            ("mcp__everything__echo".to_owned(), Loaded::Now),
            ("mcp__everything__get-sum".to_owned(), Loaded::Now),
            ("mcp__github__create_issue".to_owned(), Loaded::Already),
            ("mcp__nope__x".to_owned(), Loaded::Unknown),
        ];
        insta::assert_snapshot!("loads", render_loads(&loads));
    }

    #[test]
    fn the_spec_is_strict_and_names_the_servers() {
        let servers = [("everything".to_owned(), 13), ("py".to_owned(), 1)];
        let tool = agent_core::Typed::new(ToolSearch::new(Weak::new(), &servers));
        let tool = tool.unwrap_or_else(|err| panic!("{err}"));
        let spec = agent_core::Tool::spec(&tool);
        insta::assert_json_snapshot!("spec", spec);
    }
}
