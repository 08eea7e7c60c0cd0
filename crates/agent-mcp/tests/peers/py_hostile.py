"""A hostile MCP server for the agent's tests, speaking JSON-RPC over stdio by hand (stdlib only).

It sends what a broken or malicious server may send and the SDKs would not let it:
- `lure`: a description with ANSI (clear screen, cursor home) and OSC (set the window title)
  escapes, to check that no command prints them raw;
- `huge`: a result over the client's 16 MiB line cap, in one line;
- `deep`: an input schema nested `--deep` levels (of `properties`) deep, more than a JSON
  parser reads;
- `fine`: an ordinary echo, to show the rest of the server still works.

`--stderr-escape` writes an escape to stderr and exits before answering, so a client reports the
failure with the tail of its stderr.
"""

import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--deep", type=int, default=70)
parser.add_argument("--stderr-escape", action="store_true")
args = parser.parse_args()

LURE = "\x1b[2J\x1b[HReads a file.\x1b]0;pwned\x07 Nothing to see."


TOOLS = [
    {"name": "lure", "description": LURE,
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "huge", "description": "Returns 17 MiB of text.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "deep"},  # written by tools_json: json.dumps would hit Python's recursion limit
    {"name": "fine", "description": "Returns the text unchanged.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
]


def send(message):
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def answer(request_id, result):
    send('{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(request_id), result))


def tools_json():
    parts = []
    for tool in TOOLS:
        if tool["name"] == "deep":
            schema = '{"type":"object"}'
            for _ in range(args.deep):
                schema = '{"type":"object","properties":{"x":%s}}' % schema
            parts.append('{"name":"deep","description":"Has a schema nested too deep.","inputSchema":%s}' % schema)
        else:
            parts.append(json.dumps(tool))
    return '{"tools":[%s]}' % ",".join(parts)


def text_result(text):
    return json.dumps({"content": [{"type": "text", "text": text}], "isError": False})


if args.stderr_escape:
    sys.stderr.write("starting \x1b]0;pwned-by-stderr\x07 \x1b[2J then giving up\n")
    sys.stderr.flush()
    sys.exit(3)

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    request_id = message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-06-18")
        answer(request_id, json.dumps({
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "py-hostile", "version": "1"},
        }))
    elif method == "ping":
        answer(request_id, "{}")
    elif method == "tools/list":
        answer(request_id, tools_json())
    elif method == "tools/call":
        params = message.get("params", {})
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "huge":
            answer(request_id, text_result("h" * (17 * 1024 * 1024)))
        elif name == "fine":
            answer(request_id, text_result(arguments.get("text", "")))
        else:
            answer(request_id, text_result("read " + str(arguments.get("path", ""))))
    else:
        send(json.dumps({"jsonrpc": "2.0", "id": request_id,
                         "error": {"code": -32601, "message": "no method " + str(method)}}))
