//! The file tools through a session's `FileSystem` (an editor's buffers): reads see the buffer,
//! writes reach it and not the disk, and the workspace boundary still decides what is asked.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use agent_core::{BoxFuture, FileSystem, ToolContext};
use serde_json::{Value, json};

use super::Fixture;

/// An editor's buffers in memory, recording every request.
#[derive(Debug, Default)]
struct Buffers {
    texts: Mutex<HashMap<PathBuf, String>>,
    asked: Mutex<Vec<PathBuf>>,
}

impl FileSystem for Buffers {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, std::io::Result<String>> {
        self.asked.lock().unwrap().push(path.to_path_buf());
        let text = self.texts.lock().unwrap().get(path).cloned();
        Box::pin(async move { text.ok_or_else(|| std::io::ErrorKind::NotFound.into()) })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, std::io::Result<()>> {
        self.asked.lock().unwrap().push(path.to_path_buf());
        self.texts.lock().unwrap().insert(path.to_path_buf(), text.to_owned());
        Box::pin(async { Ok(()) })
    }
}

/// Calls `name` with the buffers as the call's file system: the output or the observation.
async fn check(fx: &Fixture, buffers: &Arc<Buffers>, name: &str, args: Value) -> String {
    let tool = fx.tools.iter().find(|t| t.spec().name == name).unwrap();
    let prepared = tool.prepare(&args.to_string()).unwrap();
    let mut ctx = ToolContext::new(fx.boundary(), "session".into(), "call_1");
    ctx.files = Some(buffers.clone());
    match tool.run(prepared, ctx).await {
        Ok(output) => output.text,
        Err(err) => err.observation(),
    }
}

fn canonical(fx: &Fixture, rel: &str) -> PathBuf {
    std::fs::canonicalize(fx.root()).unwrap().join(rel)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_edits_go_to_the_buffers_and_the_disk_stays_as_it_was() {
    let fx = Fixture::new();
    fx.put("a.txt", "on disk\n");
    let buffers = Arc::new(Buffers::default());
    let path = canonical(&fx, "a.txt");
    buffers.texts.lock().unwrap().insert(path.clone(), "unsaved buffer\n".into());
    let read = check(&fx, &buffers, "read_file", json!({"path": "a.txt"})).await;
    assert!(read.contains("unsaved buffer"), "{read}");
    let edit = json!({"path": "a.txt", "old_string": "unsaved", "new_string": "edited"});
    let edited = check(&fx, &buffers, "edit_file", edit).await;
    assert!(edited.starts_with("Edited") || edited.contains("a.txt"), "{edited}");
    assert_eq!(buffers.texts.lock().unwrap()[&path], "edited buffer\n");
    assert_eq!(fx.get_text("a.txt"), "on disk\n");
    // write_file replaces the buffer (it was read) and creates a new one, with no directory
    // made on the disk.
    let write = json!({"path": "a.txt", "content": "whole\n"});
    check(&fx, &buffers, "write_file", write).await;
    assert_eq!(buffers.texts.lock().unwrap()[&path], "whole\n");
    let new = json!({"path": "new/b.txt", "content": "fresh\n"});
    let created = check(&fx, &buffers, "write_file", new).await;
    assert!(created.starts_with("Created"), "{created}");
    assert_eq!(buffers.texts.lock().unwrap()[&canonical(&fx, "new/b.txt")], "fresh\n");
    assert!(!fx.root().join("new").exists());
    assert_eq!(fx.get_text("a.txt"), "on disk\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_outside_the_workspace_never_reaches_the_buffers() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let buffers = Arc::new(Buffers::default());
    let target = outside.path().join("secret.txt").display().to_string();
    let read = check(&fx, &buffers, "read_file", json!({"path": target})).await;
    assert!(read.contains("outside"), "{read}");
    let write = check(&fx, &buffers, "write_file", json!({"path": target, "content": "x"})).await;
    assert!(write.contains("outside"), "{write}");
    assert!(buffers.asked.lock().unwrap().is_empty());
    // The control: a path inside is asked for.
    fx.put("in.txt", "in\n");
    buffers.texts.lock().unwrap().insert(canonical(&fx, "in.txt"), "in\n".into());
    check(&fx, &buffers, "read_file", json!({"path": "in.txt"})).await;
    assert_eq!(buffers.asked.lock().unwrap().len(), 1);
}
