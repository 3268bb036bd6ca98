"""The AWS event stream (``application/vnd.amazon.eventstream``): an encoder, and a decoder of
byte pieces split anywhere (:class:`MessageDecoder`; a whole capture is that, fed once).

Some providers stream in this binary framing rather than SSE (a descriptor's ``serve.framing``
says ``aws_eventstream``), so ``mcs-formats serve`` must speak it for their SDKs (botocore's
parser checks both CRCs) to read the reply. Written from AWS's description of the
encoding (the Lex V2 / Transcribe "Event stream encoding" pages); every integer is big-endian:

    +--------------------------+
    | total length        u32  |  the whole message, these 4 bytes and the final CRC included
    | headers length      u32  |  the headers section only
    | prelude CRC         u32  |  CRC32 of the 8 bytes above
    | headers             ...  |  name length u8, name, value type u8, value
    | payload             ...  |
    | message CRC         u32  |  CRC32 of every byte before it (prelude CRC included)
    +--------------------------+

The CRC is the common CRC32 (the gzip one), i.e. ``zlib.crc32``. A message's fixed overhead
is 16 bytes. Only the string header value type (7: u16 length, then UTF-8 bytes) is needed
here: AWS sends ``:event-type``, ``:content-type``, ``:message-type`` (and ``:exception-type``
on an exception message) as strings.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import TransportError
from .sse import EVENT_KEY

_HEADER_TYPE_STRING = 7
_PRELUDE_LENGTH = 12  # total length, headers length, prelude CRC
_MESSAGE_CRC_LENGTH = 4


def encode_message(headers: Iterable[tuple[str, str]], payload: bytes) -> bytes:
    """One complete event stream message: prelude, prelude CRC, headers (strings, in the
    given order), payload, message CRC."""
    raw_headers = bytearray()
    for name, value in headers:
        raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
        if len(raw_name) > 255:
            raise ValueError(f"header name too long: {name!r}")
        if len(raw_value) > 0xFFFF:
            raise ValueError(f"header value too long for {name!r}")
        raw_headers += struct.pack(">B", len(raw_name)) + raw_name
        raw_headers += struct.pack(">BH", _HEADER_TYPE_STRING, len(raw_value)) + raw_value
    total = _PRELUDE_LENGTH + len(raw_headers) + len(payload) + _MESSAGE_CRC_LENGTH
    prelude = struct.pack(">II", total, len(raw_headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_message(event_type: str, payload: bytes | str | Mapping[str, Any]) -> bytes:
    """A ``:message-type event`` message carrying a JSON payload, as AWS sends each event."""
    return _json_message("event", event_type, payload)


def exception_message(exception_type: str, payload: bytes | str | Mapping[str, Any]) -> bytes:
    """A ``:message-type exception`` message: a modelled error inside the stream."""
    return _json_message("exception", exception_type, payload)


def _json_message(kind: str, name: str, payload: bytes | str | Mapping[str, Any]) -> bytes:
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    elif not isinstance(payload, bytes):
        payload = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    headers = [(f":{kind}-type", name), (":content-type", "application/json")]
    return encode_message([*headers, (":message-type", kind)], payload)


# -- decoding: pieces of a stream, or a whole capture (``mcs-formats replay`` reads one) -------

# The size of each header value type's value: boolean true, false, byte .. uuid; None for a
# byte array and a string (a u16 length, then the bytes).
_HEADER_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: None, 7: None, 8: 8, 9: 16}
_OVERHEAD = _PRELUDE_LENGTH + _MESSAGE_CRC_LENGTH

#: A decoded message: (its number in the stream, 1-based; the byte offset where it starts;
#: its headers; its payload).
Message = tuple[int, int, dict[str, object], bytes]


class EventStreamError(TransportError):
    """A message that does not decode; ``offset`` is the byte where the message starts."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message, offset=offset)


def looks_like_eventstream(raw: bytes) -> bool:
    """Does ``raw`` start with an event stream message (its prelude CRC checks)?"""
    return len(raw) >= _OVERHEAD and zlib.crc32(raw[:8]) == int.from_bytes(raw[8:12], "big")


class MessageDecoder:
    """Byte pieces of an event stream in (:meth:`feed`), split anywhere; each message out as
    the piece that completes it arrives, both CRCs checked; :meth:`end` at the end of the
    stream. The whole-capture reader (``engine.transport.captures``) is this, fed once.

    The prelude is checked as soon as its 12 bytes are in, so a stream that is not an event
    stream fails at once, not after a length it claims. Cost: the bytes not yet a whole
    message are kept in one growing buffer, cut once per message completed (never re-joined
    per piece). A bad message is an :class:`EventStreamError` naming the byte where it
    starts, raised after the messages before it (of the same piece too) were handed on."""

    __slots__ = ("_pending", "_offset", "_number", "_failed")

    def __init__(self) -> None:
        self._pending = bytearray()  # bytes of messages not yet whole
        self._offset = 0  # where ``_pending`` starts in the stream
        self._number = 0  # messages decoded so far
        self._failed: EventStreamError | None = None  # raised at the next feed or end

    def feed(self, piece: bytes | bytearray | memoryview) -> list[Message]:
        """The messages ``piece`` completes, in order."""
        if self._failed is not None:
            raise self._failed
        pending = self._pending
        pending += piece
        out: list[Message] = []
        at, size = 0, len(pending)
        try:
            while size - at >= _PRELUDE_LENGTH:
                total = _checked_prelude(pending, at, self._offset + at)
                if size - at < total:
                    break
                self._number += 1
                out.append(_decode_one(pending, at, total, self._offset + at, self._number))
                at += total
        except EventStreamError as exc:
            self._failed = exc
        if at:
            del pending[:at]
            self._offset += at
        return out

    def end(self) -> list[Message]:
        """The end of the stream: an error if a message was left cut short (else no message:
        each one was handed on as it was whole)."""
        if self._failed is not None:
            raise self._failed
        left = len(self._pending)
        if not left:
            return []
        if left < _OVERHEAD:
            raise EventStreamError(self._offset, f"a message cut short ({left} bytes left)")
        (total,) = struct.unpack_from(">I", self._pending, 0)
        raise EventStreamError(self._offset, f"a message of {total} bytes cut short at {left}")


def _checked_prelude(raw: bytearray, at: int, offset: int) -> int:
    """The total length of the message whose prelude starts at ``at``, once its CRC and its
    lengths check."""
    lengths: tuple[int, int, int] = struct.unpack_from(">III", raw, at)
    total, headers_length, prelude_crc = lengths
    if zlib.crc32(raw[at : at + 8]) != prelude_crc:
        raise EventStreamError(offset, "the prelude CRC does not match")
    if total < _OVERHEAD or headers_length > total - _OVERHEAD:
        expected = f"at least {_OVERHEAD + headers_length} bytes for its headers"
        raise EventStreamError(offset, f"a message of {total} bytes ({expected})")
    return total


def _decode_one(raw: bytearray, at: int, total: int, offset: int, number: int) -> Message:
    end = at + total - _MESSAGE_CRC_LENGTH
    (message_crc,) = struct.unpack_from(">I", raw, end)
    if zlib.crc32(raw[at:end]) != message_crc:
        raise EventStreamError(offset, "the message CRC does not match")
    (headers_length,) = struct.unpack_from(">I", raw, at + 4)
    start = at + _PRELUDE_LENGTH
    headers = _decode_headers(bytes(raw[start : start + headers_length]), offset)
    return number, offset, headers, bytes(raw[start + headers_length : end])


def message_chunk(message: Message) -> tuple[str, str, dict[str, Any]]:
    """(its name, its payload text, what ``buf.add`` takes) for ``message``: an event
    message's ``:event-type`` (an exception message's ``:exception-type``) travels as
    ``_event``, the payload's first key, as the golden files record Bedrock's frames. Any
    other message, or a payload that is not a JSON object, is an :class:`EventStreamError`
    naming the message and its byte."""
    number, offset, headers, payload = message
    kind = headers.get(":message-type")
    name = headers.get(":event-type" if kind == "event" else ":exception-type")
    if kind not in ("event", "exception") or not isinstance(name, str):
        expected = "an event or exception message with its :event-type / :exception-type"
        raise EventStreamError(offset, f"message {number}: expected {expected}, got {headers}")
    try:
        data = payload.decode("utf-8")
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise EventStreamError(offset, f"message {number}: the payload is not JSON text") from None
    if not isinstance(value, dict):
        raise EventStreamError(offset, f"message {number}: expected a JSON object as the payload")
    return name, data, {EVENT_KEY: name, **value}


def _decode_headers(raw: bytes, at: int) -> dict[str, object]:
    headers: dict[str, object] = {}
    pos = 0
    try:
        while pos < len(raw):
            size = raw[pos]  # the name's length, the name, the value's type
            name = raw[pos + 1 : pos + 1 + size].decode("utf-8")
            kind = raw[pos + 1 + size]
            pos += 2 + size
            if kind not in _HEADER_SIZES:
                raise EventStreamError(at, f"header {name!r}: unknown value type {kind}")
            length = _HEADER_SIZES[kind]
            if length is None:
                (length,) = struct.unpack_from(">H", raw, pos)
                pos += 2
            value = raw[pos : pos + length]
            pos += length
            if len(value) < length:  # (a slice past the end is only shorter: say it)
                cut = f"{length} bytes of value stated, {len(value)} left in the headers"
                raise EventStreamError(at, f"header {name!r}: {cut}")
            if kind == _HEADER_TYPE_STRING:
                headers[name] = value.decode("utf-8")
            else:  # a boolean's value is its type (0: true); the others' raw bytes
                headers[name] = kind == 0 if kind < 2 else value
    except (IndexError, struct.error, UnicodeDecodeError):
        raise EventStreamError(at, "the headers do not decode") from None
    return headers
