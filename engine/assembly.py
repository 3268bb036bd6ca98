"""Per-stream state: the message under assembly and what the per-chunk questions need.

A compiled strategy is immutable and shared between streams; everything one stream changes
lives here. The operations of the descriptor language (:mod:`engine.ops`) write into an
``Assembly``; the buffer reads it to answer ``forming()`` and ``calls()`` in O(1) per chunk.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from .jsonscan import COMPLETE, ArgsStream
from .model import Fragments, SlottedList, ingest

if TYPE_CHECKING:
    from .strategy import ExtractionStrategy


class CallTrack:
    """One item of the message that is a client tool call, and its arguments."""

    __slots__ = ("item", "args", "order")

    def __init__(self, item: dict, args: ArgsStream, order: int) -> None:
        self.item = item
        self.args = args
        self.order = order


class Assembly:
    __slots__ = (
        "strategy",
        "root",
        "display",
        "tracks",
        "calls_dirty",
        "stop_reason",
        "usage",
        "error",
        "finished",
        "unknown",
        "track_of",
        "open_parts",
        "calls_regressed",
        "first_open",
        "unplaced",
        "skipped",
    )

    def __init__(self, strategy: ExtractionStrategy) -> None:
        self.strategy = strategy
        self.root: dict = ingest(strategy.spec.initial_message)
        self.display: list[str] = []
        self.tracks: list[CallTrack] = []
        self.track_of: dict[int, CallTrack] = {}  # id(item) -> its track
        self.calls_dirty = False
        self.stop_reason: Any = None
        self.usage: Any = None
        self.error: Any = None
        self.finished = False
        self.unknown: Counter[str] = Counter()
        self.open_parts: list = []  # calls streaming over several parts (engine.extend)
        self.calls_regressed = False  # a call that was complete no longer is: rebuild
        self.first_open = 0  # tracks before this index are not open (forming's cursor)
        # What an operation could not place: the reasons of the chunk being applied (the
        # buffer stamps them with the chunk's index and name), then the stamped records. Both
        # stay empty on a stream that places everything, so the happy path pays one test.
        self.unplaced: list[str] = []
        self.skipped: list = []  # engine.records.Skipped

    def skip(self, reason: str) -> None:
        """An operation could not place what the event carries: say so, never drop it."""
        self.unplaced.append(reason)

    # -- items -----------------------------------------------------------------------------

    def item_added(self, pattern: str, item: dict) -> None:
        """An item was opened in a slotted list; start tracking it if it is a call."""
        calls = self.strategy.spec.calls
        if calls is None or pattern != calls.pattern:
            return
        if calls.where is not None and not calls.where(item):
            return
        args = calls.install_args(item)
        track = CallTrack(item, args, len(self.tracks))
        self.tracks.append(track)
        self.track_of[id(item)] = track
        if args.state != 0:
            self.calls_dirty = True

    def args_of(self, item: dict, path_fields: tuple[str, ...]) -> ArgsStream:
        """The argument stream at ``path_fields`` of an item, created on first use."""
        track = self.track_of.get(id(item))
        if track is not None:
            return track.args
        parent = item
        for field in path_fields[:-1]:
            child = parent.get(field)
            if child.__class__ is not dict:
                child = parent[field] = {}
            parent = child
        current = parent.get(path_fields[-1])
        if current.__class__ is ArgsStream:
            return current
        if current is None:  # the usual case: the item's first argument fragment comes next
            calls = self.strategy.spec.calls
            stream = ArgsStream(calls.args_form if calls is not None else "string")
        else:
            stream = self.strategy.spec.new_args(current)
        parent[path_fields[-1]] = stream
        return stream

    def complete_calls(self) -> list[CallTrack]:
        return [t for t in self.tracks if t.args.state == COMPLETE]


def ensure_slotted(parent: dict, field: str, order: str) -> SlottedList:
    """The slotted list at ``parent[field]``, adopting a plain list the wire sent there."""
    current = parent.get(field)
    if current.__class__ is SlottedList:
        return current
    lst = SlottedList(current if current.__class__ is list else None, order)
    parent[field] = lst
    return lst


def append_text(parent: dict, field: str, piece: str) -> None:
    current = parent.get(field)
    if current.__class__ is Fragments:
        current.parts.append(piece)
    elif current.__class__ is str and current:
        frag = Fragments(current)
        frag.parts.append(piece)
        parent[field] = frag
    else:
        parent[field] = Fragments(piece)
