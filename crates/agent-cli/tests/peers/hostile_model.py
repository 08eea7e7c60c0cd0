"""A hostile OpenAI-compatible model server for the agent's fault tests (loopback only).

Usage: hostile_model.py MODE REPORT_FILE [SECONDS]

It binds 127.0.0.1 on a free port, prints "PORT <n>" on stdout, answers one request with MODE,
(GET requests get a 404 first), then writes a JSON report (what it sent, how often the client held it back) to REPORT_FILE and
exits. Modes:
  flood-chat, flood-responses  SSE of empty deltas as fast as the socket takes them, for SECONDS
  huge-whole                   a 1.5 GB chunked JSON body (1 MiB chunks), never allocated whole
  big-event                    one 20 MB content delta as a single SSE event, then a normal end
  drip                         a valid streamed answer, one byte a second
  garbage-whole                a 200 "JSON" body of 1 MB of escape sequences and binary bytes
  silent                       reads the request and never answers, for SECONDS
"""

import json
import select
import socket
import sys
import time

CHAT_EMPTY = (
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":null}]}\n\n'
)
RESPONSES_EMPTY = (
    b'event: response.output_text.delta\n'
    b'data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,'
    b'"content_index":0,"delta":"","sequence_number":1}\n\n'
)
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"connection: close\r\n\r\n"
)


def chat_chunk(delta, finish=None):
    body = {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def read_request(conn):
    """Reads one request and returns its method (None when the client hung up)."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            return None
        body += more
    return head.split(b" ", 1)[0]


class Sender:
    """Writes with a non-blocking socket, counting the times the client's window was full."""

    def __init__(self, conn):
        self.conn = conn
        self.sent = 0
        self.stalls = 0
        conn.setblocking(False)

    def send(self, data):
        view = memoryview(data)
        while view:
            try:
                n = self.conn.send(view)
            except BlockingIOError:
                self.stalls += 1
                select.select([], [self.conn], [], 1.0)
                continue
            self.sent += n
            view = view[n:]


def main():
    mode, report_path = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    print("PORT", listener.getsockname()[1], flush=True)
    # The agent first asks GET /models and the like for the context window: those get a 404,
    # and the first POST gets MODE.
    while True:
        conn, _ = listener.accept()
        if read_request(conn) == b"POST":
            break
        conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        conn.close()
    sender = Sender(conn)
    report = {"mode": mode}
    start = time.monotonic()
    try:
        if mode in ("flood-chat", "flood-responses"):
            event = CHAT_EMPTY if mode == "flood-chat" else RESPONSES_EMPTY
            per_block = (1 << 20) // len(event)
            block = event * per_block
            sender.send(SSE_HEAD)
            while time.monotonic() - start < seconds:
                sender.send(block)
                report["events"] = report.get("events", 0) + per_block
        elif mode == "huge-whole":
            sender.send(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            )
            chunk = b"x" * (1 << 20)
            for _ in range(1500):
                sender.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sender.send(b"0\r\n\r\n")
        elif mode == "big-event":
            sender.send(SSE_HEAD)
            sender.send(chat_chunk({"role": "assistant", "content": "A" * (20 * 1000 * 1000)}))
            sender.send(chat_chunk({}, "stop") + b"data: [DONE]\n\n")
        elif mode == "drip":
            answer = SSE_HEAD + chat_chunk({"content": "a slow answer"}) + chat_chunk({}, "stop")
            for i in range(len(answer)):
                sender.send(answer[i : i + 1])
                time.sleep(1.0)
        elif mode == "garbage-whole":
            body = (b"\x1b[2J\x1b]0;pwned\x07\xff\xfe<html>" * 40000)[: 1 << 20]
            sender.send(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
                + body
            )
        elif mode == "silent":
            time.sleep(seconds)
    except (BrokenPipeError, ConnectionResetError):
        report["client_closed"] = True
    report["bytes"] = sender.sent
    report["stalls"] = sender.stalls
    report["seconds"] = time.monotonic() - start
    with open(report_path, "w") as out:
        json.dump(report, out)
    conn.close()


if __name__ == "__main__":
    main()
