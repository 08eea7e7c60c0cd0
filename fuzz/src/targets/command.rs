//! Custom-command templates: a command file read as discovery reads it, and its expansion.

use agent_session::{commands::Commands, fuzz};

/// The input is a selector byte, the command file's text, a NUL and the arguments; the selector
/// times 4 is the limit of repeated substitution, so small inputs reach the refusal.
///
/// Properties, beyond no panic:
/// - reading and expanding are deterministic, and a file without frontmatter is all prompt;
/// - the expansion is what [`reference`] (a second, plainer implementation) says: `$ARGUMENTS`
///   is the arguments as given, `$1`…`$9` their words, once, nothing substituted twice;
/// - it is refused exactly when placeholders used again would substitute more than the limit,
///   and otherwise is at most the body, twice the arguments, the limit and 12 bytes;
/// - `/fuzz ARGS` typed as a line expands as the command with the arguments trimmed.
pub(super) fn expansion(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else { return };
    let limit = usize::from(selector) * 4;
    let (text, args) = match rest.iter().position(|&byte| byte == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let (text, args) = (String::from_utf8_lossy(text), String::from_utf8_lossy(args));
    let Ok(command) = fuzz::command(&text) else { return };
    let again = fuzz::command(&text).ok();
    assert_eq!(again.as_ref(), Some(&command), "reading is deterministic");
    if !text.contains("---") {
        assert_eq!(command.body, text.trim(), "a file without frontmatter is all prompt");
    }

    let expanded = fuzz::expand_within(&command, &args, limit);
    assert_eq!(fuzz::expand_within(&command, &args, limit), expanded, "expansion is deterministic");
    let (expected, repeated) = reference(&command.body, &args);
    match &expanded {
        Ok(prompt) => {
            assert!(repeated <= limit, "{repeated} bytes repeated, over {limit}, not refused");
            assert_eq!(prompt, &expected);
            let bound = command.body.len() + 2 * args.len() + limit + 12;
            assert!(prompt.len() <= bound, "{} bytes, over {bound}", prompt.len());
        }
        Err(refused) => {
            assert!(repeated > limit, "refused at {repeated} repeated bytes, within {limit}");
            assert_eq!((refused.args, refused.limit), (args.len(), limit));
        }
    }

    // A line typed with the command's name: the arguments are trimmed, and the limit is the
    // real one, which nothing this small reaches.
    if !args.contains(['\n', '\r']) {
        let commands = Commands { list: vec![command.clone()], refused: Vec::new() };
        let line = commands.expand_line(&format!("/fuzz {args}"));
        let direct = command.expand(args.trim());
        assert_eq!(line, Some(direct));
    }
}

/// The expansion by the rule as docs/skills.md states it, written apart from the library's:
/// the body scanned left to right, each `$ARGUMENTS` or `$1`…`$9` replaced, everything else
/// kept; the arguments appended when no placeholder was found. Also returns how many bytes
/// placeholders used a second time or more substituted.
fn reference(body: &str, args: &str) -> (String, usize) {
    let words = words(args);
    let bytes = body.as_bytes();
    let mut out = String::new();
    let mut seen = [false; 10];
    let mut repeated = 0;
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let slot = if bytes[at] != b'$' {
            None
        } else if body[at + 1..].starts_with("ARGUMENTS") {
            Some((0, args, 10))
        } else {
            match bytes.get(at + 1) {
                Some(&digit @ b'1'..=b'9') => {
                    let slot = usize::from(digit - b'0');
                    Some((slot, words.get(slot - 1).map_or("", String::as_str), 2))
                }
                _ => None,
            }
        };
        let Some((slot, text, width)) = slot else {
            at += 1;
            continue;
        };
        out.push_str(&body[copied..at]);
        out.push_str(text);
        if seen[slot] {
            repeated += text.len();
        }
        seen[slot] = true;
        at += width;
        copied = at;
    }
    out.push_str(&body[copied..]);
    if !seen.contains(&true) && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    (out, repeated)
}

/// The words of `args`: runs of characters that are not white space, where a quote (`"` or `'`)
/// takes everything up to the same quote (or the end) into the word, without the quotes.
fn words(args: &str) -> Vec<String> {
    let chars: Vec<char> = args.chars().collect();
    let mut words = Vec::new();
    let mut at = 0;
    loop {
        while chars.get(at).is_some_and(|c| c.is_whitespace()) {
            at += 1;
        }
        if at == chars.len() {
            return words;
        }
        let mut word = String::new();
        while let Some(&c) = chars.get(at).filter(|c| !c.is_whitespace()) {
            if c == '"' || c == '\'' {
                let close = chars[at + 1..].iter().position(|&other| other == c);
                let end = close.map_or(chars.len(), |offset| at + 1 + offset);
                word.extend(&chars[at + 1..end]);
                at = (end + 1).min(chars.len());
            } else {
                word.push(c);
                at += 1;
            }
        }
        words.push(word);
    }
}
