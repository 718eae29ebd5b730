"""The loopback model server: Anthropic Messages and OpenAI Chat Completions, driven by a script.

`ctxagent scripted-server SCRIPT.json [--host 127.0.0.1] [--port 0] [--record FILE]` prints
`listening on http://HOST:PORT` (flushed) and serves

    POST /v1/messages            Anthropic wire format, JSON or SSE (`"stream": true`); its
                                 `context_management` (beta) emulated: scripted_context.py
    POST /v1/messages/count_tokens   the Anthropic token count (no turn consumed)
    POST /v1/chat/completions    OpenAI wire format, JSON or SSE (`"stream": true`)
    GET  /v1/models[/ID]         the script's model catalogue, in the asking SDK's format

Request N (counted across both POST endpoints) gets turn N of the script (format and faults:
`script.py`). A request's image blocks are checked and recorded (`images.py`; `{images}` in a turn's
text says what came). Catalogue reads consume no turn and are not recorded. The real SDKs talk to
it unmodified; tests use `ScriptedServer` in a thread.

Every request's credential is kept as a fingerprint, never as the key (`key_print`): a model request's
record has it as `key`, and `ScriptedServer.credentials` lists it for every request (catalogue reads
and token counts too), so a test can tell whose key reached the server.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, unquote, urlsplit

from ctxagent.context.floor import bounded_json
from ctxagent.tui.lab.scripted import slow, wire
from ctxagent.tui.lab.scripted.context_emulation import (
    ServerReply,
    apply_context_management,
    count_tokens_reply,
)
from ctxagent.tui.lab.scripted.images import SeenImage, say_images, seen_images
from ctxagent.tui.lab.scripted.script import (
    DEFAULT_STALL,
    EXHAUSTED_MESSAGE,
    SLOW_FAULTS,
    ScriptedModel,
    Turn,
    estimate_input_tokens,
    load_agents,
    load_script_and_models,
    subagent_key,
    turn_usage,
)


def key_print(key: str | None) -> str:
    """A credential's fingerprint ("" for none): what the server keeps of a key it was sent."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16] if key else ""


class _Chunked:
    """Chunked transfer encoding, so a dropped connection is visibly an incomplete body."""

    def __init__(self, wfile: BinaryIO | io.BufferedIOBase):
        self.wfile = wfile

    def write(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _ScriptState:
    def __init__(self, turns: list[Turn], record: Path | None, models: list[ScriptedModel] | None = None,
                 agents: dict[str, list[Turn]] | None = None):
        self.turns = turns
        self.agents = agents or {}  # a sub-agent's own turns, by task name (script.py "agents")
        self.agent_next: dict[str, int] = {}
        self.models = models or []
        self.record = record
        self.requests: list[dict[str, Any]] = []  # {"path", "body"} as received, for tests
        self.catalogue_requests: list[str] = []  # GET /v1/models paths (with query), for tests
        self.count_requests: list[dict[str, Any]] = []  # count_tokens bodies, for tests
        self.credentials: list[dict[str, str]] = []  # {"method", "path", "key": key_print(...)} of every request
        self.next_index = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # set by stop(): a stalled stream ends its wait

    def take(self, path: str, body: Any, server: ServerReply | None = None, beta: str = "",
             images: list[SeenImage] | None = None, credential: str = "") -> tuple[int, Turn | None]:
        """Record the request and claim its turn: (1-based request number, turn or None past the end).
        With the server's context management asked for, the entry also holds what it did (`server`);
        with images in the request, what they were (`images`: scripted/images.py)."""
        with self.lock:
            entry = {"path": path, "body": body}
            if credential:
                entry["key"] = credential  # key_print's fingerprint, never the key
            if images:
                entry["images"] = [i.record() for i in images]
            if beta:
                entry["beta"] = beta
            if server is not None and server.asked:
                entry["server"] = server.record()
            self.requests.append(entry)
            if self.record is not None:
                with self.record.open("a", encoding="utf-8") as f:
                    line = json.dumps(entry, ensure_ascii=False)
                    try:
                        line.encode("utf-8")
                    except UnicodeEncodeError:  # a lone surrogate the client sent: keep it, escaped
                        line = json.dumps(entry, ensure_ascii=True)
                    f.write(line + "\n")
                    f.flush()
            n = len(self.requests)  # request numbers (and so call ids) are unique across agents
            key = subagent_key(body) if self.agents else None
            if key is not None:
                turns = self.agents.get(key, [])
                index = self.agent_next.get(key, 0)
                self.agent_next[key] = index + 1
            else:
                turns = self.turns
                index = self.next_index
                self.next_index += 1
        return (n if self.agents else index + 1), (turns[index] if index < len(turns) else None)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ctxagent-scripted/1"
    timeout = 60  # an idle keep-alive connection ends on its own

    @property
    def state(self) -> _ScriptState:
        state: _ScriptState = self.server.state  # type: ignore[attr-defined]  # set on the server by ScriptedServer.bind
        return state

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: test output and the CLI's stdout stay clean

    # ------------------------------------------------------------ plumbing

    def _credential(self) -> str:
        """The fingerprint of the key this request carries (x-api-key, or a bearer token), noted for tests."""
        bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        key = key_print(self.headers.get("x-api-key") or bearer)
        with self.state.lock:
            self.state.credentials.append({"method": self.command, "path": self.path, "key": key})
        return key

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=True).encode()  # escapes encode whatever the script holds
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_scripted")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_sse(self) -> _Chunked:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        return _Chunked(self.wfile)

    def _drop_connection(self) -> None:
        """Abort the TCP connection (RST), so the client sees a reset or an incomplete body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # ------------------------------------------------------------ routes

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._credential()
        url = urlsplit(self.path)
        if url.path in ("/", "/health"):
            self._send_json(200, {"ok": True, "turns": len(self.state.turns), "served": self.state.next_index})
        elif url.path.rstrip("/").endswith("/models") or "/models/" in url.path:
            self._serve_models(url.path, parse_qs(url.query))
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def _serve_models(self, path: str, query: dict[str, list[str]]) -> None:
        with self.state.lock:
            self.state.catalogue_requests.append(self.path)
        fmt = wire.ANTHROPIC if self.headers.get("anthropic-version") else wire.OPENAI
        head, _, model_id = path.partition("/models/")
        if not model_id:
            self._send_json(200, wire.models_page(fmt, self.state.models, query))
            return
        model_id = unquote(model_id.strip("/"))
        found = next((m for m in self.state.models if m.id == model_id), None)
        if found is None or (fmt == wire.OPENAI and found.lifecycle == "retired"):
            self._send_json(*wire.model_not_found(fmt, model_id))
        else:
            self._send_json(200, wire.model_entry(fmt, found))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        key = self._credential()
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._count_tokens()
            return
        if path.endswith("/messages") and "chat" not in path:
            fmt = wire.ANTHROPIC
        elif path.endswith("/chat/completions"):
            fmt = wire.OPENAI
        else:
            self._read_body()
            self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        raw = self._read_body()
        try:
            body = bounded_json.loads(raw.decode("utf-8"), bounded_json.LOG_DEPTH)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as e:  # not UTF-8, not JSON, or nested too deep
            status, err = wire.error_response(fmt, "bad_request", model="?", tokens=0,
                                              message=f"scripted server: unreadable request body: {e}")
            self._send_json(status, err)
            return
        server: ServerReply | None = None
        if fmt == wire.ANTHROPIC and "context_management" in body:
            try:
                server = apply_context_management(body)
            except (ValueError, KeyError, TypeError) as e:
                status, err = wire.error_response(fmt, "bad_request", model="?", tokens=0,
                                                  message=f"context_management: {e}")
                self._send_json(status, err)
                return
        try:
            images = seen_images(fmt, body)
        except ValueError as e:  # as the real APIs do: a malformed image is the request's fault
            status, err = wire.error_response(fmt, "bad_request", model="?", tokens=0, message=f"scripted server: {e}")
            self._send_json(status, err)
            return
        n, turn = self.state.take(path, body, server, self.headers.get("anthropic-beta") or "", images, key)
        if turn is not None and turn.text:
            turn = dataclasses.replace(turn, text=say_images(turn.text, images))
        model = str(body.get("model", "scripted"))
        if turn is None:
            status, err = wire.error_response(
                fmt, "bad_request", model=model, tokens=0,
                message=EXHAUSTED_MESSAGE.format(count=len(self.state.turns), n=n))
            self._send_json(status, err)
            return
        usage = turn_usage(turn, server.seen if server is not None else body)  # what the model saw
        stream = body.get("stream") is True
        if stream and slow.is_stream_fault(turn, body):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            blobs, hold = slow.events(fmt, turn, n, model, usage, include_usage)
            out = self._start_sse()
            slow.serve(out.write, fmt, turn, blobs, hold, self.state.stopping)
            out.end()
            return
        if turn.fault in SLOW_FAULTS:  # not streamed: the whole body late
            self.state.stopping.wait(turn.seconds if turn.seconds is not None else DEFAULT_STALL)
        elif turn.fault is not None and self._serve_fault(fmt, turn, n, model, body, usage):
            return
        if fmt == wire.ANTHROPIC:
            if stream:
                out = self._start_sse()
                for name, data in wire.anthropic_events(turn, n, model, usage, server=server):
                    out.write(wire.sse_event(name, data))
                out.end()
            else:
                self._send_json(200, wire.anthropic_message(turn, n, model, usage, server))
        else:
            if stream:
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                out = self._start_sse()
                for chunk in wire.openai_chunks(turn, n, model, usage, include_usage=include_usage):
                    out.write(wire.sse_event(None, chunk))
                out.write(b"data: [DONE]\n\n")
                out.end()
            else:
                self._send_json(200, wire.openai_completion(turn, n, model, usage))

    def _count_tokens(self) -> None:
        """POST /v1/messages/count_tokens: consumes no turn; recorded apart."""
        raw = self._read_body()
        try:
            body = bounded_json.loads(raw.decode("utf-8"), bounded_json.LOG_DEPTH)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            answer = count_tokens_reply(body)
        except (ValueError, KeyError, TypeError) as e:
            status, err = wire.error_response(wire.ANTHROPIC, "bad_request", model="?", tokens=0,
                                              message=f"scripted server: count_tokens: {e}")
            self._send_json(status, err)
            return
        with self.state.lock:
            self.state.count_requests.append({**body, "_beta": self.headers.get("anthropic-beta") or ""})
        self._send_json(200, answer)

    def _serve_fault(self, fmt: str, turn: Turn, n: int, model: str, body: dict[str, Any],
                     usage: dict[str, int]) -> bool:
        """Serve a fault turn. Returns False for none (never happens for a parsed fault)."""
        fault = turn.fault
        if fault == "reset":
            self._drop_connection()
            return True
        if fault in ("cut", "malformed_sse"):
            out = self._start_sse()
            if fmt == wire.ANTHROPIC:
                for name, data in wire.anthropic_events(turn, n, model, usage, text_only=True):
                    out.write(wire.sse_event(name, data))
            else:
                for chunk in wire.openai_chunks(turn, n, model, usage, include_usage=False, text_only=True):
                    out.write(wire.sse_event(None, chunk))
            if fault == "cut":
                self._drop_connection()
            else:
                out.write(wire.ANTHROPIC_MALFORMED if fmt == wire.ANTHROPIC else wire.OPENAI_MALFORMED)
                out.end()
            return True
        headers: dict[str, str] = {}
        if fault == "429" and turn.retry_after is not None:
            headers["retry-after"] = f"{turn.retry_after:g}"
            headers["retry-after-ms"] = str(int(turn.retry_after * 1000))
        status, err = wire.error_response(fmt, str(fault), model=model, tokens=estimate_input_tokens(body))
        if fault == "529" and fmt == wire.ANTHROPIC:
            headers["x-should-retry"] = "true"
        self._send_json(status, err, headers)
        return True


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up (or a fault we injected ourselves) is not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """The server in a background thread, for tests: `with ScriptedServer(script) as srv: srv.base_url`."""

    def __init__(self, script: str | Path | list[Any] | dict[str, Any], record: str | Path | None = None,
                 host: str = "127.0.0.1", port: int = 0):
        self.turns, self.models = load_script_and_models(script)
        self.state = _ScriptState(self.turns, Path(record) if record is not None else None, self.models,
                                  load_agents(script))
        self.host = host
        self.port = port
        self.base_url = ""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every model request received so far: {"path", "body"}."""
        return list(self.state.requests)

    @property
    def count_requests(self) -> list[dict[str, Any]]:
        """Every count_tokens body received so far."""
        return list(self.state.count_requests)

    @property
    def credentials(self) -> list[dict[str, str]]:
        """Every request so far, with the fingerprint of the key it carried: {"method", "path", "key"}."""
        return list(self.state.credentials)

    @property
    def catalogue_requests(self) -> list[str]:
        """Every GET of the model catalogue so far (path and query)."""
        return list(self.state.catalogue_requests)

    def bind(self) -> str:
        """Bind the socket (no serving yet) and return the base URL."""
        httpd = _QuietServer((self.host, self.port), _Handler)
        httpd.state = self.state  # type: ignore[attr-defined]  # the handlers' shared script state, on the stdlib server
        self._httpd = httpd
        address, port = httpd.server_address[:2]
        host = address.decode() if isinstance(address, bytes) else address
        self.port = int(port)
        self.base_url = f"http://{host}:{port}"
        return self.base_url

    def start(self) -> str:
        base_url = self.bind()
        assert self._httpd is not None
        # A short poll interval makes stop() quick; tests start and stop many servers.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-server", daemon=True)
        self._thread.start()
        return base_url

    def serve_forever(self) -> None:
        assert self._httpd is not None, "bind() first"
        self._httpd.serve_forever()

    def stop(self) -> None:
        self.state.stopping.set()
        if self._httpd is not None:
            if self._thread is not None:
                self._httpd.shutdown()
                self._thread.join(timeout=5)
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
