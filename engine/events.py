"""The events of a stream (README, "Events"): frozen dataclasses, one class per event, and
the finished call they carry (:class:`ExtractedCall`).

A client matches on the class (``case engine.CallIncomplete(reason=r): ...``) and sends
``ev.to_dict()`` on to a UI: a JSON-ready dict whose ``"type"`` is the class name. Every
event class the README names lives here, so that they share one ``to_dict``.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from typing import Any, ClassVar

from .records import FinishReason, Usage

# Why a started call will never be runnable, finer than its reason ("cut", "invalid", "too
# deep": README, "Events"): CallIncomplete.cause, in the order a retry prompt is chosen by:
# the first four refine "cut", the next two "invalid"; "too deep" is both.
CAUSE_LENGTH = "length limit"  # the wire's length stop (``length_stops``) ended it
CAUSE_CONNECTION = "connection ended"  # input ended (``close()``) before the wire's DONE
CAUSE_DONE = "done inside call"  # the DONE, or the call's own end, came with it still open
CAUSE_ERROR = "provider error"  # a provider's error event ended the stream inside it
CAUSE_NOT_JSON = "not json"  # its argument text is not JSON
CAUSE_NOT_OBJECT = "not an object"  # valid JSON of another type (an array, a string...)
CAUSE_TOO_DEEP = "too deep"  # nested deeper than the engine reads
INCOMPLETE_CAUSES = (
    CAUSE_LENGTH,
    CAUSE_CONNECTION,
    CAUSE_DONE,
    CAUSE_ERROR,
    CAUSE_NOT_JSON,
    CAUSE_NOT_OBJECT,
    CAUSE_TOO_DEEP,
)


class ExtractedCall:
    """A finished call: its tool name, parsed arguments and native call id.

    ``end`` is where the call ends in the text (for a call found in text), and takes no part in
    equality. ``free_form`` is true for a call whose input is free-form text, not JSON (its
    place's ``args_form: text``): its ``arguments`` are then ``{ARGS: text}``, ARGS the last
    field of the descriptor's ``args``; it takes no part in equality either. Read-only. Not
    a frozen dataclass: one is built for every call of a stream, and a frozen dataclass's
    ``__init__`` (``object.__setattr__`` per field) cost a quarter of the ``json.loads``
    floor of a chunk carrying a whole call.
    """

    __slots__ = ("_name", "_arguments", "_id", "_end", "_free_form")

    def __init__(
        self,
        name: str,
        arguments: dict[str, Any],
        id: str | None = None,
        end: int | None = None,
        free_form: bool = False,
    ) -> None:
        self._name, self._arguments, self._id = name, arguments, id
        self._end, self._free_form = end, free_form

    @property
    def name(self) -> str:
        return self._name

    @property
    def arguments(self) -> dict[str, Any]:
        return self._arguments

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def end(self) -> int | None:
        return self._end

    @property
    def free_form(self) -> bool:
        return self._free_form

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExtractedCall) or other.__class__ is not ExtractedCall:
            return NotImplemented
        return (self._name, self._arguments, self._id) == (other._name, other._arguments, other._id)

    # Unhashable, as equal calls must hash alike and ``arguments`` is a dict: a class that
    # defines ``__eq__`` and no ``__hash__`` gets ``__hash__ = None`` from Python itself.

    def __repr__(self) -> str:
        return (
            f"ExtractedCall(name={self._name!r}, arguments={self._arguments!r}, "
            f"id={self._id!r}, end={self._end!r}"
            + (", free_form=True)" if self._free_form else ")")
        )


def _json_ready(value: Any) -> Any:
    """A field's value as JSON has it: tuples (a text call's slot) become lists, a call
    ``{name, arguments, id}``, a Usage its fields; dicts and lists are copied (a ``partial``
    keeps changing)."""
    if isinstance(value, tuple | list):
        return [_json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if value.__class__ is ExtractedCall:
        return _json_ready({"name": value.name, "arguments": value.arguments, "id": value.id})
    if value.__class__ is Usage:
        return {u.name: getattr(value, u.name) for u in fields(value)}
    return value


class Event:
    """What every event class shares: ``to_dict()``."""

    __slots__ = ()
    # Every event class is a dataclass (declared here for the checker: ``fields(self)``).
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, ``"type"`` the class name, then the fields in declared order."""
        values = {f.name: _json_ready(getattr(self, f.name)) for f in fields(self)}
        return {"type": type(self).__name__, **values}


@dataclass(frozen=True, slots=True)
class CallIncomplete(Event):
    """A started call that will never be runnable, known at the wire's DONE or at
    ``close()``: ``reason`` is ``"cut"`` (the stream ended, or hit a length limit, inside
    it), ``"invalid"`` (its text is not a JSON object) or ``"too deep"``; ``raw`` is its
    argument text as sent. ``slot`` is the call's SLOT as the wire keys it (for wires keyed
    by array order, its position in the message's list); ``name`` and ``id`` are None when
    they never arrived.

    ``cause`` says why more finely, so that a client (and the retry prompt) can tell the
    model what to do differently (:data:`INCOMPLETE_CAUSES`):

    - ``"length limit"`` (reason ``cut``): the output token limit was reached inside the
      call (the wire's DONE carried a stop reason its descriptor lists in ``length_stops``);
    - ``"connection ended"`` (``cut``): the input ended (``close()``) before the wire's DONE;
    - ``"done inside call"`` (``cut``): the wire's DONE, or the call's own end event, came
      while its arguments were still open, without a length stop;
    - ``"provider error"`` (``cut``): a provider's error event ended the stream inside it;
    - ``"not json"`` (``invalid``): its argument text is not JSON;
    - ``"not an object"`` (``invalid``): its arguments are valid JSON of another type (an
      array, a string, a number...), the first JSON value of its text;
    - ``"too deep"`` (``too deep``): nested deeper than the engine reads.

    None where nobody said (an event built with the five fields of old). Like
    ``ExtractedCall.end`` it takes no part in equality, so that such an event still equals
    the one the buffer reports; ``to_dict()`` includes it."""

    slot: Any
    name: str | None
    id: str | None
    raw: str
    reason: str
    cause: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    """Display text released: as it streams, or (on a driver's buffer, which scans it for
    text calls) once the driver's round has decided what to hold."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta(Event):
    """Reasoning streamed (a reasoning field, a thinking block, a thought part): never
    display text."""

    text: str


@dataclass(frozen=True, slots=True)
class CallStarted(Event):
    """A call's name is known: always the first event of its ``slot``; ``id`` None until
    known."""

    slot: Any
    name: str
    id: str | None


@dataclass(frozen=True, slots=True)
class ArgumentsDelta(Event):
    """A call's arguments grew: ``text`` the raw JSON fragment (None where the wire sends
    values: path-addressed pieces, whole arguments), ``partial`` the arguments so far (one
    dict per call, updated in place: copy it to keep a snapshot)."""

    slot: Any
    text: str | None
    partial: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CallReady(Event):
    """The call is complete and runnable, exactly once: ``call`` as ``new_calls()`` gives it."""

    slot: Any
    call: ExtractedCall


@dataclass(frozen=True, slots=True)
class Finished(Event):
    """The stream's end, once: its raw stop reason and final usage, and both in the words
    every wire shares (``finish_reason``, ``token_usage``: as on the buffer)."""

    stop_reason: str | None
    usage: dict[str, Any] | None
    finish_reason: FinishReason | None = None
    token_usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class ProviderError(Event):
    """A provider's error event (its payload); ``Finished`` follows it."""

    error: Any
