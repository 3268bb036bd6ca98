"""An encoder for the AWS event stream (``application/vnd.amazon.eventstream``).

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

_HEADER_TYPE_STRING = 7
_PRELUDE_LENGTH = 12  # total length, headers length, prelude CRC
_MESSAGE_CRC_LENGTH = 4


def encode_headers(headers: Iterable[tuple[str, str]]) -> bytes:
    """Encode string headers in the given order."""
    out = bytearray()
    for name, value in headers:
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        if len(raw_name) > 255:
            raise ValueError(f"header name too long: {name!r}")
        if len(raw_value) > 0xFFFF:
            raise ValueError(f"header value too long for {name!r}")
        out += struct.pack(">B", len(raw_name)) + raw_name
        out += struct.pack(">BH", _HEADER_TYPE_STRING, len(raw_value)) + raw_value
    return bytes(out)


def encode_message(headers: Iterable[tuple[str, str]], payload: bytes) -> bytes:
    """One complete event stream message: prelude, prelude CRC, headers, payload, message CRC."""
    raw_headers = encode_headers(headers)
    total = _PRELUDE_LENGTH + len(raw_headers) + len(payload) + _MESSAGE_CRC_LENGTH
    prelude = struct.pack(">II", total, len(raw_headers))
    head = prelude + struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    body = head + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def event_message(event_type: str, payload: bytes | str | Mapping) -> bytes:
    """A ``:message-type event`` message carrying a JSON payload, as AWS sends each event."""
    return encode_message(
        [
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        _payload_bytes(payload),
    )


def exception_message(exception_type: str, payload: bytes | str | Mapping) -> bytes:
    """A ``:message-type exception`` message: a modelled error inside the stream."""
    return encode_message(
        [
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        _payload_bytes(payload),
    )


def _payload_bytes(payload: bytes | str | Mapping) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
