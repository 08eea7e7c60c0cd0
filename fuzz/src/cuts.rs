//! Where the targets cut an input in two to check that a stream split there parses as the whole.

/// Every cut of an input of `len` bytes when it is short, else `samples` cuts spread evenly (the
/// ends included), so one input costs at most `samples` extra parses.
pub fn points(len: usize, samples: usize) -> impl Iterator<Item = usize> {
    let samples = samples.max(2);
    let step = len.div_ceil(samples).max(1);
    (0..=len).step_by(step).chain(std::iter::once(len))
}

/// The input split at `at` into two chunks.
pub fn split(data: &[u8], at: usize) -> [&[u8]; 2] {
    let (head, tail) = data.split_at(at.min(data.len()));
    [head, tail]
}

/// The input cut into chunks of one byte each.
pub fn bytes(data: &[u8]) -> Vec<&[u8]> {
    data.chunks(1).collect()
}
