//! Integration tests of the built-in tools, run on temporary workspaces.

mod suite;
