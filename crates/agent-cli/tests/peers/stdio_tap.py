"""Runs a stdio MCP server and appends every line each way to a log, so a test can see what the
server really received: `stdio_tap.py LOG -- COMMAND ARGS...`.

A line the client sends is logged as `> LINE` before it is handed to the server; a line the
server sends is logged as `< LINE` before it is handed to the client. The tap ends when the
server does.
"""

import subprocess
import sys
import threading

log_path, separator, *command = sys.argv[1:]
assert separator == "--", "usage: stdio_tap.py LOG -- COMMAND ARGS..."
server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
lock = threading.Lock()
log = open(log_path, "a", encoding="utf-8")


def pump(source, sink, tag):
    for line in iter(source.readline, b""):
        with lock:
            log.write(f"{tag} {line.decode('utf-8', 'replace').rstrip()}\n")
            log.flush()
        try:
            sink.write(line)
            sink.flush()
        except (BrokenPipeError, ValueError):
            break
    try:
        sink.close()
    except (BrokenPipeError, ValueError):
        pass


threading.Thread(target=pump, args=(sys.stdin.buffer, server.stdin, ">"), daemon=True).start()
replies = threading.Thread(target=pump, args=(server.stdout, sys.stdout.buffer, "<"), daemon=True)
replies.start()
code = server.wait()
replies.join()
sys.exit(code)
