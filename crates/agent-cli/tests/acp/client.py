"""A test client of `agent acp` on the official ACP Python SDK (PyPI agent-client-protocol, pinned
in scripts/peers/acp/requirements.txt).

Usage: python client.py AGENT WORKSPACE FRAMES PLAN [AGENT_ARGS...]
Starts `AGENT [AGENT_ARGS...] acp` in WORKSPACE (with this process's environment), copies every
line it writes to FRAMES (the Rust test validates them against the protocol's schema), plays
PLAN on one connection and prints a JSON summary.

PLAN is JSON: {"answer": OPTION_ID, "elicitation": RESPONSE?, "steps": [STEP, ...]}. Every
permission request is answered with OPTION_ID. With "elicitation" the client declares form
elicitation at initialize and answers every `elicitation/create` with RESPONSE (the protocol's
CreateElicitationResponse, e.g. {"action": "accept", "content": {"choice": "B"}}). Each step is an object with one key, played in order; its result (the response,
or {"error": {...}}) is the summary's `results[i]`:
  {"initialize": {}}             initialize, protocol version 1
  {"authenticate": METHOD_ID}
  {"new": {"mcpServers": [...]}} session/new (the servers as the protocol spells them); the
                                 session becomes the current one
  {"resume": null}               session/resume of the current session
  {"set_mode": MODE_ID}
  {"set_model": NAME}            session/set_config_option of the `model` option
  {"prompt": TEXT}
  {"close": null}                session/close of the current session
  {"processes": {"marker": M, "wait": BOOL}}
                                 the pids whose command line holds M (waiting until there is
                                 one when `wait`), and whether the agent is still running
The summary also holds every update (with the step it came in), permission request and
elicitation request.
"""

import asyncio
import json
import os
import sys
import time

import acp
from acp.helpers import text_block
from acp.schema import (
    AllowedOutcome,
    AcceptElicitationResponse,
    CancelElicitationResponse,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    McpServerStdio,
    RequestPermissionResponse,
)


class Recorder(acp.Client):
    def __init__(self, answer, elicitation):
        self.answer = answer
        self.elicitation = elicitation
        self.step = None
        self.updates = []
        self.permissions = []
        self.elicitations = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {
                "toolCallId": tool_call.tool_call_id,
                "title": tool_call.title,
                "options": [o.kind for o in options],
                "names": {o.option_id: o.name for o in options},
            }
        )
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", optionId=self.answer)
        )

    async def create_elicitation(self, message, mode, **kwargs):
        self.elicitations.append({"message": message, "mode": dump(mode)})
        kinds = {
            "accept": AcceptElicitationResponse,
            "decline": DeclineElicitationResponse,
            "cancel": CancelElicitationResponse,
        }
        return kinds[self.elicitation["action"]].model_validate(self.elicitation)

    async def session_update(self, session_id, update, **kwargs):
        update = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        update["step"] = self.step
        self.updates.append(update)


def processes_with(marker):
    """Live processes (not zombies) whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            if marker in cmdline and running(int(entry)):
                found.append(int(entry))
        except OSError:
            pass
    return found


def running(pid):
    """Whether `pid` runs (exists and is not a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(") ", 1)[1].split(" ")[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def dump(value):
    return None if value is None else value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def play(conn, process, workspace, step, forms):
    """Plays one step; returns its result."""
    (kind, arg), = step.items()
    global session_id
    if kind == "initialize":
        if not forms:
            return dump(await conn.initialize(protocol_version=1))
        elicitation = ElicitationCapabilities(form=ElicitationFormCapabilities())
        capabilities = ClientCapabilities(elicitation=elicitation)
        return dump(await conn.initialize(protocol_version=1, client_capabilities=capabilities))
    if kind == "authenticate":
        return dump(await conn.authenticate(method_id=arg))
    if kind == "new":
        servers = [McpServerStdio.model_validate(s) for s in arg.get("mcpServers", [])]
        response = await conn.new_session(cwd=workspace, mcp_servers=servers)
        session_id = response.session_id
        return dump(response)
    if kind == "resume":
        return dump(await conn.resume_session(session_id=session_id, cwd=workspace, mcp_servers=[]))
    if kind == "set_mode":
        return dump(await conn.set_session_mode(session_id=session_id, mode_id=arg))
    if kind == "set_model":
        return dump(await conn.set_config_option(config_id="model", session_id=session_id, value=arg))
    if kind == "prompt":
        return dump(await conn.prompt(session_id=session_id, prompt=[text_block(arg)]))
    if kind == "close":
        return dump(await conn.close_session(session_id=session_id))
    if kind == "processes":
        deadline = time.monotonic() + 60
        pids = processes_with(arg["marker"])
        while arg.get("wait") and not pids:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no process with {arg['marker']} appeared")
            await asyncio.sleep(0.05)
            pids = processes_with(arg["marker"])
        return {"pids": pids, "agentRunning": running(process.pid)}
    raise ValueError(f"unknown step {kind}")


session_id = None


async def main():
    agent, workspace, frames_path, plan, *args = sys.argv[1:]
    plan = json.loads(plan)
    recorder = Recorder(plan.get("answer", "allow-once"), plan.get("elicitation"))
    # The agent gets this process's environment (the SDK's own spawn trims it to a few
    # variables), and its stderr stays ours, for the test to read.
    process = await asyncio.create_subprocess_exec(
        agent, *args, "acp", cwd=workspace, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    reader = asyncio.StreamReader(limit=64 << 20)
    frames = open(frames_path, "wb")

    async def copy():
        while chunk := await process.stdout.read(1 << 16):
            frames.write(chunk)
            reader.feed_data(chunk)
        reader.feed_eof()

    copier = asyncio.create_task(copy())
    # The Python SDK routes `elicitation/create` only with its unstable protocol switched on.
    forms = recorder.elicitation is not None
    conn = acp.connect_to_agent(recorder, process.stdin, reader, use_unstable_protocol=forms)
    results = []
    for index, step in enumerate(plan["steps"]):
        recorder.step = index
        try:
            forms = recorder.elicitation is not None
            results.append(await play(conn, process, workspace, step, forms))
        except acp.RequestError as error:
            results.append({"error": {"code": error.code, "message": str(error), "data": error.data}})
    await conn.close()
    process.stdin.close()
    await process.wait()
    await copier
    frames.close()
    summary = {
        "results": results,
        "updates": recorder.updates,
        "permissions": recorder.permissions,
        "elicitations": recorder.elicitations,
        "exitCode": process.returncode,
    }
    print(json.dumps(summary))


asyncio.run(main())
