#!/usr/bin/env python3
"""Runs the tasks of an `agent batch` TASKS.jsonl as Ray tasks, on whichever node has capacity.

    python scripts/ray/batch.py TASKS.jsonl --address HOST:PORT [--out DIR] [--agent PATH]
        [--wall-limit SECS] [--token-limit N] [--retries N] [-- AGENT FLAGS…]

The agent flags after `--` are given to every task's agent (`--base-url URL --model M`).

Each task is one `agent exec --json -` of the binary at --agent (the same path on every node),
in its own process group, in a copy of its workspace made on the node (a `git worktree` at the
task's commit, or a copy of a directory), exactly as `agent batch` runs it. The driver writes
the same batch directory as `agent batch`: RESULTS.jsonl with the same fields, patches/,
data/sessions/<id>/transcript.jsonl and state/results/, and a rerun skips finished tasks.
A task whose node dies is retried by Ray on another node; its result is written once, by the
driver, from the attempt that finished. docs/batch.md says what each node needs.
"""

import argparse
import ctypes
import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# The fields of a RESULTS.jsonl line, in `agent batch`'s order (crates/agent-cli/src/batch/record.rs).
FIELDS = ["id", "status", "exit_code", "reason", "message", "answer", "patch", "tokens_in",
          "tokens_out", "duration_ms", "session_id", "transcript", "node"]
TASK_KEYS = {"id", "prompt", "workspace", "repo", "commit", "profile", "model",
             "permission_mode", "allow", "limits"}
MAX_EVENT = 16 * 1024 * 1024
GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false",
       "-c", "user.name=agent batch", "-c", "user.email=batch@localhost",
       "-c", "core.autocrlf=false", "-c", "core.fileMode=true"]


def read_tasks(path):
    """The task lines, with paths made absolute; every bad line is reported, then exit 2."""
    base = os.path.dirname(os.path.abspath(path))
    tasks, errors, seen = [], [], set()
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                task = json.loads(line)
                if not isinstance(task, dict):
                    raise ValueError("not a JSON object")
                unknown = set(task) - TASK_KEYS
                if unknown:
                    raise ValueError(f"unknown field `{sorted(unknown)[0]}`")
                if not isinstance(task.get("id"), str) or not isinstance(task.get("prompt"), str):
                    raise ValueError("`id` and `prompt` must be strings")
                if task["id"] in seen:
                    raise ValueError(f"the id `{task['id']}` is used by an earlier line")
                if ("workspace" in task) == ("repo" in task) or ("repo" in task) != ("commit" in task):
                    raise ValueError("give either `workspace` or `repo` and `commit`")
            except ValueError as err:
                errors.append(f"{path}:{number}: {err}")
                continue
            seen.add(task["id"])
            for key in ("workspace", "repo"):
                if key in task:
                    task[key] = os.path.join(base, task[key])
            tasks.append(task)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        print(f"batch.py: {len(errors)} bad lines; no task was started", file=sys.stderr)
        sys.exit(2)
    return tasks


def git(cwd, *args, env=None):
    return subprocess.run(GIT + list(args), cwd=cwd, env=env, check=True, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def prepare(task, place):
    """The task's copy in `place`: (its directory, a separate git dir or None, the base commit)."""
    work = os.path.join(place, "work")
    if "repo" in task:
        base = git(task["repo"], "rev-parse", "--verify", "--quiet", task["commit"] + "^{commit}")
        base = base.decode().strip()
        with worktree_lock(task["repo"]):
            git(task["repo"], "worktree", "add", "--detach", "--force", work, base)
        return work, None, base
    separate = os.path.join(place, "git")
    shutil.copytree(task["workspace"], work, symlinks=True)
    env = dict(os.environ, GIT_DIR=separate, GIT_WORK_TREE=work)
    git(work, "init", "--quiet", env=env)
    git(work, "add", "--all", "--force", env=env)
    git(work, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "baseline", env=env)
    return work, separate, git(work, "rev-parse", "HEAD", env=env).decode().strip()


def take_patch(work, separate, base, index):
    env = dict(os.environ, GIT_INDEX_FILE=index)
    if separate:
        env.update(GIT_DIR=separate, GIT_WORK_TREE=work)
    git(work, "read-tree", base, env=env)
    git(work, "add", "--all", *(["--force"] if separate else []), env=env)
    return git(work, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", base, env=env)


class worktree_lock:
    """Worktree changes to one repository, one at a time on this machine: git locks them, and
    two tasks of one node (or two nodes sharing a disk) would otherwise fail on each other."""

    def __init__(self, repo):
        locks = os.path.join(tempfile.gettempdir(), "agent-ray-locks")
        os.makedirs(locks, exist_ok=True)
        name = hashlib.sha256(os.path.realpath(repo).encode()).hexdigest()[:32]
        self.path = os.path.join(locks, name + ".lock")

    def __enter__(self):
        self.file = open(self.path, "a")
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def __exit__(self, *_):
        self.file.close()


def command(task, agent, flags, work):
    args = [agent] + list(flags)
    for key, flag in (("profile", "--profile"), ("model", "--model"),
                      ("permission_mode", "--permission-mode")):
        if task.get(key):
            args += [flag, task[key]]
    for rule in task.get("allow", []):
        args += ["--allow", rule]
    turns = task.get("limits", {}).get("turns")
    if turns:
        args += ["--max-turns", str(turns)]
    return args + ["--workspace", work, "exec", "--json", "-"]


def die_with_parent():
    """In the agent, before exec: its own process group, and SIGKILL when the Ray worker dies
    (a killed node leaves no agent behind; the agent's own tools die with it)."""
    os.setpgid(0, 0)
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_task(task, agent, flags, wall_default, token_default):
    """One task on this node; the result line (without its patch path) and the files to write."""
    import ray  # On the worker.
    context = ray.get_runtime_context()
    node = f"{ray.util.get_node_ip_address()}/{context.get_node_id()[:12]}"
    root = os.environ.get("AGENT_RAY_WORKDIR") or os.path.join(tempfile.gettempdir(), "agent-ray")
    os.makedirs(root, exist_ok=True)
    place = tempfile.mkdtemp(prefix=task["id"] + ".", dir=root)
    result = dict.fromkeys(FIELDS)
    result.update(id=task["id"], tokens_in=0, tokens_out=0, duration_ms=0, node=node)
    files = {"patch": b"", "transcript": None}
    work = None
    try:
        try:
            work, separate, base = prepare(task, place)
        except (OSError, subprocess.CalledProcessError) as err:
            stderr = getattr(err, "stderr", b"") or b""
            result.update(status="error", message=f"preparing its workspace: {err} {stderr.decode(errors='replace').strip()}")
            return result, files
        limits = task.get("limits", {})
        wall = limits.get("wall_secs") or wall_default
        tokens = limits.get("tokens") or token_default
        env = dict(os.environ, AGENT_DATA_DIR=os.path.join(place, "data"))
        start = time.monotonic()
        child = subprocess.Popen(command(task, agent, flags, work), cwd=work, env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        try:
            stopped = follow(child, task["prompt"], start + wall, tokens, result)
        finally:
            kill_group(child.pid)
            code = child.wait()
        result["duration_ms"] = int((time.monotonic() - start) * 1000)
        result["exit_code"] = code if code >= 0 else None
        if stopped == "wall_limit":
            result.update(status="wall_limit", answer=None, message=f"killed at its wall limit of {wall} s")
        elif stopped == "token_limit":
            result.update(status="token_limit", answer=None, message=f"killed past its limit of {tokens} tokens")
        elif result["status"] is None:
            exit = "killed" if code < 0 else f"exit {code}"
            result.update(status="error", message=f"the agent ended without a last event ({exit})")
        files["patch"] = take_patch(work, separate, base, os.path.join(place, "index"))
        if result["session_id"]:
            path = os.path.join(place, "data", "sessions", result["session_id"], "transcript.jsonl")
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    files["transcript"] = f.read()
        return result, files
    finally:
        if work and "repo" in task:
            with worktree_lock(task["repo"]):
                subprocess.run(GIT + ["worktree", "remove", "--force", work], cwd=task["repo"],
                               stdin=subprocess.DEVNULL, capture_output=True)
                subprocess.run(GIT + ["worktree", "prune"], cwd=task["repo"], capture_output=True)
        shutil.rmtree(place, ignore_errors=True)


def follow(child, prompt, deadline, token_limit, result):
    """Reads the event stream into `result` until it ends ("") or a limit is reached."""
    threading.Thread(target=feed, args=(child.stdin, prompt), daemon=True).start()
    fd, pending = child.stdout.fileno(), b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "wall_limit"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return ""
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if len(pending) > MAX_EVENT:
            pending = b""
        for line in lines:
            read_event(line, result)
            if token_limit and result["tokens_in"] + result["tokens_out"] > token_limit:
                return "token_limit"


def feed(pipe, prompt):
    try:
        pipe.write(prompt.encode())
        pipe.close()
    except OSError:
        pass


def read_event(line, result):
    try:
        event = json.loads(line)
    except ValueError:
        return
    kind = event.get("type")
    usage = event.get("cumulative_usage") or {}
    result["tokens_in"] = usage.get("input_tokens", result["tokens_in"])
    result["tokens_out"] = usage.get("output_tokens", result["tokens_out"])
    if kind == "run.started":
        result["session_id"] = event.get("session_id")
    elif kind == "run.completed":
        result.update(status="completed", answer=event.get("answer"))
    elif kind == "run.failed":
        result.update(status="failed", reason=event.get("reason"), message=event.get("message"))


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def line(result):
    return json.dumps({key: result[key] for key in FIELDS}, ensure_ascii=False, separators=(",", ":"))


def write_atomically(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def finished(out):
    """The results already written, by id (a rerun skips them)."""
    done, results = {}, os.path.join(out, "state", "results")
    for name in sorted(os.listdir(results)) if os.path.isdir(results) else []:
        try:
            with open(os.path.join(results, name), encoding="utf-8") as f:
                result = json.load(f)
            done[result["id"]] = result
        except (ValueError, KeyError, OSError):
            continue
    return done


def record(out, result, files):
    """Writes a task's patch, transcript and result file, then its RESULTS.jsonl line."""
    if files["patch"]:
        result["patch"] = f"patches/{result['id']}.patch"
        write_atomically(os.path.join(out, result["patch"]), files["patch"])
    if files["transcript"] is not None:
        result["transcript"] = f"data/sessions/{result['session_id']}/transcript.jsonl"
        write_atomically(os.path.join(out, result["transcript"]), files["transcript"])
    text = line(result)
    write_atomically(os.path.join(out, "state", "results", result["id"] + ".json"), text.encode())
    with open(os.path.join(out, "RESULTS.jsonl"), "a", encoding="utf-8") as f:
        f.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tasks")
    parser.add_argument("--address", required=True, help="the Ray cluster, HOST:PORT")
    parser.add_argument("--out", help="the batch directory (default: TASKS with .batch)")
    parser.add_argument("--agent", default="agent", help="the agent binary on every node")
    parser.add_argument("--wall-limit", type=int, default=1800)
    parser.add_argument("--token-limit", type=int)
    parser.add_argument("--retries", type=int, default=3, help="retries of a task whose node died")
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.flags = flags
    tasks = read_tasks(args.tasks)
    out = os.path.abspath(args.out or os.path.splitext(args.tasks)[0] + ".batch")
    os.makedirs(os.path.join(out, "state", "results"), exist_ok=True)
    done = finished(out)
    # RESULTS.jsonl is rebuilt from the result files: one line per finished task.
    write_atomically(os.path.join(out, "RESULTS.jsonl"),
                     "".join(line(done[i]) + "\n" for i in done).encode())
    pending = [task for task in tasks if task["id"] not in done]
    import ray
    ray.init(address=args.address, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=args.retries, scheduling_strategy="SPREAD")(run_task)
    refs = {remote.remote(t, args.agent, args.flags, args.wall_limit, args.token_limit): t for t in pending}
    counts = {}
    while refs:
        ready, _ = ray.wait(list(refs), num_returns=1)
        task = refs.pop(ready[0])
        try:
            result, files = ray.get(ready[0])
        except ray.exceptions.RayError as err:
            result = dict.fromkeys(FIELDS)
            result.update(id=task["id"], status="error", message=f"ray: {type(err).__name__}",
                          tokens_in=0, tokens_out=0, duration_ms=0, node="")
            files = {"patch": b"", "transcript": None}
        record(out, result, files)
        counts[result["status"]] = counts.get(result["status"], 0) + 1
        print(f"batch: {result['id']} {result['status']} on {result['node']}", file=sys.stderr, flush=True)
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    print(f"batch.py: {summary or 'nothing to run'}; results in {out}/RESULTS.jsonl", file=sys.stderr)
    return 0 if all(r["status"] == "completed" for r in finished(out).values()) else 1


if __name__ == "__main__":
    sys.exit(main())
