"""Drives a `ToolServer` the library serves over streamable HTTP with the Python `mcp` SDK's client
and prints what it saw as JSON (agent-mcp's own tests; the binary's use `py_client.py`).

Usage: py_library_client.py URL

It lists the tools with their annotations, calls `shout`, then calls `note`, whose approval the
server puts to this client as an elicitation: the client records the question and declines.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

url = sys.argv[1]


def text(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def main():
    report = {}
    questions = []

    async def answer(context, params):
        questions.append(params.message)
        return types.ElicitResult(action="decline")

    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write, elicitation_callback=answer) as session:
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
            result = await session.call_tool("shout", {"text": "hi"})
            report["shout"] = [text(result), result.is_error]
            result = await session.call_tool("note", {"text": "kept"})
            report["note"] = [text(result), result.is_error]
    report["questions"] = questions
    print(json.dumps(report))


anyio.run(main)
