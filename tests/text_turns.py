"""Recorded streams whose display text is replaced: a text-call turn on every wire.

For each built-in wire, the first recorded text-only stream (no native call, its DONE seen)
is taken, and the display text it carries is replaced by given pieces: the first chunk that
carries display text is repeated once per piece, its text leaf set to the piece, and every
later text leaf is emptied (the chunk stays: it may carry the DONE). So the chunks around
the text (the envelope, block starts and stops, usage, the DONE) are the provider's own.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from conftest import golden_streams, read_stream, replay

import engine

WIRES = [n for n in engine.list_formats() if getattr(engine.load_format(n), "is_wire", False)]


def _text_added(events: list[dict]) -> list[str]:
    """The display text each chunk adds."""
    buf = engine.LLMStreamBuffer()
    added, before = [], ""
    for event in events:
        buf.add(copy.deepcopy(event))
        now = buf.get_content()
        added.append(now[len(before) :])
        before = now
    return added


def _leaf_path(node: Any, text: str, path: tuple = ()) -> tuple | None:
    """The path of a string leaf equal to ``text`` in ``node``, or None."""
    if isinstance(node, str):
        return path if node == text else None
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in items:
        found = _leaf_path(child, text, (*path, key))
        if found is not None:
            return found
    return None


def _set(node: Any, path: tuple, value: str) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


@cache
def text_golden(wire: str) -> Path:
    """The wire's first recorded stream that is a whole text-only turn, its text in leaves."""
    for path in golden_streams([wire]):
        events = read_stream(path)
        buf = replay(events)
        if buf.calls() or buf.incomplete_calls() or not buf.is_finished() or buf.error:
            continue
        added = _text_added(events)
        if not any(added) or buf.strategy.extract(buf.as_dict()):
            continue
        if all(_leaf_path(e, t) is not None for e, t in zip(events, added, strict=True) if t):
            return path
    raise LookupError(f"no text-only golden stream for {wire}")


def text_turn(wire: str, pieces: list[str]) -> list[dict]:
    """The wire's text golden with its display text replaced by ``pieces``."""
    events = read_stream(text_golden(wire))
    added = _text_added(events)
    out: list[dict] = []
    placed = False
    for event, text in zip(events, added, strict=True):
        if not text:
            out.append(event)
            continue
        path = _leaf_path(event, text)
        assert path is not None
        if placed:
            emptied = copy.deepcopy(event)
            _set(emptied, path, "")
            out.append(emptied)
            continue
        placed = True
        for piece in pieces:
            fresh = copy.deepcopy(event)
            _set(fresh, path, piece)
            out.append(fresh)
    return out


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def text_message(wire: str, text: str) -> dict:
    """The wire's whole (stream=false) message of its text turn, ``text`` its display text
    (where the recorded DONE restates the output, its text leaf is replaced too)."""
    buf = replay(text_turn(wire, [text]))
    message = buf.as_dict()
    if buf.strategy.content_text(message) != text:
        original = replay(read_stream(text_golden(wire))).get_content()
        path = _leaf_path(message, original)
        assert path is not None, wire
        _set(message, path, text)
    assert buf.strategy.content_text(message) == text
    return message
