#!/usr/bin/env python3
"""A fake language server for agent-lsp's tests.

Modes (first argument):
  silent  reads everything and never answers, not even initialize;
  quiet   answers initialize and shutdown, never publishes a diagnostic;
  exit    exits at once (a server that cannot start);
  fork    first tries to start 100 child processes (each sleeps), prints how many it started to
          stderr, then behaves as quiet.
"""
import os
import sys
import time
import json


def read_message(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    return json.loads(stream.read(length))


def send(stream, message):
    body = json.dumps(message).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "quiet"
    if mode == "exit":
        sys.exit(3)
    if mode == "fork":
        started = 0
        for _ in range(100):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(120)
                os._exit(0)
            started += 1
        print(f"forked {started}", file=sys.stderr, flush=True)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        message = read_message(stdin)
        if message is None:
            return
        if mode == "silent" or "id" not in message or "method" not in message:
            continue
        if message["method"] == "initialize":
            send(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
        elif message["method"] == "shutdown":
            send(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": None})


main()
