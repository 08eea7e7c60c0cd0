//! Entry point for the fuzz targets (crate `agent-fuzz`, docs/fuzzing.md): the client's frames
//! read under a cap the caller chooses, so a fuzzer reaches the over-the-cap path with small inputs.

use std::io::BufRead;

/// The next frame of `reader`, read as [`crate::read_frame`] reads it but under `limit`.
pub fn read_frame(reader: &mut impl BufRead, limit: usize) -> std::io::Result<Option<String>> {
    crate::frames::read_limited(reader, limit)
}
