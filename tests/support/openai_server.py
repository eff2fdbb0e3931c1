"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests only.

It speaks the real wire protocol (``POST /v1/chat/completions``, ``POST /v1/embeddings``,
``GET /v1/models``), so the real ``openai`` client, with its real HTTP stack, is what gets
tested. It is the project's only stand-in for an LLM; nothing under ``service/`` imports it.

Each endpoint has a queue of scripted actions, consumed in order, one per request:

- :class:`Reply` answers 200 with a chat message (``json=`` is serialised, ``text=`` is sent
  as is, so it may be broken on purpose) or, for embeddings, a raw ``body=``;
- :class:`Status` answers an HTTP error with optional headers (``Retry-After``);
- :class:`Delay` waits, then performs another action (timeouts, concurrency);
- :class:`Disconnect` closes the connection without answering.

When a queue is empty, the endpoint's default responder answers: for chat, the callable set
with ``default_chat`` (``request_json -> dict | str``), else a 500 error; for embeddings,
deterministic pseudo-embeddings from a hash of each text (not unit length, on purpose).

Example::

    with OpenAITestServer() as server:
        server.script_chat(Reply(text="not json {"), Reply(json={"ids": ["a"]}))
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        ...
        assert len(server.chat_requests) == 2
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

ChatResponder = Callable[[dict[str, Any]], "dict[str, Any] | list[Any] | str"]


@dataclass(frozen=True)
class Reply:
    """Answer 200. Chat: ``json`` (serialised) or ``text`` (verbatim) becomes the message content.

    ``body`` replaces the whole response body (any endpoint), for malformed-envelope tests.
    ``usage`` overrides the token counts; ``None`` computes them from the request and reply.
    """

    json: Any = None
    text: str | None = None
    body: Any = None
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Status:
    """Answer with an HTTP error status, OpenAI-shaped error body unless ``body`` is given."""

    code: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` (interrupted when the server stops), then perform ``then``."""

    seconds: float
    then: Action | None = None


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without sending a response."""


Action = Reply | Status | Delay | Disconnect


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it. ``json`` is the parsed body (``None`` if not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    received_at: float


def pseudo_embedding(text: str, dim: int) -> np.ndarray:
    """A deterministic float32 vector for ``text`` (same text, same vector; norm not 1)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return (np.random.default_rng(seed).standard_normal(dim) * 3.0).astype(np.float32)


def _count_tokens(text: str) -> int:
    return max(1, len(text.split()))


class OpenAITestServer:
    """Threaded HTTP server with per-endpoint scripts; see the module docstring.

    Args:
        model: the model id reported by ``/v1/models`` (requests may name any model).
        embedding_dim: dimension of the default pseudo-embeddings.
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get 401.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1``, set once started.
        requests: every request received, in arrival order.
        max_in_flight: the most requests handled at the same time (any endpoint).
    """

    def __init__(self, *, model: str = "test-model", embedding_dim: int = 16, api_key: str | None = None):
        self.model = model
        self.embedding_dim = embedding_dim
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self.default_chat: ChatResponder | None = None
        self._in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._queues: dict[str, collections.deque[Action]] = {
            "chat": collections.deque(),
            "embeddings": collections.deque(),
        }
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> OpenAITestServer:
        """Bind 127.0.0.1 on a free port and serve in a background thread."""
        handler = type("Handler", (_Handler,), {"server_state": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        # A handler may still be inside a Delay whose client gave up; don't wait for it.
        httpd.block_on_close = False
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and interrupt pending delays."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting -------------------------------------------------------------------------

    def script_chat(self, *actions: Action) -> None:
        """Append actions for the next ``/chat/completions`` requests, one each, in order."""
        with self._lock:
            self._queues["chat"].extend(actions)

    def script_embeddings(self, *actions: Action) -> None:
        """Append actions for the next ``/embeddings`` requests, one each, in order."""
        with self._lock:
            self._queues["embeddings"].extend(actions)

    def pending(self, endpoint: str = "chat") -> int:
        """How many scripted actions are still queued for ``endpoint`` (chat or embeddings)."""
        with self._lock:
            return len(self._queues[endpoint])

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/embeddings")]

    # --- internals used by the handler -----------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_action(self, endpoint: str) -> Action | None:
        with self._lock:
            queue = self._queues[endpoint]
            return queue.popleft() if queue else None

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: OpenAITestServer  # set on the subclass made by OpenAITestServer.start

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    # --- HTTP verbs -----------------------------------------------------------------------

    def do_GET(self) -> None:
        state = self.server_state
        self._record_request(None)
        if not self._authorised():
            return
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [
                {"id": state.model, "object": "model", "created": int(time.time()), "owned_by": "tests"}]})
        else:
            self._send_json(404, _error_body(f"unknown path {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        state = self.server_state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._record_request(body)
        if not self._authorised():
            return
        path = self.path.rstrip("/")
        endpoint = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings"}.get(path)
        if endpoint is None:
            self._send_json(404, _error_body(f"unknown path {self.path}", "invalid_request_error"))
            return
        if not isinstance(body, dict):
            self._send_json(400, _error_body("request body must be a JSON object", "invalid_request_error"))
            return
        state._enter()
        try:
            self._perform(endpoint, body, state._next_action(endpoint))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered
        finally:
            state._leave()

    # --- actions --------------------------------------------------------------------------

    def _perform(self, endpoint: str, body: dict[str, Any], action: Action | None) -> None:
        state = self.server_state
        while isinstance(action, Delay):
            if state._stopping.wait(action.seconds):
                self.close_connection = True
                return
            action = action.then
        if isinstance(action, Disconnect):
            self.close_connection = True
            return
        if isinstance(action, Status):
            kind = "rate_limit_error" if action.code == 429 else "server_error"
            payload = action.body if action.body is not None else _error_body(
                f"scripted status {action.code}", kind)
            self._send_json(action.code, payload, action.headers)
            return
        if endpoint == "chat":
            self._answer_chat(body, action)
        else:
            self._answer_embeddings(body, action)

    def _answer_chat(self, body: dict[str, Any], reply: Reply | None) -> None:
        state = self.server_state
        if not isinstance(body.get("messages"), list) or not body.get("model"):
            self._send_json(400, _error_body("model and messages are required", "invalid_request_error"))
            return
        if reply is None:
            if state.default_chat is None:
                self._send_json(500, _error_body("no scripted reply and no default responder",
                                                 "server_error"))
                return
            produced = state.default_chat(body)
            reply = Reply(text=produced) if isinstance(produced, str) else Reply(json=produced)
        if reply.body is not None:
            self._send_json(200, reply.body, reply.headers)
            return
        content = reply.text if reply.text is not None else json.dumps(reply.json, ensure_ascii=False)
        prompt_text = " ".join(str(m.get("content", "")) for m in body["messages"] if isinstance(m, dict))
        usage = reply.usage or {"prompt_tokens": _count_tokens(prompt_text),
                                "completion_tokens": _count_tokens(content)}
        usage = {**usage, "total_tokens": usage.get("total_tokens",
                                                    usage["prompt_tokens"] + usage["completion_tokens"])}
        self._send_json(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }],
            "usage": usage,
            "system_fingerprint": "fp_tests",
        }, reply.headers)

    def _answer_embeddings(self, body: dict[str, Any], reply: Reply | None) -> None:
        state = self.server_state
        if reply is not None and reply.body is not None:
            self._send_json(200, reply.body, reply.headers)
            return
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if (not body.get("model") or not isinstance(texts, list) or not texts
                or not all(isinstance(t, str) and t for t in texts)):
            self._send_json(400, _error_body("model and a non-empty input of non-empty strings are required",
                                             "invalid_request_error"))
            return
        dim = int(body.get("dimensions") or state.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vec = pseudo_embedding(text, dim)
            encoded: Any = (base64.b64encode(vec.astype("<f4").tobytes()).decode() if as_base64
                            else vec.tolist())
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(_count_tokens(t) for t in texts)
        self._send_json(200, {"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
                        reply.headers if reply else None)

    # --- plumbing -------------------------------------------------------------------------

    def _record_request(self, body: Any) -> None:
        self.server_state._record(RecordedRequest(
            method=self.command, path=self.path, headers={k.lower(): v for k, v in self.headers.items()},
            json=body, received_at=time.monotonic()))

    def _authorised(self) -> bool:
        key = self.server_state.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send_json(401, _error_body("invalid api key", "invalid_request_error", "invalid_api_key"))
        return False

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex[:16]}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
