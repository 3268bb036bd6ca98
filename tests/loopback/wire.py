"""Turn a recorded stream (JSON Lines) back into the bytes its provider sent.

A recorded line is one decoded event. Where the event's name travelled outside the payload (an
SSE ``event:`` line, an AWS ``:event-type`` header) the recording carries it as ``"_event"``;
here it goes back out of the payload and into its frame. Payload text is kept byte for byte
wherever possible: the ``_event`` key is cut from the text rather than re-serialising the JSON.

One ``Wire`` per HTTP endpoint the official SDKs call; the server picks it by request path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import eventstream

_LEADING_EVENT_KEY = re.compile(r'^\s*\{\s*"_event"\s*:\s*"(?:[^"\\]|\\.)*"\s*(,\s*)?')


@dataclass(frozen=True)
class Event:
    """One recorded event: its name outside the payload (if any), the payload text and object."""

    name: str | None
    text: str
    obj: dict


def read_events(path: str | Path) -> list[Event]:
    """The events of one recorded stream, in order, each with its payload text as recorded."""
    events = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError(f"{path}:{number}: a recorded event must be a JSON object")
        events.append(_split_event_name(line.strip(), obj))
    return events


def _split_event_name(text: str, obj: dict) -> Event:
    if "_event" not in obj:
        return Event(None, text, obj)
    name = obj["_event"]
    payload = {k: v for k, v in obj.items() if k != "_event"}
    cut = _LEADING_EVENT_KEY.sub("{", text, count=1)
    try:
        if json.loads(cut) == payload:
            return Event(name, cut, payload)
    except json.JSONDecodeError:
        pass
    return Event(name, json.dumps(payload, separators=(",", ":"), ensure_ascii=False), payload)


def bedrock_event(event: Event) -> tuple[str, str]:
    """(event type, payload text) of a Bedrock event in either recorded shape.

    ``{"_event": "contentBlockDelta", ...fields}`` (a decoded frame, padding ``p`` included) or
    boto3's ``{"contentBlockDelta": {...fields}}``.
    """
    if event.name is not None:
        return event.name, event.text
    if len(event.obj) == 1:
        ((name, fields),) = event.obj.items()
        if isinstance(fields, dict):
            return name, json.dumps(fields, separators=(",", ":"), ensure_ascii=False)
    raise ValueError(f"not a Bedrock ConverseStream event: {event.text[:120]}")


def is_bedrock_exception(event_type: str) -> bool:
    """Bedrock's modelled stream errors are the union members named ``...Exception``."""
    return event_type.endswith("Exception")


@dataclass(frozen=True)
class Wire:
    """How one provider endpoint frames its stream."""

    name: str
    content_type: str
    sse: bool = True  # else: NDJSON, or AWS event stream when event_stream is set
    event_lines: bool = False  # SSE `event:` line = the payload's `type`
    line_end: str = "\n"  # SSE line terminator
    done_sentinel: bool = False  # `data: [DONE]` after the last event
    event_stream: bool = False

    def frames(self, events: list[Event]) -> Iterator[bytes]:
        """The response body, one frame (one flush) per recorded event."""
        for event in events:
            yield self.frame(event)
        if self.done_sentinel:
            yield self._sse(None, "[DONE]")

    def frame(self, event: Event) -> bytes:
        if self.event_stream:
            event_type, payload = bedrock_event(event)
            if is_bedrock_exception(event_type):
                return eventstream.exception_message(event_type, payload)
            return eventstream.event_message(event_type, payload)
        if not self.sse:
            return (event.text + "\n").encode("utf-8")
        name = event.name
        if name is None and self.event_lines:
            name = event.obj.get("type")
        return self._sse(name, event.text)

    def _sse(self, name: str | None, data: str) -> bytes:
        end = self.line_end
        head = f"event: {name}{end}" if name else ""
        return f"{head}data: {data}{end}{end}".encode()


SSE = "text/event-stream; charset=utf-8"

# Request path (after the fixture prefix) -> how that endpoint answers.
OPENAI_CHAT = Wire("openai_chat", SSE, done_sentinel=True)
OPENAI_RESPONSES = Wire("openai_responses", SSE, event_lines=True)
ANTHROPIC = Wire("anthropic_messages", SSE, event_lines=True)
COHERE = Wire("cohere_v2", "text/event-stream", event_lines=True)
GEMINI = Wire("gemini", "text/event-stream", line_end="\r\n")
OLLAMA = Wire("ollama", "application/x-ndjson", sse=False)
BEDROCK = Wire(
    "bedrock_converse", "application/vnd.amazon.eventstream", sse=False, event_stream=True
)

_ROUTES: list[tuple[re.Pattern[str], Wire]] = [
    (re.compile(r"^/v1/chat/completions$"), OPENAI_CHAT),
    (re.compile(r"^/v1/responses$"), OPENAI_RESPONSES),
    (re.compile(r"^/v1/messages$"), ANTHROPIC),
    (re.compile(r"^/v2/chat$"), COHERE),
    # google-genai calls v1 unless told otherwise (api_version, GOOGLE_GENAI_API_VERSION).
    (re.compile(r"^/v1(beta)?/models/[^/]+:streamGenerateContent$"), GEMINI),
    (re.compile(r"^/api/chat$"), OLLAMA),
    (re.compile(r"^/model/[^/]+/converse-stream$"), BEDROCK),
]


def wire_for_path(path: str) -> Wire | None:
    """The wire that answers this request path (query string excluded), or None."""
    for pattern, wire in _ROUTES:
        if pattern.match(path):
            return wire
    return None
