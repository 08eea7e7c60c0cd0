//! The files a command may execute under an execute allow-list: its programs found the way the
//! shell will find them, plus the interpreters the kernel loads to run them.
//!
//! The permission policy approves some commands without asking because every program they name
//! only reads (`git status`, `ls`). Such a command then runs with Landlock's execute right granted
//! on exactly these files, so a program it starts that it did not name (`core.fsmonitor`, a
//! planted `ls`, a textconv driver) fails with `EACCES` instead of running unapproved.

use std::{
    ffi::{OsStr, OsString},
    io::Read,
    os::unix::{ffi::OsStrExt, fs::PermissionsExt},
    path::{Path, PathBuf},
};

/// The dynamic loaders the kernel opens (with the execute right) to start a dynamically linked
/// program; those that do not exist on this machine are skipped when rules are built.
pub const LOADERS: [&str; 5] = [
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/ld-linux-riscv64-lp64d.so.1",
    "/lib/ld-musl-x86_64.so.1",
    "/lib/ld-musl-aarch64.so.1",
];

/// Bash built-ins that the safe list names: they run inside the shell and need no file.
const BUILTINS: &[&str] = &[
    "cd", "echo", "false", "popd", "pushd", "pwd", "true", "export", "declare", "typeset", "local",
    "readonly",
];

/// How deep `#!` interpreters are followed (a script run by a script run by a binary).
const MAX_SHEBANG_DEPTH: usize = 4;

/// The files the command may execute: `program` (the shell that runs the command line) and each
/// of `names`, looked up on the `PATH` of `env` from `cwd` as bash does, each followed by its `#!`
/// interpreter; then the dynamic loaders. A name that is not found adds nothing, so the shell
/// reports it as not found (or, if it appears later, as not executable).
pub(crate) fn resolve(
    program: &OsStr,
    names: &[String],
    env: &[(OsString, OsString)],
    cwd: &Path,
) -> Vec<PathBuf> {
    let path = env.iter().find(|(key, _)| key == "PATH").map(|(_, value)| value.as_os_str());
    let mut out = Vec::new();
    let wanted = std::iter::once(program).chain(
        names
            .iter()
            .filter(|name| !BUILTINS.contains(&name.as_str()))
            .map(|name| OsStr::new(name.as_str())),
    );
    for name in wanted {
        if let Some(file) = lookup(name, path, cwd) {
            add_with_interpreters(file, &mut out, 0);
        }
    }
    for loader in LOADERS {
        push_unique(&mut out, PathBuf::from(loader));
    }
    out
}

/// The file `name` runs: a name with a slash is taken relative to `cwd`; other names are looked
/// up in each `PATH` entry in turn (an empty entry means the current directory, as in bash).
fn lookup(name: &OsStr, path: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    if name.as_bytes().contains(&b'/') {
        let file = cwd.join(name);
        return is_executable(&file).then_some(file);
    }
    // Without `PATH`, bash searches a built-in default.
    let path = path.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(path).map(|dir| cwd.join(dir).join(name)).find(|file| is_executable(file))
}

fn is_executable(file: &Path) -> bool {
    std::fs::metadata(file)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Adds `file` (canonical, so the rule names the inode the kernel will execute) and, for a
/// script, its `#!` interpreter.
fn add_with_interpreters(file: PathBuf, out: &mut Vec<PathBuf>, depth: usize) {
    let file = file.canonicalize().unwrap_or(file);
    let interpreter = shebang(&file);
    push_unique(out, file);
    if let Some(interpreter) = interpreter
        && depth < MAX_SHEBANG_DEPTH
    {
        add_with_interpreters(interpreter, out, depth + 1);
    }
}

/// The interpreter of a `#!` script: the first word after `#!`.
fn shebang(file: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let read = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..read].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let word = line.split(|b| b.is_ascii_whitespace()).find(|word| !word.is_empty())?;
    Some(PathBuf::from(OsStr::from_bytes(word)))
}

fn push_unique(out: &mut Vec<PathBuf>, path: PathBuf) {
    if !out.contains(&path) {
        out.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(path: &str) -> Vec<(OsString, OsString)> {
        vec![(OsString::from("PATH"), OsString::from(path))]
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let file = dir.join(name);
        std::fs::write(&file, body).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        file.canonicalize().unwrap()
    }

    /// The resolved files without the loaders.
    fn programs(program: &str, names: &[&str], path: &str, cwd: &Path) -> Vec<PathBuf> {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut found = resolve(OsStr::new(program), &names, &env(path), cwd);
        found.retain(|file| !LOADERS.iter().any(|loader| Path::new(loader) == file));
        found
    }

    #[test]
    fn programs_are_found_as_the_shell_finds_them() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let ls = script(&bin, "ls", "#!/bin/sh\ntrue\n");
        let sh = Path::new("/bin/sh").canonicalize().unwrap();
        // The first PATH entry wins; a relative entry is taken from the working directory; a
        // script brings its interpreter (here the shell, already listed).
        assert_eq!(programs("sh", &["ls"], "bin:/usr/bin:/bin", dir.path()), [sh.clone(), ls]);
        // Built-ins need no file; a name that is not found adds nothing.
        assert_eq!(programs("sh", &["cd", "echo", "nope-x"], "/usr/bin:/bin", dir.path()), [sh]);
    }

    #[test]
    fn scripts_bring_their_interpreters() {
        let dir = tempfile::tempdir().unwrap();
        let inner = script(dir.path(), "inner", "#!/bin/sh\n");
        let outer = script(dir.path(), "outer", &format!("#!{} -x\n", inner.display()));
        let sh = Path::new("/bin/sh").canonicalize().unwrap();
        let found = programs("./outer", &[], "", dir.path());
        assert_eq!(found, [outer, inner, sh]);
    }
}
