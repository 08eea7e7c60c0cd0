"""Drives `agent mcp serve` with the Python `mcp` SDK's client and prints what it saw as JSON.

Usage: py_client.py SCENARIO stdio AGENT WORKSPACE [AGENT_ARGS...]
       py_client.py SCENARIO http URL WORKSPACE
Over stdio the client starts `AGENT [AGENT_ARGS...] mcp serve` in WORKSPACE; over HTTP it
connects to URL, sending `Authorization: Bearer $MCP_TOKEN` when that variable is set.
$MCP_MODE is the SDK's `mode`: `auto` (the default: probe `server/discover`, fall back to
`initialize`), `legacy` (the 2025-11-25 handshake) or `2026-07-28` (the 2026 era, no handshake).
Every report says which protocol version was spoken (`protocol`).

Scenarios:
  session  initialize, list the tools, call uppercase, call bash with progress, cancel a long
           bash call (sleeping $SLEEP seconds) once its process runs, and wait (up to 20 s) for
           that process to leave /proc; call a tool the server refuses.
  elicit   with an elicitation callback: write yes.txt (accepted), no.txt (declined) and
           cancel.txt (cancelled); then, as a client without elicitation, write other.txt.
  attack   (HTTP only) what a hostile web page or a client without the token would send, made
           by hand with httpx2 as a browser would: initialize and `bash touch NAME` calls with a
           foreign Origin, a foreign Host, no token and a wrong token (each NAME says which),
           inside a session opened properly, plus the same call made properly (`touch control`).
           Prints each request's HTTP status. With MCP_MODE=2026-07-28 the requests are the 2026
           era's: no session, `server/discover` in place of initialize, and every request
           carrying its protocol version and capabilities in `_meta` and in the HTTP headers.
"""

import contextlib
import json
import os
import subprocess
import sys
import time

import anyio
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

scenario, transport, target, workspace, *agent_args = sys.argv[1:]


def text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


def pid_of(pattern):
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return int(found.stdout.split()[0]) if found.returncode == 0 else None


def alive(pid):
    """Whether `pid` is still a process that is not a zombie (a zombie has stopped running)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        # A process reaped between the open and the read answers ESRCH: it is gone too.
        return False


async def until(check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await anyio.sleep(0.05)
    return check()


MODE = os.environ.get("MCP_MODE", "auto")


class connect:
    """A connected `mcp.Client` (in $MCP_MODE), over the transport named on the command line."""

    def __init__(self, **client_args):
        self.client_args = client_args

    async def __aenter__(self):
        self.stack = contextlib.AsyncExitStack()
        if transport == "stdio":
            params = StdioServerParameters(
                command=target,
                args=[*agent_args, "mcp", "serve"],
                cwd=workspace,
                env={"HOME": workspace, "PATH": os.environ["PATH"]},
            )
            server = params
        else:
            headers = {}
            if os.environ.get("MCP_TOKEN"):
                headers["Authorization"] = f"Bearer {os.environ['MCP_TOKEN']}"
            client = await self.stack.enter_async_context(create_mcp_http_client(headers=headers))
            server = streamable_http_client(target, http_client=client)
        session = await self.stack.enter_async_context(
            Client(server, mode=MODE, cache=None, **self.client_args)
        )
        self.protocol = session.protocol_version
        self.server_name = session.server_info.name if session.server_info else None
        return session

    async def __aexit__(self, *exc):
        return await self.stack.__aexit__(*exc)


async def session_scenario(report):
    connection = connect()
    async with connection as session:
        report["server"] = connection.server_name
        report["protocol"] = connection.protocol
        tools = await session.list_tools()
        report["tools"] = {
            tool.name: {
                "read_only": tool.annotations.read_only_hint,
                "destructive": tool.annotations.destructive_hint,
            }
            for tool in tools.tools
        }
        result = await session.call_tool("uppercase", {"text": "hi"})
        report["uppercase"] = [text(result), result.is_error]

        progress = []

        async def on_progress(value, total, message):
            progress.append(message)

        result = await session.call_tool(
            "bash", {"command": "sleep 2.5 && echo slept"}, progress_callback=on_progress
        )
        report["progress"] = [text(result), progress]

        # Cancel a long call once its process is seen running, then watch that process.
        command = f"sleep {os.environ['SLEEP']}"
        async with anyio.create_task_group() as group:
            call = anyio.CancelScope()

            async def long_call():
                with call:
                    await session.call_tool("bash", {"command": command})

            group.start_soon(long_call)
            pid = await until(lambda: pid_of(command), 20)
            report["cancelled_process_seen"] = pid is not None
            call.cancel()
        report["cancelled_process_left"] = pid is not None and not await until(
            lambda: not alive(pid), 20
        )

        result = await session.call_tool("write_file", {"path": "x.txt", "content": "x"})
        report["refused"] = [text(result), result.is_error]


async def elicit_scenario(report):
    questions = []

    async def answer(context, params):
        questions.append(params.message)
        for name, action in [("yes.txt", "accept"), ("no.txt", "decline"), ("cancel.txt", "cancel")]:
            if name in params.message:
                return types.ElicitResult(action=action, content={} if action == "accept" else None)
        return types.ErrorData(code=types.INVALID_REQUEST, message="unexpected question")

    connection = connect(elicitation_callback=answer)
    async with connection as session:
        report["protocol"] = connection.protocol
        for name in ["yes.txt", "no.txt", "cancel.txt"]:
            result = await session.call_tool("write_file", {"path": name, "content": "written"})
            report[name] = [text(result), result.is_error]
    report["questions"] = questions

    async with connect() as session:
        result = await session.call_tool("write_file", {"path": "other.txt", "content": "written"})
        report["other.txt"] = [text(result), result.is_error]


async def attack_scenario(report):
    if MODE == "2026-07-28":
        return await attack_2026(report)
    version = "2025-11-25"
    token = os.environ.get("MCP_TOKEN")
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    attacks = {
        "origin": {**auth, "Origin": "http://evil.example"},
        "host": {**auth, "Host": "evil.example"},
    }
    if token:
        attacks["no_token"] = {}
        attacks["wrong_token"] = {"Authorization": f"Bearer {token}x"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "attack", "version": "1"},
        },
    }

    def touch(number, name):
        arguments = {"command": f"touch {name}"}
        params = {"name": "bash", "arguments": arguments}
        return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}

    async with httpx2.AsyncClient(timeout=60) as http:

        async def post(body, headers, session=None):
            headers = {
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                **headers,
            }
            if session:
                headers["Mcp-Session-Id"] = session
                headers["MCP-Protocol-Version"] = version
            response = await http.post(target, json=body, headers=headers)
            await response.aread()
            return response

        for name, headers in attacks.items():
            report[f"initialize_{name}"] = (await post(initialize, headers)).status_code
        opened = await post(initialize, auth)
        session = opened.headers.get("mcp-session-id")
        report["initialize"] = opened.status_code
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        report["initialized"] = (await post(initialized, auth, session)).status_code
        for number, (name, headers) in enumerate(attacks.items(), start=2):
            report[f"call_{name}"] = (await post(touch(number, name), headers, session)).status_code
        report["call_control"] = (await post(touch(99, "control"), auth, session)).status_code


async def attack_2026(report):
    """The attack scenario in the 2026 era: each request stands alone (no session to open)."""
    version = "2026-07-28"
    token = os.environ.get("MCP_TOKEN")
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    attacks = {
        "origin": {**auth, "Origin": "http://evil.example"},
        "host": {**auth, "Host": "evil.example"},
    }
    if token:
        attacks["no_token"] = {}
        attacks["wrong_token"] = {"Authorization": f"Bearer {token}x"}
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "attack", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    def request(number, method, params, name=None):
        return {"jsonrpc": "2.0", "id": number, "method": method, "params": {**params, "_meta": meta}}

    async with httpx2.AsyncClient(timeout=60) as http:

        async def post(body, headers):
            headers = {
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": version,
                "Mcp-Method": body["method"],
                **headers,
            }
            if body["method"] == "tools/call":
                headers["Mcp-Name"] = body["params"]["name"]
            response = await http.post(target, json=body, headers=headers)
            await response.aread()
            return response

        def touch(number, name):
            return request(number, "tools/call", {"name": "bash", "arguments": {"command": f"touch {name}"}})

        for name, headers in attacks.items():
            report[f"initialize_{name}"] = (await post(request(1, "server/discover", {}), headers)).status_code
        report["initialize"] = (await post(request(1, "server/discover", {}), auth)).status_code
        for number, (name, headers) in enumerate(attacks.items(), start=2):
            report[f"call_{name}"] = (await post(touch(number, name), headers)).status_code
        control = await post(touch(99, "control"), auth)
        report["call_control"] = control.status_code
        report["control_body"] = control.text[:2000]


async def main():
    report = {}
    scenarios = {"session": session_scenario, "elicit": elicit_scenario, "attack": attack_scenario}
    await scenarios[scenario](report)
    print(json.dumps(report))


anyio.run(main)
