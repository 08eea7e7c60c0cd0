//! Which `task` call started which child: `children/index.jsonl` in the session folder, one line
//! per child started, appended and never rewritten. It is what links a parent's call to the
//! child's transcript, and what lets a replay of the parent play each child back from its own
//! recording ([`Recorded`]).

use std::{
    collections::{HashMap, HashSet},
    io::Write,
    path::{Path, PathBuf},
    sync::Mutex,
};

use serde::{Deserialize, Serialize};

use super::TaskRequest;

/// The index's file name inside `children/`.
pub(crate) const INDEX_FILE: &str = "index.jsonl";

/// One child started: who asked, from which call, and under which definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildLink {
    /// The child's id; its transcript is `children/<agent_id>.jsonl`.
    pub agent_id: String,
    /// The caller's session id (the parent's, or a child's when a child asked).
    pub parent_id: String,
    /// The caller's `call_id` of the `task` call.
    pub call_id: String,
    /// The definition used.
    pub agent: String,
}

impl ChildLink {
    /// Appends this link to `children_dir`'s index; a failure is ignored, as a failed transcript
    /// write is (the child still runs, it is only harder to replay).
    pub(crate) fn append(&self, children_dir: &Path, lock: &Mutex<()>) {
        let Ok(mut line) = serde_json::to_string(self) else { return };
        line.push('\n');
        // One write per line under the session's lock, so children started together never
        // interleave their lines.
        let _guard = lock.lock();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(children_dir.join(INDEX_FILE));
        if let Ok(mut file) = file {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// The highest child number (`…c<N>`) in `children_dir`'s index, so a resumed session numbers
/// its new children after the ones it already has and never appends to their transcripts.
pub(crate) fn last_number(children_dir: &Path) -> u64 {
    let text = std::fs::read_to_string(children_dir.join(INDEX_FILE)).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<ChildLink>(line).ok())
        .filter_map(|link| link.agent_id.rsplit_once(".c").and_then(|(_, n)| n.parse().ok()))
        .max()
        .unwrap_or(0)
}

/// The children of a recorded session, for replaying it: each `task` call of the replay finds
/// the child its recorded twin started (same caller, same `call_id`), whose transcript then
/// plays that child's model.
#[derive(Debug, Default)]
pub struct Recorded {
    dir: PathBuf,
    links: Vec<ChildLink>,
    /// The recorded session's own id: the caller that is no child.
    root: Option<String>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Replayed child id → the recorded child it plays.
    played: HashMap<String, String>,
    /// Recorded children already given to a replayed one.
    used: HashSet<String>,
}

impl Recorded {
    /// The children recorded in `children_dir` (a session folder's `children/`); none when it
    /// has no index. Torn or foreign lines are skipped.
    pub fn open(children_dir: &Path) -> Self {
        let text = std::fs::read_to_string(children_dir.join(INDEX_FILE)).unwrap_or_default();
        let links: Vec<ChildLink> =
            text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
        let children: HashSet<&str> = links.iter().map(|link| link.agent_id.as_str()).collect();
        let root = links
            .iter()
            .map(|link| link.parent_id.as_str())
            .find(|parent| !children.contains(parent))
            .map(str::to_owned);
        Self { dir: children_dir.to_path_buf(), links, root, state: Mutex::default() }
    }

    /// How many children the recording holds.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether the recording holds no child.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The recorded transcript that plays the child `agent_id` started by `request`, or `None`
    /// when the recording has no such child. A caller the replay has not seen as a child is the
    /// replayed session itself.
    pub fn transcript_for(&self, agent_id: &str, request: &TaskRequest) -> Option<PathBuf> {
        let mut state = self.state.lock().ok()?;
        let caller = match state.played.get(&request.caller) {
            Some(recorded) => recorded.clone(),
            None => self.root.clone()?,
        };
        let link = self.links.iter().find(|link| {
            link.parent_id == caller
                && link.call_id == request.call_id
                && !state.used.contains(&link.agent_id)
        })?;
        state.used.insert(link.agent_id.clone());
        state.played.insert(agent_id.to_owned(), link.agent_id.clone());
        Some(self.dir.join(format!("{}.jsonl", link.agent_id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(agent_id: &str, parent_id: &str, call_id: &str) -> ChildLink {
        ChildLink {
            agent_id: agent_id.into(),
            parent_id: parent_id.into(),
            call_id: call_id.into(),
            agent: "explore".into(),
        }
    }

    fn request(caller: &str, call_id: &str) -> TaskRequest {
        TaskRequest {
            description: "d".into(),
            prompt: "p".into(),
            agent: None,
            caller: caller.into(),
            call_id: call_id.into(),
        }
    }

    #[track_caller]
    fn check(recorded: &Recorded, agent_id: &str, caller: &str, call: &str, expect: Option<&str>) {
        let found = recorded.transcript_for(agent_id, &request(caller, call));
        let name = found.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy());
        assert_eq!(name.as_deref(), expect.map(|e| format!("{e}.jsonl")).as_deref());
    }

    #[test]
    fn a_replayed_call_finds_the_child_its_recorded_twin_started() {
        let dir = tempfile::tempdir().unwrap();
        let lock = Mutex::new(());
        // Two children of one turn (recorded in the order they started), and one grandchild.
        for line in [link("s.c2", "s", "tb"), link("s.c1", "s", "ta"), link("s.c3", "s.c1", "ta")] {
            line.append(dir.path(), &lock);
        }
        std::fs::write(
            dir.path().join(INDEX_FILE),
            std::fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap() + "{torn",
        )
        .unwrap();
        let recorded = Recorded::open(dir.path());
        assert_eq!(recorded.len(), 3);
        // The replay's ids differ from the recording's; the caller and call id find the child.
        check(&recorded, "r.c1", "r", "ta", Some("s.c1"));
        check(&recorded, "r.c2", "r", "tb", Some("s.c2"));
        // The grandchild is found through the replayed child that plays `s.c1`, even though the
        // call ids repeat at another level.
        check(&recorded, "r.c3", "r.c1", "ta", Some("s.c3"));
        // Each recorded child plays once, and a call the recording never made finds none.
        check(&recorded, "r.c4", "r", "ta", None);
        check(&recorded, "r.c5", "r", "tz", None);
        assert!(Recorded::open(&dir.path().join("none")).is_empty());
        assert_eq!(last_number(dir.path()), 3);
        assert_eq!(last_number(&dir.path().join("none")), 0);
    }
}
