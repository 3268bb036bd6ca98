"""A fake provider, declared: how each wire is served (``mcs-formats serve``), and its streams.

A descriptor's ``serve`` section says what a provider's HTTP side looks like, so that a
recorded stream can be played back to a client and its official SDK exactly as the provider
sent it, with no line of Python per wire (formats/README.md, "serve"):

- ``endpoints``: the request paths (``{name}`` matches one path segment, ``{name=models/*}``
  the segments of its pattern, as Google's HTTP rules write them), their ``method`` (POST) and
  how a request says it wants a stream: always, never, or a field of the JSON body (with its
  default); ``query`` names parameters a streaming endpoint needs (answered 400 without them);
  ``header``, one a request must carry (two wires' SDKs ask the same path); ``reply``, the
  body of a request SDKs make besides the chat call (a model lookup), rendered with
  ``{request, params, streams}``;
- ``framing``: ``sse`` (``event:`` lines from the recorded ``_event`` name or a payload field,
  the line ending, a closing ``data:`` sentinel), ``ndjson`` (one JSON text a line) or
  ``aws_eventstream`` (binary messages with CRCs, engine.transport.eventstream; an event named
  ``...<exception_suffix>`` goes out as an exception message); ``accept``, another framing for
  a request whose Accept header names its media type (Cohere's JSON lines); ``headers``, on
  every reply (the provider's request id);
- ``response``: the non-streaming response, a template (:mod:`engine.compile.templates`) around the
  assembled message, rendered with ``{message, stop_reason, usage, first, last, last_event,
  request, params, choices}`` (``first``/``last``: the first and last recorded payloads;
  ``choices``: one ``{index, message, stop_reason}`` a choice of an n > 1 stream; ``last_event``:
  the last event's type, as :func:`typed_event` reads it, or None; ``request``: the JSON body;
  ``params``: the path's ``{name}`` segments); ``error``: the status, headers and body of a
  non-streaming response to a stream that ended with a provider error, as the provider answers
  that kind of error (context adds ``error``, and ``kind``: the entry of the ``kinds`` table
  the error's ``kind`` names, :class:`ErrorReply`).

This module compiles the section once (:func:`compile_serve`) and turns recordings into
bytes; :mod:`engine.cli.serve_http` answers HTTP with it. The schema (``$defs/serve`` and below)
states the section's shape; the compiler keeps only what a schema cannot say
(:func:`check_serve`: the templates, a path's ``{name}`` given twice), and a section that
never went through the validator is asked of the same schema first. Payload text goes out
byte for byte as recorded: only the ``_event`` key is cut from it (the name travels in the
frame, as it did on the wire).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..transport import eventstream
from ..transport.captures import CapturedEvent, CaptureError, parse_bytes
from ..transport.sse import EVENT_KEY
from .schema import Located, section_problems, with_defaults
from .templates import Template, compile_into

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:=([^{}]+))?\}")
_LEADING_EVENT_KEY = re.compile(r'^\s*\{\s*"_event"\s*:\s*"(?:[^"\\]|\\.)*"\s*(,\s*)?')


class ServeError(ValueError):
    """A ``serve`` section the engine cannot use: ``problems`` holds every problem as
    ``(pointer, message, rule)``, in pointer order; the message names each, one a line,
    ``pointer: message``, the first first."""

    def __init__(self, problems: list[Located]) -> None:
        super().__init__("\n".join(f"{pointer}: {message}" for pointer, message, _ in problems))
        self.problems = problems


# -- recordings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedEvent:
    """One recorded event: its name outside the payload (if any), the payload text and object,
    and the line as recorded (what the buffer is fed)."""

    name: str | None
    text: str
    payload: dict[str, Any]
    recorded: dict[str, Any]


def read_recording(path: str | Path, end_markers: Collection[str] = ()) -> list[RecordedEvent]:
    """The events of one recorded stream (JSON Lines, a raw SSE or AWS event stream capture,
    read by engine.transport.captures), in order. Raises ``ValueError`` naming the line of one
    that is not a JSON object. A capture's end marker (``data: [DONE]``, one of ``end_markers``: the
    built-in wires' ``done_sentinels``, which the caller reads from the registry, a floor above this
    one) is left to the framing, which sends the wire's own where the wire has one; other text is an
    error."""
    events = []
    for captured in parse_bytes(Path(path).read_bytes(), str(path)):  # an OSError: the caller's
        if not captured.is_json:
            if captured.data.strip() in end_markers:
                continue
            message = f"expected a JSON object or an end marker, got the text {captured.data!r}"
            raise CaptureError(str(path), message, captured.line)
        if not isinstance(captured.value, dict):
            raise ValueError(f"{path}:{captured.line}: a recorded event must be a JSON object")
        events.append(_recorded(captured))
    return events


def _recorded(captured: CapturedEvent) -> RecordedEvent:
    """A JSON Lines line, or an SSE event: its ``event:`` name, its data as sent (one line of
    it; data spread over several ``data:`` fields goes out compact, on one)."""
    if not captured.sse:
        return _split_event_name(captured.data, captured.value)
    payload = json.loads(captured.data)  # as sent: without the `_event` the reader adds
    text = captured.data.strip() if "\n" not in captured.data else _compact(payload)
    if EVENT_KEY in payload:  # the capture's data holds a recorded `_event` itself
        return _split_event_name(text, payload)
    return RecordedEvent(captured.name, text, payload, captured.value)


def _split_event_name(text: str, obj: dict[str, Any]) -> RecordedEvent:
    """Take ``_event`` out of the payload; keep the rest of the text as recorded when the cut
    leaves the same JSON (it does unless ``_event`` was not the first key)."""
    if EVENT_KEY not in obj:
        return RecordedEvent(None, text, obj, obj)
    payload = {k: v for k, v in obj.items() if k != EVENT_KEY}
    cut = _LEADING_EVENT_KEY.sub("{", text, count=1)  # a JSON text less its first member
    text = cut if json.loads(cut) == payload else _compact(payload)
    return RecordedEvent(str(obj[EVENT_KEY]), text, payload, obj)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- endpoints -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One request path of the provider (with its method) and how a request to it asks for a
    stream, or, for a lookup the SDKs make besides the chat call (a model's metadata), the
    ``reply`` it gets instead of a stream."""

    path: str
    pattern: re.Pattern[str]
    stream_field: str | None = None  # the body's field that asks; None: the path says
    stream_default: bool = False  # what the path says, or the field when the body has none
    query: dict[str, str] = field(default_factory=dict)
    method: str = "POST"
    reply: Template | None = field(default=None, compare=False)  # compiled: no equality
    header: str | None = None  # answered only when the request carries it (lower case)

    def match(self, path: str) -> dict[str, str] | None:
        """The path's ``{name}`` segments when this endpoint answers it, else None."""
        found = self.pattern.match(path)
        return None if found is None else found.groupdict()

    def wants_stream(self, body: Any) -> bool:
        value = body.get(self.stream_field) if isinstance(body, dict) else None
        return self.stream_default if value is None else value is True

    def missing_query(self, query: dict[str, list[str]]) -> dict[str, str]:
        """The declared query parameters this request lacks (or gives another value)."""
        return {k: v for k, v in self.query.items() if query.get(k) != [v]}


def _endpoint(spec: Any, pointer: str, problems: list[Located]) -> Endpoint | None:
    """One endpoint, as the schema checked it (None without a path to read: the schema says
    why; a stream of another type is its to refuse too, and an endpoint of a section it
    refused is never used). A name given twice in the path is a problem the schema cannot see."""
    if not isinstance(spec, dict) or not isinstance(spec.get("path"), str):
        return None
    path, stream, header = spec["path"], spec.get("stream", False), spec.get("header")
    names = [name for name, _ in _PLACEHOLDER.findall(path)]
    if twice := sorted({name for name in names if names.count(name) > 1}):
        shown = ", ".join(f"{{{name}}}" for name in twice)
        problems.append((f"{pointer}/path", f"{shown} twice: each name is one segment", "path"))
        return None
    reply = compile_into(spec["reply"], f"{pointer}/reply", problems) if "reply" in spec else None
    # a bool: the path says, as a field's default would (which the schema's default fills in)
    body: dict[str, Any] = stream if isinstance(stream, dict) else {"default": stream}
    asked = body.get("field"), body["default"], spec.get("query", {}), spec["method"]
    header = header.lower() if isinstance(header, str) else None
    return Endpoint(path, _path_pattern(path), *asked, reply, header)


def _path_pattern(path: str) -> re.Pattern[str]:
    """``/model/{model}/converse``: each ``{name}`` one segment (no ``/``), the rest literal;
    ``{name=models/*}`` (Google's HTTP rule syntax) the segments of its pattern, each ``*``
    one segment, the name holding them all (``models/gemini-2.0-flash``)."""
    parts = _PLACEHOLDER.split(path)  # literal, then (name, its pattern or None, literal)...
    out = [re.escape(parts[0])]
    for name, inner, literal in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        segments = re.escape(inner or "*").replace(r"\*", "[^/]+")
        out.append(f"(?P<{name}>{segments}){re.escape(literal)}")
    return re.compile("^" + "".join(out) + "$")


# -- framing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Framing:
    """How a response body carries the events: one frame (one write and flush) per event."""

    kind: str
    content_type: str
    sse_event: str | None = None
    line_end: str = "\n"
    done: str | None = None
    exception_suffix: str | None = None

    def frames(self, events: list[RecordedEvent]) -> Iterator[bytes]:
        yield from map(self.frame, events)
        if self.done is not None:
            yield self._sse(None, self.done)

    def frame(self, event: RecordedEvent) -> bytes:
        if self.kind == "ndjson":
            return (event.text + "\n").encode("utf-8")
        if self.kind == "aws_eventstream":
            event_type, payload = typed_event(event)
            if self.exception_suffix and event_type.endswith(self.exception_suffix):
                return eventstream.exception_message(event_type, payload)
            return eventstream.event_message(event_type, payload)
        name = event.name
        if name is None and self.sse_event is not None:
            value = event.payload.get(self.sse_event)
            name = value if isinstance(value, str) else None
        return self._sse(name, event.text)

    def _sse(self, name: str | None, data: str) -> bytes:
        end = self.line_end
        head = f"event: {name}{end}" if name else ""
        return f"{head}data: {data}{end}{end}".encode()


def typed_event(event: RecordedEvent) -> tuple[str, str]:
    """(event type, payload text): the recorded ``_event`` name, or the one key of an event
    recorded as the SDKs yield it (``{"TYPE": {...fields}}``)."""
    if event.name is not None:
        return event.name, event.text
    if len(event.payload) == 1:
        ((name, fields),) = event.payload.items()
        if isinstance(fields, dict):
            return name, _compact(fields)
    raise ValueError(
        "an event-stream event needs its type: an `_event` name, or one key holding an object;"
        f" got {event.text[:120]}"
    )


def _framing(spec: dict[str, Any]) -> Framing:
    """The framing, as the schema checked it (its kinds, their options, the line endings): its
    keys are Framing's fields."""
    given = {key: value for key, value in spec.items() if key in _FRAMING_KEYS}
    return Framing(**{"kind": "", "content_type": "", **given})


_FRAMING_KEYS = frozenset(f.name for f in fields(Framing))


# -- the section -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorReply:
    """The ``error`` part of the section: the reply to a stream that ended with a provider error.

    A provider answers each kind of error with its own status (and some with a header naming
    it), so the section can say the error's kind (``kind``: a template, or a list of them, the
    first that names an entry of ``kinds`` wins) and hold a table of plain data per kind
    (``kinds``); the entry found is ``kind`` in the context of ``status``, ``headers`` and
    ``body``, so that each reads the table as it needs."""

    body: Template
    status: Template  # each absent one is the template ``null``: no status (500), no headers
    headers: Template
    kind: Template
    kinds: dict[str, Any]

    def reply(self, context: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        """(status, body, headers); a status that is not an HTTP error (400 to 599) is 500, a
        header that renders to nothing is not sent."""
        named = self.kind.render(context)
        keys = named if isinstance(named, list) else [named]
        found = next((self.kinds[k] for k in keys if isinstance(k, str) and k in self.kinds), None)
        context = {**context, "kind": found}
        status = self.status.render(context)
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status < 600:
            status = 500
        headers = self.headers.render(context)
        headers = {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}
        return status, self.body.render(context, {}), headers


@dataclass(frozen=True)
class ServeSpec:
    """A descriptor's ``serve`` section, compiled: immutable and shared by every request."""

    endpoints: tuple[Endpoint, ...]
    framing: Framing
    headers: dict[str, str]
    response: Template
    error: ErrorReply | None
    accept: tuple[tuple[str, Framing], ...] = ()

    def route(
        self, path: str, method: str = "POST", headers: Collection[str] = ()
    ) -> tuple[Endpoint, dict[str, str]] | None:
        """The endpoint answering ``method path`` from a request carrying ``headers`` (their
        names, lower case) and its ``{name}`` segments, or None."""
        for endpoint in self.endpoints:
            if endpoint.method != method or endpoint.header not in (None, *headers):
                continue
            params = endpoint.match(path)
            if params is not None:
                return endpoint, params
        return None

    def reply(self, context: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        """(status, body, headers) of the non-streaming response: the ``error`` section's when
        the context carries a provider error and the section has one, else ``response``; the
        section's ``headers`` go with either, the error's own after them."""
        if context.get("error") is not None and self.error is not None:
            status, body, headers = self.error.reply(context)
            return status, body, {**self.headers, **headers}
        return 200, self.response.render(context, {}), dict(self.headers)


def compile_serve(descriptor: dict[str, Any]) -> ServeSpec | None:
    """The compiled ``serve`` section of a descriptor, or None when it has none. Raises
    :class:`ServeError` with every problem: the section may not have come through the
    validator, so it is asked of the schema (``$defs/serve``), then compiled."""
    spec = descriptor.get("serve")
    if spec is None:
        return None
    compiled, found = check_serve(descriptor)
    problems = sorted({*section_problems(spec, "serve", "/serve"), *found})
    if problems:
        raise ServeError(problems)
    # The schema passed it: every part has its shape (endpoints and framing are required,
    # each endpoint's path a string and its stream a boolean or an object), and a path's
    # name given twice is a problem raised above, so every part was read.
    assert compiled is not None
    return compiled


def check_serve(descriptor: dict[str, Any]) -> tuple[ServeSpec | None, list[Located]]:
    """The compiled ``serve`` section (None when there is none or part of it could not be
    read) and every problem in it that a schema cannot say, each ``(pointer, message, rule)``:
    its templates' (every one), and a path's ``{name}`` given twice. The section is taken as
    the schema checked it; what is not of the schema's shape is left to the schema to report,
    so the validator asks this of a section the schema refused and reports both, each at its
    line."""
    spec = with_defaults(descriptor.get("serve"), "serve")
    if not isinstance(spec, dict):
        return None, []
    problems: list[Located] = []
    listed = spec["endpoints"] if isinstance(spec.get("endpoints"), list) else []
    endpoints = [_endpoint(e, f"/serve/endpoints/{i}", problems) for i, e in enumerate(listed)]
    # required: absent, the schema says so (and the template null stands in)
    response = compile_into(spec.get("response"), "/serve/response", problems)
    error = _error_reply(spec.get("error"), problems)
    framing = _framing(spec["framing"]) if isinstance(spec.get("framing"), dict) else None
    accept = spec["accept"] if isinstance(spec.get("accept"), dict) else {}
    alternatives = tuple((k.lower(), _framing(f)) for k, f in accept.items() if isinstance(f, dict))
    headers = spec["headers"] if isinstance(spec.get("headers"), dict) else {}
    if not endpoints or None in endpoints or framing is None:
        return None, problems
    served = tuple(e for e in endpoints if e is not None)
    return ServeSpec(served, framing, headers, response, error, alternatives), problems


def _error_reply(spec: Any, problems: list[Located]) -> ErrorReply | None:
    """The ``error`` part, its templates' problems added to ``problems`` (None when there is
    none; one without a body is the schema's to refuse)."""
    if not isinstance(spec, dict):
        return None
    keys = ("body", "status", "headers", "kind")
    templates = {key: compile_into(spec.get(key), f"/serve/error/{key}", problems) for key in keys}
    kinds = spec.get("kinds")
    return ErrorReply(**templates, kinds=kinds if isinstance(kinds, dict) else {})
