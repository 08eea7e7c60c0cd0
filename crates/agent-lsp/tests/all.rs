//! agent-lsp's integration tests: real language servers (pyright, typescript-language-server
//! from `scripts/peers/lsp/`) and fake ones (`peers/fake_lsp.py`) under the real sandbox.

mod suite;
