//! agent-lsp's integration tests: real language servers (pyright, typescript-language-server
//! from `scripts/peers/lsp/`) and fake ones (`peers/fake_lsp.py`) under the real sandbox.

// Test helpers unwrap, and the crash test signals a server's group with `kill`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod suite;
