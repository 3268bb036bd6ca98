"""Re-splitting a recorded stream: the same events, their streamed strings cut into more pieces.

A result must not depend on how the provider happened to split its fragments (the property
whose absence caused a family of bugs across vLLM's hand-written parsers). The strategy names
where its fragments sit (``strategy.streamed_fields()``: the field chains that ``append``,
``args`` and ``fold`` concatenate); this module cuts the string at each such place into
pieces, one event per piece, so that a stream can be replayed both ways and the results
compared. The property tests and ``mcs-formats test`` both use it, so a user's own format gets
the same check as the built-in ones.

A value that makes an event the wire's DONE (``strategy.done_fields()``: a finish reason, a
``done: true``) stays on the last piece of its event only: a provider that splits an event
sends its finish last (a call may arrive whole in the chunk that finishes), and a DONE on the
first piece would end the stream before the rest, which is then after the stream's end.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..model.fragments import copy_json

Chain = tuple[str, ...]
# cuts(n): where to cut a string of n characters (each taken modulo n; 0 and repeats ignored)
Cuts = Callable[[int], Sequence[int]]


def leaves(event: Any, chain: Chain, shortest: int = 2) -> Iterator[tuple[dict[str, Any], str]]:
    """(container, key) of every string leaf at a streamed-field chain (``*`` = each entry of a
    list, or the value itself when it is an object) with at least ``shortest`` characters."""
    return _at(event, chain, lambda value: isinstance(value, str) and len(value) >= shortest)


def valued(event: Any, chain: Chain) -> Iterator[tuple[dict[str, Any], str]]:
    """(container, key) of every non-null value at a field chain (``*`` as in ``leaves``)."""
    return _at(event, chain, lambda value: value is not None)


def _at(
    event: Any, chain: Chain, keep: Callable[[Any], bool]
) -> Iterator[tuple[dict[str, Any], str]]:
    """The one walk of a field chain: (container, key) of each value at its end that ``keep``
    takes."""
    if not chain:
        return
    head, rest = chain[0], chain[1:]
    if head == "*":
        entries = event if isinstance(event, list) else [event] if isinstance(event, dict) else []
        for entry in entries:
            yield from _at(entry, rest, keep)
        return
    if not isinstance(event, dict) or event.get(head) is None:
        return
    if not rest:
        if keep(event[head]):
            yield event, head
        return
    yield from _at(event[head], rest, keep)


def split_event(
    event: dict[str, Any], fields: Sequence[Chain], cuts: Cuts, done: Sequence[Chain] = ()
) -> list[dict[str, Any]]:
    """One event as the pieces of its first streamed string: one copy per piece.

    Every copy keeps the event's other fields (repeated ids and names must be harmless); the
    other streamed strings of the event stay in the last copy only (earlier copies carry "",
    a no-op), so order is kept and nothing is counted twice; so do the values at the
    ``done`` chains (earlier copies carry null there: not yet done). An event with no
    streamed string of two characters or more is returned as it is. ``event`` is not
    changed. (The copies are the engine's JSON copy, not the standard library's deep copy:
    a re-split stream takes one copy of its event a piece, and the deep copy's generality was
    most of what re-splitting cost the property tests.)"""
    event = copy_json(event)
    found = [leaf for chain in fields for leaf in leaves(event, chain)]
    if not found:
        return [event]
    container, key = found[0]
    text = container[key]
    points = sorted({c % len(text) for c in cuts(len(text))} - {0})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    out = []
    for i, piece in enumerate(pieces):
        container[key] = piece
        piece_event = copy_json(event)
        if i < len(pieces) - 1:
            others = [
                leaf
                for chain in fields
                for leaf in leaves(piece_event, chain, 0)
                if leaf[0][leaf[1]]
            ]
            for other_container, other_key in others[1:]:
                other_container[other_key] = ""
            for chain in done:
                for done_container, done_key in list(valued(piece_event, chain)):
                    done_container[done_key] = None
        out.append(piece_event)
    return out


def resplit_groups(
    events: Sequence[Any], fields: Sequence[Chain], cuts: Cuts, done: Sequence[Chain] = ()
) -> list[list[Any]]:
    """Each event's pieces, in stream order: ``groups[i]`` replaces ``events[i]``. Values that
    are not objects (an SSE line, a ``[DONE]``) pass through as one piece."""
    return [
        split_event(event, fields, cuts, done) if isinstance(event, dict) else [event]
        for event in events
    ]


def resplit(
    events: Sequence[Any], fields: Sequence[Chain], cuts: Cuts, done: Sequence[Chain] = ()
) -> list[Any]:
    """The stream with each event's streamed string split into pieces (see ``split_event``);
    ``done``: the strategy's ``done_fields()``, kept on each event's last piece."""
    return [piece for group in resplit_groups(events, fields, cuts, done) for piece in group]


def every_character(n: int) -> list[int]:
    """Cuts that make one-character pieces: the finest split a provider could send."""
    return list(range(1, n))


def random_cuts(rng: random.Random, most: int = 4) -> Cuts:
    """Up to ``most`` cuts at random points of each string, drawn from ``rng`` (seeded by the
    caller, so that a failing split can be made again)."""

    def cuts(n: int) -> list[int]:
        return [rng.randint(1, max(1, n - 1)) for _ in range(rng.randint(0, most))]

    return cuts
