//! Files an MCP result names outlive `agent tools call`: server-everything's
//! `get-tiny-image` prints `[image saved: <scratch>/mcp/files/cli-1.png …]`, and that file must
//! still be there, a PNG, when the command has returned; stderr says where it is kept.

use crate::suite::{
    agent,
    mcp::{config, everything, everything_table},
    stderr, stdout,
};

#[test]
fn an_image_a_direct_call_names_is_still_there_after_it_returns() {
    let Some(bin) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &everything_table(&bin));
    let args = ["tools", "call", "mcp__everything__get-tiny-image", "{}", "--config", &config];
    let output = agent(dir.path(), &args);
    assert!(output.status.success(), "{}\n{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    let path = text
        .split("[image saved: ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no saved image named in {text}"));
    let path = std::path::Path::new(path);
    assert!(path.ends_with("mcp/files/cli-1.png"), "{text}");
    let bytes = std::fs::read(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG: {:?}",
        &bytes[..8.min(bytes.len())]
    );
    // The folder kept is named on stderr, and the file is inside it; the test cleans it up.
    let kept = stderr(&output)
        .lines()
        .find_map(|line| line.split("kept in ").nth(1).map(str::to_owned))
        .unwrap_or_else(|| panic!("no kept folder named: {}", stderr(&output)));
    assert!(path.starts_with(&kept), "{} is not in {kept}", path.display());
    std::fs::remove_dir_all(&kept).unwrap();
}
