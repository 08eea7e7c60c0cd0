//! Model-facing names of MCP tools: `mcp__<server>__<tool>`, valid for both OpenAI APIs.
//!
//! Both APIs accept `^[a-zA-Z0-9_-]{1,64}$`. A server's tool names may hold dots, slashes or
//! spaces, and may be long; such a name is rewritten (invalid characters become `_`, the end is
//! cut) and then carries a short hash of the original pair, so two tools whose rewrites would
//! collide stay apart and a name never changes between sessions.

/// The longest tool name the APIs accept.
pub const MAX_NAME: usize = 64;

/// The name of `server`'s tool `tool`: `mcp__server__tool` when that is already valid, otherwise a
/// rewritten name ending in `_` and 8 hex digits of a stable hash of the original pair.
pub fn tool_name(server: &str, tool: &str) -> String {
    let plain = format!("mcp__{server}__{tool}");
    if plain.len() <= MAX_NAME && plain.chars().all(valid_char) {
        plain
    } else {
        hashed_name(server, tool)
    }
}

/// The rewritten, hashed name of the pair; also used when [`tool_name`] collides with a name
/// already taken.
pub fn hashed_name(server: &str, tool: &str) -> String {
    let suffix = format!("_{:08x}", stable_hash(server, tool) as u32);
    let clean: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| if valid_char(c) { c } else { '_' })
        .collect();
    // All characters are ASCII now, so any byte index is a character boundary.
    let keep = clean.len().min(MAX_NAME - suffix.len());
    format!("{}{suffix}", &clean[..keep])
}

fn valid_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// FNV-1a over the pair: tiny, and the same on every machine and in every release, unlike
/// std's `DefaultHasher`, whose output may change between Rust versions.
fn stable_hash(server: &str, tool: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain([0]).chain(tool.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(server: &str, tool: &str, expect: &str) {
        let name = tool_name(server, tool);
        assert_eq!(name, expect);
        assert!(!name.is_empty() && name.len() <= MAX_NAME && name.chars().all(valid_char));
    }

    #[test]
    fn names_are_valid_and_stable() {
        check("everything", "echo", "mcp__everything__echo");
        check("gh", "create-issue", "mcp__gh__create-issue");
        // The hashes are FNV-1a computed independently (in Python) when this test was written.
        check("fs", "read.file", "mcp__fs__read_file_28539172");
        check("fs", "read file", "mcp__fs__read_file_b079d840");
        let long = "a".repeat(80);
        check("s", &long, &format!("mcp__s__{}_1bdc4336", "a".repeat(47)));
    }

    #[test]
    fn rewrites_that_would_collide_stay_apart() {
        assert_ne!(tool_name("fs", "read.file"), tool_name("fs", "read file"));
        assert_ne!(hashed_name("fs", "read_file"), tool_name("fs", "read_file"));
    }
}
