"""An SGLang stand-in that speaks SGLang's recorded formats, for the doctor's tests
(SGLang itself does not run here): `--help` prints SGLang's help text
(fixtures/sglang_help.txt), the log holds the lines a test hands it in
$RECORDED_SGLANG_LOG (SGLang's own format strings, rendered by the test), and `/metrics`
serves the page in $RECORDED_SGLANG_METRICS only when started with `--enable-metrics`,
as SGLang does; `/health` and `/get_server_info` answer as SGLang's do.

Run as `python recorded_sglang.py --model-path M --port P [--enable-metrics] ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HELP = Path(__file__).resolve().parents[1] / "fixtures" / "sglang_help.txt"
READY = "The server is fired up and ready to roll!"  # SGLang's ready line
PREFIX = "[2026-04-01 12:00:00] "
VERSION = "0.5.23"


def main() -> None:
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:
        sys.stdout.write(HELP.read_text())
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--enable-metrics", action="store_true")
    args, _ = parser.parse_known_args()
    metrics = Path(os.environ["RECORDED_SGLANG_METRICS"]).read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, b"")
            elif self.path == "/get_server_info":
                self._send(200, json.dumps({"version": VERSION}).encode())
            elif self.path == "/metrics" and args.enable_metrics:
                self._send(200, metrics, "text/plain; version=0.0.4")
            else:
                self._send(404, b'{"detail":"Not Found"}')

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"{PREFIX}INFO:     Uvicorn running on http://{args.host}:{args.port}", flush=True)
    print(f"{PREFIX}{READY}", flush=True)
    for line in Path(os.environ["RECORDED_SGLANG_LOG"]).read_text().splitlines():
        print(line, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
