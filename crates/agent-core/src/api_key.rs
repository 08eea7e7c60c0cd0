//! [`ApiKey`]: the one type a credential travels in, for the model client and the web search tool
//! alike.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

/// An API key. Its `Debug` output is redacted and it has no `Display`, so it cannot reach a log
/// line or an error message by accident; the memory holding it is zeroed when it is dropped.
///
/// ```
/// use agent_core::ApiKey;
///
/// let key = ApiKey::new("sk-secret");
/// assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
/// assert_eq!(key.expose(), "sk-secret");
/// ```
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(SecretString::from(key.into()))
    }

    /// The key itself, for the one header that carries it (and for scrubbing it out of an error a
    /// server echoed). Nothing else should call this.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let key = ApiKey::new("sk-very-secret");
        let shown = format!("{key:?} {:?} {key:#?}", Some(key.clone()));
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
