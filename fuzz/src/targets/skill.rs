//! Skill and custom-command frontmatter, read by the bounded YAML reader.

use agent_skills::{bounded_yaml, frontmatter};
use yaml_rust2::YamlLoader;

/// The frontmatter parser and validator never panic; and where the bounded reader accepts a
/// document (no anchors, within its depth and node limits), yaml-rust2's own loader reads the
/// same first document, so the bounds cost nothing but what they refuse.
pub(super) fn frontmatter(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(front) = frontmatter::parse(&text) {
        let _ = frontmatter::validate(&front, Some("skill"));
    }
    let Ok(Some(document)) = bounded_yaml::load(&text) else { return };
    // yaml-rust2 recurses once per level, and the bounded reader looked at the first document
    // only: compare on texts too small to nest past the main thread's stack.
    if text.len() > 4096 {
        return;
    }
    if let Ok(documents) = YamlLoader::load_from_str(&text) {
        assert_eq!(documents.first(), Some(&document));
    }
}
