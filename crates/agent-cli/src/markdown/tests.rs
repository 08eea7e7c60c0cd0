//! The renderer's output for a set of answers, in colour and with `NO_COLOR`, and the promise
//! that streaming in any split renders what rendering the whole does.

use proptest::prelude::*;

use super::*;

const COLOUR: Screen = Screen { width: 60, colour: true };
const PLAIN: Screen = Screen { width: 60, colour: false };

/// Escape codes made visible, so a snapshot shows where each style starts and ends.
fn visible(text: &str) -> String {
    text.replace('\u{1b}', "␛")
}

/// Snapshots `sample` rendered in colour and plain, one case per line in the tests.
#[track_caller]
fn check(name: &str, sample: &str) {
    insta::assert_snapshot!(format!("{name}_colour"), visible(&render(sample, COLOUR)), sample);
    let plain = render(sample, PLAIN);
    assert!(!plain.contains('\u{1b}'), "NO_COLOR output holds an escape code: {plain:?}");
    insta::assert_snapshot!(format!("{name}_plain"), plain, sample);
}

#[test]
fn inline_styles() {
    check(
        "inline",
        "Plain, *emphasis*, **strong**, ***both***, ~~struck~~ and `inline code`; a \
         [link](https://example.com/docs) and <https://example.com>.",
    );
}

#[test]
fn headings() {
    check("headings", "# Title\n\nIntro.\n\n## Section\n\nBody.\n\n### Detail\n\nMore.\n");
}

#[test]
fn lists() {
    check(
        "lists",
        "Steps:\n\n1. first\n2. second with **bold**\n   - nested bullet\n   - another\n     \
         1. deep\n3. third\n\n- [x] done\n- [ ] to do\n\n7. starts at seven\n8. eight\n",
    );
}

#[test]
fn code_blocks() {
    check(
        "code",
        "Run this:\n\n```rust\nfn main() {\n\tprintln!(\"hello, world\");\n\n}\n```\n\nThen \
         `cargo run`.\n\n    indented code\n",
    );
}

#[test]
fn quotes_and_rules() {
    check("quote", "> A quote with *style*\n> over two lines.\n>\n> > nested\n\n---\n\nAfter.\n");
}

#[test]
fn tables_fit_the_width() {
    check(
        "table",
        "| Tool | Status | Notes |\n|:-----|:------:|------:|\n| bash | ok | ran `cargo test` in \
         4.5 s and every test passed, which took a while to print |\n| edit_file | denied | |\n",
    );
}

#[test]
fn long_paragraphs_wrap() {
    check(
        "wrap",
        "This paragraph is long enough that it has to be wrapped at the screen's width, and \
         the words **stay whole** where they can, while a-word-so-very-long-that-it-cannot-fit-on-any-line-of-sixty-columns is cut.",
    );
}

#[test]
fn a_whole_answer() {
    check(
        "answer",
        "**Done.** I changed `main.rs`:\n\n```diff\n-    println!(\"hello\");\n+    \
         println!(\"hello, world\");\n```\n\n## Next\n\n- run `cargo test`\n- commit\n",
    );
}

#[test]
fn control_characters_are_made_visible() {
    let rendered = render("a\u{1b}[2Jb \u{7}bell\r\n", PLAIN);
    assert_eq!(rendered, "a␛[2Jb ␇bell\n");
}

#[test]
fn blocks_print_as_soon_as_the_next_one_starts() {
    let mut stream = MarkdownStream::new(PLAIN);
    assert_eq!(stream.push("First **para"), "");
    assert_eq!(stream.push("graph**.\n\n"), "");
    assert_eq!(stream.push("S"), "First paragraph.\n");
    // A code block in the first column prints line by line.
    assert_eq!(stream.push("econd.\n\n```sh\ncode"), "\nSecond.\n\n");
    assert_eq!(stream.push("\n\n"), "    code\n\n");
    assert_eq!(stream.push("more\n```\nx"), "    more\n");
    assert_eq!(stream.finish(), "\nx\n");
    assert_eq!(stream.finish(), "", "a finished stream starts afresh");
}

#[test]
fn a_fence_ends_the_paragraph_before_it_and_an_open_one_ends_with_the_answer() {
    let mut stream = MarkdownStream::new(PLAIN);
    assert_eq!(stream.push("Run:\n~~~\n"), "Run:\n\n");
    assert_eq!(stream.push("make\n\tcheck"), "    make\n");
    assert_eq!(stream.finish(), "        check\n");
    // An indented fence may belong to a list item, so it prints with its block.
    let mut stream = MarkdownStream::new(PLAIN);
    assert_eq!(stream.push("- item\n  ```\n  code\n\n"), "");
    assert_eq!(stream.push("  ```\n\nNext"), "• item\n      code\n\n");
}

#[test]
fn a_list_prints_an_item_at_a_time() {
    let mut stream = MarkdownStream::new(PLAIN);
    assert_eq!(stream.push("Steps:\n- one\n"), "Steps:\n");
    assert_eq!(stream.push("- two\n  - nested\n"), "\n• one\n");
    assert_eq!(stream.push("- three\n\nDone"), "• two\n  ◦ nested\n• three\n");
    assert_eq!(stream.push("."), "");
    assert_eq!(stream.finish(), "\nDone.\n");
    let mut stream = MarkdownStream::new(PLAIN);
    assert_eq!(stream.push("1. a\n2. b\n10) c\n"), "1. a\n2. b\n");
    assert_eq!(stream.finish(), "10. c\n");
}

#[test]
fn item_markers() {
    for item in ["- a", "* a", "+ a", "-", "1. a", "2) a", "123456789. a", "-\ta"] {
        assert!(starts_item(item), "{item}");
    }
    for not in ["-a", "**bold**", "---", "1.5 s", "1234567890. a", " - a", "- a | b", "a"] {
        assert!(!starts_item(not), "{not}");
    }
}

/// Markdown-ish text: the pieces that decide where blocks start and end, in any order.
fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "\n",
        "\n\n",
        "# ",
        "## ",
        "- ",
        "  - ",
        "1. ",
        "2) ",
        "> ",
        "```",
        "```rust\n",
        "~~~",
        "    ",
        "\t",
        "**",
        "*",
        "_",
        "`",
        "~~",
        "[a](b)",
        "<http://x>",
        "| a | b |\n",
        "|---|:-:|\n",
        "---\n",
        "word",
        " ",
        "日本語",
        "é",
        "\r\n",
        "[x] ",
        "\\",
        "<div>",
    ]);
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// `text` streamed in deltas cut at `cuts` (taken as character positions modulo its length).
fn streamed(text: &str, cuts: &[usize], screen: Screen) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (chars.len() + 1)).collect();
    cuts.push(chars.len());
    cuts.sort_unstable();
    let mut stream = MarkdownStream::new(screen);
    let mut out = String::new();
    let mut from = 0;
    for cut in cuts {
        let delta: String = chars[from..cut].iter().collect();
        out.push_str(&stream.push(&delta));
        from = cut;
    }
    out.push_str(&stream.finish());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn streaming_in_any_split_renders_the_whole(
        text in markdownish(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        width in 1usize..100,
        colour in any::<bool>(),
    ) {
        let screen = Screen { width, colour };
        prop_assert_eq!(streamed(&text, &cuts, screen), render(&text, screen));
    }

    #[test]
    fn any_text_renders_without_panicking(
        text in any::<String>(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        prop_assert_eq!(streamed(&text, &cuts, PLAIN), render(&text, PLAIN));
    }
}
