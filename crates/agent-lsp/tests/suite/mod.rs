//! The cases, by server.

mod fake;
mod python;
mod support;
mod typescript;
