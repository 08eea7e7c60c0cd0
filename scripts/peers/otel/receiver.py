"""A minimal OTLP/HTTP receiver for the telemetry tests: decodes each protobuf export with the
official OpenTelemetry protobuf classes (opentelemetry-proto, pinned in requirements.txt) and
appends it to a JSON-lines file, one line per request: {"path", "body" (decoded), "raw" (hex)}.

Usage: python receiver.py OUT.jsonl   (prints the port it listens on, on 127.0.0.1, then serves)
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

KINDS = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest, metrics_service_pb2.ExportMetricsServiceResponse),
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        kind = KINDS.get(self.path)
        if kind is None or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request, response = kind
        message = request()
        message.ParseFromString(raw)
        line = {"path": self.path, "body": MessageToDict(message), "raw": raw.hex()}
        with open(sys.argv[1], "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
        body = response().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
