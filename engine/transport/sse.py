"""Reading an SSE body (``text/event-stream``) incrementally: pieces in, events out.

A client that streams over raw HTTP gets the body in pieces the transport cut anywhere: one
piece may hold several events, half a line, or half a UTF-8 character. :class:`SSEDecoder`
takes the pieces (bytes or str) and hands back each event as the piece that completes it
arrives, by the WHATWG "Interpreting an event stream" rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
UTF-8 decoded incrementally; a leading BOM dropped; lines end in CRLF, LF or CR (a CR that
ends one piece and an LF that starts the next are one line end); a blank line dispatches the
event; a line starting with ``:`` is a comment; ``field:value`` loses one space after the
colon, a line without a colon is a field with an empty value; ``data`` fields join with
``"\\n"``; ``event`` names the event; ``id`` sets :attr:`SSEDecoder.last_event_id` (unless it
holds a NUL) and ``retry`` :attr:`SSEDecoder.retry` (if all digits); an event without data is
not dispatched (a keep-alive), and its name goes with it.

Where the spec says to ignore a line (an unknown field, a ``retry`` that is not digits, an
``id`` with a NUL), the decoder counts it in :attr:`SSEDecoder.ignored_fields` by field name,
as the buffer counts ``unknown_events``: on a live stream the spec ignores an unknown field so
that servers can add fields, and ending a reply over one would break a working client; but
nothing goes without a word, so it is counted where the client can look. A recorded capture
is held to more (``strict_fields``, :mod:`engine.transport.captures`): there an unknown field is
far more often a pasted HTTP header or a line of another format, so it is an error.

The end of the stream (:meth:`SSEDecoder.end`) is where a live stream and a file differ most:
a live body that stops inside a line, inside an event (data not yet ended by its blank line)
or inside a UTF-8 character was cut, so that is an error saying what was left; a file saved
by an editor loses its final blank line, so ``dispatch_at_end`` takes the text left as a last
line and dispatches the last event.

:func:`decode_event` turns an event into what ``buf.add`` takes, the one rule for a live
stream and a capture: the JSON payload (its ``event:`` name as ``"_event"`` where the payload
has no ``type`` of its own, as the buffer does with SSE lines), or, for data that is not JSON
(``data: [DONE]``), the SSE line it was, so that the buffer decides whether it ends the wire.

Cost: a piece's characters are scanned once (one split); a line cut over many pieces is kept
as its parts and joined once, when its end arrives.
"""

from __future__ import annotations

import json
import re
from codecs import utf_8_decode as _utf8_decode
from typing import Any

from ..errors import TransportError

EVENT_KEY = "_event"
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the spec's end of line
_SSE_LINES = "event:, data:, id:, retry:, a `:` comment, or an empty line ending the event"


class SSEEvent:
    """One dispatched event: its ``name`` (``""`` where none was given: the spec's default,
    ``message``), its ``data`` lines and, for each, ``at``: (its 1-based line in the stream,
    the column where its value starts), to locate an error in the payload."""

    __slots__ = ("name", "data", "at")

    def __init__(self) -> None:
        self.name = ""
        self.data: list[str] = []
        self.at: list[tuple[int, int]] = []

    @property
    def text(self) -> str:
        """The data fields joined with LF, as the spec builds the event's data."""
        return "\n".join(self.data)

    @property
    def line(self) -> int:
        """The line of the event's first ``data`` field."""
        return self.at[0][0]


class SSEDecoder:
    """Pieces of an SSE body in (:meth:`feed`), the events they complete out; :meth:`end` at
    the end of the body. See the module docstring for the rules and the two options."""

    def __init__(self, *, strict_fields: bool = False, dispatch_at_end: bool = False) -> None:
        self.strict_fields, self.dispatch_at_end = strict_fields, dispatch_at_end
        self.last_event_id = ""
        self.retry: int | None = None
        self.ignored_fields: dict[str, int] = {}
        self._event = SSEEvent()
        self._line = 0  # lines completed so far
        self._partial: list[str] = []  # the parts of the line not yet ended
        self._after_cr = False  # the last piece ended in CR: an LF starting the next is its end
        self._at_start = True  # no character yet: a BOM may come
        self._held = b""  # the bytes of a UTF-8 character cut at the end of the last piece
        self._bytes_in = 0
        self._failed: TransportError | None = None  # raised at the next feed or end

    # -- pieces in -------------------------------------------------------------------------

    def feed(self, piece: bytes | bytearray | memoryview | str) -> list[SSEEvent]:
        """The events that ``piece`` completes, in order (often none, often one)."""
        if self._failed is not None:
            raise self._failed
        text = piece if isinstance(piece, str) else self._decode(piece)
        if not text:
            return []
        if self._at_start:
            self._at_start = False
            text = text.removeprefix("\ufeff")  # a BOM
        if self._after_cr:  # the CR that ended the last piece and an LF starting this: one end
            self._after_cr = False
            text = text.removeprefix("\n")
        if "\r" in text:
            lines = LINE_BREAK.split(text)
            self._after_cr = text[-1] == "\r"
        else:
            lines = text.split("\n")
        tail = lines.pop()  # what follows the last line end: the start of a line, or ""
        partial = self._partial
        if lines and partial:
            partial.append(lines[0])
            lines[0] = "".join(partial)
            partial.clear()
        if tail:
            partial.append(tail)
        return self._lines(lines) if lines else []

    def _decode(self, piece: bytes | bytearray | memoryview) -> str:
        """The characters ``piece`` completes; a character cut at its end waits for the next
        (``_held``). Bytes that are not UTF-8: the text before them is taken, and the error is
        raised at the next call, so that the events they complete are handed on first."""
        held = self._held
        data = held + piece if held else piece
        self._bytes_in += len(piece)
        try:
            text, used = _utf8_decode(data, "strict", False)
        except UnicodeDecodeError as exc:
            offset = self._bytes_in - len(data) + exc.start
            self._failed = TransportError(f"not UTF-8 text: {exc.reason}", offset=offset)
            return bytes(data[: exc.start]).decode("utf-8")
        self._held = bytes(data[used:]) if used < len(data) else b""
        return text

    def _lines(self, lines: list[str]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        event = self._event
        number = self._line
        for line in lines:
            number += 1
            if not line:
                if event.data:
                    out.append(event)
                    event = SSEEvent()
                else:
                    event.name = ""  # an event without data is not dispatched: its name goes
                continue
            if line[0] == ":":
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")  # (one space only, as the spec says)
            if field == "data":
                event.data.append(value)
                event.at.append((number, len(line) - len(value)))
            elif field == "event":
                event.name = value
            elif field == "id" and "\0" not in value:
                self.last_event_id = value
            elif field == "retry" and value.isascii() and value.isdigit():
                self.retry = int(value)
            elif self.strict_fields and field not in ("id", "retry"):
                reason = f"expected an SSE line ({_SSE_LINES}), got {_shown(line)}"
                raise TransportError(reason, line=number)
            else:
                self.ignored_fields[field] = self.ignored_fields.get(field, 0) + 1
        self._event = event
        self._line = number
        return out

    def dispatch(self) -> list[SSEEvent]:
        """The event fed so far, as a blank line would end it; none while it has no data, and
        then its name waits for the data (``buf.add`` takes SSE lines a chunk at a time: a
        chunk's data is its event, an ``event:`` line alone names the next chunk's)."""
        return self._lines([""]) if self._event.data else []

    # -- the end ---------------------------------------------------------------------------

    def end(self) -> list[SSEEvent]:
        """The end of the body: the events still to dispatch (with ``dispatch_at_end``), or
        an error saying what was left: a cut UTF-8 character, a line without its end, an
        event whose data was not ended by a blank line."""
        if self._failed is not None:
            raise self._failed
        if self._held:
            left = len(self._held)
            reason = f"the stream ended inside a UTF-8 character: {left} byte(s) left"
            raise TransportError(reason, offset=self._bytes_in - left)
        rest = "".join(self._partial)
        self._partial.clear()
        if self.dispatch_at_end:  # the text left is the last line, and a blank line ends it
            return self._lines([rest, ""])
        if rest:
            size = len(rest.encode("utf-8", "surrogatepass"))
            reason = f"the stream ended inside a line: {size} bytes with no line end"
            raise TransportError(f"{reason} ({_shown(rest)})", line=self._line + 1)
        if self._event.data:
            lines = f"{len(self._event.data)} data line(s) from line {self._event.line}"
            reason = f"the stream ended inside an event: {lines}, not ended by a blank line"
            raise TransportError(reason, line=self._line)
        return []


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def decode_event(event: SSEEvent) -> tuple[Any, bool]:
    """(what ``buf.add`` takes for ``event``, is its data JSON). The JSON payload, with the
    event's name as ``"_event"`` where the payload has no ``type`` of its own; data that is
    not JSON and does not look like an object cut short (``[DONE]``) as the SSE line
    ``data: TEXT``. A JSON object that does not parse is a :class:`TransportError` naming the
    line and column of the stream where the JSON goes wrong."""
    data = event.text
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        if not data.lstrip().startswith("{"):  # not JSON: an end marker, or stray text
            return f"data: {data}", False
        at, column = event.at[exc.lineno - 1]
        reason = f"not JSON: {exc.msg} (column {column + exc.colno})"
        raise TransportError(reason, line=at) from None
    except RecursionError:
        raise TransportError("JSON nested deeper than can be read", line=event.line) from None
    name = event.name
    if name and value.__class__ is dict and "type" not in value and EVENT_KEY not in value:
        value = {EVENT_KEY: name, **value}
    return value, True
