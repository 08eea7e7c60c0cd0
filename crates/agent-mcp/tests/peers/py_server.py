"""An MCP server written with the Python `mcp` SDK, for the agent's end-to-end tests.

Each tool exercises one behaviour a real server may show: progress, a hang, a crash, a changed
tool list, a side effect the tests look for, a question to the user. `--slow-start SECONDS`
delays the handshake. `--era legacy|modern|auto` (default auto, as the SDK serves) forces one
protocol era: `legacy` serves only the 2025-11-25 handshake (a `server/discover` is refused as a
2025 server refuses it), `modern` only 2026-07-28 (an `initialize` gets -32022). The forcing uses
the SDK's own two serving loops (`mcp.server.runner`, private in mcp 2.3.0, pinned).
`--http PORT_FILE` serves streamable HTTP instead, on 127.0.0.1 at a free port written to
PORT_FILE (the SDK answers each request in the era its headers ask for), and appends every POST's
JSON-RPC method and `MCP-Protocol-Version` header to `<marker-dir>/http.log`.
"""

import argparse
import asyncio
import os
import pathlib
import time

import anyio
import mcp_types as types
from pydantic import BaseModel
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

parser = argparse.ArgumentParser()
parser.add_argument("--slow-start", type=float, default=0.0)
parser.add_argument("--marker-dir", default=".")
parser.add_argument("--era", choices=["auto", "legacy", "modern"], default="auto")
parser.add_argument("--http", metavar="PORT_FILE")
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
    """Never answers and reports no progress; writes `name.started` at once and the marker `name`
    when it is cancelled."""
    (markers / f"{name}.started").write_text("running\n")
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


class Confirm(BaseModel):
    ok: bool = True


QUESTION = "Create the marker {name}?"


@server.tool()
async def ask(name: str, ctx: Context):
    """Asks the user whether to create the marker `name`, and creates it on a yes."""
    question = QUESTION.format(name=name)
    if ctx.protocol_version and ctx.protocol_version >= "2026-07-28":
        # The 2026 way: answer with the question, and find the answer in the retried call.
        answer = (ctx.input_responses or {}).get("confirm")
        if answer is None:
            schema = {"type": "object", "properties": {"ok": {"type": "boolean", "default": True}}}
            params = types.ElicitRequestFormParams(message=question, requested_schema=schema)
            return types.InputRequiredResult(input_requests={"confirm": types.ElicitRequest(params=params)})
        action = answer.action if hasattr(answer, "action") else answer["action"]
    else:
        action = (await ctx.elicit(question, Confirm)).action
    if action == "accept":
        (markers / name).write_text("confirmed\n")
        return f"created {name}"
    return f"not created: {action}"


async def serve_forced(era):
    from mcp.server import runner
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
        if era == "modern":
            await runner._serve_modern_stream(lowlevel, read, write, lifespan_state=state, raise_exceptions=False)
        else:
            options = lowlevel.create_initialization_options()
            await runner._serve_legacy_stream(
                lowlevel, read, write, lifespan_state=state, session_id=None, init_options=options, raise_exceptions=False
            )


async def serve_http(port_file):
    import json
    import socket

    import uvicorn

    app = server.streamable_http_app()
    log = markers / "http.log"

    async def logged(scope, receive, send):
        """Logs a POST's method and protocol header, then hands the request on unchanged."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        try:
            method = json.loads(body).get("method", "(response)")
        except (ValueError, AttributeError):
            method = "(not one JSON-RPC object)"
        version = dict(scope["headers"]).get(b"mcp-protocol-version", b"-").decode()
        with log.open("a") as out:
            out.write(f"{method} {version}\n")

        async def replay():
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    # The socket already listens: a client that reads the port may connect at once.
    written = pathlib.Path(port_file + ".part")
    written.write_text(str(sock.getsockname()[1]))
    written.rename(port_file)
    await uvicorn.Server(uvicorn.Config(logged, log_level="warning")).serve(sockets=[sock])


if args.slow_start:
    time.sleep(args.slow_start)
if args.http:
    anyio.run(serve_http, args.http)
elif args.era == "auto":
    server.run("stdio")
else:
    anyio.run(serve_forced, args.era)
