//! The environment a sandboxed process sees: the caller's base environment without secrets, plus
//! variables that keep tools non-interactive.

use std::ffi::{OsStr, OsString};

use super::SandboxPolicy;

/// Variables every sandboxed process gets, so tools neither page, prompt, nor colour their output.
const FIXED: [(&str, &str); 8] = [
    ("CI", "1"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("PIP_PROGRESS_BAR", "off"),
    ("TQDM_DISABLE", "1"),
];

/// Name endings that mark a secret (compared upper-cased).
const SECRET_SUFFIXES: [&str; 9] = [
    "_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PASS",
    "_CREDENTIALS",
    "_PRIVATE_KEY",
];

/// Name parts that mark a secret wherever they appear (compared upper-cased).
const SECRET_PARTS: [&str; 5] = ["SECRET", "PASSWORD", "TOKEN", "CREDENTIAL", "API_KEY"];

/// Whole names that grant access without looking like secrets: agent sockets and URLs that
/// usually embed a password.
const SECRET_NAMES: [&str; 6] =
    ["SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DATABASE_URL", "REDIS_URL", "NETRC", "KUBECONFIG"];

/// Whether a variable named `name` must not reach a sandboxed process.
pub fn is_secret(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        // A name that is not UTF-8 cannot be judged, so it is dropped.
        return true;
    };
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || SECRET_PARTS.iter().any(|part| upper.contains(part))
}

/// The environment for a sandboxed process: `base` without secrets, then the fixed variables,
/// `TMPDIR` and the sandbox markers (`AGENT_SANDBOX`, `AGENT_SANDBOX_NETWORK_DISABLED`).
pub fn sandbox_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    policy: SandboxPolicy,
    network: bool,
    temp_dir: Option<&std::path::Path>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(name, _)| {
            !is_secret(name) && !FIXED.iter().any(|(fixed, _)| name == fixed) && name != "TMPDIR"
        })
        .collect();
    env.extend(FIXED.iter().map(|(name, value)| (OsString::from(name), OsString::from(value))));
    if let Some(dir) = temp_dir {
        env.push(("TMPDIR".into(), dir.into()));
    }
    env.push(("AGENT_SANDBOX".into(), policy.as_str().into()));
    if !network {
        env.push(("AGENT_SANDBOX_NETWORK_DISABLED".into(), "1".into()));
    }
    env
}

/// The environment for a program the user configured to run outside the sandbox (a hook): `base`
/// without secrets, and nothing added. Hooks are the user's own scripts, but a key in their
/// environment could still end up in a log they write or a command they echo.
pub fn host_env(base: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    base.into_iter().filter(|(name, _)| !is_secret(name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, secret: bool) {
        assert_eq!(is_secret(OsStr::new(name)), secret, "{name}");
    }

    #[test]
    fn secrets_are_recognised_by_name() {
        check("OPENAI_API_KEY", true);
        check("openai_api_key", true);
        check("GITHUB_TOKEN", true);
        check("AWS_SECRET_ACCESS_KEY", true);
        check("AWS_SESSION_TOKEN", true);
        check("PGPASSWORD", true);
        check("DB_PASSWD", true);
        check("SSH_AUTH_SOCK", true);
        check("DATABASE_URL", true);
        check("PATH", false);
        check("HOME", false);
        check("LANG", false);
        check("KEYBOARD_LAYOUT", false);
        check("CARGO_HOME", false);
    }

    #[test]
    fn hooks_get_the_environment_without_secrets_and_nothing_added() {
        let base = [
            (OsString::from("OPENAI_API_KEY"), OsString::from("sk-test")),
            (OsString::from("GITHUB_TOKEN"), OsString::from("ghp-test")),
            (OsString::from("PATH"), OsString::from("/usr/bin")),
            (OsString::from("PAGER"), OsString::from("less")),
        ];
        let env = host_env(base);
        let names: Vec<&OsString> = env.iter().map(|(name, _)| name).collect();
        assert_eq!(names, [&OsString::from("PATH"), &OsString::from("PAGER")]);
    }

    #[test]
    fn fixed_variables_override_the_base() {
        let base = [
            (OsString::from("PAGER"), OsString::from("less")),
            (OsString::from("OPENAI_API_KEY"), OsString::from("sk-test")),
            (OsString::from("PATH"), OsString::from("/usr/bin")),
        ];
        let env = sandbox_env(base, SandboxPolicy::ReadOnly, false, None);
        let get = |name: &str| {
            env.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect::<Vec<_>>()
        };
        assert_eq!(get("PAGER"), [OsString::from("cat")]);
        assert!(get("OPENAI_API_KEY").is_empty());
        assert_eq!(get("PATH"), [OsString::from("/usr/bin")]);
        assert_eq!(get("AGENT_SANDBOX_NETWORK_DISABLED"), [OsString::from("1")]);
    }
}
