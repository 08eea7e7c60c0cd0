//! web_fetch's HTML to Markdown.

/// The page converts on the conversion's own stack without a panic; the title is cut to its
/// 200 characters; a tag is flattened only where one opened (there are no more flattened tags
/// than `<` in the page).
pub(super) fn markdown(data: &[u8]) {
    let html = String::from_utf8_lossy(data);
    let (title, _markdown, flattened) = match agent_tools::fuzz::html_to_markdown(&html) {
        Ok(converted) => converted,
        Err(error) => panic!("{error}"),
    };
    if let Some(title) = title {
        assert!(title.chars().count() <= 201, "a title of {} characters", title.chars().count());
    }
    let opened = data.iter().filter(|&&byte| byte == b'<').count();
    assert!(flattened <= opened, "{flattened} tags flattened of {opened}");
}
