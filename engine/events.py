"""The events of a stream (API.md, "Events"): frozen dataclasses, one class per event.

A client matches on the class (``case engine.CallIncomplete(reason=r): ...``) and sends
``ev.to_dict()`` on to a UI: a JSON-ready dict whose ``"type"`` is the class name. Every
event class of API.md's table lives here, so that they share one ``to_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["CallIncomplete", "Event", "INCOMPLETE_REASONS"]

# Why a started call will never be runnable (API.md, CallIncomplete.reason).
INCOMPLETE_REASONS = ("cut", "invalid", "too deep")


def _json_ready(value: Any) -> Any:
    """A field's value as JSON has it: tuples (a text call's slot) become lists."""
    if isinstance(value, tuple | list):
        return [_json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    return value


class Event:
    """What every event class shares: ``to_dict()``."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, ``"type"`` the class name, then the fields in declared order."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = _json_ready(getattr(self, f.name))
        return out


@dataclass(frozen=True)
class CallIncomplete(Event):
    """A started call that will never be runnable, known at the wire's DONE or at
    ``close()``: ``reason`` is ``"cut"`` (the stream ended, or hit a length limit, inside
    it), ``"invalid"`` (its text is not a JSON object) or ``"too deep"``; ``raw`` is its
    argument text as sent. ``slot`` is the call's SLOT as the wire keys it (for wires keyed
    by array order, its position in the message's list); ``name`` and ``id`` are None when
    they never arrived."""

    slot: Any
    name: str | None
    id: str | None
    raw: str
    reason: str
