//! The children of a session let go of the session's tools when the session ends. The `task` tool
//! in the parent's registry holds the children, and their template holds the parent's registry:
//! a cycle of reference counts through which `agent acp`, which serves many sessions in one
//! process, kept every closed session's tools (its jobs table with each job's temporary folder,
//! its MCP connections) until it exited. Found by `cargo xtask soak`.

use std::sync::{Arc, Weak};

use agent_core::{Effects, ModelClient, ToolContext, ToolError, ToolOutput, Typed, TypedTool};
use agent_exec::{
    AgentBuilder,
    child::{ChildStart, Children, ChildrenConfig, ModelSource},
};
use agent_tools::Task;

use crate::suite::support::NoInput;

/// A tool whose life the test watches through a weak handle to what it holds.
struct Watched(#[allow(dead_code)] Arc<()>);

impl TypedTool for Watched {
    type Input = NoInput;
    const NAME: &'static str = "watched";
    fn description(&self) -> String {
        "Does nothing.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, _input: NoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("nothing"))
    }
}

/// No child ever runs here: only the references matter.
struct NoModel;

impl ModelSource for NoModel {
    fn model(&self, _start: &ChildStart<'_>) -> Option<Box<dyn ModelClient>> {
        None
    }
}

/// A parent executor with `task` and the watched tool, its children attached; returns the
/// children and the watched tool's weak handle, every other reference dropped.
fn session(dir: &std::path::Path) -> (Children, Weak<()>) {
    let children = Children::new(Arc::new(NoModel), ChildrenConfig::default());
    let held = Arc::new(());
    let watch = Arc::downgrade(&held);
    let parent = AgentBuilder::new(dir)
        .tool(Arc::new(Typed::new(Task::new(children.clone())).unwrap()))
        .tool(Arc::new(Typed::new(Watched(held)).unwrap()))
        .build_executor()
        .unwrap();
    children.attach(&parent, "");
    drop(parent);
    (children, watch)
}

#[test]
fn the_child_template_cycle_no_longer_leaks_a_closed_sessions_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (children, watch) = session(dir.path());
    // The control: while the session runs, its children keep the tools they would inherit.
    assert!(watch.upgrade().is_some(), "the template let go of the tools too early");
    // The session ends (`session/close`, or the REPL's exit): the tools go with the last handle.
    children.stop_all();
    drop(children);
    assert!(watch.upgrade().is_none(), "the session's tools outlived it (the template cycle)");
}

#[test]
fn children_attached_after_the_end_take_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (children, _) = session(dir.path());
    children.stop_all();
    let held = Arc::new(());
    let watch = Arc::downgrade(&held);
    let late = AgentBuilder::new(dir.path())
        .tool(Arc::new(Typed::new(Task::new(children.clone())).unwrap()))
        .tool(Arc::new(Typed::new(Watched(held)).unwrap()))
        .build_executor()
        .unwrap();
    children.attach(&late, "");
    drop(late);
    drop(children);
    assert!(watch.upgrade().is_none(), "a late attach rebuilt the cycle");
}
