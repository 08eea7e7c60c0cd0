//! `FileSystem`: where the file tools read and write text when the disk is not the source of
//! truth, such as an editor that holds unsaved buffers (an ACP client's `fs/*` methods).

use std::{fmt, path::Path};

use crate::tool::BoxFuture;

/// The text files of a session as someone other than the disk holds them.
///
/// The file tools (read_file, write_file, edit_file) call it when a session has one
/// ([`crate::ToolContext::files`]); without one they use the disk. Every path it is given is
/// absolute and has passed the workspace boundary and the permission policy already, so an
/// implementation is only a transport and decides nothing about access. Errors are IO errors so
/// the tools report them as they report the disk's: [`std::io::ErrorKind::NotFound`] when there
/// is no such file, anything else as a failure to read or write.
pub trait FileSystem: fmt::Debug + Send + Sync {
    /// The whole text of the file at `path`, as its holder has it now (unsaved changes included).
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, std::io::Result<String>>;

    /// Replaces the whole text of the file at `path` (creating it when it does not exist).
    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, std::io::Result<()>>;
}
