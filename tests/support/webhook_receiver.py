"""A real HTTP receiver for webhooks on 127.0.0.1 that records every delivery.

Answers the scripted statuses in order (``receiver.script(500, 500)``), then 200.

Example::

    with WebhookReceiver() as receiver:
        ...  # submit a job with callback_url=receiver.url
        delivery = receiver.wait(1)[0]
        verify_signature(secret, delivery.headers["X-Lexsearch-Signature"], delivery.body)
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Delivery:
    """One received POST: path, headers (case-insensitive lookup by canonical name), raw body."""

    path: str
    headers: dict[str, str]
    body: bytes
    status: int


class WebhookReceiver:
    """Records POSTs; see the module docstring."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self._statuses: collections.deque[int] = collections.deque()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    status = receiver._statuses.popleft() if receiver._statuses else 200
                    receiver.deliveries.append(Delivery(self.path, {k.title(): v for k, v in self.headers.items()},
                                                        body, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def script(self, *statuses: int) -> None:
        with self._lock:
            self._statuses.extend(statuses)

    def wait(self, count: int, timeout_s: float = 20.0) -> list[Delivery]:
        """The first ``count`` deliveries, waiting up to ``timeout_s`` for them."""
        deadline = time.monotonic() + timeout_s
        while len(self.deliveries) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} webhook deliveries, got {len(self.deliveries)}")
            time.sleep(0.05)
        return self.deliveries[:count]

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
