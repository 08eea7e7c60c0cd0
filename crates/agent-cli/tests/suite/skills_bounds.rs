//! Hostile configuration files against the real binary: a workspace whose skill is a YAML alias
//! bomb is listed in bounded memory (the child's peak resident size, measured by the kernel), and
//! a config file nested 100,000 deep is refused in words, not by a crash.

use std::{path::Path, process::Command};

use crate::suite::{agent, command, stderr, stdout};

/// The most a child may reach, in KiB: `agent skills list` over the bomb.
const PEAK_KIB: u64 = 64 * 1024;

/// The peak resident size (KiB) of `child`, run to its end by a Python parent that reads its own
/// children's `getrusage` (the kernel's high-water mark, so no peak between samples is missed);
/// the child's address space is capped at 4 GiB so a bomb that does expand cannot take the
/// machine down. Also the child's exit code.
fn peak_kib(child: &Command) -> (u64, i32) {
    let Some(python) = which("python3") else {
        agent_test_support::skipped("python3 is not on PATH (it measures the child's peak)");
        return (0, 0);
    };
    let script = "import resource, subprocess, sys\n\
        cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n\
        code = subprocess.run(sys.argv[1:], preexec_fn=cap, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)";
    let mut wrapper = Command::new(python);
    wrapper.arg("-c").arg(script).arg(child.get_program()).args(child.get_args());
    wrapper.current_dir(child.get_current_dir().unwrap()).env_clear();
    for (key, value) in child.get_envs() {
        if let Some(value) = value {
            wrapper.env(key, value);
        }
    }
    let output = wrapper.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut words = text.split_whitespace();
    let peak = words.next().and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("{text}"));
    let code = words.next().and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("{text}"));
    (peak, code)
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Nine levels of nine aliases: under 1 KB of YAML, 9^9 strings once expanded.
fn bomb() -> String {
    let mut text = "---\nname: bomb\ndescription: d\na: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n".to_owned();
    let levels = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in levels.windows(2) {
        let refs = vec![format!("*{}", pair[0]); 9].join(",");
        text.push_str(&format!("{}: &{} [{refs}]\n", pair[1], pair[1]));
    }
    text.push_str("---\nBody.\n");
    text
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn skills_list_over_a_yaml_bomb_stays_under_64_mb() {
    // A model without a vocabulary (`b`), so the token column loads no BPE table (about 50 MB of
    // its own, the same with or without the bomb).
    let args = ["--model", "b", "skills", "list"];
    let plain = tempfile::tempdir().unwrap();
    let fine = "---\nname: fine\ndescription: d\n---\nB\n";
    write(&plain.path().join(".agents/skills/fine/SKILL.md"), fine);
    let (base, code) = peak_kib(&command(plain.path(), &args));
    if base == 0 {
        return;
    }
    assert_eq!(code, 0);
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join(".agents/skills/bomb/SKILL.md"), &bomb());
    write(&dir.path().join(".agents/skills/fine/SKILL.md"), fine);
    let (peak, code) = peak_kib(&command(dir.path(), &args));
    assert_eq!(code, 0);
    eprintln!("agent skills list peaked at {peak} KiB over the bomb, {base} KiB without it");
    assert!(peak < PEAK_KIB, "agent skills list peaked at {peak} KiB over the bomb");
    assert!(peak < base + 8 * 1024, "the bomb cost {} KiB", peak.saturating_sub(base));
    // The bomb is named as refused, and why.
    let listed = stdout(&agent(dir.path(), &args));
    assert!(listed.contains("uses a yaml anchor or alias"), "{listed}");
    // The control: the measure sees a child that does grow (Python holding 100 MB).
    let mut grower = Command::new(which("python3").unwrap());
    grower.arg("-c").arg("x = bytearray(100 << 20); x[::4096] = b'1' * len(x[::4096])");
    grower.current_dir(dir.path());
    let (grown, _) = peak_kib(&grower);
    assert!(grown > PEAK_KIB, "the measure saw only {grown} KiB of a 100 MB child");
}

/// Runs `agent --config FILE skills list` on a config of `text`; stderr and the exit code.
#[track_caller]
fn check(dir: &Path, name: &str, text: &str) {
    let config = dir.join(name);
    std::fs::write(&config, text).unwrap();
    let output = agent(dir, &["--config", config.to_str().unwrap(), "skills", "list"]);
    let said = stderr(&output);
    // Refused in words: a plain exit with a message naming the file, no signal, no panic.
    assert_eq!(output.status.code(), Some(2), "{name}: {said}");
    assert!(said.contains(name), "{name}: {said}");
    assert!(!said.contains("panicked") && !said.contains("overflow"), "{name}: {said}");
    // In words, not a flood: toml's own message quotes the whole 600 KB line.
    assert!(said.len() < 4096, "{name}: {} bytes on stderr", said.len());
}

#[test]
fn a_config_nested_100000_deep_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let deep = 100_000;
    check(dir.path(), "arrays.toml", &format!("x = {}{}\n", "[".repeat(deep), "]".repeat(deep)));
    check(
        dir.path(),
        "tables.toml",
        &format!("x = {}{}\n", "{a = ".repeat(deep), "}".repeat(deep)),
    );
    check(dir.path(), "headers.toml", &format!("[[{}]]\n", vec!["a"; deep].join(".")));
}
