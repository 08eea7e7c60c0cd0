//! Python in a sandboxed `python3` process: reads only the interpreter's files, executes only the
//! interpreter, writes only a fresh temp dir, and has no network.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use agent_core::CancellationToken;
use serde::Deserialize;
use tokio::sync::OnceCell;

use super::{CodeError, CodeErrorKind, CodeLimits, CodeResult};
use agent_sandbox::{
    process::{self, ProcessSpec, RunOptions, SpawnError},
    sandbox::{self, FsRules, Grant, Limits, SandboxConfig, SandboxError, SandboxPolicy},
    secret::Hidden,
};

/// Runs the user's code (from the file named by the first argument) as `__main__` and, like a REPL, saves the value of a final expression as
/// JSON in `__value__.json`. Tracebacks skip this runner's own frame.
const RUNNER: &str = r#"
import ast, json, sys, traceback
with open(sys.argv[1], encoding='utf-8') as f:
    src = f.read()
del sys.argv[1:]
try:
    tree = ast.parse(src, '<code>')
except SyntaxError:
    traceback.print_exc(limit=0)
    sys.exit(2)
last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
scope = {'__name__': '__main__', '__builtins__': __builtins__}
try:
    exec(compile(tree, '<code>', 'exec'), scope)
    value = None if last is None else eval(compile(ast.Expression(last.value), '<code>', 'eval'), scope)
except SystemExit:
    raise
except BaseException as e:
    traceback.print_exception(type(e), e, e.__traceback__.tb_next)
    sys.exit(1)
if value is not None:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = json.dumps(repr(value))
    with open('__value__.json', 'w') as f:
        f.write(text)
"#;

/// What the interpreter reported about itself.
#[derive(Debug, Clone, Deserialize)]
struct Interpreter {
    executable: PathBuf,
    prefixes: Vec<PathBuf>,
    path: Vec<PathBuf>,
}

/// Shared libraries and data every interpreter reads.
const SYSTEM_READ: [&str; 9] = [
    "/usr/lib",
    "/usr/lib64",
    "/lib",
    "/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/dev/urandom",
];

pub(super) async fn run(
    code: &str,
    limits: &CodeLimits,
    hidden: Option<Vec<Hidden>>,
    cancel: CancellationToken,
) -> CodeResult {
    let started = Instant::now();
    let mut result = match run_inner(code, limits, hidden, cancel).await {
        Ok(result) => result,
        Err(error) => CodeResult { error: Some(error), ..CodeResult::default() },
    };
    result.duration = started.elapsed();
    result
}

async fn run_inner(
    code: &str,
    limits: &CodeLimits,
    hidden: Option<Vec<Hidden>>,
    cancel: CancellationToken,
) -> Result<CodeResult, CodeError> {
    let interpreter = interpreter().await?;
    let temp = tempfile::Builder::new()
        .prefix("agent-python-")
        .tempdir()
        .map_err(|err| CodeError::new(CodeErrorKind::Internal, format!("temp dir: {err}")))?;
    let dir = temp.path().to_path_buf();

    let mut rules = FsRules::default();
    rules.grant(&interpreter.executable, Grant::Execute);
    if let Some(bin) = interpreter.executable.parent() {
        // Startup looks for `pyvenv.cfg` and the landmark files next to the executable.
        rules.grant(bin, Grant::Read);
    }
    for prefix in interpreter.prefixes.iter().chain(&interpreter.path) {
        rules.grant(prefix, Grant::Read);
    }
    for path in SYSTEM_READ {
        rules.grant(path, Grant::Read);
    }
    for loader in sandbox::LOADERS {
        rules.grant(loader, Grant::Execute);
    }
    rules.grant("/dev/null", Grant::Write).grant(&dir, Grant::Write);

    let mut config = SandboxConfig::new(&dir).with_policy(SandboxPolicy::WorkspaceWrite);
    config.kill_grace = Duration::from_millis(100);
    config.limits = Limits {
        cpu_seconds: Some(limits.timeout.as_secs() + 1),
        // Address space, not resident memory: shared libraries and thread stacks reserve virtual
        // memory they never touch, so the cap is four times the heap budget.
        address_space_bytes: Some((limits.memory_bytes as u64).saturating_mul(4).max(256 << 20)),
        file_size_bytes: Some(64 << 20),
        processes: Some(16),
    };
    let env: Vec<(OsString, OsString)> = [
        ("HOME", dir.as_os_str()),
        ("TMPDIR", dir.as_os_str()),
        ("LANG", "C.UTF-8".as_ref()),
        ("AGENT_SANDBOX", "execute_code".as_ref()),
    ]
    .into_iter()
    .map(|(k, v)| (OsString::from(k), v.to_os_string()))
    .collect();
    // The code goes through a file: one argument may not exceed 128 KiB (`MAX_ARG_STRLEN`).
    let source = dir.join("__code__.py");
    std::fs::write(&source, code).map_err(|err| {
        CodeError::new(CodeErrorKind::Internal, format!("writing the code: {err}"))
    })?;
    let mut spec = ProcessSpec::new(&interpreter.executable)
        .arg("-I")
        .arg("-B")
        .arg("-c")
        .arg(RUNNER)
        .arg(&source);
    spec.separate_stderr = true;
    spec.max_output_bytes = limits.max_output_bytes.saturating_mul(2);
    let options = RunOptions {
        rules: Some(&rules),
        read_only: None,
        // The rules above grant no home or workspace, so normally nothing is left to cover; but
        // an interpreter may be installed inside the home or the workspace (a virtualenv), and
        // then what the session hides from the file tools must be hidden here too. Only the
        // listed paths the rules let the process read are covered.
        hide: hidden.unwrap_or_else(|| config.secrets.to_hide(None, None)),
        env,
        cwd: dir.clone(),
        cancel,
        timeout: Some(limits.timeout),
    };
    let output = process::run_with(spec, &config, options).await.map_err(spawn_error)?;

    let value = std::fs::read_to_string(dir.join("__value__.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let error = if output.cancelled {
        Some(CodeError::new(CodeErrorKind::Cancelled, "the run was cancelled"))
    } else if output.timed_out {
        Some(CodeError::new(
            CodeErrorKind::Timeout,
            format!("execution exceeded {} ms and was terminated", limits.timeout.as_millis()),
        ))
    } else if output.success() {
        None
    } else {
        let last =
            output.stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
        let kind = match () {
            () if last.starts_with("MemoryError") => CodeErrorKind::MemoryLimit,
            () if last.starts_with("SyntaxError") || last.starts_with("IndentationError") => {
                CodeErrorKind::Syntax
            }
            () => CodeErrorKind::Exception,
        };
        let message = match (last.is_empty(), output.exit_code, output.signal) {
            (false, _, _) => last.to_owned(),
            (true, Some(code), _) => format!("python exited with code {code}"),
            (true, _, Some(signal)) => format!("python was killed by signal {signal}"),
            (true, None, None) => "python failed".to_owned(),
        };
        Some(CodeError::new(kind, message))
    };
    Ok(CodeResult {
        stdout: output.output,
        stderr: output.stderr,
        value,
        duration: output.duration,
        error,
    })
}

fn spawn_error(err: SpawnError) -> CodeError {
    match err {
        SpawnError::Sandbox(err @ SandboxError::Unavailable { .. }) => {
            CodeError::new(CodeErrorKind::SandboxUnavailable, err.to_string())
        }
        other => CodeError::new(CodeErrorKind::Internal, other.to_string()),
    }
}

/// The interpreter, found once per process by asking `python3` on `PATH` about itself (under the
/// read-only sandbox, like any other command).
async fn interpreter() -> Result<Interpreter, CodeError> {
    static INTERPRETER: OnceCell<Result<Interpreter, CodeError>> = OnceCell::const_new();
    INTERPRETER.get_or_init(discover).await.clone()
}

async fn discover() -> Result<Interpreter, CodeError> {
    let missing = || {
        CodeError::new(
            CodeErrorKind::RuntimeMissing,
            "python3 is not installed (not found on PATH); install Python 3 or use JavaScript",
        )
    };
    let python = std::env::var_os("PATH")
        .and_then(|path| find_on_path("python3", &path))
        .ok_or_else(missing)?;
    let script = "import json, os, sys; print(json.dumps({'executable': os.path.realpath(sys.executable), \
                  'prefixes': sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}), \
                  'path': [p for p in sys.path if p]}))";
    let spec = ProcessSpec::new(python).arg("-I").arg("-c").arg(script);
    // An empty directory as the workspace: the shared temp dir would be walked for secrets.
    let empty = tempfile::tempdir()
        .map_err(|err| CodeError::new(CodeErrorKind::Internal, format!("temp dir: {err}")))?;
    let config = SandboxConfig::new(empty.path()).with_policy(SandboxPolicy::ReadOnly);
    let output =
        process::run(spec, &config, CancellationToken::new(), Some(Duration::from_secs(10)))
            .await
            .map_err(spawn_error)?;
    if !output.success() {
        return Err(CodeError::new(
            CodeErrorKind::RuntimeMissing,
            format!("python3 did not start: {}", output.output.trim()),
        ));
    }
    serde_json::from_str(output.output.trim()).map_err(|err| {
        CodeError::new(CodeErrorKind::Internal, format!("unexpected answer from python3: {err}"))
    })
}

/// The first executable file called `name` in the directories of `path` (a `PATH` value).
fn find_on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(name: &str, path: &str, found: bool) {
        assert_eq!(find_on_path(name, path.as_ref()).is_some(), found, "{name} in {path}");
    }

    #[test]
    fn interpreter_lookup_needs_an_executable_file() {
        check("python3", "/nonexistent:/also/missing", false);
        check("sh", "/nonexistent:/bin", true);
        // A directory or a non-executable file of that name does not count.
        check("bin", "/usr", false);
        check("passwd", "/etc", false);
    }
}
