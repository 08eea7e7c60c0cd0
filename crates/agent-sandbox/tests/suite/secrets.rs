//! Secret files against real processes: a workspace `.env` and a test home with SSH, AWS and
//! netrc credentials, read the ways an injected command would try. The check is always the effect:
//! no byte of a secret in anything the command printed.

use std::{path::Path, time::Duration};

use agent_sandbox::{
    paths::PathSet,
    process::{self, ProcessOutput, ProcessSpec},
    sandbox::{SandboxConfig, SandboxPolicy, probe},
    secret::{SecretFiles, Secrets},
};
use agent_test_support::skipped;
use tokio_util::sync::CancellationToken;

/// The secret bytes planted in the fixture; none may ever appear in a sandboxed command's output.
const SECRETS: [&str; 5] = [
    "API_TOKEN=tok-4f1c9e",
    "ssh-key-b2d7a0",
    "aws-secret-93e5c1",
    "netrc-pass-07ad4b",
    "pem-body-c81f22",
];

/// A workspace with `.env` and `certs/server.pem`, and a home holding credentials.
struct Fixture {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let put = |root: &Path, rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        put(ws.path(), ".env", &format!("{}\n", SECRETS[0]));
        put(ws.path(), "certs/server.pem", SECRETS[4]);
        put(ws.path(), "src/main.rs", "fn main() { /* TOKEN lives in .env */ }\n");
        put(home.path(), ".ssh/id_ed25519", SECRETS[1]);
        put(home.path(), ".aws/credentials", SECRETS[2]);
        put(home.path(), ".netrc", SECRETS[3]);
        Self { ws, home }
    }

    fn config(&self, policy: SandboxPolicy) -> SandboxConfig {
        let mut config = SandboxConfig::new(self.ws.path()).with_policy(policy);
        config.kill_grace = Duration::from_millis(300);
        config
    }

    /// The built-in list with what the path specifiers `exposed` name revealed, spelled as in
    /// `Read(…)` allow rules: what the permission policy hands the sandbox for those rules.
    fn secrets(&self, exposed: &[&str]) -> Secrets {
        let root = self.ws.path().canonicalize().unwrap();
        let sets = exposed.iter().map(|spec| PathSet::anchored(spec, &root, None).unwrap());
        Secrets::with_revealed(SecretFiles::default(), PathSet::union(sets.collect()))
    }

    async fn sh(&self, config: &SandboxConfig, script: &str) -> ProcessOutput {
        let env = [
            ("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())),
            ("HOME", self.home.path().display().to_string()),
        ];
        let spec = ProcessSpec::bash(script).base_env(env);
        process::run(spec, config, CancellationToken::new(), Some(Duration::from_secs(20)))
            .await
            .expect("spawn")
    }
}

/// Returns true (after saying why) when secrets cannot be hidden on this kernel.
fn skip(policy: SandboxPolicy) -> bool {
    if let Some(err) = probe().support(policy).missing {
        skipped(&err.to_string());
        return true;
    }
    if !probe().mount_namespaces {
        skipped("no mount namespaces here, so commands refuse to run while secrets exist");
        return true;
    }
    false
}

/// Everything a command printed, with base64 lines decoded too, so an encoded secret counts.
fn revealed(out: &ProcessOutput) -> Vec<&'static str> {
    let mut text = format!("{}{}", out.output, out.stderr);
    for line in out.output.lines() {
        text.push_str(&String::from_utf8_lossy(&base64_decode(line)));
    }
    text.push_str(&String::from_utf8_lossy(&base64_decode(&out.output.replace('\n', ""))));
    SECRETS.into_iter().filter(|secret| text.contains(secret)).collect()
}

/// Standard base64 without padding checks; other characters end the input.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for digit in text.bytes().map_while(value) {
        acc = (acc << 6) | u32::from(digit);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Reading secrets with cat, grep, python, tar and base64, plus ways around a mount: every one must reveal nothing.
const ATTACKS: &[&str] = &[
    "cat .env",
    "grep -r TOKEN .",
    "grep -ra . certs",
    "python3 -c 'print(open(\".env\").read())'",
    "cat ~/.ssh/id_ed25519",
    "tar c ~/.aws | base64",
    "cat ~/.netrc",
    "tar c . | base64",
    "cp .env copy && cat copy",
    "ln .env hard; cat hard",
    "mv .env moved; cat moved .env",
    "umount .env; umount ~/.ssh; cat .env ~/.ssh/id_ed25519",
    "cat /proc/$PPID/root$PWD/.env",
    "cat /proc/1/root$PWD/.env",
    "find ~ -type f -exec cat {} +",
];

#[tokio::test(flavor = "multi_thread")]
async fn commands_see_no_secret_under_either_restricted_policy() {
    for policy in [SandboxPolicy::WorkspaceWrite, SandboxPolicy::ReadOnly] {
        if skip(policy) {
            return;
        }
        let fx = Fixture::new();
        let config = fx.config(policy);
        for attack in ATTACKS {
            let out = fx.sh(&config, attack).await;
            assert_eq!(
                revealed(&out),
                Vec::<&str>::new(),
                "BREACH under {policy}: `{attack}` printed {out:?}"
            );
        }
        // The files themselves are untouched: hiding is only a view.
        let env = std::fs::read_to_string(fx.ws.path().join(".env")).unwrap();
        assert_eq!(env, format!("{}\n", SECRETS[0]), "under {policy}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn moving_a_secrets_directory_does_not_uncover_it_for_the_next_command() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    // A session temp dir that outlives commands, where a moved directory could wait.
    let temp = tempfile::tempdir().unwrap();
    let tmp = temp.path().display().to_string();
    for (first, second) in [
        ("mv certs moved", "cat moved/server.pem"),
        ("mkdir -p node_modules && mv certs node_modules/", "cat node_modules/certs/server.pem"),
        (&format!("mv certs {tmp}/"), &format!("cat {tmp}/certs/server.pem")),
        ("mv certs moved; mkdir certs; echo decoy > certs/server.pem", "cat */server.pem"),
    ] {
        let fx = Fixture::new();
        let mut config = fx.config(SandboxPolicy::WorkspaceWrite);
        config.temp_dir = Some(temp.path().to_path_buf());
        // The first command tries to carry the secret to a path the second one's cover would
        // miss; the second reads it there.
        let moved = fx.sh(&config, first).await;
        let out = fx.sh(&config, second).await;
        assert_eq!(
            revealed(&out),
            Vec::<&str>::new(),
            "BREACH: `{first}` ({moved:?}) then `{second}`: {out:?}"
        );
        assert!(
            fx.ws.path().join("certs/server.pem").exists(),
            "`{first}` moved the secret: {moved:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn other_files_stay_readable_and_hidden_names_stay_listed() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    let out = fx
        .sh(&fx.config(SandboxPolicy::WorkspaceWrite), "cat src/main.rs; ls -a; ls ~/.ssh | wc -l")
        .await;
    assert!(out.output.contains("TOKEN lives in .env"), "{out:?}");
    assert!(out.output.lines().any(|line| line == ".env"), "{out:?}");
    assert!(out.output.ends_with("0\n"), "~/.ssh is listed empty: {out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_that_touched_a_hidden_file_gets_a_note() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    let config = fx.config(SandboxPolicy::WorkspaceWrite);
    let check = |out: ProcessOutput, command: &str, expect: &[&str]| {
        let notes = out.hidden_notes(command);
        let named: Vec<&str> = notes.iter().filter_map(|n| n.split('`').nth(1)).collect();
        assert_eq!(named, expect, "{command}: {notes:?}");
    };
    check(fx.sh(&config, "cat .env").await, "cat .env", &[".env"]);
    check(fx.sh(&config, "tar c ~/.aws | base64").await, "tar c ~/.aws | base64", &["~/.aws"]);
    check(fx.sh(&config, "cat src/main.rs").await, "cat src/main.rs", &[".env"]);
    check(fx.sh(&config, "ls src").await, "ls src", &[]);
    let notes = fx.sh(&config, "cat .env").await.hidden_notes("cat .env");
    assert_eq!(notes, ["`.env` is hidden from commands; an allow rule `Read(./.env)` exposes it"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allow_rule_exposes_exactly_what_it_names() {
    if skip(SandboxPolicy::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    let home_spec =
        format!("//{}/.ssh", fx.home.path().display().to_string().trim_start_matches('/'));
    let secrets = fx.secrets(&["./.env", &home_spec]);
    let config = fx.config(SandboxPolicy::WorkspaceWrite).with_secrets(secrets);
    let out =
        fx.sh(&config, "cat .env ~/.ssh/id_ed25519; cat ~/.aws/credentials certs/server.pem").await;
    assert_eq!(revealed(&out), [SECRETS[0], SECRETS[1]], "{out:?}");
    // `cat: …/.aws/credentials: No such file or directory` still earns a note; `.env` none.
    let notes = out.hidden_notes("cat .env");
    assert!(notes.iter().any(|note| note.starts_with("`~/.aws` is hidden")), "{notes:?}");
    assert!(!notes.iter().any(|note| note.contains("`.env`")), "{notes:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn root_cannot_read_the_raw_disk_or_kernel_memory() {
    if skip(SandboxPolicy::ReadOnly) {
        return;
    }
    let fx = Fixture::new();
    // As root, every block device and /proc/kcore would give the bytes behind the masks (where a
    // devices cgroup already forbids opening them, as on the development machine, this only
    // checks that nothing breaks; the mknod check holds everywhere).
    let script = "n=0; for d in /dev/* /proc/kcore; do [ -b \"$d\" ] || [ \"$d\" = /proc/kcore ] || continue; \
                  c=$(head -c 4096 \"$d\" 2>/dev/null | wc -c); n=$((n + c)); done; echo read=$n; \
                  mknod made b 7 0 && echo made";
    for policy in [SandboxPolicy::ReadOnly, SandboxPolicy::WorkspaceWrite] {
        let out = fx.sh(&fx.config(policy), script).await;
        assert!(out.output.starts_with("read=0\n"), "BREACH under {policy}: {out:?}");
        assert!(!out.output.contains("made\n"), "BREACH under {policy}: mknod worked: {out:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn danger_full_access_hides_nothing() {
    let fx = Fixture::new();
    let out =
        fx.sh(&fx.config(SandboxPolicy::DangerFullAccess), "cat .env ~/.ssh/id_ed25519").await;
    assert_eq!(revealed(&out), [SECRETS[0], SECRETS[1]], "{out:?}");
}
