//! `agent tools call apply_patch`, the real binary: Codex's scenario suite, the attacks a patch can
//! try (each checked on disk, each with a control that shows the same patch working where it is
//! allowed), and a differential test against the Codex CLI on generated patches.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{Value, json};

use crate::suite::{agent, stdout};

type Tree = BTreeMap<String, Option<Vec<u8>>>;

/// Every file (with its bytes) and directory under `root`, by relative path.
fn tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn write_tree(root: &Path, tree: &Tree) {
    for (rel, bytes) in tree {
        match bytes {
            None => std::fs::create_dir_all(root.join(rel)).unwrap(),
            Some(bytes) => {
                std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
                std::fs::write(root.join(rel), bytes).unwrap();
            }
        }
    }
}

/// `agent tools call apply_patch` with `patch` in `workspace`.
fn call(workspace: &Path, patch: &str) -> Output {
    let args = json!({ "patch": patch }).to_string();
    agent(workspace, &["tools", "call", "apply_patch", &args])
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent-tools/tests/fixtures/codex-apply-patch")
}

#[test]
fn codex_scenarios_pass_through_tools_call() {
    let differences: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("differences.json")).unwrap(),
    )
    .unwrap();
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(fixtures().join("scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 22);
    for scenario in scenarios {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &tree(&scenario.join("input")));
        let patch = std::fs::read_to_string(scenario.join("patch.txt")).unwrap();
        let output = call(dir.path(), &patch);
        let expected = match &differences[&name]["expected"] {
            Value::Null => tree(&scenario.join("expected")),
            Value::String(input) if input == "input" => tree(&scenario.join("input")),
            Value::Object(files) => files
                .iter()
                .map(|(path, text)| {
                    (path.clone(), Some(text.as_str().unwrap().as_bytes().to_vec()))
                })
                .collect(),
            other => panic!("{name}: unknown expectation {other}"),
        };
        assert_eq!(tree(dir.path()), expected, "{name}: {}", stdout(&output));
        // The exit code says whether the patch applied: success where Codex leaves expected/
        // different from input/, or adds files.
        let changed = tree(&scenario.join("input")) != tree(&scenario.join("expected"));
        let strict = differences[&name]["expected"] == "input";
        assert_eq!(output.status.success(), changed && !strict, "{name}: {}", stdout(&output));
    }
}

/// A workspace with a file, a git hooks directory, an `.agent` directory, and a directory beside
/// it (outside) holding a file.
struct Attack {
    base: tempfile::TempDir,
}

impl Attack {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        let attack = Self { base };
        let ws = attack.ws();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(ws.join(".agent")).unwrap();
        std::fs::create_dir_all(attack.outside()).unwrap();
        std::fs::write(ws.join("script.sh"), "echo hi\n").unwrap();
        std::fs::write(ws.join(".git/hooks/pre-push"), "exit 0\n").unwrap();
        std::fs::write(ws.join(".agent/config.toml"), "model = \"x\"\n").unwrap();
        std::fs::write(attack.outside().join("target.txt"), "outside\n").unwrap();
        attack
    }

    fn ws(&self) -> PathBuf {
        self.base.path().join("ws")
    }

    fn outside(&self) -> PathBuf {
        self.base.path().join("outside")
    }

    /// Both trees a patch could reach: the workspace and the directory beside it.
    fn trees(&self) -> (Tree, Tree) {
        (tree(&self.ws()), tree(&self.outside()))
    }

    /// Runs `patch`, and checks that it was refused and that nothing in the workspace or outside
    /// it changed.
    #[track_caller]
    fn refused(&self, patch: &str) {
        let before = self.trees();
        let output = call(&self.ws(), patch);
        assert!(!output.status.success(), "refused: {}", stdout(&output));
        assert_eq!(self.trees(), before, "nothing was written: {}", stdout(&output));
    }

    /// Runs `patch` and checks that it applied.
    #[track_caller]
    fn applied(&self, patch: &str) {
        let output = call(&self.ws(), patch);
        assert!(output.status.success(), "applied: {}", stdout(&output));
    }
}

fn add(path: &str) -> String {
    format!("*** Begin Patch\n*** Add File: {path}\n+planted\n*** End Patch")
}

fn move_script(to: &str) -> String {
    format!(
        "*** Begin Patch\n*** Update File: script.sh\n*** Move to: {to}\n@@\n-echo hi\n+echo pwned\n*** End Patch"
    )
}

#[test]
fn a_patch_cannot_leave_the_workspace() {
    let attack = Attack::new();
    attack.refused(&add("../x.txt"));
    attack.refused(&add(&attack.outside().join("abs.txt").display().to_string()));
    attack.refused(&format!(
        "*** Begin Patch\n*** Update File: {}\n@@\n-outside\n+changed\n*** End Patch",
        attack.outside().join("target.txt").display()
    ));
    // Controls: a relative path and an absolute one inside the workspace.
    attack.applied(&add("x.txt"));
    attack.applied(&add(&attack.ws().join("abs.txt").display().to_string()));
    assert!(attack.ws().join("x.txt").exists() && attack.ws().join("abs.txt").exists());
}

#[test]
fn a_symlink_leading_out_is_not_followed() {
    let attack = Attack::new();
    std::os::unix::fs::symlink(attack.outside(), attack.ws().join("link")).unwrap();
    attack.refused(&add("link/planted.txt"));
    attack.refused(
        "*** Begin Patch\n*** Update File: link/target.txt\n@@\n-outside\n+changed\n*** End Patch",
    );
    // Control: a symlink to a directory inside the workspace is followed.
    std::fs::create_dir_all(attack.ws().join("sub")).unwrap();
    std::os::unix::fs::symlink(attack.ws().join("sub"), attack.ws().join("inlink")).unwrap();
    attack.applied(&add("inlink/ok.txt"));
    assert!(attack.ws().join("sub/ok.txt").exists());
}

#[test]
fn a_move_into_protected_paths_is_refused() {
    let attack = Attack::new();
    attack.refused(&move_script(".git/hooks/pre-commit"));
    attack.refused(&move_script(".agent/settings.json"));
    // One protected path refuses the whole patch: the allowed file is not written either.
    attack.refused(&format!(
        "*** Begin Patch\n*** Add File: ok.txt\n+ok\n{}",
        &move_script(".git/hooks/pre-commit")["*** Begin Patch\n".len()..]
    ));
    // Control: the same move to an ordinary path.
    attack.applied(&move_script("bin/script.sh"));
    assert_eq!(std::fs::read_to_string(attack.ws().join("bin/script.sh")).unwrap(), "echo pwned\n");
}

#[test]
fn a_delete_of_a_protected_path_is_refused() {
    let attack = Attack::new();
    attack.refused("*** Begin Patch\n*** Delete File: .git/hooks/pre-push\n*** End Patch");
    attack.refused("*** Begin Patch\n*** Delete File: .agent/config.toml\n*** End Patch");
    // Control: deleting an ordinary file.
    attack.applied("*** Begin Patch\n*** Delete File: script.sh\n*** End Patch");
    assert!(!attack.ws().join("script.sh").exists());
}

#[test]
fn a_patch_with_too_many_files_is_refused_whole() {
    let attack = Attack::new();
    let sections = |count: usize| {
        (0..count).map(|i| format!("*** Add File: many/f{i}.txt\n+{i}\n")).collect::<String>()
    };
    attack.refused(&format!("*** Begin Patch\n{}*** End Patch", sections(501)));
    // Control: at the limit, every file is written.
    attack.applied(&format!("*** Begin Patch\n{}*** End Patch", sections(500)));
    assert_eq!(std::fs::read_dir(attack.ws().join("many")).unwrap().count(), 500);
}

#[test]
fn a_full_disk_leaves_every_file_as_it_was() {
    // `ulimit -f` makes any write past 2 KB fail (EFBIG) as a full disk would; SIGXFSZ is ignored
    // so the write fails instead of killing the process.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let before = tree(dir.path());
    let big = "+0123456789abcdef0123456789abcdef\n".repeat(200);
    let patch = format!(
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: big.txt\n{big}*** End Patch"
    );
    let run = |patch: &str| {
        let args = json!({ "patch": patch }).to_string();
        let script = "trap '' XFSZ; ulimit -f 4; exec \"$0\" tools call apply_patch \"$1\"";
        let mut command = Command::new("sh");
        command
            .args(["-c", script, env!("CARGO_BIN_EXE_agent"), &args])
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("AGENT_DATA_DIR", crate::suite::data_dir(dir.path()))
            .env("XDG_CONFIG_HOME", dir.path().join(".no-config"))
            .env("AGENT_LSP_PATH", "");
        crate::suite::Running::spawn(&mut command).finish("agent tools call under ulimit -f")
    };
    let output = run(&patch);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(stdout(&output).contains("no file was changed"), "{}", stdout(&output));
    assert_eq!(tree(dir.path()), before);
    // Control: the same patch with a small file fits and is applied.
    let output = run(
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: small.txt\n+x\n*** End Patch",
    );
    assert!(output.status.success(), "{}", stdout(&output));
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "b\n");
}

/// A deterministic pseudo-random generator, so every run tests the same patches.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % below as u64) as usize
    }
}

const WORDS: &[&str] =
    &["let", "fn", "value", "x", "return", "self", "map", "—", "“q”", "if", "}", "{"];

/// A generated case: files and a patch over them.
fn generate(rng: &mut Lcg) -> (Tree, String) {
    let mut files = Tree::new();
    let mut texts: Vec<(String, Vec<String>, &str)> = Vec::new();
    for f in 0..1 + rng.next(4) {
        let eol = if rng.next(4) == 0 { "\r\n" } else { "\n" };
        let lines: Vec<String> = (0..5 + rng.next(25))
            .map(|_| {
                let mut line = "    ".repeat(rng.next(3));
                for _ in 0..1 + rng.next(4) {
                    line.push_str(WORDS[rng.next(WORDS.len())]);
                    line.push(' ');
                }
                line.push_str(&rng.next(50).to_string());
                if rng.next(8) == 0 {
                    line.push_str("  ");
                }
                line
            })
            .collect();
        let path = format!("d{}/f{f}.txt", rng.next(2));
        let text: String = lines.iter().map(|line| format!("{line}{eol}")).collect();
        files.insert(path.clone(), Some(text.into_bytes()));
        texts.push((path, lines, eol));
    }
    let mut patch = String::from("*** Begin Patch\n");
    // A broken section first, now and then: both must refuse it, and neither has written anything.
    if rng.next(6) == 0 {
        patch.push_str(&format!(
            "*** Update File: {}\n@@\n-no such line {}\n+x\n",
            texts[0].0,
            rng.next(9)
        ));
    }
    for (index, (path, lines, _)) in texts.iter().enumerate() {
        match rng.next(6) {
            0 => patch.push_str(&format!("*** Delete File: {path}\n")),
            1 if index > 0 => continue,
            _ => {
                patch.push_str(&format!("*** Update File: {path}\n"));
                if rng.next(4) == 0 {
                    patch.push_str(&format!("*** Move to: moved/{index}/{}.txt\n", rng.next(100)));
                }
                let mut at = 0;
                let mut hunks = 0;
                while at + 2 < lines.len() && (hunks == 0 || rng.next(2) == 0) {
                    let start = at + rng.next((lines.len() - at).min(6));
                    let before = 1 + rng.next(2);
                    let removed = rng.next(3);
                    let end = start + before + removed;
                    if end > lines.len() {
                        break;
                    }
                    patch.push_str("@@\n");
                    for line in &lines[start..start + before] {
                        // The model's context drops trailing spaces and folds punctuation now and
                        // then: the ladder must agree on both.
                        let line = match rng.next(5) {
                            0 => line.trim_end().to_owned(),
                            1 => line.replace('—', "-").replace(['“', '”'], "\""),
                            _ => line.clone(),
                        };
                        patch.push_str(&format!(" {line}\n"));
                    }
                    for line in &lines[start + before..end] {
                        patch.push_str(&format!("-{line}\n"));
                    }
                    for n in 0..1 + rng.next(2) {
                        patch.push_str(&format!("+added {hunks} {n} {}\n", rng.next(1000)));
                    }
                    if end == lines.len() {
                        patch.push_str("*** End of File\n");
                    }
                    hunks += 1;
                    at = end;
                }
                if hunks == 0 {
                    patch.push_str("@@\n+appended\n");
                }
            }
        }
    }
    if rng.next(3) == 0 {
        patch.push_str(&format!("*** Add File: new/n{}.txt\n+one\n+two\n", rng.next(100)));
    }
    patch.push_str("*** End Patch\n");
    (files, patch)
}

#[test]
fn agrees_with_the_codex_cli_on_generated_patches() {
    let Some(codex) = agent_test_support::mcp_peer(
        "node/node_modules/.bin/codex",
        "the Codex CLI (@openai/codex)",
    ) else {
        return;
    };
    let mut rng = Lcg(2026);
    let (mut applied, mut refused) = (0, 0);
    for case in 0..60 {
        let (files, patch) = generate(&mut rng);
        let ours = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        write_tree(ours.path(), &files);
        write_tree(theirs.path(), &files);
        let ours_output = call(ours.path(), &patch);
        let theirs_output = Command::new(&codex)
            .arg("--codex-run-as-apply-patch")
            .arg(&patch)
            .current_dir(theirs.path())
            .output()
            .unwrap();
        let context = format!(
            "case {case}\n{patch}\nours: {}\ncodex: {}{}",
            stdout(&ours_output),
            String::from_utf8_lossy(&theirs_output.stdout),
            String::from_utf8_lossy(&theirs_output.stderr)
        );
        assert_eq!(ours_output.status.success(), theirs_output.status.success(), "{context}");
        let readable = |root: &Path| -> BTreeMap<String, Option<String>> {
            tree(root)
                .into_iter()
                .map(|(k, v)| (k, v.map(|b| String::from_utf8_lossy(&b).into_owned())))
                .collect()
        };
        let (ours_tree, theirs_tree) = (readable(ours.path()), readable(theirs.path()));
        for key in ours_tree.keys().chain(theirs_tree.keys()) {
            assert_eq!(ours_tree.get(key), theirs_tree.get(key), "{key} differs in {context}");
        }
        if ours_output.status.success() { applied += 1 } else { refused += 1 }
    }
    assert!(
        applied >= 30 && refused >= 3,
        "the cases cover both outcomes: {applied} applied, {refused} refused"
    );
}
