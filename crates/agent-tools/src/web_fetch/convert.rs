//! From response bytes to the text the model reads: the content type decides whether a body is
//! read at all, the charset how it is decoded, and HTML becomes Markdown of its main content.

use std::{rc::Rc, time::Duration};

use agent_core::{ToolError, ToolErrorKind};
use markup5ever_rcdom::{Node, NodeData};

use super::tree;

/// What kind of body a response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML or XHTML: converted unless `raw` is asked for.
    Html,
    /// Any other text type: returned as it is.
    Text,
}

/// Elements that are page furniture, not content: navigation, sidebars, footers, scripts,
/// forms. Their text never reaches the model.
const CHROME: &[&str] = &[
    "nav", "aside", "footer", "script", "style", "noscript", "template", "svg", "form", "button",
    "iframe", "select", "canvas", "dialog", "head",
];

/// Why a body is not read: its type is not text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotText {
    /// The server said so: the type's essence, lower case.
    #[error("{0}")]
    Declared(String),
    /// The server named no type and the body has a NUL byte in its first 1024.
    #[error("application/octet-stream (no Content-Type, and the body is binary)")]
    Sniffed,
}

/// The kind of a body from its `Content-Type` (the essence, lower case), or from its first bytes
/// when the server sent none.
pub(crate) fn kind(content_type: Option<&str>, head: &[u8]) -> Result<Kind, NotText> {
    let Some(essence) = content_type.map(essence) else {
        return sniff(head);
    };
    if essence == "text/html" || essence == "application/xhtml+xml" {
        return Ok(Kind::Html);
    }
    let texty = essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || essence.ends_with("+yaml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/x-ndjson"
                | "application/graphql"
                | "application/sql"
        );
    if texty { Ok(Kind::Text) } else { Err(NotText::Declared(essence)) }
}

/// The media type without parameters, lower case.
pub(crate) fn essence(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn sniff(head: &[u8]) -> Result<Kind, NotText> {
    let start = &head[..head.len().min(1024)];
    if start.contains(&0) {
        return Err(NotText::Sniffed);
    }
    let lower = String::from_utf8_lossy(start).trim_start().to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        Ok(Kind::Html)
    } else {
        Ok(Kind::Text)
    }
}

/// The body as text: the charset of the `Content-Type`, else a byte-order mark, else (for HTML)
/// a `<meta charset>` in the first 1024 bytes, else UTF-8. Undecodable bytes become U+FFFD.
pub(crate) fn decode(body: &[u8], content_type: Option<&str>, kind: Kind) -> String {
    let declared = content_type.and_then(charset_param).or_else(|| {
        (kind == Kind::Html).then(|| meta_charset(&body[..body.len().min(1024)])).flatten()
    });
    let encoding = declared
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    // `decode` honours a BOM over the declared encoding, as browsers do.
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        (name.trim().eq_ignore_ascii_case("charset"))
            .then(|| value.trim().trim_matches('"').to_owned())
    })
}

fn meta_charset(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = text.find("charset=")? + "charset=".len();
    let value: String = text[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// A page's title and its main content as Markdown.
pub(crate) struct Converted {
    pub(crate) title: Option<String>,
    pub(crate) markdown: String,
    /// How many tags were dropped for nesting deeper than [`tree::MAX_DEPTH`] (their text kept).
    pub(crate) flattened: usize,
}

/// The most characters of a title shown: it stands outside the fence, in the answer's header.
const MAX_TITLE_CHARS: usize = 200;

/// HTML to Markdown. The main content is the page's `<main>` (or `role="main"`) element, else
/// its only `<article>`, else the body; page furniture ([`CHROME`]) is dropped wherever it is.
/// The page is parsed no deeper than [`tree::MAX_DEPTH`]; htmd's walk is recursive, so call it
/// through [`on_own_stack`].
pub(crate) fn html_to_markdown(html: &str) -> Converted {
    let converter = htmd::HtmlToMarkdown::builder().skip_tags(CHROME.to_vec()).build();
    let tree::Parsed { document: tree, flattened } = tree::parse(html);
    let title = find(&tree, &|node| is_element(node, "title")).map(|node| text_of(&node));
    let main = find(&tree, &|node| is_element(node, "main") || has_attr(node, "role", "main"))
        .or_else(|| {
            let articles = find_all(&tree, &|node| is_element(node, "article"));
            (articles.len() == 1).then(|| articles[0].clone())
        })
        .or_else(|| find(&tree, &|node| is_element(node, "body")));
    let markdown = converter.tree_to_markdown(main.as_ref().unwrap_or(&tree));
    let title = title.map(|t| {
        let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
        match words.char_indices().nth(MAX_TITLE_CHARS) {
            Some((cut, _)) => format!("{}…", &words[..cut]),
            None => words,
        }
    });
    Converted { title, markdown, flattened }
}

/// The stack of the conversion thread. htmd walks the tree recursively, several frames per
/// level; the tree is at most about twice [`tree::MAX_DEPTH`] deep, which needs a few MiB. Only
/// the pages touched are committed, so a generous reserve costs address space, not memory.
pub(crate) const CONVERSION_STACK: usize = 256 << 20;

/// The longest a conversion may take. A 10 MiB page converts in well under a second; this is
/// the last guard, for a shape of page nobody thought of.
pub(crate) const CONVERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `work` (a conversion) on a thread of its own with [`CONVERSION_STACK`], and waits at
/// most [`CONVERSION_TIMEOUT`] for it. A panic becomes a `tool_error`; on time-out the thread is
/// left to finish on its own and the call answers at once.
pub(crate) async fn on_own_stack<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("web_fetch-convert".to_owned())
        .stack_size(CONVERSION_STACK)
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|err| {
            ToolError::new(
                ToolErrorKind::ToolError,
                format!("could not start converting the page: {err}"),
            )
        })?;
    match tokio::time::timeout(CONVERSION_TIMEOUT, rx).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(_)) => Err(ToolError::new(
            ToolErrorKind::ToolError,
            "converting the page failed unexpectedly; call web_fetch again with format raw for its HTML",
        )),
        Err(_) => Err(ToolError::new(
            ToolErrorKind::Timeout,
            format!(
                "converting the page took over {} s; call web_fetch again with format raw for its HTML",
                CONVERSION_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// Markdown reduced to plain text: link targets and image sources dropped, emphasis kept as is.
pub(crate) fn markdown_to_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        let (before, after) = rest.split_at(open);
        let image = before.ends_with('!');
        out.push_str(if image { &before[..before.len() - 1] } else { before });
        // `[label](target)`: keep the label, drop the target.
        match after.find("](").and_then(|close| {
            let target_end = after[close + 2..].find(')')? + close + 2;
            Some((close, target_end))
        }) {
            Some((close, end)) if !after[1..close].contains('\n') => {
                out.push_str(&after[1..close]);
                rest = &after[end + 1..];
            }
            _ => {
                if image {
                    out.push('!');
                }
                out.push('[');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_element(node: &Node, tag: &str) -> bool {
    matches!(&node.data, NodeData::Element { name, .. } if name.local.as_ref() == tag)
}

fn has_attr(node: &Node, attr: &str, value: &str) -> bool {
    match &node.data {
        NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .any(|a| a.name.local.as_ref() == attr && a.value.as_ref().eq_ignore_ascii_case(value)),
        _ => false,
    }
}

fn find(node: &Rc<Node>, pred: &dyn Fn(&Node) -> bool) -> Option<Rc<Node>> {
    let mut stack = vec![node.clone()];
    while let Some(next) = stack.pop() {
        if pred(&next) {
            return Some(next);
        }
        stack.extend(next.children.borrow().iter().rev().cloned());
    }
    None
}

fn find_all(node: &Rc<Node>, pred: &dyn Fn(&Node) -> bool) -> Vec<Rc<Node>> {
    let mut found = Vec::new();
    let mut stack = vec![node.clone()];
    while let Some(next) = stack.pop() {
        if pred(&next) {
            found.push(next.clone());
        }
        stack.extend(next.children.borrow().iter().rev().cloned());
    }
    found
}

fn text_of(node: &Rc<Node>) -> String {
    let mut out = String::new();
    let mut stack = vec![node.clone()];
    while let Some(next) = stack.pop() {
        if let NodeData::Text { contents } = &next.data {
            out.push_str(&contents.borrow());
        }
        stack.extend(next.children.borrow().iter().rev().cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(html: &str, expect: &str) {
        assert_eq!(html_to_markdown(html).markdown, expect);
    }

    #[test]
    fn main_content_without_menus() {
        check(
            "<html><body><nav><a href=/>Home</a></nav><main><h1>Title</h1><p>Body <a href=\"/x\">link</a>.</p></main><footer>(c)</footer></body></html>",
            "# Title\n\nBody [link](/x).",
        );
        check("<body><aside>ads</aside><article><p>One</p></article></body>", "One");
        check("<body><p>Plain</p><script>x()</script></body>", "Plain");
    }

    #[test]
    fn types_and_charsets() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b""), Ok(Kind::Html));
        assert_eq!(kind(Some("application/json"), b""), Ok(Kind::Text));
        assert_eq!(
            kind(Some("application/pdf"), b""),
            Err(NotText::Declared("application/pdf".to_owned()))
        );
        assert_eq!(kind(None, b"%PDF-1.4\0"), Err(NotText::Sniffed));
        assert_eq!(decode(b"caf\xe9", Some("text/plain; charset=iso-8859-1"), Kind::Text), "café");
        assert_eq!(
            decode(b"<meta charset=\"windows-1252\">\x93q\x94", None, Kind::Html),
            "<meta charset=\"windows-1252\">“q”"
        );
        assert_eq!(
            markdown_to_text("See [docs](https://x) and ![logo](l.png)."),
            "See docs and logo."
        );
    }
}
