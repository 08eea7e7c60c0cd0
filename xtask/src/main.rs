//! `cargo xtask`: developer tasks.

#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() {}
