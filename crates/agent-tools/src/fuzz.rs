//! Entry points for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): apply_patch's
//! grammar with a printer for its plans, and web_fetch's HTML to Markdown.
//!
//! The printer exists only here: the tool never writes a patch, but printing a parsed plan and
//! parsing it again must give the same plan, which tests the parser against itself.

use std::fmt::Write as _;

use crate::{
    apply_patch::grammar::{self, FileOp, Hunk, Patch},
    web_fetch::convert,
};

/// A parsed patch: what it does to each file.
#[derive(Debug, Clone)]
pub struct Plan(Patch);

impl PartialEq for Plan {
    /// Plans are equal when they do the same: the line numbers kept for messages are left out.
    fn eq(&self, other: &Self) -> bool {
        let strip = |patch: &Patch| {
            let mut patch = patch.clone();
            for op in &mut patch.ops {
                if let FileOp::Update { hunks, .. } = op {
                    hunks.iter_mut().for_each(|hunk| hunk.line = 0);
                }
            }
            patch
        };
        strip(&self.0) == strip(&other.0)
    }
}

/// The plan of a patch text, or `None` when the grammar refuses it.
pub fn parse_patch(text: &str) -> Option<Plan> {
    grammar::parse(text).ok().map(Plan)
}

impl Plan {
    /// The plan as a patch text in the canonical form (every hunk with its `@@` line).
    pub fn print(&self) -> String {
        let mut out = String::from("*** Begin Patch\n");
        for op in &self.0.ops {
            match op {
                FileOp::Add { path, text } => {
                    let _ = writeln!(out, "*** Add File: {path}");
                    for line in text.lines() {
                        let _ = writeln!(out, "+{line}");
                    }
                }
                FileOp::Delete { path } => {
                    let _ = writeln!(out, "*** Delete File: {path}");
                }
                FileOp::Update { path, move_to, hunks } => {
                    let _ = writeln!(out, "*** Update File: {path}");
                    if let Some(to) = move_to {
                        let _ = writeln!(out, "*** Move to: {to}");
                    }
                    hunks.iter().for_each(|hunk| print_hunk(hunk, &mut out));
                }
            }
        }
        out.push_str("*** End Patch\n");
        out
    }
}

/// A hunk's lines: each context line once, the removed lines before it, the added ones where
/// they stand in the new text.
fn print_hunk(hunk: &Hunk, out: &mut String) {
    match &hunk.context {
        Some(context) => {
            let _ = writeln!(out, "@@ {context}");
        }
        None => out.push_str("@@\n"),
    }
    let mut next_old = 0;
    for (new, kept) in hunk.new.iter().zip(&hunk.kept) {
        match kept {
            Some(old) => {
                for removed in hunk.old.get(next_old..*old).unwrap_or_default() {
                    let _ = writeln!(out, "-{removed}");
                }
                let _ = writeln!(out, " {new}");
                next_old = old + 1;
            }
            None => {
                let _ = writeln!(out, "+{new}");
            }
        }
    }
    for removed in hunk.old.get(next_old..).unwrap_or_default() {
        let _ = writeln!(out, "-{removed}");
    }
    if hunk.end_of_file {
        out.push_str("*** End of File\n");
    }
}

/// What web_fetch shows of an HTML page: its title, its main content as Markdown, and how many
/// tags were flattened for nesting too deep. Runs on a thread with the conversion's stack, as
/// web_fetch does.
pub fn html_to_markdown(html: &str) -> std::io::Result<(Option<String>, String, usize)> {
    let html = html.to_owned();
    let worker =
        std::thread::Builder::new().stack_size(convert::CONVERSION_STACK).spawn(move || {
            let converted = convert::html_to_markdown(&html);
            (converted.title, converted.markdown, converted.flattened)
        })?;
    worker.join().map_err(|_| std::io::Error::other("the conversion panicked"))
}
