"""Turning what a caller hands to ``buf.add`` into one decoded event (a dict).

Accepted: a dict; JSON text as ``str`` or ``bytes``, also an SSE line (``data: {...}``,
``event: NAME`` which names the next payload, comments and ``id:``/``retry:`` lines) or one
whole SSE event block (``"event: NAME\ndata: {...}\n\n"``, several ``data:`` lines joined as
the SSE rules join them, CRLF or LF); and SDK objects, read as the fields they carry
(pydantic's ``model_dump(exclude_unset=True)``), never inventing null fields that the wire
did not send.

Whatever comes, only a :class:`ChunkError` leaves: an SDK object whose own dump raises is one
(naming the chunk and the method), and so is a string holding several SSE events (a raw
body belongs to ``engine.sse_chunks``, which cuts it into events). SSE lines and blocks are
read by the one SSE decoder of the engine (:mod:`engine.transport.sse`, one per buffer, fed a
chunk at a time), so that they mean here what they mean in a body, and a JSON error is
worded as there; text only reads as SSE when every line of it is an SSE line, so that JSON
text written over several lines (alone, or after one ``data:``) stays JSON text.

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
from typing import Any

from ..errors import ChunkError, TransportError
from ..model.fragments import json_kind
from ..transport.sse import LINE_BREAK, SSEDecoder, decode_event

SKIP = object()  # SSE framing with no payload of its own


class Sentinel(str):
    """A non-JSON end marker such as OpenAI's ``data: [DONE]``."""


def decode(chunk: Any, index: int, sse: SSEDecoder) -> Any:
    """Return a dict, a :class:`Sentinel`, or :data:`SKIP`; raise :class:`ChunkError` (a
    chunk of the class dict itself never comes here: ``add`` takes it as it is)."""
    if isinstance(chunk, (bytes, bytearray, memoryview)):
        chunk = utf8(chunk, index)
    if isinstance(chunk, str):
        return _decode_text(chunk, index, sse)
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


def error_text(exc: BaseException, limit: int) -> str:
    """What ``exc`` says, cut to ``limit`` characters (an error message names the fault, it
    never carries the chunk); "" when its own message fails."""
    try:
        said = str(exc)
    except Exception:
        return ""
    return said if len(said) <= limit else said[: limit - 3] + "..."


def _dump_failed(chunk: Any, exc: Exception) -> str:
    """What to say of an SDK object whose dump raised: its type, the method, the error (cut:
    the SDK's message may be long, and its ``str`` may itself fail)."""
    method = "model_dump()" if callable(getattr(chunk, "model_dump", None)) else "to_dict()"
    said = error_text(exc, 200)
    return (
        f"the SDK object ({type(chunk).__name__}) could not be read: its {method} raised "
        f"{type(exc).__name__}" + (f": {said}" if said else "")
    )


_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


def utf8(chunk: bytes | bytearray | memoryview, index: int) -> str:
    """The text of a bytes chunk; a ChunkError naming the byte where it is not UTF-8."""
    try:
        return bytes(chunk).decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"bytes are not UTF-8 ({exc.reason} at byte {exc.start})"
        raise ChunkError(index, reason) from None


def _decode_text(text: str, index: int, sse: SSEDecoder) -> Any:
    """Text whose lines are all SSE lines, read by the body's SSE decoder (the buffer keeps
    one, so that an ``event:`` line names the next chunk's data); any other text is JSON
    text, or an end marker, alone or after one ``data:`` field."""
    stripped = text.strip()
    if all(not line or line.startswith(_SSE_FIELDS) for line in LINE_BREAK.split(stripped)):
        events = sse.feed(stripped + "\n") + sse.dispatch()
        if not events:  # comments, or an ``event:`` or ``id:`` line with no data yet
            return SKIP
        if len(events) > 1:
            raise ChunkError(
                index,
                f"one string held {len(events)} SSE events; add() takes one event at a time: "
                "for a raw HTTP body, iterate engine.sse_chunks(pieces) and add() each chunk",
            )
        try:
            value, is_json = decode_event(events[0])
        except TransportError as exc:  # located in the chunk's own words: it has no body line
            raise ChunkError(index, exc.reason) from None
        return _an_object(value, index) if is_json else Sentinel(events[0].text.strip())
    text = stripped.removeprefix("data:").strip()
    try:
        value = json.loads(text)
    except ValueError as exc:
        if not text.startswith("{"):
            # Not JSON, and not an object cut short: an end marker such as ``[DONE]``, which
            # only the buffer can tell from a stray text.
            return Sentinel(text)
        raise ChunkError(index, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise ChunkError(
            index, "JSON nested deeper than the JSON parser reads; expected a JSON object"
        ) from None
    return _an_object(value, index)


def _an_object(value: Any, index: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ChunkError(index, f"expected a JSON object, got {json_kind(value)}")
    return value


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
    elif callable(to_dict := getattr(obj, "to_dict", None)):
        value = to_dict()
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    else:
        return None
    return value if isinstance(value, dict) else None


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
