"""``mcs-formats serve``: recorded streams played back over HTTP on loopback, as their provider.

Standard library only (``http.server``, ``threading``). Each stream is read once, its wire
recognised by the buffer (or given), and served by that wire's ``serve`` section
(:mod:`engine.compile.serve`): a request to one of the wire's endpoints gets the next of the wire's
streams, cycling (each wire keeps its own turn; a non-streaming request takes its turn too),
framed as the provider frames it, one write and flush per event, HTTP/1.1 chunked; a
non-streaming request gets the stream's assembled message in the provider's own envelope.

A request under ``/s/KEY/`` (KEY as listed at start) gets that stream whatever the turn, so
that a test suite can run one server for many streams; anything the server cannot answer is a
JSON 4xx naming what was asked and what is served, never a silent default: a method the path
does not take is a 405, a body whose length or chunk size cannot be read a 400 (and the
connection closed: where the next request would start is unknown). The requests an SDK makes
besides the chat call (model lookups) are endpoints with a ``reply``; every reply of a wire
carries its ``headers`` (the provider's request id). Every request, whatever its method, is one
``--log`` line. The server is threaded with a listen queue deep enough for a test suite's
burst of clients (``request_queue_size``; the standard library's 5 resets the rest).
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
import sys
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs, unquote, urlsplit

from ..compile.serve import (
    Endpoint,
    Framing,
    RecordedEvent,
    ServeError,
    ServeSpec,
    read_recording,
    typed_event,
)
from ..language.registry import end_markers
from ..stream.buffer import LLMStreamBuffer

_PREFIX = re.compile(r"^/s/(?P<key>[A-Za-z0-9_.~-]+)(?P<rest>/.*)$")


class ServeSetupError(ValueError):
    """A stream or a format that cannot be served; the message names the file."""


@dataclass
class Recording:
    """One stream to serve: its key, file, wire and events, and (once asked) its message."""

    key: str
    path: Path
    wire: str
    spec: ServeSpec
    events: list[RecordedEvent]
    frames: dict[Framing, list[bytes]] = field(default_factory=dict)  # each framing's, at load
    assembled: dict[str, Any] = field(default_factory=dict)
    unassembled: str | None = None  # why a non-streaming request cannot be answered

    def context(self, request: Any, params: dict[str, str]) -> dict[str, Any]:
        """What the non-streaming templates read (engine.compile.serve's module docstring)."""
        return {**self.assembled, "request": request, "params": params}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_recordings(paths: Sequence[str | Path], strategy: Any = None) -> list[Recording]:
    """Read and assemble every stream; its wire is ``strategy``'s, or the one the buffer
    recognises. Raises :class:`ServeSetupError` naming the file that cannot be served."""
    out: list[Recording] = []
    keys: set[str] = set()
    specs: dict[str, ServeSpec] = {}
    for given in paths:
        path = Path(given)
        try:
            events = read_recording(path, end_markers())
        except OSError as exc:
            raise ServeSetupError(f"{given}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ServeSetupError(str(exc)) from None
        if not events:
            raise ServeSetupError(f"{given}: no events (an empty stream)")
        wire, buf = _assemble(given, events, strategy)
        spec = specs.get(wire) or _spec_of(given, wire, strategy)
        specs[wire] = spec
        key = _unique_key(f"{wire}.{path.stem}", keys)
        try:
            framings = [spec.framing, *(framing for _, framing in spec.accept)]
            frames = {framing: list(framing.frames(events)) for framing in framings}
        except ValueError as exc:
            raise ServeSetupError(f"{given}: {exc}") from None
        recording = Recording(key, path, wire, spec, events, frames)
        if isinstance(buf, str):
            recording.unassembled = buf
        else:
            recording.assembled = {
                "message": buf.as_dict(),
                "stop_reason": buf.stop_reason,
                "usage": buf.usage,
                "error": buf.error,
                "first": events[0].payload,
                "last": events[-1].payload,
                "choices": _choices(events, buf),
                "last_event": _event_type(events[-1]),
            }
        out.append(recording)
    return out


def _choices(events: list[RecordedEvent], buf: LLMStreamBuffer) -> list[dict[str, Any]]:
    """One ``{index, message, stop_reason}`` a choice of the stream, in index order: choice 0
    the buffer's, each other one (an n > 1 stream) replayed on its own buffer."""
    others = sorted(_choice_indexes(events, buf.strategy) - {0})
    bufs = [buf] + [_replayed(events, buf.strategy, index) for index in others]
    return [
        {"index": index, "message": b.as_dict(), "stop_reason": b.stop_reason}
        for index, b in zip([0, *others], bufs, strict=True)
    ]


def _choice_indexes(events: list[RecordedEvent], strategy: Any) -> set[int]:
    """The choices the events carry, as the wire's choice list says (none without one)."""
    program = getattr(strategy, "program", None)
    read = getattr(program, "choice_list", None)
    if program is None or read is None:
        return set()
    found = set()
    for event in events:
        entries = read(event.payload)
        for position, entry in enumerate(entries if isinstance(entries, list) else ()):
            index = entry.get(program.choice_key, position) if isinstance(entry, dict) else None
            if isinstance(index, int) and index >= 0:
                found.add(index)
    return found


def _assemble(
    given: str | Path, events: list[RecordedEvent], strategy: Any
) -> tuple[str, LLMStreamBuffer | str]:
    """(wire, the replayed buffer) by ``strategy``, else by the format that recognises the
    stream; a stream no format assembles (one error line is too short to recognise) is still
    served, as the wire ``strategy`` or its folder names (``tests/golden/<format>/``), with
    (wire, why it does not assemble)."""
    try:
        buf = _replayed(events, strategy)
        return buf.format or "", buf
    except Exception as exc:  # noqa: BLE001 - any refusal names the file
        why = f"the stream does not assemble: {exc}"
    wire = getattr(strategy, "name", None) or _folder_format(given)
    if wire is None:
        raise ServeSetupError(f"{given}: {why}; name its format with --format") from None
    return wire, why


def _replayed(events: list[RecordedEvent], strategy: Any, choice: int = 0) -> LLMStreamBuffer:
    buf = LLMStreamBuffer(strategies=None if strategy is None else [strategy], choice=choice)
    for event in events:
        buf.add(event.recorded)
    buf.close()
    if not buf.format:
        raise ValueError("no format recognises it (try --format)")
    return buf


def _event_type(event: RecordedEvent) -> str | None:
    """The event's type where it has one (an ``_event`` or ``event:`` name, or the one key of an
    event recorded as the SDKs yield it): what an error reply may name the error by."""
    try:
        return typed_event(event)[0]
    except ValueError:
        return None


def _folder_format(given: str | Path) -> str | None:
    from ..language.builtin_files import builtin_names

    name = Path(given).resolve().parent.name
    return name if name in builtin_names() else None


def _spec_of(given: str | Path, wire: str, strategy: Any) -> ServeSpec:
    """The wire's serve section as its strategy holds it: compiled by the pass that validated
    the descriptor (once per load), or on first use for a strategy made from a dict."""
    if strategy is None:
        from ..language.registry import load_format

        strategy = load_format(wire)
    try:
        spec: ServeSpec | None = strategy.serve_spec() if hasattr(strategy, "serve_spec") else None
    except ServeError as exc:  # every problem, one a line
        lines = "".join(f"\n  {pointer}: {message}" for pointer, message, _ in exc.problems)
        raise ServeSetupError(f"format {wire}: its serve section cannot be used:{lines}") from None
    if spec is None:
        raise ServeSetupError(f"{given}: format {wire} has no serve section (formats/README.md)")
    return spec


def _unique_key(stem: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem)
    key = base
    for n in itertools.count(2):
        if key not in taken:
            break
        key = f"{base}~{n}"
    taken.add(key)
    return key


class FakeProvider:
    """The streams of :func:`load_recordings`, served on a loopback address.

    ``log``: a text stream that gets one JSON line per request (method, path, query, headers,
    body, the stream served and whether it streamed), written before the reply, flushed.
    """

    def __init__(
        self,
        recordings: list[Recording],
        host: str = "127.0.0.1",
        port: int = 0,
        delay: float = 0.0,
        log: TextIO | None = None,
    ) -> None:
        if not is_loopback(host):
            raise ValueError(f"--host {host}: only a loopback address (127.0.0.1, ::1, localhost)")
        self.recordings = recordings
        self.by_key = {r.key: r for r in recordings}
        self.wires: dict[str, list[Recording]] = {}
        for recording in recordings:
            self.wires.setdefault(recording.wire, []).append(recording)
        self._turns = {wire: itertools.cycle(streams) for wire, streams in self.wires.items()}
        self.delay = delay
        self._log = log
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"provider": self})
        server_class = _Server6 if ":" in host else _Server
        self.httpd = server_class((host, port), handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False

    @property
    def url(self) -> str:
        address = self.httpd.server_address
        host, port = str(address[0]), int(address[1])
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.1)

    def close(self) -> None:
        self.httpd.server_close()

    # -- what a request gets -----------------------------------------------------------------

    def next_of(self, wire: str) -> Recording:
        with self._lock:
            return next(self._turns[wire])

    def route(
        self, path: str, method: str, headers: Collection[str] = ()
    ) -> Routed | tuple[int, str]:
        """Where ``method path`` goes from a request carrying ``headers`` (names, lower case),
        or (status, why not): 404 for a path no endpoint has, 405 for a method it does not take."""
        prefix = _PREFIX.match(path)
        if prefix is not None:
            recording = self.by_key.get(prefix["key"])
            if recording is None:
                return 404, f"no stream {prefix['key']!r}; streams: {', '.join(self.by_key)}"
            candidates: list[tuple[Recording | None, str]] = [(recording, recording.wire)]
            path = prefix["rest"]
        else:
            candidates = [(None, wire) for wire in self.wires]
        routes = []
        for picked, wire in candidates:
            spec = self.wires[wire][0].spec
            found = spec.route(path, method, headers)
            if found is not None:
                routes.append(Routed(picked, wire, spec, *found))
        if routes:  # an endpoint asking for a header the request carries is the more precise
            return min(routes, key=lambda r: r.endpoint.header is None)
        endpoints = [e for _, wire in candidates for e in self.wires[wire][0].spec.endpoints]
        endpoints = [e for e in endpoints if e.match(path) is not None]
        wanted = sorted({e.header for e in endpoints if e.method == method and e.header})
        if wanted:  # the path and method are served, to a request carrying the header
            return 400, f"{method} {path} is answered to a request with the {wanted[0]} header"
        allowed = sorted({e.method for e in endpoints})
        if allowed:
            return 405, f"{path} answers {', '.join(allowed)} only, not {method}"
        if prefix is not None:
            return 404, (
                f"stream {prefix['key']} is a {candidates[0][1]} stream; {path} is not its"
                f" endpoint ({_paths(self.wires[candidates[0][1]][0].spec)})"
            )
        served = "; ".join(f"{w}: {_paths(s[0].spec)}" for w, s in self.wires.items())
        return 404, f"no endpoint at {path}; served: {served}"

    def record(self, entry: dict[str, Any]) -> None:
        if self._log is None:
            return
        line = json.dumps(redacted(entry), ensure_ascii=False) + "\n"
        with self._lock:
            self._log.write(line)
            self._log.flush()


@dataclass(frozen=True)
class Routed:
    """A request's destination: the stream it names (None: the wire's next), its wire, the
    wire's serve section, the endpoint and the path's ``{name}`` segments."""

    recording: Recording | None
    wire: str
    spec: ServeSpec
    endpoint: Endpoint
    params: dict[str, str]


# Credentials as the SDKs send them: a log is read and shared, a key in it is a key leaked.
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key"}
    | {"x-amz-security-token"}
)
_SECRET_QUERY = frozenset({"x-amz-signature", "x-amz-credential", "x-amz-security-token", "key"})
REDACTED = "[redacted]"


def redacted(entry: dict[str, Any]) -> dict[str, Any]:
    """A log entry without the credentials a request carried (the header names, of any case,
    in ``_SECRET_HEADERS``, the query parameters in ``_SECRET_QUERY``): the name stays, so that
    a test can see what was sent, and an ``Authorization`` keeps its scheme (``Bearer``,
    ``AWS4-HMAC-SHA256``), the rest of the value is ``[redacted]``."""
    headers = {
        name: _redacted_value(name.lower(), value) if name.lower() in _SECRET_HEADERS else value
        for name, value in entry.get("headers", {}).items()
    }
    query = "&".join(
        f"{part.split('=', 1)[0]}={REDACTED}"
        if unquote(part.split("=", 1)[0]).lower() in _SECRET_QUERY
        else part
        for part in str(entry.get("query", "")).split("&")
    )
    return {**entry, "headers": headers, "query": query}


def _redacted_value(name: str, value: str) -> str:
    scheme, space, _ = value.partition(" ")
    return f"{scheme} {REDACTED}" if space and name.endswith("authorization") else REDACTED


def _paths(spec: ServeSpec) -> str:
    return ", ".join(e.path for e in spec.endpoints)


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # a burst of clients waits to be accepted, none is reset

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up (closing its keep-alive connection) is no error; others are."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Server6(_Server):
    import socket as _socket

    address_family = _socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.1"  # a refused request line still gets a status line
    disable_nagle_algorithm = True  # one small write per event: no delayed-ACK stalls
    timeout = 30  # an idle keep-alive connection is dropped after this
    provider: FakeProvider  # set on the subclass FakeProvider makes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the log is --log's
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def do_HEAD(self) -> None:  # noqa: N802 - answered (405) without a body
        self._handle("HEAD")

    def do_OPTIONS(self) -> None:  # noqa: N802
        self._handle("OPTIONS")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What http.server refuses itself (a method it has no handler for, a request line
        that is not HTTP) is logged and answered in JSON, as every other refusal."""
        self.close_connection = True
        split = urlsplit(getattr(self, "path", "") or "")
        entry = {"method": self.command or "", "path": split.path, "query": split.query}
        self.provider.record({**entry, "headers": {}, "body": "", "status": code})
        self._json(code, _error(message or explain or f"HTTP {code}"))

    def _handle(self, method: str) -> None:
        """One request, whatever its method: logged (one line, before the reply), answered."""
        split = urlsplit(self.path)
        entry: dict[str, Any] = {
            "method": method,
            "path": split.path,
            "query": split.query,
            "headers": dict(self.headers.items()),
        }
        try:
            raw = self._read_body()
        except ValueError as exc:
            self.close_connection = True  # where the next request would start is unknown
            self.provider.record({**entry, "body": "", "status": 400})
            return self._json(400, _error(f"{split.path}: {exc}"))
        entry["body"] = raw.decode("utf-8", "replace")
        names = {name.lower() for name in self.headers}
        routed = self.provider.route(split.path, method, names)
        if isinstance(routed, tuple):
            self.provider.record({**entry, "status": routed[0]})
            return self._json(routed[0], _error(routed[1]))
        headers, endpoint = routed.spec.headers, routed.endpoint
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            self.provider.record({**entry, "status": 400})
            return self._json(400, _error(f"{split.path}: the request body is not JSON"), headers)
        if endpoint.reply is not None:
            streams = [r.assembled for r in self.provider.wires[routed.wire]]
            context = {"request": body, "params": routed.params, "streams": streams}
            self.provider.record({**entry, "status": 200})
            return self._json(200, endpoint.reply.render(context, {}), headers)
        streaming = endpoint.wants_stream(body)
        missing = endpoint.missing_query(parse_qs(split.query)) if streaming else {}
        if missing:
            self.provider.record({**entry, "status": 400})
            wanted = "&".join(f"{k}={v}" for k, v in missing.items())
            why = f"{endpoint.path} is served with ?{wanted} only"
            return self._json(400, _error(why), headers)
        recording = routed.recording or self.provider.next_of(routed.wire)
        self.provider.record({**entry, "stream": recording.key, "streaming": streaming})
        if streaming:
            self._stream(recording)
        elif recording.unassembled is not None:
            why = f"stream {recording.key}: {recording.unassembled}"
            self._json(500, _error(why), headers)
        else:
            self._json(*recording.spec.reply(recording.context(body, routed.params)))

    def _read_body(self) -> bytes:
        """The request body, chunked or of its Content-Length; ``ValueError`` saying why when
        the length or a chunk size is not a number of bytes."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                except ValueError:
                    raise ValueError(f"a chunk size is not hexadecimal: {line[:40]!r}") from None
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        given = self.headers.get("Content-Length") or "0"
        if not given.strip().isdigit():
            raise ValueError(f"Content-Length {given!r} is not a number of bytes")
        length = int(given)
        return self.rfile.read(length) if length else b""

    def _stream(self, recording: Recording) -> None:
        spec = recording.spec
        framing = _framing_for(spec, self.headers.get("Accept", ""))
        self.send_response(200)
        self.send_header("Content-Type", framing.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        for name, value in spec.headers.items():
            self.send_header(name, value)
        self.end_headers()
        delay = self.provider.delay
        try:
            for index, frame in enumerate(recording.frames[framing]):
                if delay and index:
                    time.sleep(delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(value, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, text in (headers or {}).items():
            self.send_header(name, text)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


def _framing_for(spec: ServeSpec, accept: str) -> Framing:
    """The framing a request gets: the serve section's ``accept`` one for the first media type
    it names that the request's Accept header lists (Cohere streams JSON lines to a client that
    asks for ``application/json``), else its ``framing``."""
    asked = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return next((framing for kind, framing in spec.accept if kind in asked), spec.framing)


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "mcs_formats_serve"}}


def listing(provider: FakeProvider) -> Iterable[str]:
    """The lines ``serve`` prints after its first: one a stream, KEY, wire and file, tab apart."""
    for recording in provider.recordings:
        yield f"  {recording.key}\t{recording.wire}\t{recording.path}"
