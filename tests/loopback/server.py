"""A threaded HTTP server on 127.0.0.1 that replays a recorded stream as its provider sent it.

Each fixture gets a URL prefix, ``/s/<key>``, registered with ``LoopbackServer.register`` (or
taken from ``LoopbackServer.base_url``). An SDK pointed at ``<url>/s/<key>`` requests its own
endpoint below it, e.g. ``POST /s/<key>/v1/chat/completions``, and the request path alone picks
the framing (``wire.wire_for_path``): SSE with or without ``event:`` lines, ``data: [DONE]``,
CRLF for Gemini, NDJSON for Ollama, the AWS binary event stream for Bedrock.

The reply is HTTP/1.1 with chunked transfer encoding, one chunk per event, as the providers
stream. Only registered fixtures are served; anything else is a 404 naming what was asked.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from .wire import read_events, wire_for_path

_PREFIX = re.compile(r"^/s/(?P<key>[A-Za-z0-9_.~-]+)(?P<rest>/.*)$")


class LoopbackServer:
    """Replays registered fixtures on 127.0.0.1, port chosen by the OS.

    Use as a context manager (or ``start()``/``stop()``)::

        with LoopbackServer() as server:
            base = server.base_url("tests/golden/openai_chat/x.jsonl")   # http://127.0.0.1:P/s/<key>
    """

    def __init__(self) -> None:
        self._fixtures: dict[str, Path] = {}
        self._keys: dict[Path, str] = {}
        self._lock = threading.Lock()
        self.requests: list[dict] = []  # method, path, query, headers, body of each request
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> LoopbackServer:
        handler = type("Handler", (_Handler,), {"loopback": self})
        httpd = _Server(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # an idle keep-alive connection must not hold up stop()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="loopback-server",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- addressing --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, no trailing slash."""
        if self._httpd is None:
            raise RuntimeError("LoopbackServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def register(self, fixture: str | Path) -> str:
        """The URL key under which this fixture is served (the same key on every call)."""
        path = Path(fixture).resolve()
        if not path.is_file():
            raise FileNotFoundError(path)
        with self._lock:
            if path in self._keys:
                return self._keys[path]
            stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{path.parent.name}.{path.stem}")
            key, n = stem, 1
            while key in self._fixtures:
                n += 1
                key = f"{stem}~{n}"
            self._fixtures[key] = path
            self._keys[path] = key
            return key

    def base_url(self, fixture: str | Path) -> str:
        """``http://127.0.0.1:<port>/s/<key>``: point an SDK here (plus ``/v1`` for openai)."""
        return f"{self.url}/s/{self.register(fixture)}"

    def fixture(self, key: str) -> Path | None:
        with self._lock:
            return self._fixtures.get(key)

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client hanging up (closing its keep-alive connection) is no error; others are."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # one small write per event: no 40 ms delayed-ACK stalls
    timeout = 30  # an idle keep-alive connection is dropped after this
    loopback: LoopbackServer  # set on the subclass made in start()

    def log_message(self, format, *args) -> None:  # noqa: A002 - quiet under pytest
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self._read_body()
        split = urlsplit(self.path)
        self.loopback._record(
            {
                "method": "POST",
                "path": split.path,
                "query": split.query,
                "headers": dict(self.headers.items()),
                "body": body,
            }
        )
        match = _PREFIX.match(split.path)
        if not match:
            return self._error(404, f"no fixture prefix /s/<key>/ in {split.path}")
        fixture = self.loopback.fixture(match["key"])
        if fixture is None:
            return self._error(404, f"unknown fixture key {match['key']!r}")
        wire = wire_for_path(match["rest"])
        if wire is None:
            return self._error(404, f"no provider endpoint at {match['rest']}")
        if wire.name == "gemini" and parse_qs(split.query).get("alt") != ["sse"]:
            return self._error(400, "streamGenerateContent is served as alt=sse only")
        self._stream(wire, read_events(fixture))

    def do_GET(self) -> None:  # noqa: N802
        self._read_body()
        self._error(405, "the loopback server answers POST only")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _stream(self, wire, events) -> None:
        self.send_response(200)
        self.send_header("Content-Type", wire.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        if wire.event_stream:
            self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
        self.end_headers()
        try:
            for frame in wire.frames(events):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _error(self, status: int, message: str) -> None:
        payload = json.dumps({"error": {"message": message, "type": "loopback_error"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
