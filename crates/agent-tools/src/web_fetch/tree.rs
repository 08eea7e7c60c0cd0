//! The bounded HTML parser: a page becomes a DOM no deeper than [`MAX_DEPTH`] elements, however
//! it nests, so neither parsing nor the recursive Markdown walk after it can run away.
//!
//! html5ever's tree builder scans its stack of open elements for most start tags ("is a `p` in
//! button scope?"), so a page of 100,000 nested `<div>` costs 100,000² steps to parse, and htmd
//! then walks the tree recursively (and looks up every element's ancestors), which overflows any
//! thread's stack. Here the tokens reach the tree builder through a filter: once the builder
//! holds [`MAX_DEPTH`] elements, further start tags are dropped (with their end tags) and their
//! text goes on into the innermost element that was kept. Pages that nest deeper than browsers
//! render sensibly lose that nesting and keep their words; the answer says how many tags went.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::Rc,
};

use html5ever::{
    LocalName, ParseOpts, TokenizerResult,
    tendril::StrTendril,
    tokenizer::{
        BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, states::RawKind,
    },
    tree_builder::{Tracer, TreeBuilder},
};
use markup5ever_rcdom::{Handle, Node, NodeData, RcDom};

/// The most elements the tree builder may hold open (its stack of open elements and its list of
/// active formatting elements together). Browsers flatten at 512; 256 is deeper than any real
/// page and keeps htmd's recursion well inside the conversion thread's stack.
pub(crate) const MAX_DEPTH: usize = 256;

/// A parsed page.
pub(crate) struct Parsed {
    /// The document node.
    pub(crate) document: Rc<Node>,
    /// How many start tags were dropped for nesting deeper than [`MAX_DEPTH`].
    pub(crate) flattened: usize,
}

/// Parses `html` as a browser would, but no deeper than [`MAX_DEPTH`] elements.
pub(crate) fn parse(html: &str) -> Parsed {
    let opts = ParseOpts::default();
    let builder = TreeBuilder::new(RcDom::default(), opts.tree_builder);
    let sink = Bounded {
        builder,
        dropped: RefCell::default(),
        hidden: Cell::new(false),
        flattened: Cell::new(0),
    };
    let tokenizer = Tokenizer::new(sink, opts.tokenizer);
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // The tree builder pauses the tokenizer after each `</script>` so a browser can run it;
    // nothing runs here, so it simply goes on.
    while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    tokenizer.end();
    let sink = tokenizer.sink;
    let document = sink.builder.sink.document;
    merge_runs(&document);
    Parsed { document, flattened: sink.flattened.get() }
}

/// htmd's block elements (its `dom_walker.rs`), which it never merges.
#[rustfmt::skip]
const BLOCK: &[&str] = &[
    "address", "article", "aside", "base", "basefont", "blockquote", "body", "caption", "center",
    "col", "colgroup", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5",
    "h6", "head", "header", "hr", "html", "iframe", "legend", "li", "link", "main", "menu",
    "menuitem", "nav", "noframes", "ol", "optgroup", "option", "p", "param", "pre", "script",
    "search", "section", "style", "summary", "table", "tbody", "td", "textarea", "tfoot", "th",
    "thead", "title", "tr", "track", "ul",
];

/// Merges runs of adjacent inline elements that hold only text and are alike (`<b>a</b><b>b</b>`
/// becomes `<b>ab</b>`), as htmd does before converting, but in one pass: htmd removes each
/// merged element from the middle of its parent's children and copies the text gathered so far,
/// so a page of a million such siblings would cost a million squared. After this pass htmd finds
/// nothing left to merge, and its output is the same.
fn merge_runs(root: &Rc<Node>) {
    let mut stack = vec![Rc::clone(root)];
    while let Some(node) = stack.pop() {
        let children = std::mem::take(&mut *node.children.borrow_mut());
        let mut kept: Vec<Handle> = Vec::with_capacity(children.len());
        // The text of the run ending in `kept.last()`, while it has more than one element.
        let mut run: Option<String> = None;
        for child in children {
            if let Some(last) = kept.last()
                && alike(last, &child)
            {
                let text = run.get_or_insert_with(|| only_text(last).unwrap_or_default());
                text.push_str(&only_text(&child).unwrap_or_default());
                continue;
            }
            close_run(kept.last(), run.take());
            kept.push(child);
        }
        close_run(kept.last(), run.take());
        stack.extend(kept.iter().cloned());
        *node.children.borrow_mut() = kept;
    }
}

/// Sets the text of a run's first element to the whole run's.
fn close_run(first: Option<&Handle>, run: Option<String>) {
    if let (Some(first), Some(run)) = (first, run)
        && let Some(child) = first.children.borrow().first()
        && let NodeData::Text { contents } = &child.data
    {
        *contents.borrow_mut() = StrTendril::from(run);
    }
}

/// The text of an element whose only child is text.
fn only_text(node: &Node) -> Option<String> {
    let children = node.children.borrow();
    match children.as_slice() {
        [only] => match &only.data {
            NodeData::Text { contents } => Some(contents.borrow().to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn holds_only_text(node: &Node) -> bool {
    matches!(node.children.borrow().as_slice(), [only] if matches!(only.data, NodeData::Text { .. }))
}

/// htmd's rule for merging two adjacent elements (`can_combine`): both inline, both holding
/// only text, not links, the same element (or `i`/`em`, `b`/`strong`) with the same attributes.
fn alike(n1: &Node, n2: &Node) -> bool {
    let (
        NodeData::Element {
            name: name1,
            attrs: attrs1,
            template_contents: t1,
            mathml_annotation_xml_integration_point: m1,
        },
        NodeData::Element {
            name: name2,
            attrs: attrs2,
            template_contents: t2,
            mathml_annotation_xml_integration_point: m2,
        },
    ) = (&n1.data, &n2.data)
    else {
        return false;
    };
    let (a, b) = (&*name1.local, &*name2.local);
    let same = name1 == name2
        || matches!((a, b), ("i", "em") | ("em", "i") | ("b", "strong") | ("strong", "b"));
    !BLOCK.contains(&a)
        && a != "a"
        && same
        && holds_only_text(n1)
        && holds_only_text(n2)
        && t1.borrow().is_none()
        && t2.borrow().is_none()
        && *attrs1.borrow() == *attrs2.borrow()
        && m1 == m2
}

/// Elements whose text is page furniture and is dropped with a dropped start tag: the tokenizer
/// reads their content as raw text, which must not reach the page as words.
const HIDDEN_RAW: &[&str] =
    &["script", "style", "noscript", "iframe", "noembed", "noframes", "xmp"];

/// Elements that never hold children, so a kept one cannot deepen the tree.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input",
    "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// The filter between the tokenizer and the tree builder.
struct Bounded {
    builder: TreeBuilder<Handle, RcDom>,
    /// Start tags dropped and not yet closed, by name: their end tags are dropped too, so they
    /// do not close an element that was kept.
    dropped: RefCell<HashMap<LocalName, usize>>,
    /// Inside a dropped element whose raw text is furniture (a script): its text is dropped.
    hidden: Cell<bool>,
    flattened: Cell<usize>,
}

/// Counts the handles the tree builder holds.
struct Counter(Cell<usize>);

impl Tracer for Counter {
    type Handle = Handle;

    fn trace_handle(&self, _node: &Handle) {
        self.0.set(self.0.get() + 1);
    }
}

impl Bounded {
    /// The elements the tree builder holds open or may reopen (its active formatting elements):
    /// at most about twice [`MAX_DEPTH`], since no start tag is passed on beyond it, so counting
    /// them for each start tag stays cheap.
    fn depth(&self) -> usize {
        let counter = Counter(Cell::new(0));
        self.builder.trace_handles(&counter);
        counter.0.get()
    }

    /// Drops a start tag that would nest too deep (void elements are always kept: they cannot
    /// deepen the tree); the tokenizer is told how to read the content
    /// of an element whose content is raw text, as the tree builder would have told it.
    fn drop_start(&self, name: &LocalName) -> TokenSinkResult<Handle> {
        self.flattened.set(self.flattened.get() + 1);
        *self.dropped.borrow_mut().entry(name.clone()).or_default() += 1;
        let raw = match &**name {
            "script" => Some(RawKind::ScriptData),
            "style" | "noscript" | "iframe" | "noembed" | "noframes" | "xmp" => {
                Some(RawKind::Rawtext)
            }
            "textarea" | "title" => Some(RawKind::Rcdata),
            "plaintext" => return TokenSinkResult::Plaintext,
            _ => None,
        };
        if HIDDEN_RAW.contains(&&**name) {
            self.hidden.set(true);
        }
        raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData)
    }

    /// Whether an end tag closes a dropped start tag (and is dropped with it).
    fn drops_end(&self, name: &LocalName) -> bool {
        let mut dropped = self.dropped.borrow_mut();
        let Some(open) = dropped.get_mut(name) else { return false };
        *open -= 1;
        if *open == 0 {
            dropped.remove(name);
        }
        if HIDDEN_RAW.contains(&&**name) {
            self.hidden.set(false);
        }
        true
    }
}

impl TokenSink for Bounded {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        match &token {
            Token::TagToken(tag)
                if tag.kind == TagKind::StartTag
                    && !VOID.contains(&&*tag.name)
                    && self.depth() >= MAX_DEPTH =>
            {
                return self.drop_start(&tag.name);
            }
            Token::TagToken(tag) if tag.kind == TagKind::EndTag && self.drops_end(&tag.name) => {
                return TokenSinkResult::Continue;
            }
            Token::CharacterTokens(_) | Token::NullCharacterToken if self.hidden.get() => {
                return TokenSinkResult::Continue;
            }
            _ => {}
        }
        self.builder.process_token(token, line_number)
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder.adjusted_current_node_present_but_not_in_html_namespace()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Markdown of `html` through this parser is htmd's own.
    #[track_caller]
    fn check(html: &str) {
        let converter = htmd::HtmlToMarkdown::new();
        let ours = converter.tree_to_markdown(&parse(html).document);
        assert_eq!(ours, htmd::convert(html).unwrap(), "{html}");
    }

    #[test]
    fn shallow_pages_convert_as_htmd_converts_them() {
        check("<p><b>a</b><b>b</b><strong>c</strong> <i>x</i><em>y</em><i>z</i></p>");
        check("<p><a href=1>l</a><a href=1>m</a><span>s</span><span class=k>t</span></p>");
        check("<p><b>a<i>b</i></b><b>c</b><code>d</code><code>e</code></p><p>f</p><p>g</p>");
        check("<ul><li>one<li>two</ul><table><tr><td>c<td>d</table><pre>p\n q</pre>");
        check("<div><script>s()</script><title>t</title><textarea>x</textarea>text</div>");
    }

    #[test]
    fn deep_pages_are_flattened_to_the_limit_keeping_their_text() {
        let html =
            format!("{}<script>s()</script>words{}", "<div>".repeat(1000), "</div>".repeat(1000));
        let parsed = parse(&html);
        // The document, `html`, `head` and `body` take four of the places: 252 `div` are kept,
        // the other 748 and the script dropped.
        assert_eq!(parsed.flattened, 749);
        let markdown = htmd::HtmlToMarkdown::new().tree_to_markdown(&parsed.document);
        assert_eq!(markdown, "words");
    }
}
