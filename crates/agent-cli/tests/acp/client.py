"""A test client of `agent acp` on the official ACP Python SDK (PyPI agent-client-protocol, pinned
in scripts/peers/acp/requirements.txt).

Usage: python client.py AGENT WORKSPACE ANSWER [AGENT_ARGS...]
Opens a session, sends one prompt, answers every permission request with ANSWER (an option id),
and prints a JSON summary: the stop reason, the updates and the permission requests.
"""

import asyncio
import json
import sys

import acp
from acp.helpers import text_block
from acp.schema import AllowedOutcome, RequestPermissionResponse


class Recorder(acp.Client):
    def __init__(self, answer):
        self.answer = answer
        self.updates = []
        self.permissions = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {"toolCallId": tool_call.tool_call_id, "options": [o.kind for o in options]}
        )
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", optionId=self.answer)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))


async def main():
    agent, workspace, answer, *args = sys.argv[1:]
    recorder = Recorder(answer)
    async with acp.spawn_agent_process(recorder, agent, *args, "acp", cwd=workspace) as (conn, _):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=workspace, mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("do the task")])
    summary = {
        "stopReason": done.stop_reason,
        "updates": recorder.updates,
        "permissions": recorder.permissions,
    }
    print(json.dumps(summary))


asyncio.run(main())
