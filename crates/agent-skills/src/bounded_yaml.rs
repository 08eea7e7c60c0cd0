//! The one YAML reader for files that come with a repository (skills, custom commands, agent
//! definitions): bounded before anything is built.
//!
//! yaml-rust2's loader expands every alias by cloning the anchored node, so nine levels of nine
//! aliases (under 1 KB) become 9^9 strings and exhaust the machine; its loader also recurses once
//! per nesting level, so 100,000 `[` overflow the stack. This reader pulls the parser's events one
//! at a time (the parser and scanner keep their state on the heap) and builds the tree with its own
//! stack, refusing any anchor or alias as soon as it is seen, and stopping at a nesting depth and a
//! node count that no frontmatter needs. The caller names the file as broken with the message.

use yaml_rust2::{
    Yaml,
    parser::{Event, Parser},
    scanner::TScalarStyle,
    yaml::Hash,
};

/// The deepest nesting of lists and mappings read; frontmatter uses two or three.
pub const MAX_DEPTH: usize = 16;
/// The most values (scalars, lists and mappings together) read from one file.
pub const MAX_NODES: usize = 10_000;

/// Why a YAML text was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// An anchor (`&name`) or alias (`*name`): refused so a small file cannot expand into a huge
    /// one.
    #[error("uses a yaml anchor or alias (`&name`, `*name`), which is not accepted")]
    Alias,
    /// Lists and mappings nested deeper than [`MAX_DEPTH`].
    #[error("nests lists or mappings deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// More than [`MAX_NODES`] values.
    #[error("holds more than {MAX_NODES} values")]
    TooMany,
    /// Not valid YAML (the parser's words).
    #[error("{0}")]
    Syntax(String),
}

impl YamlError {
    /// Whether the text was refused for its shape (a limit), not for its syntax: a reader that
    /// tolerates YAML it cannot parse must still refuse these.
    pub fn is_limit(&self) -> bool {
        !matches!(self, Self::Syntax(_))
    }
}

/// A list or mapping being built, with a mapping's key waiting for its value.
enum Open {
    List(Vec<Yaml>),
    Map(Hash, Option<Yaml>),
}

/// The first document of `text`; `None` when it has none.
pub fn load(text: &str) -> Result<Option<Yaml>, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Open> = Vec::new();
    let mut nodes = 0usize;
    loop {
        let (event, _) = parser.next_token().map_err(|err| {
            // The scanner has its own cap on flow nesting, met before this reader's on `[[[[…`.
            if err.info().contains("recursion limit") {
                YamlError::TooDeep
            } else {
                YamlError::Syntax(err.to_string())
            }
        })?;
        let done = match event {
            Event::StreamEnd => return Ok(None),
            Event::Alias(_) => return Err(YamlError::Alias),
            Event::Scalar(_, _, anchor, _)
            | Event::SequenceStart(anchor, _)
            | Event::MappingStart(anchor, _)
                if anchor != 0 =>
            {
                return Err(YamlError::Alias);
            }
            Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..)
                if nodes >= MAX_NODES =>
            {
                return Err(YamlError::TooMany);
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() >= MAX_DEPTH => {
                return Err(YamlError::TooDeep);
            }
            Event::Scalar(value, style, _, tag) => {
                nodes += 1;
                // A quoted or tagged scalar is text; a plain one is typed as YAML 1.2 types it.
                let node = if style != TScalarStyle::Plain || tag.is_some() {
                    Yaml::String(value)
                } else {
                    Yaml::from_str(&value)
                };
                place(&mut stack, node)
            }
            Event::SequenceStart(..) => {
                nodes += 1;
                stack.push(Open::List(Vec::new()));
                None
            }
            Event::MappingStart(..) => {
                nodes += 1;
                stack.push(Open::Map(Hash::new(), None));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match stack.pop() {
                    Some(Open::List(items)) => Yaml::Array(items),
                    Some(Open::Map(map, _)) => Yaml::Hash(map),
                    None => return Err(YamlError::Syntax("unbalanced yaml events".into())),
                };
                place(&mut stack, node)
            }
            Event::Nothing | Event::StreamStart | Event::DocumentStart | Event::DocumentEnd => None,
        };
        if let Some(document) = done {
            return Ok(Some(document));
        }
    }
}

/// Puts `node` into the innermost open list or mapping; the finished document when none is open.
fn place(stack: &mut [Open], node: Yaml) -> Option<Yaml> {
    match stack.last_mut() {
        None => Some(node),
        Some(Open::List(items)) => {
            items.push(node);
            None
        }
        Some(Open::Map(map, key)) => {
            match key.take() {
                None => *key = Some(node),
                Some(name) => {
                    map.insert(name, node);
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nine levels of nine aliases: 9^9 strings once expanded, under 1 KB written.
    pub(crate) fn billion_laughs() -> String {
        let mut text = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (prev, name) in ('a'..='h').zip('b'..='i') {
            let refs = vec![format!("*{prev}"); 9].join(",");
            text.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        text
    }

    #[test]
    fn ordinary_yaml_reads_as_the_loader_reads_it() {
        let text = "name: pdf\ndescription: >\n  Folded\n  text.\nn: 3\nok: true\nq: \"7\"\n\
                    list: [a, b]\nmap:\n  k: v\n";
        let ours = load(text).unwrap().unwrap();
        let theirs = yaml_rust2::YamlLoader::load_from_str(text).unwrap().remove(0);
        assert_eq!(ours, theirs);
        assert_eq!(load("").unwrap(), None);
        assert!(matches!(load("a: [b").unwrap_err(), YamlError::Syntax(_)));
    }

    #[test]
    fn the_billion_laughs_is_refused_at_its_first_anchor() {
        let text = billion_laughs();
        assert!(text.len() < 1024, "{}", text.len());
        let started = std::time::Instant::now();
        assert_eq!(load(&text).unwrap_err(), YamlError::Alias);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // Control: the same file is what the stock loader would expand (one level of it, so the
        // test stays small: nine aliases of nine become 81 strings).
        let small = "a: &a [x,x,x,x,x,x,x,x,x]\nb: [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n";
        let expanded = yaml_rust2::YamlLoader::load_from_str(small).unwrap().remove(0);
        let count: usize =
            expanded["b"].as_vec().unwrap().iter().map(|v| v.as_vec().unwrap().len()).sum();
        assert_eq!(count, 81);
        assert_eq!(load(small).unwrap_err(), YamlError::Alias);
        assert!(!load("a: [1]\nb: *x\n").unwrap_err().is_limit());
        assert_eq!(load("a: &x 1\n").unwrap_err(), YamlError::Alias);
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        let flow = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(load(&flow).unwrap_err(), YamlError::TooDeep);
        // Block style: `- - - … x` is a list 100,000 deep on one line; mappings indent, so a
        // thousand levels of `a:` (half a million spaces) stand for them.
        let dashes = format!("{}x\n", "- ".repeat(100_000));
        assert_eq!(load(&dashes).unwrap_err(), YamlError::TooDeep);
        let block: String = (0..1000).map(|depth| format!("{}a:\n", " ".repeat(depth))).collect();
        assert_eq!(load(&block).unwrap_err(), YamlError::TooDeep);
        // Control: sixteen levels are read.
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(load(&ok).unwrap().is_some());
    }

    #[test]
    fn too_many_values_are_refused() {
        let many = format!("[{}]", vec!["x"; MAX_NODES + 1].join(","));
        assert_eq!(load(&many).unwrap_err(), YamlError::TooMany);
        let fine = format!("[{}]", vec!["x"; MAX_NODES - 1].join(","));
        assert!(load(&fine).unwrap().is_some());
    }

    /// The process' peak resident memory so far, in bytes (Linux's `VmHWM`).
    fn peak_rss() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    #[test]
    fn a_bomb_in_a_skill_or_a_definition_is_listed_as_refused_in_bounded_memory() {
        use crate::{
            Catalog, SkillRoot, SkillSource,
            definition::{self, DefinitionError},
            frontmatter::SkillProblem,
        };
        let top = tempfile::tempdir().unwrap();
        let bomb = format!("---\nname: bomb\ndescription: d\n{}---\nbody\n", billion_laughs());
        let nest = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let deep = format!("---\nname: deep\ndescription: d\ndeep: {}\n---\n", nest(100_000));
        let skills = top.path().join("skills");
        for (name, text) in [("bomb", &bomb), ("deep", &deep)] {
            std::fs::create_dir_all(skills.join(name)).unwrap();
            std::fs::write(skills.join(name).join("SKILL.md"), text).unwrap();
        }
        let agents = top.path().join(".agent/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(agents.join("bomb.md"), &bomb).unwrap();
        // A definition file is capped at 64 KiB, so its nesting is 30,000 deep, not 100,000.
        let deep_definition =
            format!("---\nname: deep\ndescription: d\ndeep: {}\n---\n", nest(30_000));
        std::fs::write(agents.join("deep.md"), deep_definition).unwrap();
        std::fs::write(agents.join("fine.md"), "---\nname: fine\ndescription: d\n---\nhi\n")
            .unwrap();

        let before = peak_rss();
        let started = std::time::Instant::now();
        let catalog = Catalog::discover(&[SkillRoot { dir: skills, source: SkillSource::User }]);
        let definitions = definition::discover(top.path(), None);
        let grew = peak_rss().saturating_sub(before);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(grew < 64 << 20, "peak memory grew by {grew} bytes");

        let words: Vec<String> = catalog
            .refused
            .iter()
            .flat_map(|r| r.problems.iter().map(ToString::to_string))
            .collect();
        assert_eq!(
            words,
            [
                "frontmatter uses a yaml anchor or alias (`&name`, `*name`), which is not accepted",
                "frontmatter nests lists or mappings deeper than 16 levels",
            ]
        );
        assert!(
            catalog
                .refused
                .iter()
                .all(|r| r.problems.iter().all(|p| matches!(p, SkillProblem::Refused(_))))
        );
        let refused: Vec<&DefinitionError> =
            definitions.refused.iter().map(|(_, why)| why).collect();
        assert_eq!(
            refused,
            [
                &DefinitionError::Refused(YamlError::Alias),
                &DefinitionError::Refused(YamlError::TooDeep)
            ]
        );
        // Control: an ordinary definition beside them is read.
        assert!(definitions.get("fine").is_some());
    }
}
