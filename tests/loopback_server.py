"""A bounded HTTP server on 127.0.0.1 for tests of server backends.

``LoopbackServer(answer)`` listens on a free port of 127.0.0.1 only, answers each request with
``answer(request) -> (status, json body)`` (or ``HANG``: no answer until the server stops), records every
request, and stops by itself after ``max_requests`` requests or ``lifetime`` seconds, whichever comes first, or
when its ``with`` block ends.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG = object()  # an answer that never comes: the client's timeout must end the wait


class LoopbackServer:
    def __init__(self, answer, *, max_requests: int = 50, lifetime: float = 60.0):
        self.answer = answer
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.requests: list[dict] = []  # {"path", "headers", "body"} per request, in arrival order
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                request = {"path": self.path, "headers": dict(self.headers), "body": body}
                server.requests.append(request)
                reply = server.answer(request)
                if reply is HANG:
                    server._stop.wait(server.lifetime)
                    return
                status, payload = reply
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep test output quiet
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.http.timeout = 0.1
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def _serve(self) -> None:
        deadline = time.monotonic() + self.lifetime
        while not self._stop.is_set() and time.monotonic() < deadline and len(self.requests) < self.max_requests:
            self.http.handle_request()
        self._stop.set()

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.http.server_close()
