"""A STAND-IN for an Ollama server, for tests only: there is no Ollama server on this machine.

It speaks the part of Ollama's HTTP API that ragkit uses, in the JSON shapes the `ollama==0.6.3`
client parses (see ollama/_types.py: ListResponse, ChatResponse, EmbedResponse, ResponseError):
GET /api/tags, GET /api/version, POST /api/chat (non-streaming) and POST /api/embed. It runs no
model: chat replies and embeddings are deterministic functions of the request, so tests can check
exactly what went over the wire. It listens on 127.0.0.1 only, in a background thread.

SilentServer is the other case a client must survive: a server that accepts connections and never answers.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIGEST = "0" * 64
REPLY_PREFIX = "stand-in reply to:"


class OllamaStandIn:
    """An Ollama stand-in on 127.0.0.1:<free port>; `models` are the names /api/tags lists."""

    def __init__(self, models, *, dim: int = 16, port: int = 0):
        self.models = list(models)
        self.dim = dim
        self.requests: list[tuple[str, str, dict]] = []  # (method, path, JSON body) as received
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give ollama.Client(host=...) or RAGKIT_OLLAMA_HOST."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "OllamaStandIn":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "OllamaStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def resolve(self, name: str) -> str | None:
        """The installed name a request means: Ollama reads 'x' as 'x:latest'."""
        for candidate in (name, f"{name}:latest"):
            if candidate in self.models:
                return candidate
        return None

    def calls(self, path: str) -> list[dict]:
        """Bodies of the requests received on one path, oldest first."""
        return [body for _, p, body in self.requests if p == path]


class SilentServer:
    """A TCP server on 127.0.0.1:<free port> that accepts every connection, reads nothing and never answers."""

    def __init__(self):
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.05)  # so the accepting thread notices stop() soon
        self._connections: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give a client."""
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def __enter__(self) -> "SilentServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        for connection in self._connections:
            connection.close()
        self._socket.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            self._connections.append(connection)  # kept open, so the client waits for an answer


def reply_text(messages: list[dict], fmt) -> str:
    """What the stand-in answers: JSON built from the schema if `format` is given, else an echo."""
    if fmt == "json":
        return json.dumps({"answer": "stand-in"})
    if isinstance(fmt, dict):
        return json.dumps({key: _example(spec) for key, spec in fmt.get("properties", {}).items()})
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    return f"{REPLY_PREFIX} {last}"


def embedding(text: str, dim: int) -> list[float]:
    """A deterministic, NOT normalised vector from a hash of the text (so ragkit must normalise)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(digest[i % len(digest)] - 127.5) / 10 for i in range(dim)]


def word_count(text: str) -> int:
    return len(text.split())


def _example(spec: dict):
    kind = spec.get("type", "string")
    if "enum" in spec:
        return spec["enum"][0]
    return {"string": "stand-in", "integer": 0, "number": 0.0, "boolean": False,
            "array": [], "object": {}}.get(kind, None)


def _handler_for(standin: OllamaStandIn):
    class Handler(BaseHTTPRequestHandler):
        server_version = "ollama-standin"

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            standin.requests.append(("GET", self.path, {}))
            if self.path == "/api/tags":
                self._send(200, {"models": [_model_entry(name) for name in standin.models]})
            elif self.path == "/api/version":
                self._send(200, {"version": "0.6.3-standin"})
            else:
                self._send_text(404, "404 page not found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": "invalid JSON in request body"})
                return
            standin.requests.append(("POST", self.path, body))
            if self.path not in ("/api/chat", "/api/embed"):
                self._send_text(404, "404 page not found")
                return
            name = standin.resolve(body.get("model", ""))
            if name is None:
                self._send(404, {"error": f'model "{body.get("model", "")}" not found, try pulling it first'})
            elif self.path == "/api/chat":
                self._chat(name, body)
            else:
                self._embed(name, body)

        def _chat(self, name: str, body: dict) -> None:
            if "embed" in name:
                self._send(400, {"error": f'"{name}" does not support chat'})
                return
            if body.get("stream", True):
                self._send(400, {"error": "the stand-in answers non-streaming requests only"})
                return
            messages = body.get("messages", [])
            words = reply_text(messages, body.get("format")).split(" ")
            limit = (body.get("options") or {}).get("num_predict", -1)
            truncated = 0 <= limit < len(words)
            text = " ".join(words[:limit] if truncated else words)
            self._send(200, {
                "model": name, "created_at": "2025-01-01T00:00:00.000000Z",
                "message": {"role": "assistant", "content": text},
                "done_reason": "length" if truncated else "stop", "done": True,
                "total_duration": 1_000_000, "load_duration": 100_000,
                "prompt_eval_count": sum(word_count(m.get("content", "")) for m in messages),
                "prompt_eval_duration": 200_000,
                "eval_count": word_count(text), "eval_duration": 700_000,
            })

        def _embed(self, name: str, body: dict) -> None:
            texts = body.get("input", "")
            texts = [texts] if isinstance(texts, str) else list(texts)
            self._send(200, {"model": name, "embeddings": [embedding(t, standin.dim) for t in texts],
                             "total_duration": 1_000_000, "load_duration": 100_000,
                             "prompt_eval_count": sum(word_count(t) for t in texts)})

        def _send(self, status: int, payload: dict) -> None:
            self._send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json; charset=utf-8")

        def _send_text(self, status: int, text: str) -> None:
            self._send_bytes(status, text.encode("utf-8"), "text/plain; charset=utf-8")

        def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _model_entry(name: str) -> dict:
    return {"name": name, "model": name, "modified_at": "2025-01-01T00:00:00.000000Z",
            "size": 100_000_000, "digest": DIGEST,
            "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                        "parameter_size": "135M", "quantization_level": "Q4_0"}}
