"""An MCP server written with the Python `mcp` SDK, for the agent's end-to-end tests.

Each tool exercises one behaviour a real server may show: progress, a hang, a crash, a changed
tool list, a side effect the tests look for. `--slow-start SECONDS` delays the handshake.
"""

import argparse
import asyncio
import os
import pathlib
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("--slow-start", type=float, default=0.0)
parser.add_argument("--marker-dir", default=".")
args = parser.parse_args()
markers = pathlib.Path(args.marker_dir)

server = MCPServer("py-peer")


@server.tool()
def echo(text: str) -> str:
    """Returns the text unchanged."""
    return text


@server.tool()
def touch(name: str) -> str:
    """Creates the marker file `name` (the tests check whether a call reached the server)."""
    (markers / name).write_text("reached\n")
    return f"created {name}"


@server.tool()
async def slow(seconds: float, step: float, ctx: Context) -> str:
    """Works for `seconds`, reporting progress every `step` seconds."""
    start = time.monotonic()
    done = 0
    while time.monotonic() - start < seconds:
        await asyncio.sleep(step)
        done += 1
        await ctx.report_progress(done, None, f"step {done}")
    return f"finished after {done} steps"


@server.tool()
async def hang(name: str) -> str:
    """Never answers and reports no progress; writes the marker `name` when it is cancelled."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        (markers / name).write_text("cancelled\n")
        raise
    return "unreachable"


@server.tool()
def fail(message: str) -> str:
    """Fails with `message` (the result has isError set)."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """Kills this server in the middle of the call."""
    os._exit(3)


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `late` and tells the client that the tool list changed."""

    def late() -> str:
        """A tool that appears after a call to `grow`."""
        return "late tool here"

    server.add_tool(late)
    # Clients that listen (2026-07-28) get it on their subscription; clients of the handshake
    # era get the plain notification.
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "added late"


if args.slow_start:
    time.sleep(args.slow_start)
server.run("stdio")
