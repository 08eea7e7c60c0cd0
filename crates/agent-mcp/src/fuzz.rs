//! Entry point for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): what the relay in
//! front of rmcp passes on for a stdio server's output, read in pieces of a chosen size and under
//! a chosen line cap, so a fuzzer reaches the over-the-cap path with small inputs.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use tokio::io::{AsyncRead, ReadBuf};

use crate::incoming::{Dropped, relay};

/// What the relay writes for `output` read `step` bytes at a time under a line cap of `cap`, and
/// the names of the tools it left out.
pub fn relay_output(
    output: &[u8],
    step: usize,
    cap: usize,
) -> std::io::Result<(Vec<u8>, Vec<String>)> {
    let dropped = Dropped::default();
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let mut out = Vec::new();
    let reader = Pieces { data: output, step: step.max(1) };
    runtime.block_on(relay(reader, &mut out, dropped.clone(), cap));
    let names = dropped
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    Ok((out, names))
}

/// A reader that hands out at most `step` bytes a read, as a pipe may.
struct Pieces<'a> {
    data: &'a [u8],
    step: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.step.min(self.data.len()).min(buf.remaining());
        let (head, rest) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}
