//! `task.start_ms`: the harness's share of starting a child agent, from the `task` call to the
//! child's first model request (the `task_start` example of agent-exec; docs/agents.md).

/// The example that measures it, run with the other in-process examples.
pub(super) const EXAMPLE: &str = "task_start";

/// The bound the subagent tool was built to: under 5 ms.
pub(super) const TARGET_MS: f64 = 5.0;
