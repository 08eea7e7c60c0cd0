"""The Python MCP SDK's side of `mcp.call_overhead` (`cargo xtask bench`).

Usage: bench_client.py SERVER CALLS
Starts SERVER (server-everything) over stdio with the SDK's client, makes 20 warm-up `echo`
calls and prints `ready`. Then, for each line read on stdin, makes CALLS `echo` calls one after
the other and prints the microseconds per call; an empty line or end of input ends it. The Rust
side (`crates/agent-mcp/examples/mcp_call.rs`) times its own calls between these rounds, so the two
clients take turns on the same machine.
"""

import sys
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

server, calls = sys.argv[1], int(sys.argv[2])


async def echo(session):
    result = await session.call_tool("echo", {"message": "hi"})
    if result.is_error or result.content[0].text != "Echo: hi":
        raise SystemExit(f"unexpected echo result: {result}")


async def main():
    params = StdioServerParameters(command=server, args=["stdio"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(20):
                await echo(session)
            print("ready", flush=True)
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line.strip():
                    break
                started = time.perf_counter()
                for _ in range(calls):
                    await echo(session)
                print((time.perf_counter() - started) / calls * 1e6, flush=True)


anyio.run(main)
