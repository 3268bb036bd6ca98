"""Reading a recorded stream from a file or stdin: JSON Lines, a raw SSE capture, or a raw
AWS event stream capture (binary, :func:`parse_eventstream`).

Every command that takes a recorded stream (``replay``, ``test``, ``serve``, ``new --from``)
reads it here, so that they all take the same inputs (README, "Command line"):

- **JSON Lines**: one decoded event a line, as the golden files hold them (blank lines skipped).
- **A raw SSE capture**: the ``text/event-stream`` body as it came over the wire (``curl -N``
  output, a proxy's dump). Read by the WHATWG "Interpreting an event stream" rules
  (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
  lines end in CRLF, LF or CR; a leading BOM is dropped; a blank line dispatches the event;
  a line starting with ``:`` is a comment; ``field:value`` loses one space after the colon, a
  line without a colon is a field with an empty value; ``data`` fields join with ``"\\n"``;
  ``event`` names the event; ``id`` and ``retry`` carry nothing a message is made of; an
  event without data is not dispatched (a keep-alive).
  The event's ``event:`` name travels as ``"_event"`` where its JSON payload has no ``type``
  of its own, as the buffer does with SSE lines (:mod:`engine.stream.chunks`) and as the golden
  files record it. A data field that is not JSON (``data: [DONE]``) is handed on as the SSE line it
  was, so the buffer decides whether it is an end marker of the wire.

An SSE capture and a binary one are read by the decoders of a live stream
(:class:`engine.transport.sse.SSEDecoder`, :class:`engine.transport.eventstream.MessageDecoder`),
fed the whole file at once: one implementation of each framing, whether the bytes come from a
file or from an HTTP response (``engine.sse_chunks``, ``engine.eventstream_chunks``).

Which one a file is, is told from its content, not from its name: bytes that start with an
event stream message whose prelude CRC checks are a binary capture; otherwise its first line
that is not blank says: ``event:``, ``data:``, ``id:``, ``retry:`` or ``:`` starts an SSE
capture, anything else is JSON Lines.

Two deliberate departures from a browser, both so that nothing is dropped without a word
(the decoder's options ``strict_fields`` and ``dispatch_at_end``):

- a field other than ``event``, ``data``, ``id``, ``retry`` is an error naming its line (the
  spec ignores it, for forward compatibility of a live stream; in a capture it is far more
  often a pasted HTTP header or a line of a JSON Lines file), and so is an event whose data is
  empty (the buffer would skip it);
- the last event of a file that does not end with a blank line is dispatched (a browser
  discards it, as a cut connection may have left it incomplete; a file saved by an editor
  loses its final blank line, and a payload that really was cut shows as a JSON error).

Errors are :class:`CaptureError`: ``FILE:LINE: what was expected``.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TransportError
from .eventstream import EventStreamError, MessageDecoder, looks_like_eventstream, message_chunk
from .sse import LINE_BREAK, SSEDecoder, SSEEvent, decode_event

STDIN = "-"

_SSE_FIRST_LINE = re.compile(r"^(?::|(?:event|data|id|retry)(?::|$))")


class CaptureError(ValueError):
    """A stream that cannot be read: its file, the 1-based line (if one is to blame) and what
    was expected there."""

    def __init__(self, file: str, message: str, line: int | None = None) -> None:
        super().__init__(f"{file}: {message}" if line is None else f"{file}:{line}: {message}")
        self.file, self.line, self.message = file, line, message


@dataclass(frozen=True)
class CapturedEvent:
    """One event of a recorded stream.

    ``value`` is what ``buf.add`` takes: the decoded JSON (with ``_event`` where the SSE name
    travels outside a payload without ``type``), or, for a data field that is not JSON, the SSE
    line ``data: TEXT``. ``line`` is where the event is in the file (its JSON Lines line, or
    the first ``data:`` line of the SSE event). ``data`` is the payload text as recorded (the
    line, or the data fields joined). ``name`` is the SSE ``event:`` name (None in JSON Lines,
    and where none was given); ``sse``: the event came from an SSE capture; ``is_json``: its
    data is JSON (False for ``data: [DONE]`` and other text)."""

    line: int
    value: Any
    data: str
    name: str | None = None
    sse: bool = False
    is_json: bool = True


def read_capture(path: str | Path) -> list[CapturedEvent]:
    """The events of the stream at ``path`` (``-``: stdin): JSON Lines, an SSE capture, or a
    binary AWS event stream capture (Bedrock's ``converse-stream`` body)."""
    file = label(path)
    try:
        raw = sys.stdin.buffer.read() if str(path) == STDIN else Path(path).read_bytes()
    except FileNotFoundError:
        raise CaptureError(file, "no such file") from None
    except IsADirectoryError:
        raise CaptureError(file, "a folder, not a stream file") from None
    except OSError as exc:
        raise CaptureError(file, f"cannot read: {exc.strerror or exc}") from None
    return parse_bytes(raw, file)


def parse_bytes(raw: bytes, file: str) -> list[CapturedEvent]:
    """The events of a stream's bytes, whichever of the three it is (told from the content)."""
    if looks_like_eventstream(raw):
        return parse_eventstream(raw, file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CaptureError(file, f"not UTF-8 text: {exc.reason}", line) from None
    return parse_capture(text, file)


def label(path: str | Path) -> str:
    """How messages name the stream: the path as given, ``<stdin>`` for ``-``."""
    return "<stdin>" if str(path) == STDIN else str(path)


def parse_capture(text: str, file: str) -> list[CapturedEvent]:
    """The events of ``text``, told from its first non-blank line: an SSE capture or JSON
    Lines. ``file`` names the stream in errors."""
    lines = LINE_BREAK.split(text.removeprefix("\ufeff"))  # then "", a blank line
    first = next((line for line in lines if line.strip()), "")
    if _SSE_FIRST_LINE.match(first):
        return parse_sse(text, file)
    return parse_json_lines(lines, file)


def parse_json_lines(lines: list[str], file: str) -> list[CapturedEvent]:
    """One JSON value a line; blank lines skipped; a line that is not JSON is an error."""
    events: list[CapturedEvent] = []
    for number, line in enumerate(lines, 1):
        data = line.strip()
        if not data:
            continue
        try:
            value = json.loads(line)  # the line as it is: columns count from its start
        except json.JSONDecodeError as exc:
            hint = "" if events else " (expected JSON Lines, or an SSE capture: event:/data: lines)"
            message = f"not JSON: {exc.msg} (column {exc.colno}){hint}"
            raise CaptureError(file, message, number) from None
        except RecursionError:
            raise CaptureError(file, "JSON nested deeper than can be read", number) from None
        events.append(CapturedEvent(number, value, data))
    return events


def parse_sse(text: str, file: str) -> list[CapturedEvent]:
    """The events of an SSE capture: the live stream's decoder (:mod:`engine.transport.sse`),
    fed the whole text, with the two departures for files (see the module docstring)."""
    decoder = SSEDecoder(strict_fields=True, dispatch_at_end=True)
    try:
        return [_captured(event, file) for event in decoder.feed(text) + decoder.end()]
    except TransportError as exc:
        raise CaptureError(file, exc.reason, exc.line) from None


def _captured(event: SSEEvent, file: str) -> CapturedEvent:
    """The captured event ``event`` makes: its data decoded as a live stream's would be; data
    that is empty is an error here (the buffer would skip it)."""
    data = event.text
    if not data.strip():
        expected = "expected a JSON payload, or an end marker such as [DONE]"
        raise CaptureError(file, f"an event with empty data ({expected})", event.line)
    value, is_json = decode_event(event)
    return CapturedEvent(event.line, value, data, event.name or None, sse=True, is_json=is_json)


def parse_eventstream(raw: bytes, file: str) -> list[CapturedEvent]:
    """The events of a binary AWS event stream capture, both CRCs of every message checked
    (:class:`engine.transport.eventstream.MessageDecoder`, the live stream's decoder, fed once).

    An event message's ``:event-type`` (an exception message's ``:exception-type``) travels
    as ``_event``, the payload's first key, as the golden files record Bedrock's frames. An
    event's ``line`` is its message's ordinal (1-based); errors name the byte offset."""
    decoder = MessageDecoder()
    try:
        messages = decoder.feed(raw) + decoder.end()  # end: [], or the error of a cut message
    except EventStreamError as exc:
        raise CaptureError(file, f"{exc} (an AWS event stream message)") from None
    try:
        chunks = [(message[0], *message_chunk(message)) for message in messages]
    except EventStreamError as exc:
        raise CaptureError(file, str(exc)) from None
    return [CapturedEvent(number, value, data, name) for number, name, data, value in chunks]
