//! Figures in the docs that the code can contradict: how many built-in tools there are, and which.
//!
//! The docs once said ten, eleven and twelve built-ins in four places while the code registered
//! more; a count in prose goes stale the day a tool is added. So the docs name no count of tools
//! (docs/BENCHMARKS.md excepted: its dated runs record what was measured then), and the two tables
//! of docs/tools.md must name exactly the tools the code defines. The token column of the second
//! table is compared with `agent tools list --tokens` by a test of the binary, which tidy cannot run.

use std::{fs, path::Path};

use anyhow::Context;

/// Where built-in tools are defined: every `const NAME` of a `TypedTool` in these files.
const TOOL_SOURCES: &[&str] = &["crates/agent-tools/src", "crates/agent-lsp/src/tool.rs"];

/// The doc whose tables list the tools, and the header of each table.
const TOOLS_DOC: &str = "docs/tools.md";
const TABLES: &[&str] = &["| tool | rule name |", "| tool | before | after |"];

/// Rows of a table that are not tools.
const NOT_TOOLS: &[&str] = &["instructions", "**total**"];

/// Checks the docs' tool counts and docs/tools.md's tables against the tools defined.
pub(super) fn check(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    // The benchmark log's dated runs record what was measured then.
    for doc in
        super::references::markdown(root)?.into_iter().filter(|doc| doc != "docs/BENCHMARKS.md")
    {
        let text = fs::read_to_string(root.join(&doc)).with_context(|| format!("reading {doc}"))?;
        for (number, line) in text.lines().enumerate() {
            if let Some(count) = tool_count(line) {
                problems.push(format!(
                    "{doc}:{}: \"{count}\" counts tools in prose; name them or point at \
                     docs/tools.md, whose table tidy checks",
                    number + 1
                ));
            }
        }
    }
    let defined = defined_tools(root)?;
    let doc = fs::read_to_string(root.join(TOOLS_DOC)).context("reading docs/tools.md")?;
    for header in TABLES {
        let listed = table_tools(&doc, header);
        compare(header, &listed, &defined, problems);
    }
    Ok(())
}

/// The first "N tools" or "N built-ins" in `line` outside code spans, as written.
fn tool_count(line: &str) -> Option<String> {
    // Small counts ("the two tools of the plan") name a handful the sentence is about; from eight
    // on, a count is a claim about the whole set, and the whole set is what changes.
    const NUMBERS: &[&str] = &[
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    let words: Vec<String> = prose
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.windows(3).chain(words.rchunks(2).take(1)).find_map(|window| {
        let number = window[0].as_str();
        let is_number = NUMBERS.contains(&number) || number.parse::<u32>().is_ok_and(|n| n >= 8);
        let counted = match window.get(1..).unwrap_or_default() {
            [next, ..] if next == "tools" || next == "built-ins" => 2,
            [built_in, tools] if built_in == "built-in" && tools == "tools" => 3,
            _ => 0,
        };
        (is_number && counted > 0).then(|| window[..counted].join(" "))
    })
}

/// The names of the built-in tools the code defines.
fn defined_tools(root: &Path) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for source in TOOL_SOURCES {
        let path = root.join(source);
        if path.is_dir() {
            for entry in fs::read_dir(&path).with_context(|| format!("reading {source}"))? {
                let file = entry?.path();
                if file.extension().is_some_and(|ext| ext == "rs") {
                    files.push(file);
                }
            }
        } else {
            files.push(path);
        }
    }
    let mut names = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file)?;
        // A test module may define a tool of its own; only the code before it counts.
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        names.extend(code.lines().filter_map(tool_name));
    }
    names.sort();
    Ok(names)
}

/// The tool name a `const NAME: &'static str = "name";` line defines.
fn tool_name(line: &str) -> Option<String> {
    let value = line.trim().strip_prefix("const NAME: &'static str = \"")?;
    Some(value.split('"').next()?.to_owned())
}

/// The first column of the table under `header`, code marks removed.
fn table_tools(doc: &str, header: &str) -> Vec<String> {
    let mut lines = doc.lines().skip_while(|line| !line.starts_with(header)).skip(2);
    let mut tools = Vec::new();
    while let Some(line) = lines.next().filter(|line| line.starts_with('|')) {
        let cell = line.split('|').nth(1).unwrap_or_default().trim();
        if !NOT_TOOLS.contains(&cell) {
            tools.push(cell.trim_matches('`').to_owned());
        }
    }
    tools.sort();
    tools
}

/// Reports every tool defined but not listed and every row that names no tool.
fn compare(header: &str, listed: &[String], defined: &[String], problems: &mut Vec<String>) {
    if listed.is_empty() {
        problems.push(format!("{TOOLS_DOC}: no table starting `{header}`"));
        return;
    }
    for tool in defined.iter().filter(|tool| !listed.contains(tool)) {
        problems.push(format!("{TOOLS_DOC}: the table `{header}` does not list `{tool}`"));
    }
    for row in listed.iter().filter(|row| !defined.contains(row)) {
        problems.push(format!("{TOOLS_DOC}: the table `{header}` lists `{row}`, no such tool"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_count(line: &str, expect: Option<&str>) {
        assert_eq!(tool_count(line).as_deref(), expect, "{line}");
    }

    #[test]
    fn counts_of_tools_in_prose_are_found() {
        check_count(
            "one call gives the eleven built-in tools (files, …)",
            Some("eleven built-in tools"),
        );
        check_count("| all twelve built-ins, plus MCP tools |", Some("twelve built-ins"));
        check_count("the first request with all 13 tools", Some("13 tools"));
        check_count("ends with ten tools", Some("ten tools"));
    }

    #[test]
    fn other_mentions_of_tools_are_not() {
        check_count("`everything (13 tools)` is what the model reads", None);
        check_count("MCP tools as their servers become ready", None);
        check_count("three MCP servers and their tools", None);
        check_count("the tools in the table below", None);
        check_count("the two tools of the plan", None);
    }

    #[track_caller]
    fn check_tables(doc: &str, defined: &[&str], expect: &[&str]) {
        let defined: Vec<String> = defined.iter().map(|tool| (*tool).to_owned()).collect();
        let mut problems = Vec::new();
        compare(TABLES[0], &table_tools(doc, TABLES[0]), &defined, &mut problems);
        assert_eq!(problems, expect);
    }

    #[test]
    fn a_table_must_name_exactly_the_tools_defined() {
        let doc = "| tool | rule name | x |\n|---|---|---|\n| `bash` | `Bash` | y |\n| `gone` | `G` | z |\n\nafter";
        check_tables(
            doc,
            &["bash", "grep"],
            &[
                "docs/tools.md: the table `| tool | rule name |` does not list `grep`",
                "docs/tools.md: the table `| tool | rule name |` lists `gone`, no such tool",
            ],
        );
        check_tables(doc.replace("gone", "grep").as_str(), &["bash", "grep"], &[]);
    }

    #[test]
    fn the_tools_defined_are_read_from_their_constants() {
        assert_eq!(
            tool_name("    const NAME: &'static str = \"web_fetch\";").as_deref(),
            Some("web_fetch")
        );
        assert_eq!(tool_name("    const NAMED: usize = 3;"), None);
    }
}
