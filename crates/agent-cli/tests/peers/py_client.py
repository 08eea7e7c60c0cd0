"""Drives `agent mcp serve` with the Python `mcp` SDK's client and prints what it saw as JSON.

Usage: py_client.py AGENT WORKSPACE [AGENT_ARGS...]
The session: initialize, list the tools, call uppercase, call bash with progress, cancel a
long bash call and wait (up to 20 s) for its process to disappear, call a refused tool.
"""

import json
import subprocess
import sys
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

agent, workspace, *agent_args = sys.argv[1:]


def text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


def running(pattern):
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


async def main():
    report = {}
    params = StdioServerParameters(
        command=agent, args=[*agent_args, "mcp", "serve"], cwd=workspace, env={"HOME": workspace}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["server"] = init.server_info.name
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

            with anyio.move_on_after(1.5):
                await session.call_tool("bash", {"command": "sleep 31.5"})
            deadline = time.monotonic() + 20
            while running("sleep 31.5") and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            report["cancelled_process_left"] = running("sleep 31.5")

            result = await session.call_tool("write_file", {"path": "x.txt", "content": "x"})
            report["refused"] = [text(result), result.is_error]
    print(json.dumps(report))


anyio.run(main)
