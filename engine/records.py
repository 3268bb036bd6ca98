"""The data a driver hands to a format: the tools it offers and the records of calls it ran.

Both are plain dataclasses. A format renders them into its own wire shapes through the
``results`` and ``declarations`` sections of its descriptor (see :mod:`engine.compile.results`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args


@dataclass
class Tool:
    """A tool as every wire declares it: a name, a description and a JSON Schema object for
    its arguments (a tool without arguments has an empty object schema).

    ``format`` makes it a free-form tool, whose input is text, not JSON (a custom tool, on
    the wires that have them): ``{"type": "text"}`` for any text, or ``{"type": "grammar",
    "syntax": "regex" | "lark", "definition": "..."}`` for text a grammar accepts. A wire
    that has free-form tools declares it as one (its descriptor's ``declarations`` read
    ``tool.format``); a driver checks a free-form call against a regex definition before it
    runs (a lark grammar is not checked), never against ``parameters``. None (the default):
    a JSON tool.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    format: dict[str, Any] | None = None


@dataclass
class ToolCallRecord:
    """One call that ran: what was called, and its result, or the error it failed with.

    ``error`` set means the call failed (its ``result`` is then ignored). ``tool_call_id`` is
    the wire's own call id, echoed back so the provider can pair the result with its call;
    it is None on wires that send none (some Gemini models) and for text calls.
    ``exception`` is what the tool raised, for the application (the model only ever sees
    ``error``, its text); it takes no part in equality.
    """

    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None
    tool_call_id: str | None = None
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class Skipped:
    """An event, or part of one, that an operation of the descriptor could not place in the
    message: it changed nothing, and is listed here rather than lost silently.

    ``index`` is the chunk's position in the stream (0-based, as ``ChunkError`` counts),
    ``event`` the event's name as the descriptor's discriminator reads it (None on a wire
    without event names), ``reason`` a sentence naming the operation, its path and why.
    """

    index: int
    event: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, for sending it on (``mcs-formats replay --json``)."""
        return {"type": "Skipped", "index": self.index, "event": self.event, "reason": self.reason}


# What ended a turn, one word on every wire (README, "What it does": ``buf.finish_reason``): each
# descriptor maps its raw stop reasons onto these (its ``finish_reasons`` section); a raw value it
# does not name is "other". The Literal is what a strictly typed client matches on.
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
FINISH_REASONS: tuple[FinishReason, ...] = get_args(FinishReason)


@dataclass(frozen=True, slots=True)
class Usage:
    """The token counts of a turn, one meaning on every wire (``buf.token_usage``), each
    None where the wire does not say (never a guess). ``input_tokens`` includes the cached
    input (read from a cache, and written to it); ``output_tokens`` includes the reasoning;
    ``total_tokens`` is the wire's total, else input + output. Each descriptor says how its
    raw usage (``buf.usage``) reads so (its ``token_usage`` section)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
