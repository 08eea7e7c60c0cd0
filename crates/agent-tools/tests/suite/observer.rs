//! The edit tools tell the session's `EditObserver` what they changed, with each file's text
//! before, and append what it answers to their observation.

use std::sync::{Arc, Mutex};

use agent_core::{BoxFuture, EditNote, EditObserver, EditedFile};
use agent_tools::{BuiltinConfig, EditTool};
use serde_json::json;

use super::Fixture;

/// Records every call and answers with one line.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<(String, Option<String>, bool)>>);

impl EditObserver for Recorder {
    fn after_edit<'a>(&'a self, files: &'a [EditedFile]) -> BoxFuture<'a, EditNote> {
        let mut seen = self.0.lock().unwrap();
        for file in files {
            let name = file.path.file_name().unwrap().to_string_lossy().into_owned();
            seen.push((name, file.before.clone(), file.deleted));
        }
        Box::pin(async { EditNote { text: "This edit introduced 1 error in a.py".into() } })
    }
}

fn fixture(edit_tool: EditTool) -> (Fixture, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let observer: Arc<dyn EditObserver> = recorder.clone();
    let config =
        BuiltinConfig { edit_tool, edit_observer: Some(observer), ..BuiltinConfig::default() };
    (Fixture::with_config(config), recorder)
}

#[tokio::test]
async fn every_edit_tool_reports_its_files_with_their_text_before() {
    let (fx, recorder) = fixture(EditTool::EditFile);
    let out = fx.call("write_file", json!({"path": "a.py", "content": "x = 1\n"})).await;
    assert!(out.ends_with("\nThis edit introduced 1 error in a.py"), "{out}");
    let edit = json!({"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"});
    assert!(fx.call("edit_file", edit).await.ends_with("error in a.py"));
    // A failed call tells the observer nothing.
    let failed = json!({"path": "a.py", "old_string": "nowhere", "new_string": "y"});
    assert!(!fx.call("edit_file", failed).await.contains("introduced"));
    let seen = recorder.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("a.py".into(), Some(String::new()), false),
            ("a.py".into(), Some("x = 1\n".into()), false)
        ]
    );

    let (fx, recorder) = fixture(EditTool::ApplyPatch);
    fx.put("b.py", "old\n");
    fx.put("c.py", "gone\n");
    let patch = "*** Begin Patch\n*** Update File: b.py\n@@\n-old\n+new\n*** Delete File: c.py\n*** End Patch\n";
    let out = fx.call("apply_patch", json!({"patch": patch})).await;
    assert!(out.ends_with("error in a.py"), "{out}");
    let seen = recorder.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("b.py".into(), Some("old\n".into()), false),
            ("c.py".into(), Some("gone\n".into()), true)
        ]
    );
}
