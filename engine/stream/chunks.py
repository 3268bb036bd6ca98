"""Turning what a caller hands to ``buf.add`` into one decoded event (a dict).

Accepted: a dict; JSON text as ``str`` or ``bytes``, also an SSE line (``data: {...}``,
``event: NAME`` which names the next payload, comments and ``id:``/``retry:`` lines) or one
whole SSE event block (``"event: NAME\ndata: {...}\n\n"``, several ``data:`` lines joined as
the SSE rules join them, CRLF or LF); and SDK objects, read as the fields they carry
(pydantic's ``model_dump(exclude_unset=True)``), never inventing null fields that the wire
did not send.

Whatever comes, only a :class:`ChunkError` leaves: an SDK object whose own dump raises is one
(naming the chunk and the method), and so is a string holding several SSE events (a raw
body belongs to ``engine.sse_chunks``, which cuts it into events). A block is read by the
one SSE reader of the engine (:mod:`engine.transport.sse`), so that a block means here what it
means in a body; text only reads as a block when every line of it is an SSE line, so that
JSON text written over several lines stays JSON text.

Depth. A dict chunk is not walked for its depth: a walk of every chunk (iterative, so that
any depth is measured) costs about what the whole loop costs per chunk today (2 us against
1.5 to 3.5 us, ``tools/bench.py``), to find what no provider sends. Where depth matters the
engine bounds it where it recurses: call arguments deeper than ``MAX_DEPTH``
(:mod:`engine.model.jsonscan`) are never a call (``CallIncomplete``, reason ``"too deep"``,
so that the model is told, which a ``ChunkError`` on the chunk would not do); JSON text
deeper than the parser reads is a ``ChunkError`` here; values are copied into the message
without recursion (:func:`engine.model.fragments.ingest`); and every error message and
event name shows a value through a bounded rendering (``shown_value``), never ``repr``, so
that a name or a SLOT nested 100,000 deep is a ``ChunkError`` saying so, not a
RecursionError out of the message.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from ..errors import ChunkError, TransportError
from ..transport.sse import SSEDecoder, decode_event

SKIP = object()  # SSE framing with no payload of its own
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class Sentinel(str):
    """A non-JSON end marker such as OpenAI's ``data: [DONE]``."""


def decode(chunk: Any, index: int, sse_state: dict[str, Any]) -> Any:
    """Return a dict, a :class:`Sentinel`, or :data:`SKIP`; raise :class:`ChunkError`."""
    if chunk.__class__ is dict:
        return chunk
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        try:
            chunk = bytes(chunk).decode("utf-8")
        except UnicodeDecodeError as exc:
            reason = f"bytes are not UTF-8 ({exc.reason} at byte {exc.start})"
            raise ChunkError(index, reason) from None
    if isinstance(chunk, str):
        return _decode_text(chunk, index, sse_state)
    if isinstance(chunk, dict):
        return dict(chunk)
    try:
        as_fields = sdk_fields(chunk)
    except RecursionError:
        raise ChunkError(index, "an SDK object nested deeper than can be read") from None
    except Exception as exc:  # the SDK's own code raised: the chunk cannot be read
        raise ChunkError(index, _dump_failed(chunk, exc)) from exc
    if as_fields is None:
        raise ChunkError(
            index,
            "expected a JSON object (dict, JSON text or an SDK object), "
            f"got {type(chunk).__name__}",
        )
    return as_fields


def _dump_failed(chunk: Any, exc: Exception) -> str:
    """What to say of an SDK object whose dump raised: its type, the method, the error (cut:
    the SDK's message may be long, and its ``str`` may itself fail)."""
    method = "model_dump()" if callable(getattr(chunk, "model_dump", None)) else "to_dict()"
    try:
        said = str(exc)
    except Exception:
        said = ""
    said = said if len(said) <= 200 else said[:197] + "..."
    return (
        f"the SDK object ({type(chunk).__name__}) could not be read: its {method} raised "
        f"{type(exc).__name__}" + (f": {said}" if said else "")
    )


_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


def _decode_text(text: str, index: int, sse_state: dict[str, Any]) -> Any:
    stripped = text.strip()
    if ("\n" in stripped or "\r" in stripped) and stripped.startswith(_SSE_FIELDS):
        block = _sse_block(stripped, index, sse_state)
        if block is not None:
            return block
    if not stripped or stripped.startswith(":"):
        return SKIP
    name = None
    if stripped.startswith(("event:", "id:", "retry:")):
        field, _, field_value = stripped.partition(":")
        if field == "event":
            sse_state["event"] = field_value.strip()
        return SKIP
    if stripped.startswith("data:"):
        stripped = stripped[5:].strip()
        name = sse_state.pop("event", None)
        if not stripped.startswith(("{", "[")):
            return Sentinel(stripped)
    try:
        value = json.loads(stripped)
    except ValueError as exc:
        if not stripped.startswith("{"):
            # Not JSON, and not an object cut short: an end marker such as ``[DONE]`` (with or
            # without its ``data:``), which only the buffer can tell from a stray text.
            return Sentinel(stripped)
        raise ChunkError(index, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise ChunkError(
            index, "JSON nested deeper than the JSON parser reads; expected a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ChunkError(index, f"expected a JSON object, got a JSON {_json_kind(value)}")
    if name and "type" not in value and "_event" not in value:
        value = {"_event": name, **value}
    return value


def _sse_block(text: str, index: int, sse_state: dict[str, Any]) -> Any:
    """A whole SSE event block in one string: its event, decoded as a body's event is; None
    when some line is not an SSE line (then the text is read as a line, as before)."""
    lines = _LINE_BREAK.split(text)
    if not all(not line or line.startswith(_SSE_FIELDS) for line in lines):
        return None
    events = SSEDecoder().feed(text + "\n\n")  # the block's own end: its blank line
    if not events:  # comments, or an ``event:`` or ``id:`` line with no data yet
        for line in lines:
            if line.startswith("event:"):
                sse_state["event"] = line[6:].strip()
        return SKIP
    if len(events) > 1:
        raise ChunkError(
            index,
            f"one string held {len(events)} SSE events; add() takes one event at a time: "
            "for a raw HTTP body, iterate engine.sse_chunks(pieces) and add() each chunk",
        )
    (event,) = events
    pending = sse_state.pop("event", None)
    if not event.name and pending:
        event.name = pending
    try:
        value, is_json = decode_event(event)
    except TransportError as exc:
        raise ChunkError(index, f"not valid JSON in the SSE event's data: {exc}") from None
    if not is_json:
        return Sentinel(event.text.strip())
    if not isinstance(value, dict):
        raise ChunkError(index, f"expected a JSON object, got a JSON {_json_kind(value)}")
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


def sdk_fields(obj: Any) -> dict[str, Any] | None:
    """The fields an SDK object carries, as plain JSON data, or None if it is not one."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            # Python mode, then bytes as the wire's standard base64: pydantic's JSON mode writes
            # bytes as URL-safe base64, which is not what the provider sent.
            value = _wire_json(dump(exclude_unset=True, by_alias=True, mode="python"))
        except TypeError:
            value = dump()
        return value if isinstance(value, dict) else None
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
        return value if isinstance(value, dict) else None
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return None


_JSON_LEAVES = (str, int, float, bool, type(None))


def _wire_json(value: Any) -> Any:
    """A python-mode model dump as JSON data: bytes as standard base64, other leaves as
    pydantic's JSON mode writes them (enums by value, datetimes in ISO 8601)."""
    if isinstance(value, dict):
        return {key: _wire_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire_json(item) for item in value]
    if value.__class__ in _JSON_LEAVES:  # exactly: a str-valued enum is not a leaf
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    from pydantic_core import to_jsonable_python  # only reached for a pydantic model's dump

    return to_jsonable_python(value)
