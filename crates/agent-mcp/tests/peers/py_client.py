"""Drives `agent mcp serve` with the Python `mcp` SDK's client and prints what it saw as JSON.

Usage: py_client.py SCENARIO stdio AGENT WORKSPACE [AGENT_ARGS...]
       py_client.py SCENARIO http URL WORKSPACE
Over stdio the client starts `AGENT [AGENT_ARGS...] mcp serve` in WORKSPACE; over HTTP it
connects to URL, sending `Authorization: Bearer $MCP_TOKEN` when that variable is set.

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
           Prints each request's HTTP status.
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
from mcp.client.session import ClientSession
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
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def until(check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await anyio.sleep(0.05)
    return check()


class connect:
    """An initialized `ClientSession` to the server, over the transport named on the command line."""

    def __init__(self, **session_args):
        self.session_args = session_args

    async def __aenter__(self):
        self.stack = contextlib.AsyncExitStack()
        if transport == "stdio":
            params = StdioServerParameters(
                command=target,
                args=[*agent_args, "mcp", "serve"],
                cwd=workspace,
                env={"HOME": workspace, "PATH": os.environ["PATH"]},
            )
            read, write = await self.stack.enter_async_context(stdio_client(params))
        else:
            headers = {}
            if os.environ.get("MCP_TOKEN"):
                headers["Authorization"] = f"Bearer {os.environ['MCP_TOKEN']}"
            client = await self.stack.enter_async_context(create_mcp_http_client(headers=headers))
            read, write = await self.stack.enter_async_context(
                streamable_http_client(target, http_client=client)
            )
        session = await self.stack.enter_async_context(ClientSession(read, write, **self.session_args))
        self.init = await session.initialize()
        return session

    async def __aexit__(self, *exc):
        return await self.stack.__aexit__(*exc)


async def session_scenario(report):
    connection = connect()
    async with connection as session:
        report["server"] = connection.init.server_info.name
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

    async with connect(elicitation_callback=answer) as session:
        for name in ["yes.txt", "no.txt", "cancel.txt"]:
            result = await session.call_tool("write_file", {"path": name, "content": "written"})
            report[name] = [text(result), result.is_error]
    report["questions"] = questions

    async with connect() as session:
        result = await session.call_tool("write_file", {"path": "other.txt", "content": "written"})
        report["other.txt"] = [text(result), result.is_error]


async def attack_scenario(report):
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


async def main():
    report = {}
    scenarios = {"session": session_scenario, "elicit": elicit_scenario, "attack": attack_scenario}
    await scenarios[scenario](report)
    print(json.dumps(report))


anyio.run(main)
