//! `agent mcp add` and `agent mcp remove`: one `[mcp_servers.NAME]` table added to or removed
//! from the config file, with every other byte of the file (comments, order, spacing) kept.
//!
//! The edit is made with `toml_edit` on the file's text, checked by parsing the result as the
//! config file the CLI reads, and written through a temporary file renamed over the old one, so
//! a crash never leaves half a file.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
};

use agent_mcp::ServerConfig;
use anyhow::{Context, bail};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use crate::config::ConfigFile;

/// Adds `server` as `[mcp_servers.NAME]` to the config text `text`; refuses an invalid name, an
/// invalid table, and a name already taken.
pub(crate) fn add(text: &str, name: &str, server: &ServerConfig) -> anyhow::Result<String> {
    server.check(name)?;
    let mut doc: DocumentMut = text.parse().context("the config file is not valid TOML")?;
    let was_empty = doc.as_table().is_empty();
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        // `[mcp_servers]` itself is not written: only `[mcp_servers.NAME]` headers.
        table.set_implicit(true);
        Item::Table(table)
    });
    let Some(servers) = servers.as_table_mut() else {
        bail!("`mcp_servers` in the config file is not a table of tables; add the server by hand")
    };
    if servers.contains_key(name) {
        bail!(
            "an MCP server named `{name}` is already configured; remove it first with `agent mcp \
             remove {name}`, or choose another name"
        );
    }
    let mut table = server_table(server);
    if !was_empty {
        // One blank line between the new table and what comes before it.
        table.decor_mut().set_prefix("\n");
    }
    servers.insert(name, Item::Table(table));
    let edited = doc.to_string();
    parses(&edited)?;
    Ok(edited)
}

/// Removes `[mcp_servers.NAME]` from the config text `text`.
pub(crate) fn remove(text: &str, name: &str) -> anyhow::Result<String> {
    let mut doc: DocumentMut = text.parse().context("the config file is not valid TOML")?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .and_then(|servers| servers.remove(name));
    let Some(removed) = removed else {
        bail!("no MCP server named `{name}` is configured");
    };
    if let Some(table) = removed.as_table() {
        keep_comments_above(&mut doc, table);
    }
    // An implicit `mcp_servers` table left empty prints nothing; an explicit `[mcp_servers]`
    // header the user wrote stays.
    let edited = doc.to_string();
    parses(&edited)?;
    Ok(edited)
}

/// Comments right above a table's header (no blank line between) describe that table and go with
/// it; what is above them (a blank line, a comment about the file or the section before) stays,
/// moved in front of the table that now follows.
fn keep_comments_above(doc: &mut DocumentMut, removed: &Table) {
    let prefix = removed.decor().prefix().and_then(|raw| raw.as_str()).unwrap_or_default();
    let lines: Vec<&str> = prefix.split_inclusive('\n').collect();
    let own = lines.iter().rev().take_while(|line| line.trim_start().starts_with('#')).count();
    let kept: String = lines[..lines.len() - own].concat();
    if kept.trim().is_empty() {
        return;
    }
    let after = removed.position().unwrap_or(isize::MAX);
    let mut next = None;
    first_after(doc.as_table(), after, &mut next);
    match next {
        Some(position) => {
            if let Some(table) = table_at(doc.as_table_mut(), position) {
                let old = table.decor().prefix().and_then(|raw| raw.as_str()).unwrap_or_default();
                // One blank line where the removed table was, not two.
                let old = if kept.ends_with("\n\n") { old.trim_start_matches('\n') } else { old };
                let joined = format!("{kept}{old}");
                table.decor_mut().set_prefix(joined);
            }
        }
        None => {
            let old = doc.trailing().as_str().unwrap_or_default().to_owned();
            doc.set_trailing(format!("{kept}{old}"));
        }
    }
}

/// The smallest table position after `after` in `table` and below it.
fn first_after(table: &Table, after: isize, best: &mut Option<isize>) {
    for (_, item) in table.iter() {
        if let Some(child) = item.as_table() {
            if let Some(position) = child.position()
                && position > after
                && best.is_none_or(|best| position < best)
            {
                *best = Some(position);
            }
            first_after(child, after, best);
        }
    }
}

fn table_at(table: &mut Table, position: isize) -> Option<&mut Table> {
    for (_, item) in table.iter_mut() {
        if let Some(child) = item.as_table_mut() {
            if child.position() == Some(position) {
                return Some(child);
            }
            if let Some(found) = table_at(child, position) {
                return Some(found);
            }
        }
    }
    None
}

/// The table of a server as `agent mcp add` writes it: only the keys it sets.
fn server_table(server: &ServerConfig) -> Table {
    let mut table = Table::new();
    if let Some(command) = &server.command {
        table["command"] = value(command.as_str());
    }
    if !server.args.is_empty() {
        table["args"] = value(server.args.iter().map(String::as_str).collect::<Array>());
    }
    if !server.env.is_empty() {
        table["env"] = value(pairs(server.env.iter()));
    }
    if let Some(cwd) = &server.cwd {
        table["cwd"] = value(cwd.display().to_string());
    }
    if let Some(url) = &server.url {
        table["url"] = value(url.as_str());
    }
    if let Some(var) = &server.bearer_token_env_var {
        table["bearer_token_env_var"] = value(var.as_str());
    }
    if !server.http_headers.is_empty() {
        table["http_headers"] = value(pairs(server.http_headers.iter()));
    }
    table
}

fn pairs<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> InlineTable {
    let mut inline = InlineTable::new();
    for (key, text) in pairs {
        inline.insert(key, text.as_str().into());
    }
    inline
}

/// The edited text must still be a config file the CLI reads.
fn parses(text: &str) -> anyhow::Result<()> {
    toml::from_str::<ConfigFile>(text)
        .map(drop)
        .context("the edited config file would not be valid; nothing was written")
}

/// The config file's text, or an empty text when it does not exist yet.
pub(crate) fn read(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes `text` to `path` through a temporary file in the same directory, keeping the old
/// file's permissions (a config file holding `env` values may be private).
pub(crate) fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut file = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    file.write_all(text.as_bytes()).context("writing the config file")?;
    if let Ok(metadata) = std::fs::metadata(path) {
        std::fs::set_permissions(file.path(), metadata.permissions())
            .context("keeping the config file's permissions")?;
    }
    file.persist(path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio() -> ServerConfig {
        let mut server = ServerConfig::stdio("npx", vec!["-y".into(), "server".into()]);
        server.env.insert("TOKEN".into(), "s3cret".into());
        server
    }

    #[track_caller]
    fn check_add(before: &str, name: &str, server: &ServerConfig, expect: &str) {
        let got = add(before, name, server).unwrap_or_else(|err| format!("error: {err:#}"));
        assert_eq!(got, expect);
    }

    #[test]
    fn add_keeps_comments_and_layout() {
        let before = "# my settings\ndefault_profile = \"local\"   # keep this\n\n\
                      [mcp_servers.docs]\n# the docs server\nurl = \"http://127.0.0.1:1/mcp\"\n\n\
                      [profiles.local]\nmodel = \"qwen3\"\n";
        let after = add(before, "gh", &stdio()).unwrap();
        assert!(
            after.starts_with(before.trim_end_matches("[profiles.local]\nmodel = \"qwen3\"\n"))
        );
        assert!(after.contains("# keep this") && after.contains("# the docs server"), "{after}");
        assert!(
            after.contains(
                "[mcp_servers.gh]\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\n\
                 env = { TOKEN = \"s3cret\" }\n"
            ),
            "{after}"
        );
        // And it reads back as the same server.
        let file: ConfigFile = toml::from_str(&after).unwrap();
        assert_eq!(file.mcp_servers["gh"], stdio());
        assert_eq!(file.profiles["local"].model.as_deref(), Some("qwen3"));
    }

    #[test]
    fn add_to_an_empty_file_and_http() {
        let mut server = ServerConfig::http("http://127.0.0.1:9/mcp");
        server.bearer_token_env_var = Some("GH_PAT".into());
        server.http_headers.insert("X-Team".into(), "core".into());
        check_add(
            "",
            "remote",
            &server,
            "[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\n\
             bearer_token_env_var = \"GH_PAT\"\nhttp_headers = { X-Team = \"core\" }\n",
        );
    }

    #[test]
    fn add_refuses_duplicates_and_bad_names() {
        let before = "[mcp_servers.gh]\ncommand = \"x\"\n";
        let taken = "error: an MCP server named `gh` is already configured; remove it first with \
                     `agent mcp remove gh`, or choose another name";
        check_add(before, "gh", &stdio(), taken);
        let bad = "may use only letters, digits, `_` and `-`, and no `__`";
        check_add("", "a__b", &stdio(), &format!("error: mcp server name `a__b` {bad}"));
        check_add("", "a.b", &stdio(), &format!("error: mcp server name `a.b` {bad}"));
        check_add("", "", &stdio(), &format!("error: mcp server name `` {bad}"));
        let both = ServerConfig { url: Some("http://h/mcp".into()), ..stdio() };
        check_add(
            "",
            "x",
            &both,
            "error: mcp server `x`: set exactly one of `command` (stdio) and `url` (streamable http)",
        );
        check_add(
            "mcp_servers = 3\n",
            "x",
            &stdio(),
            "error: `mcp_servers` in the config file is not a table of tables; add the server by hand",
        );
    }

    #[track_caller]
    fn check_remove(before: &str, name: &str, expect: &str) {
        let got = remove(before, name).unwrap_or_else(|err| format!("error: {err:#}"));
        assert_eq!(got, expect);
    }

    #[test]
    fn remove_takes_out_one_table_only() {
        let before = "# top of the file\n\n# the a server\n[mcp_servers.a]\ncommand = \"a\"\n\n\
                      # b\n[mcp_servers.b]\ncommand = \"b\" # b's\n\n[limits]\noutput_cap = 5\n";
        check_remove(
            before,
            "a",
            "# top of the file\n\n# b\n[mcp_servers.b]\ncommand = \"b\" # b's\n\n[limits]\noutput_cap = 5\n",
        );
        check_remove(
            before,
            "b",
            "# top of the file\n\n# the a server\n[mcp_servers.a]\ncommand = \"a\"\n\n[limits]\noutput_cap = 5\n",
        );
        check_remove(before, "c", "error: no MCP server named `c` is configured");
        check_remove("", "c", "error: no MCP server named `c` is configured");
        // The last one leaves no empty `[mcp_servers]` behind, unless the user wrote one.
        check_remove("[mcp_servers.a]\ncommand = \"a\"\n", "a", "");
        check_remove("[mcp_servers]\n[mcp_servers.a]\ncommand = \"a\"\n", "a", "[mcp_servers]\n");
    }
}
