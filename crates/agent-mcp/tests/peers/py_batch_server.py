"""An MCP server written with the Python `mcp` SDK that records when each call runs.

Both tools append `start <tag> <ns>` when a call begins and `end <tag> <ns>` when it ends
(`time.monotonic_ns`) to the file `--log`, and hold in between: the hold is the tool's work, so
that two calls the client runs at once overlap in the log. The handlers are async, so the SDK
serves calls concurrently; whether two calls overlap is the client's choice alone.

`change` is annotated as destructive and not read-only; `look` as read-only.
"""

import argparse
import asyncio
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--log", required=True)
parser.add_argument("--hold", type=float, default=0.3)
args = parser.parse_args()

server = MCPServer("py-batch-peer")


def record(what: str, tag: str) -> None:
    # One short append per line, so lines from concurrent calls never interleave.
    with open(args.log, "a", encoding="utf-8") as log:
        log.write(f"{what} {tag} {time.monotonic_ns()}\n")


async def hold(tag: str) -> str:
    record("start", tag)
    await asyncio.sleep(args.hold)
    record("end", tag)
    return f"done {tag}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
async def change(tag: str) -> str:
    """Changes something (destructive); records when it starts and ends."""
    return await hold(tag)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False))
async def look(tag: str) -> str:
    """Looks at something (read-only); records when it starts and ends."""
    return await hold(tag)


server.run("stdio")
