//! Integration tests of the model adapters against the scripted server over loopback HTTP.

// Marked as test code so that the shared helpers may unwrap like the tests themselves.
#[cfg(test)]
mod suite;
