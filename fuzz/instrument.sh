#!/bin/sh
# The `RUSTC_WORKSPACE_WRAPPER` of `cargo xtask fuzz` (docs/fuzzing.md): cargo runs it, for the
# workspace's own crates only, as `instrument.sh RUSTC ARGS...`. It adds LLVM's SanitizerCoverage
# (edges, trace-pc-guard, every block kept), whose callbacks AFL++'s runtime implements, and links
# that runtime into binaries. Dependencies are built as the tests build them, so they come warm
# from the test build instead of a second full build.
rustc="$1"
shift
exec "$rustc" "$@" \
  -C passes=sancov-module \
  -C llvm-args=-sanitizer-coverage-level=3 \
  -C llvm-args=-sanitizer-coverage-trace-pc-guard \
  -C llvm-args=-sanitizer-coverage-prune-blocks=0 \
  -C link-arg=/usr/lib/afl/afl-compiler-rt.o
