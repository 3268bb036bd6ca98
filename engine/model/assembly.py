"""Per-stream state: the message under assembly and what the per-chunk questions need.

A compiled strategy is immutable and shared between streams; everything one stream changes
lives here. The operations of the descriptor language (:mod:`engine.compile.ops`) write into an
``Assembly``; the buffer reads it to answer ``forming()`` and ``calls()`` in O(1) per chunk.
Each write is journaled first (``Assembly.journal``, engine.model.journal), so that the
buffer can take back a chunk that raises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..events import CAUSE_CONNECTION, CAUSE_DONE, CAUSE_ERROR, CAUSE_LENGTH, CallIncomplete
from .fragments import SlottedList, compact, dig, ingest, make_way, shown_value
from .journal import put, put_attr, put_back, trim
from .jsonscan import AFTER_CLOSED, AFTER_COMPLETE, ArgsStream, dumps_any_depth

if TYPE_CHECKING:
    from ..compile.strategy import ExtractionStrategy


@dataclass(slots=True, eq=False)
class CallTrack:
    """One item of the message that is a client tool call, and its arguments."""

    item: dict[str, Any]
    order: int
    slot: Any = None  # the SLOT the wire keys it by, when the one who opened it knew
    # The calls place it sits at (a ``CallsSpec``): how its name, id and arguments read.
    place: Any = None
    # Set once the track is made: its seed may already be refused (``Assembly.seeding``).
    args: ArgsStream = field(init=False)
    reported: bool = False  # listed in ``Assembly.incomplete`` already
    ended_first: bool = False  # its own end event closed it before the stream's end


# A refused fragment or value, by what its call's stream says of the call (the ``why``).
_FATES = {
    AFTER_COMPLETE: "its arguments are complete (their first JSON value); the {} after them",
    AFTER_CLOSED: "it ended with its arguments incomplete and will never run; the {} that "
    "came after",
}
_END_STATE = ("finished", "over", "cut", "end_cause", "usage_event")  # what an end changes
_READ_END = attrgetter(*_END_STATE)


@dataclass(slots=True, eq=False)
class Assembly:
    """The state of one stream (see the module docstring), for the one strategy it follows."""

    strategy: ExtractionStrategy
    root: dict[str, Any] = field(init=False)  # the message (the strategy's initial one, copied)
    display: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)  # in stream order (never display)
    tracks: list[CallTrack] = field(default_factory=list)
    track_of: dict[int, CallTrack] = field(default_factory=dict)  # id(item) -> its track
    calls_dirty: bool = False
    stop_reason: Any = None
    usage: Any = None
    error: Any = None
    finished: bool = False
    unknown: Counter[str] = field(default_factory=Counter)
    # Calls streaming over several parts (engine.compile.extend_op).
    open_parts: list[Any] = field(default_factory=list)
    calls_regressed: bool = False  # a call that was complete no longer is: rebuild
    # What an operation could not place: the reasons of the chunk being applied (the
    # buffer stamps them with the chunk's index and name), then the stamped records. Both
    # stay empty on a stream that places everything, so the happy path pays one test.
    unplaced: list[str] = field(default_factory=list)
    skipped: list[Any] = field(default_factory=list)  # engine.records.Skipped
    event_name: Any = None  # the name the dispatcher read of the event it applies
    cut: bool | None = None  # the wire's DONE was a cut (length, error); None: no DONE
    incomplete: list[CallIncomplete] = field(default_factory=list)  # never runnable calls
    events: Any = None  # engine.stream.recorder.EventRecorder on a buffer with events
    # Inside an event whose rules go on writing the item they open, ``calls.where`` is
    # judged once the event is applied (see :func:`judged_after_the_event`): the call
    # items opened meanwhile wait here (pattern None: an item the event closed, its
    # arguments final once it is judged: a call that arrived whole is ready at its event).
    deferring: bool = False
    deferred: list[tuple[str | None, dict[str, Any], Any]] = field(default_factory=list)
    # The call items of a place the stream may answer after their end (``answered.later``):
    # tracked only when the stream ends, so that one answered by then never has a fate.
    held: list[tuple[str, dict[str, Any], Any]] = field(default_factory=list)
    # The end of the stream is final: nothing more of it is taken (README, "Events":
    # after the DONE). The DONE makes it so when the descriptor declares nothing that may
    # follow (``events.after_done``) or when usage came with it; else the first usage after
    # it, an end marker, the first event no declaration takes, or ``close()`` does.
    over: bool = False
    usage_event: Any = None  # the event whose rules last set the usage
    # How the stream ended, for the cause of a call cut by it (CallIncomplete.cause):
    # set at the wire's DONE (a length stop, an error, a normal stop) or at close().
    end_cause: str | None = None
    seeding: CallTrack | None = None  # the call whose arguments are being installed
    # What the chunk being applied wrote, to take back if it raises (the buffer drops
    # it once the chunk went in): records of engine.model.journal.
    journal: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = ingest(self.strategy.spec.initial_message)

    def _save_end(self) -> None:
        """Journal the end state, before the DONE, the usage or ``close()`` changes it."""
        self.journal.append((put_back, self, _END_STATE, _READ_END(self)))

    def skip(self, reason: str) -> None:
        """An operation could not place what the event carries: say so, never drop it."""
        self.unplaced.append(reason)

    # -- items -----------------------------------------------------------------------------

    def item_added(
        self, pattern: str, item: dict[str, Any], slot: Any = None, released: bool = False
    ) -> None:
        """An item was opened in a slotted list (at ``slot``, when the caller has it at
        hand); start tracking it if it is a call (a held place's: once ``released``)."""
        if self.deferring:
            self.deferred.append((pattern, item, slot))
            return
        place = self.strategy.spec.place_of(pattern, item)
        if place is None:
            return
        if place.held and not released:
            trim(self.journal, self.held)
            self.held.append((pattern, item, slot))
            return
        if place.single and slot is None:
            slot = place.pattern
        track = self.seeding = CallTrack(item, len(self.tracks), slot, place)
        track.args = self._args_at(item, place.args_fields, place)
        self.seeding = None
        self.journal.append((self._untrack, track))  # (one record for both writes)
        self.tracks.append(track)
        self.track_of[id(item)] = track
        if track.args.state != 0:
            self.calls_dirty = True
        if self.events is not None:
            self.events.attach(self, track)

    def _untrack(self, track: CallTrack) -> None:
        """The undo of a track's start (an item is told once): it goes, with its entry."""
        del self.tracks[track.order :]
        del self.track_of[id(track.item)]

    def args_of(self, item: dict[str, Any], path_fields: tuple[str, ...]) -> ArgsStream:
        """The argument stream at ``path_fields`` of an item, created on first use."""
        track = self.track_of.get(id(item))
        if track is not None:
            return track.args
        return self._args_at(item, path_fields)

    def _args_at(
        self, item: dict[str, Any], fields: tuple[str, ...], place: Any = None
    ) -> ArgsStream:
        """The one way an argument stream gets into the message: the one at the field chain
        ``fields`` of ``item``, else a new one seeded with what is there (put there, as every
        write, through the journal). For the call the item is of the calls ``place`` (a
        ``CallsSpec``): in its form, tracked by this assembly (set before the seed, which
        may already carry more than the call's first JSON value); a stream made before the
        item was known as a free-form call is made again, as text. Without ``place``: an
        item no call tracks (yet), in the form of the wire's calls."""
        journal, key = self.journal, fields[-1]
        parent = make_way(item, fields[:-1], journal)
        current = parent.get(key)
        if current.__class__ is ArgsStream:
            if place is None:
                return current
            if place.args_form != "text" or current.text_key is not None:
                put_attr(journal, current, "tracker", self)  # (its journal is ours already)
                return current
            current = current.text
        if place is None:
            calls = self.strategy.spec.calls
            stream = new_args_stream(calls.args_form if calls else "string", current)
        else:
            stream = new_args_stream(place.args_form, current, self, place.args_whole, key)
        stream.journal = journal
        put(journal, parent, key, stream)
        return stream

    def refused(self, stream: ArgsStream, what: Any, why: str) -> None:
        """A call's stream did not take ``what``: its fate is decided (engine.model.jsonscan,
        one fate per call). Listed as skipped, never dropped silently. (Cold: only for a
        wire that sends more than a call's arguments; the call is found by its stream, or
        is the one being tracked, whose seed this is.)"""
        track = next((t for t in reversed(self.tracks) if t.args is stream), self.seeding)
        assert track is not None  # (only a tracked call's stream has a tracker)
        name, slot = track.place.name(track.item), self.track_slot(track)
        fate = _FATES[why].format("text" if what.__class__ is str else "value")
        self.skip(
            f"args of the call {name!r} (slot {slot!r}): {fate} is not taken: {shown_value(what)}"
        )

    # -- the end of the stream ---------------------------------------------------------------

    def finish(self, cut: bool | None = None, event: Any = None) -> None:
        """The wire's DONE was seen: the one place that says so. What is still open closes,
        as at ``close()``: normally, unless the stop reason is one the descriptor declares a
        length cut (``finish_reasons.length``) or ``cut`` says so (a provider's error event).
        ``event``: the event whose rule said so (None: an end marker, after which nothing
        may follow)."""
        self._save_end()
        self.finished = True
        if event is None or self.usage_event is event or self.strategy.nothing_follows:
            self.over = True
        if self.cut is not None:
            return  # a second DONE (a finish reason, then ``data: [DONE]``) changes nothing
        if cut is None:
            reason = self.stop_reason
            cut = reason.__class__ is str and reason in self.strategy.spec.length_stops
            self.end_cause = CAUSE_LENGTH if cut else CAUSE_DONE
        else:
            self.end_cause = CAUSE_ERROR if cut else CAUSE_DONE
        self.cut = cut
        self.close_open(cut)

    def took_usage(self, event: Any) -> None:
        """An event's rules set the usage: after the DONE (or with it, whichever rule of the
        DONE's event runs first) it is the last thing the stream brings."""
        self._save_end()
        self.usage_event = event
        if self.finished:
            self.over = True

    def end_input(self) -> None:
        """``close()``: no more input. Without the wire's DONE every open item was cut;
        after it, an item opened since closes the way the DONE said."""
        self._save_end()
        self.over = True
        if self.cut is None:
            self.end_cause = CAUSE_CONNECTION
        self.close_open(True if self.cut is None else self.cut)

    def close_open(self, cut: bool) -> None:
        """Close every call still open, then list the calls that will never be runnable."""
        held = self.held
        put_attr(self.journal, self, "held", [])
        for pattern, item, slot in held:  # judged now: an answered call is none
            if id(item) not in self.track_of:
                self.item_added(pattern, item, slot, released=True)
        for track in self.tracks:  # closed by their own end event, before the stream's
            if track.args.closed and not track.reported and not track.ended_first:
                put_attr(self.journal, track, "ended_first", True)
        for end in self.strategy.at_end:  # what operations keep open (the extend op's parts)
            end(self, cut)
        for track in self.tracks:
            if track.args.close(cut):  # (False for arguments closed already)
                self.calls_dirty = True
        self._note_incomplete()
        compact(self.root)  # the stream's end: its texts are joined once

    def _note_incomplete(self) -> None:
        """Add each call that will never be runnable to ``incomplete``, once."""
        for track in self.tracks:
            reason = track.args.incomplete_reason
            if reason is None or track.reported:
                continue
            put_attr(self.journal, track, "reported", True)
            slot, cause = self.track_slot(track), self._cause(track, reason)
            found = track.place.incomplete_call(track.item, slot, track.args.text, reason, cause)
            trim(self.journal, self.incomplete)
            self.incomplete.append(found)

    def _cause(self, track: CallTrack, reason: str) -> str | None:
        """``CallIncomplete.cause``: why the arguments never parse, or what cut them. A
        length stop or an error at the end is what cut every call still incomplete then;
        else a call whose own end event closed it open ended there ("done inside call"),
        not at the connection's end."""
        if reason != "cut":
            return track.args.invalid_cause()
        cause = self.end_cause
        if track.ended_first and cause not in (CAUSE_LENGTH, CAUSE_ERROR):
            return CAUSE_DONE
        return cause

    def track_slot(self, track: CallTrack) -> Any:
        """The call's SLOT: as its opener gave it, else found in the message (and kept): the
        SLOT the wire keys its item by (its position for a plain list), by walking the lists
        of its calls place (a single place's item has its pattern for a SLOT from the start)."""
        if track.slot is None:
            found = items_under(self.root, track.place.list_fields)
            track.slot = next((slot for slot, entry in found if entry is track.item), None)
        return track.slot


def items_under(
    message: Any, chains: tuple[tuple[str, ...], ...]
) -> list[tuple[Any, dict[str, Any]]]:
    """The mappings at the end of ``chains`` (the field chains between a pattern's ``[*]``
    steps), each with its SLOT: its position in its list, its key in a slotted list (the
    message under assembly), None for a mapping standing where the last list was expected.
    The one walk of a place's items, in a whole message and in the assembly's."""
    level: list[tuple[Any, dict[str, Any]]] = [(None, message)]
    for chain in chains:
        nxt: list[tuple[Any, dict[str, Any]]] = []
        for _, node in level:
            lst = dig(node, chain)
            if lst.__class__ is SlottedList:  # its items by slot, in the order they opened
                nxt.extend(lst.by_slot.items())
            elif isinstance(lst, list):
                nxt.extend((at, x) for at, x in enumerate(lst) if isinstance(x, dict))
            elif isinstance(lst, dict) and chain == chains[-1]:
                nxt.append((None, lst))
        level = nxt
    return level


def judged_after_the_event(runs: list[Any]) -> Callable[[Assembly, Any, Any], None]:
    """The rules of one event, run so that ``calls.where`` is judged on each item they open
    as it stands once every rule of the event has run: a flag a later rule sets (a type, a
    name) counts, and one that a later rule clears does too. Compiled only for a rule list in
    which a rule that may open a call item is followed by others: an event's own list, which
    runs at the top of ``Program.apply``, never inside another (so never nested)."""

    def judged(asm: Assembly, ev: Any, ch: Any) -> None:
        asm.deferring = True
        try:
            for run in runs:
                run(asm, ev, ch)
        finally:
            asm.deferring = False
            pending, asm.deferred = asm.deferred, []
            for pattern, item, slot in pending:
                if pattern is None:
                    track = asm.track_of.get(id(item))
                    if track is not None and track.args.close():
                        asm.calls_dirty = True
                elif id(item) not in asm.track_of:
                    asm.item_added(pattern, item, slot)

    return judged


def ensure_slotted(
    parent: dict[str, Any], field: str, order: str, journal: list[Any]
) -> SlottedList:
    """A slotted list put at ``parent[field]``, where none is yet (each caller tests that
    first, inline), adopting a plain list the wire sent there."""
    current = parent.get(field)
    lst = SlottedList(current if current.__class__ is list else None, order)
    put(journal, parent, field, lst)
    return lst


def new_args_stream(
    form: str, current: Any, tracker: Any = None, whole: bool = False, text_key: str | None = None
) -> ArgsStream:
    """The one maker of an argument stream, for what an item holds at its args field
    (``current``, None when nothing): free-form text (``text_key`` its field) fed what is
    there; arguments that arrive ``whole`` set whole (absent: a call without arguments); an
    object-form start's object kept as its ``initial``; text fed; a value set whole.
    ``tracker`` (see ArgsStream.tracker) is set before the seed."""
    keep = not whole and form == "object" and current.__class__ is not str
    stream = ArgsStream(form, initial=current if keep else None, text_key=text_key)
    stream.tracker = tracker
    if current is None or keep:
        if whole:
            stream.set_whole({})
    elif form == "text" or (current.__class__ is str and not whole):
        stream.feed(current if current.__class__ is str else dumps_any_depth(current))
    else:
        stream.set_whole(current)
    return stream
