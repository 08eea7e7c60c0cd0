//! [`Background`]: work a session runs beside the loop (the bash tool's jobs), seen by the loop
//! only as text it tells the model.
//!
//! The executor never needs to know about processes: whoever starts background work (the built-in
//! tools' job table, a front end's own runner) registers it with
//! [`AgentBuilder::background`](crate::AgentBuilder::background), and the loop asks it two things
//! before every request and at every compaction.

use std::fmt;

use crate::jobs::Jobs;

/// Background work of a session, as the loop needs it.
pub trait Background: Send + Sync + fmt::Debug {
    /// What finished since the last call and the model has not been told, as the text of one
    /// user message each; every notice is returned once. The loop adds them before each request.
    fn take_notices(&self) -> Vec<String>;

    /// One line per piece of work still running (its id, command and where its output goes),
    /// for the ledger a compaction writes, so the model does not forget work it started.
    fn running(&self) -> Vec<String>;
}

impl Background for Jobs {
    fn take_notices(&self) -> Vec<String> {
        Jobs::take_notices(self).iter().map(|notice| notice.text()).collect()
    }

    fn running(&self) -> Vec<String> {
        Jobs::running(self)
            .iter()
            .map(|job| format!("{}; output: {}", job.line(), job.output_path.display()))
            .collect()
    }
}
