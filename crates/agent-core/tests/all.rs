//! Integration tests of agent-core: strict schemas, their errors, and argument validation.

mod suite;
