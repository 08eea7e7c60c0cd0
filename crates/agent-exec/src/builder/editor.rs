//! What an editor front end changes on a running agent: where the file tools read and write,
//! and the tools themselves.

use std::sync::Arc;

use super::Agent;
use crate::Executor;

impl Agent {
    /// Has the file tools read and write through `files` (an editor's buffers) from the next
    /// call on; `None` is the disk.
    pub fn set_file_system(&mut self, files: Option<Arc<dyn agent_core::FileSystem>>) {
        self.executor.set_file_system(files);
    }

    /// The executor, to change its tools between prompts.
    pub fn executor_mut(&mut self) -> &mut Executor {
        &mut self.executor
    }
}
