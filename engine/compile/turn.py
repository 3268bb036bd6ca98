"""How a turn ended and what it cost, one meaning on every wire: the ``finish_reasons`` and
``token_usage`` sections of a descriptor, compiled.

A multi-provider client should not have to know that a length cut is ``length`` on one wire,
``max_tokens`` on a second and ``MAX_TOKENS`` on a third, nor that one wire's input count
leaves the cache reads out and another's output count the reasoning. Each descriptor says so,
as data: its raw stop reasons grouped under the engine's six words (:data:`FINISH_REASONS`),
and its usage object's counts as paths (a path, or ``{sum: [paths]}`` where the wire counts
the parts apart). The raw values stay on the buffer (``stop_reason``, ``usage``); these are
read from them when asked, never per chunk.

``finish_reasons.length`` also decides what the wire's DONE does to an item still open (see
:meth:`engine.model.assembly.Assembly.finish`): the wire's ``Spec.length_stops``, read off it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.jsonscan import COMPLETE
from ..records import FINISH_REASONS, FinishReason, Usage
from .paths import compile_read

if TYPE_CHECKING:
    from ..model.assembly import Assembly
    from .strategy import Problems

Count = Callable[[Any], "int | None"]


@dataclass(frozen=True)
class TurnSpec:
    """A wire's finish-reason mapping and usage reading, compiled (immutable, shared)."""

    reasons: dict[str, FinishReason] = field(default_factory=dict)  # raw value -> its word
    counts: tuple[tuple[str, Count], ...] = ()  # (Usage field, reader), as declared

    def finish_reason(self, asm: Assembly | None) -> FinishReason | None:
        """The turn's finish reason: None before the wire's DONE (and for a stream that never
        sent one); "error" after a provider's error; the word the descriptor gives the raw
        reason, "other" for one it does not name; and "tool_calls" for a normal stop whose
        turn has runnable client calls (wires that say only "stop" beside their calls)."""
        if asm is None or not asm.finished:
            return None
        if asm.error is not None:
            return "error"
        raw = asm.stop_reason
        word = self.reasons.get(raw, "other") if raw.__class__ is str else "other"
        # a client call whose arguments are complete and whose name came
        names = (
            track.place.name(track.item) for track in asm.tracks if track.args.state == COMPLETE
        )
        runnable = word == "stop" and any(name.__class__ is str and name for name in names)
        return "tool_calls" if runnable else word

    def token_usage(self, raw: Any) -> Usage | None:
        """The raw usage object read as a :class:`Usage`: None when the wire sent none (or
        the descriptor declares no counts); a count the wire does not give is None, and the
        total is the wire's, else input + output when both are known."""
        if raw is None or not self.counts:
            return None
        values: dict[str, int | None] = {name: read(raw) for name, read in self.counts}
        if values.get("total_tokens") is None:
            given, taken = values.get("input_tokens"), values.get("output_tokens")
            if given is not None and taken is not None:
                values["total_tokens"] = given + taken
        return Usage(**values)


def compile_turn(descriptor: dict[str, Any], problems: Problems) -> TurnSpec:
    """Both sections of ``descriptor``, each problem at the pointer of its value."""
    return TurnSpec(
        reasons=_reasons(descriptor.get("finish_reasons") or {}, problems),
        counts=_counts(descriptor.get("token_usage") or {}, problems),
    )


def _reasons(section: dict[str, Any], problems: Problems) -> dict[str, FinishReason]:
    """raw -> word; a raw value under two words is a problem (which would it mean?)."""
    out: dict[str, FinishReason] = {}
    for word in FINISH_REASONS:
        for i, raw in enumerate(section.get(word) or ()):  # strings: the schema's raw_reasons
            if out.setdefault(raw, word) != word:
                problems.add(
                    f"/finish_reasons/{word}/{i}",
                    f"the raw reason {raw!r} is listed under {out[raw]!r} already: "
                    "a raw reason means one finish reason",
                )
    return out


def _counts(section: dict[str, Any], problems: Problems) -> tuple[tuple[str, Count], ...]:
    """(Usage field, reader) for each count declared (the schema's keys are Usage's fields):
    a read path, or ``{sum: [paths]}``; a path that is no read is a problem at its pointer
    (the others still compile). The schema refuses such a path too, but the compile must go
    on past it: the validator says every problem at once, the rules' own among them."""
    out: list[tuple[str, Count]] = []
    for name, spec in section.items():
        summed = isinstance(spec, dict) and "sum" in spec
        paths = spec["sum"] if summed else [spec]
        readers = []
        for i, path in enumerate(paths):
            pointer = f"/token_usage/{name}/sum/{i}" if summed else f"/token_usage/{name}"
            readers += problems.compiled(pointer, f"token_usage.{name}", compile_read, path)
        out.append((name, _summed(readers)))
    return tuple(out)


def _summed(readers: list[Any]) -> Count:
    """The count at one path, or the sum of those present at several (None if none is)."""

    def count(raw: Any) -> int | None:
        # a count is an integer (never a bool, never a guess)
        found = [value for value in (read(raw, None) for read in readers) if value.__class__ is int]
        return sum(found) if found else None

    return count
