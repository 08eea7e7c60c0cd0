//! Frames from peers: ACP clients (agent-acp), MCP stdio servers (agent-mcp), language servers
//! (agent-lsp).

use std::io::BufReader;

use crate::{alloc::largest_allocation, cuts};

/// The ACP frame reader under a cap chosen by the first byte: the same frames whatever the read
/// size, none longer than the cap allows, and no allocation near the size of a frame over the cap.
pub(super) fn acp(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else { return };
    let limit = 1 + usize::from(first) * 4;
    // A frame is at most the cap (with invalid UTF-8 replaced, three bytes each), or a stand-in
    // naming the sizes and an id of at most 128 bytes; building a stand-in's JSON allocates a few
    // hundred bytes whatever the frame's size. A frame over the cap is never allocated whole.
    let bound = 3 * limit + 4096;
    let read_all = |capacity: usize| {
        let mut reader = BufReader::with_capacity(capacity, input);
        let mut frames = Vec::new();
        loop {
            let (next, largest) =
                largest_allocation(|| agent_acp::fuzz::read_frame(&mut reader, limit));
            assert!(largest <= bound, "an allocation of {largest} bytes under a cap of {limit}");
            match next {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => return frames,
                Err(error) => panic!("reading from memory failed: {error}"),
            }
        }
    };
    let whole = read_all(input.len().max(1));
    for frame in &whole {
        assert!(frame.len() <= bound, "a frame of {} bytes under a cap of {limit}", frame.len());
    }
    for capacity in [1, 2, 7, 64] {
        assert_eq!(read_all(capacity), whole, "read {capacity} bytes at a time");
    }
}

/// The MCP stdio relay under a cap chosen by the first byte: the same output whatever the read
/// size; no line out longer than the cap (or an error answer); and when every line is within
/// the cap and too shallow to matter, the output is the input, line for line.
pub(super) fn mcp(data: &[u8]) {
    let Some((&first, output)) = data.split_first() else { return };
    let cap = 16 + usize::from(first) * 64;
    let relay = |step: usize| match agent_mcp::fuzz::relay_output(output, step, cap) {
        Ok(relayed) => relayed,
        Err(error) => panic!("no runtime: {error}"),
    };
    let whole = relay(output.len().max(1));
    for step in [1, 2, 7, 64] {
        assert_eq!(relay(step), whole, "read {step} bytes at a time");
    }
    for line in whole.0.split(|&byte| byte == b'\n') {
        assert!(line.len() <= cap + 512, "a line of {} bytes passed a cap of {cap}", line.len());
    }
    let lines: Vec<&[u8]> = output.split(|&byte| byte == b'\n').collect();
    let plain = |line: &&[u8]| {
        line.len() <= cap && line.iter().filter(|&&b| b == b'[' || b == b'{').count() <= 120
    };
    if lines.iter().all(plain) {
        let mut expect = output.to_vec();
        if !expect.is_empty() && !expect.ends_with(b"\n") {
            expect.push(b'\n');
        }
        assert_eq!(String::from_utf8_lossy(&whole.0), String::from_utf8_lossy(&expect));
    }
}

/// The LSP codec under a body cap chosen by the first byte: split anywhere, the same messages and
/// the same error; no allocation beyond the input, the cap and the header limit, whatever length
/// a header claims.
pub(super) fn lsp(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else { return };
    let max_body = usize::from(first) * 64;
    let decode = |chunks: &[&[u8]]| {
        let (messages, error, _) = agent_lsp::fuzz::decode(chunks, max_body);
        (messages, error.map(|error| error.to_string()))
    };
    let (whole, largest) = largest_allocation(|| decode(&[input]));
    let bound = 2 * (input.len() + max_body + 8 * 1024) + 1024;
    assert!(
        largest <= bound,
        "an allocation of {largest} bytes for {} bytes of input",
        input.len()
    );
    for at in cuts::points(input.len(), 256) {
        assert_eq!(decode(&cuts::split(input, at)), whole, "split at {at}");
    }
    assert_eq!(decode(&cuts::bytes(input)), whole, "byte by byte");
}
