//! agent-mcp's integration tests: the library driven directly against a real peer, the Python
//! `mcp` SDK (server and client), as installed by `scripts/mcp/setup.sh`.

mod suite;
