//! The fuzz harness: `agent-fuzz --list`, `agent-fuzz TARGET FILE...` (replays inputs, reports
//! the first that fails) and, built with the `afl` feature by `cargo xtask fuzz`, the AFL++
//! persistent loop: `afl-fuzz … -- agent-fuzz TARGET` reads each input from standard input.

use std::{
    io::{Read as _, Write as _},
    panic::AssertUnwindSafe,
    process::ExitCode,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut stdout = std::io::stdout().lock();
    let Some(first) = args.first() else {
        let _ = writeln!(stdout, "usage: agent-fuzz --list | TARGET [FILE...]");
        return ExitCode::from(2);
    };
    if first == "--list" {
        for target in agent_fuzz::TARGETS {
            let _ = writeln!(stdout, "{:<18} {}", target.name, target.about);
        }
        return ExitCode::SUCCESS;
    }
    let Some(target) = agent_fuzz::target(first) else {
        let _ = writeln!(stdout, "no fuzz target `{first}`; `agent-fuzz --list` names them");
        return ExitCode::from(2);
    };
    if args.len() > 1 {
        for file in &args[1..] {
            let data = match std::fs::read(file) {
                Ok(data) => data,
                Err(error) => {
                    let _ = writeln!(stdout, "{file}: {error}");
                    return ExitCode::FAILURE;
                }
            };
            if std::panic::catch_unwind(|| (target.run)(&data)).is_err() {
                let _ = writeln!(stdout, "{file}: the property failed (the panic is above)");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    engine::run(target.run)
}

/// One input from standard input through `run`; a failed property aborts, which is what AFL++
/// counts as a crash (an unwinding panic would only be an exit code).
fn once(run: fn(&[u8]), buffer: &mut Vec<u8>) {
    buffer.clear();
    if std::io::stdin().lock().read_to_end(buffer).is_err() {
        return;
    }
    if std::panic::catch_unwind(AssertUnwindSafe(|| run(buffer))).is_err() {
        std::process::abort();
    }
}

/// Without the `afl` feature: one input from standard input.
#[cfg(not(feature = "afl"))]
mod engine {
    pub(super) fn run(run: fn(&[u8])) -> std::process::ExitCode {
        super::once(run, &mut Vec::new());
        std::process::ExitCode::SUCCESS
    }
}

/// AFL++'s persistent mode, from the runtime (`afl-compiler-rt.o`) that `cargo xtask fuzz`
/// links in: the fork server starts once, then each input runs in the same process, many
/// thousands a second instead of one fork each.
#[cfg(feature = "afl")]
#[allow(unsafe_code)]
mod engine {
    unsafe extern "C" {
        fn __afl_persistent_loop(max: u32) -> i32;
        fn __afl_manual_init();
    }

    /// The markers afl-fuzz looks for in the binary to speak the persistent and deferred
    /// protocols (AFL++'s `docs/fuzzing_in_depth.md`, "persistent mode").
    #[used]
    static PERSISTENT: &[u8] = b"##SIG_AFL_PERSISTENT##\0";
    #[used]
    static DEFERRED: &[u8] = b"##SIG_AFL_DEFER_FORKSRV##\0";

    /// Inputs per process before AFL++ starts a fresh one, bounding what a slow leak can do.
    const PER_PROCESS: u32 = 10_000;

    pub(super) fn run(run: fn(&[u8])) -> std::process::ExitCode {
        let mut buffer = Vec::new();
        // SAFETY: AFL++'s runtime entry points, called as its documentation says: the manual
        // start once, before the loop, and the loop's test on the main thread.
        unsafe { __afl_manual_init() };
        while unsafe { __afl_persistent_loop(PER_PROCESS) } != 0 {
            super::once(run, &mut buffer);
        }
        std::process::ExitCode::SUCCESS
    }
}
