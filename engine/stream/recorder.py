"""What a buffer made with ``events=True`` records (README, "Events"), chunk by chunk.

The operations write into the message as they always did; what they need to report is small:
an argument stream tells its call's :class:`CallSink` each fragment, whole value or path-set
piece it takes (``ArgsStream.sink``, None on a buffer without events: one attribute test per
fragment), and the assembly attaches a sink to every call it starts tracking. Everything else
is read, once per chunk, from the growth of state the assembly keeps anyway (display and
reasoning fragments, tracks, the calls handed out, the incomplete list, ``finished``).

A started call's ``partial`` is fed as the fragment arrives (O(fragment), no queue to go
through after the chunk), and its :class:`ArgumentsDelta` waits in ``pending`` until the buffer
:meth:`EventRecorder.commit`\\ s the chunk, so that the events of one chunk keep their order
(text, reasoning, starts, then arguments, ready, incomplete, finished) and a chunk that raises
records nothing. Such a chunk is taken back by the assembly's undo journal
(engine.model.journal), which a sink writes to as the assembly does: its ``partial`` (the same
dict) and its scanner go back to what they were, and the sinks of the calls it started go with
the tracks they hang on (each track's ``args.sink``: the recorder keeps no list of them); then
the buffer drops the failed chunk's pending deltas. So no event is recorded for a chunk that
did not go in, and each ``partial`` is what the accepted chunks made it.

The display text told as ``TextDelta`` is counted by the buffer's display cursors
(engine.stream.display), which the recorder is handed per chunk: it writes no field of the
buffer's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .. import events
from ..events import ArgumentsDelta, CallIncomplete, CallReady, CallStarted, TextDelta
from ..model.journal import put, put_attr, trim
from ..model.partial import PartialJSON

if TYPE_CHECKING:
    from ..model.assembly import Assembly, CallTrack
    from .display import DisplayCursors

_new = object.__new__


# The event classes are frozen dataclasses with slots: these write a new event's slots
# directly (each slot's member descriptor, frozen or not): their own ``__init__`` (an
# ``object.__setattr__`` per field) costs twice that.
_set_slot: Callable[[Any, Any], None] = ArgumentsDelta.__dict__["slot"].__set__
_set_text: Callable[[Any, Any], None] = ArgumentsDelta.__dict__["text"].__set__
_set_partial: Callable[[Any, Any], None] = ArgumentsDelta.__dict__["partial"].__set__
_set_display: Callable[[Any, Any], None] = TextDelta.__dict__["text"].__set__


def _delta(slot: Any, text: str | None, partial: dict[str, Any]) -> ArgumentsDelta:
    """``ArgumentsDelta(slot, text, partial)``, built fast: one per argument fragment, where
    the dataclass's ``__init__`` was a third of what recording a fragment costs."""
    event = _new(ArgumentsDelta)
    _set_slot(event, slot)
    _set_text(event, text)
    _set_partial(event, partial)
    return event


class CallSink(PartialJSON):
    """One call's side of the events: its ``partial`` (the sink is that reader, ``value``
    the dict every ArgumentsDelta of the call carries) and whether it is live (started).

    Told by the call's ArgsStream while a chunk is applied (``fed``, ``whole``, ``path``,
    ``reset``): the reader takes the piece at once; a started call's delta goes to the
    recorder's ``pending``, an unstarted call's growth is kept for the one delta that follows
    its ``CallStarted``."""

    __slots__ = ("rec", "track", "live", "slot", "early", "early_text", "done", "undo")

    def __init__(self, rec: EventRecorder, track: CallTrack, journal: list[Any]) -> None:
        super().__init__()
        self.journal = self.undo = journal  # (``undo``: the same, typed as never None)
        self.rec = rec
        self.track = track
        self.live = False  # started and not done: each growth is an ArgumentsDelta
        self.slot: Any = None
        self.early = False  # the arguments grew before the call started
        self.early_text: list[str] = []  # the raw fragments of that growth
        self.done = False  # ready or incomplete: nothing more is told of it

    def fed(self, fragment: str) -> None:
        """A fragment of the argument text: ``partial`` takes it (its own fast path reads a
        fragment of string text only in place), and the call's delta is recorded."""
        key = self.track.args.text_key
        if key is not None:  # free-form text: ``partial`` is {key: the text so far}
            put(self.undo, self.value, key, self.value.get(key, "") + fragment)
        else:
            self.feed(fragment)
        if self.live:
            delta = _new(ArgumentsDelta)
            _set_slot(delta, self.slot)
            _set_text(delta, fragment)
            _set_partial(delta, self.value)
            self.rec.pending.append(delta)
        elif not self.done:  # (not live, not done: not started yet)
            self._early()
            trim(self.undo, self.early_text)
            self.early_text.append(fragment)

    def whole(self, value: Any) -> None:
        if value == self.value and (self.closed or self.value):
            return  # the same object again (pieces assembled, then set whole)
        self.set_whole(value)
        self._grew()

    def path(self, path: str, value: Any, more: bool) -> None:
        self.set_path(path, value, more)
        self._grew()

    def _grew(self) -> None:
        """The arguments grew by a value, not text (``text`` None)."""
        if self.live:
            self.rec.pending.append(_delta(self.slot, None, self.value))
        elif not self.done:
            self._early()

    def _early(self) -> None:
        if not self.early:
            put_attr(self.undo, self, "early", True)

    def end(self) -> None:
        """Ready or incomplete: nothing more is told of the call."""
        self.done = True
        self.live = False


class EventRecorder:
    """The events of one buffer, and the cursors they are read from."""

    def __init__(self, kept: Iterable[events.Event] = ()) -> None:
        self.out: list[events.Event] = list(kept)  # recorded, not yet handed out by events()
        self.pending: list[events.Event] = []  # the deltas of the chunk being applied (see commit)
        self.unstarted: list[CallSink] = []  # tracked, no name yet (see _starts)
        self.reasoning_at = 0
        self.ready_at = 0  # into the buffer's completion list
        self.incomplete_at = 0
        self.finished = False
        # The text calls the drivers decided in this round: (slot, the call they ran or the
        # CallIncomplete they reported, its arguments so far).
        self.text_ready: list[tuple[Any, Any, dict[str, Any]]] = []

    # -- the assembly's side ---------------------------------------------------------------

    def attach(self, asm: Assembly, track: CallTrack) -> None:
        """A call is tracked: give it its sink, seeded with what its arguments hold already
        (a start event's fragment, whole arguments). Journaled as the track is: a chunk that
        raises takes back the sinks of the calls it started."""
        args = track.args
        sink = CallSink(self, track, asm.journal)
        trim(asm.journal, self.unstarted)
        self.unstarted.append(sink)
        args.sink = sink
        whole = args.whole_value()
        if whole is not None:
            sink.whole(whole)
        elif args.parts:
            sink.fed(args.text)

    # -- after each chunk --------------------------------------------------------------------

    def commit(self, asm: Assembly, cursors: DisplayCursors, completed: list[Any]) -> None:
        """Record what the chunk just applied changed: the display text as the ``cursors``
        say (none while a text codec scans it: then a driver's round releases it), the calls
        ``completed`` (the buffer's list, up to date). Per chunk: a few length tests, each
        against state the assembly keeps anyway."""
        out = self.out
        if cursors.scanner is None and len(asm.display) != cursors.told:
            event = _new(TextDelta)  # built as _delta() builds: one per display fragment
            _set_display(event, cursors.tell(asm.display))
            out.append(event)
        reasoning = asm.reasoning
        if len(reasoning) != self.reasoning_at:
            out.append(events.ReasoningDelta("".join(reasoning[self.reasoning_at :])))
            self.reasoning_at = len(reasoning)
        if self.unstarted:
            self._starts(asm)
        pending = self.pending
        if pending:
            if out:
                out += pending
                pending.clear()
            else:  # the usual case, with a client that takes the events per chunk
                self.out, self.pending = pending, out
        if len(completed) != self.ready_at:
            self._ready(asm, completed)
        if asm.incomplete or asm.over:  # only once the stream ends: its DONE or close()
            # The calls that will never be runnable, then the DONE (on a driver's buffer, as
            # its round ends: engine.stream.buffer).
            if len(asm.incomplete) != self.incomplete_at:
                self.out += asm.incomplete[self.incomplete_at :]
                self.incomplete_at = len(asm.incomplete)
                for track in asm.tracks:
                    if track.reported and track.args.sink is not None:
                        track.args.sink.end()
            if asm.over and cursors.scanner is None:
                self.finish(asm)

    def finish(self, asm: Assembly) -> None:
        """``Finished``, once, when the end is final (``Assembly.over``): at the DONE where
        nothing may follow it or usage came with it, else with the usage that follows it, an
        end marker, the first event after the end, or ``close()``; so that it carries the
        final usage. Without a DONE (``close()`` only) there is no stop reason."""
        if self.finished or not asm.over:
            return
        self.finished = True
        if asm.error is not None:
            self.out.append(events.ProviderError(asm.error))
        turn = asm.strategy.spec.turn
        stop = asm.stop_reason if asm.finished else None
        reason, usage = turn.finish_reason(asm), turn.token_usage(asm.usage)
        self.out.append(events.Finished(stop, asm.usage, reason, usage))

    def _starts(self, asm: Assembly) -> None:
        """The tracked calls whose name has come since: ``CallStarted``. Also a call that
        the chunk made incomplete (reported, its ``CallIncomplete`` told after this in the
        same commit): once named, a call always starts before its end, in the same chunk if
        need be. One that ends without a name never starts (CallIncomplete says so). Each
        call's name and id read as its place says."""
        waiting = []
        for sink in self.unstarted:
            track = sink.track
            place = track.place
            name = place.name(track.item)
            if name.__class__ is not str or not name:
                if not track.reported:
                    waiting.append(sink)
                continue
            self._start(asm, sink, name, place.id(track.item))
        self.unstarted = waiting

    def _start(self, asm: Assembly, sink: CallSink, name: str, call_id: Any) -> None:
        sink.live = not sink.done
        sink.slot = asm.track_slot(sink.track)
        known_id = call_id if call_id.__class__ is str and call_id else None
        self.out.append(CallStarted(sink.slot, name, known_id))
        if sink.early:  # the growth before the name: one delta right after CallStarted
            text = "".join(sink.early_text) if sink.early_text else None
            sink.early, sink.early_text = False, []
            self.out.append(_delta(sink.slot, text, sink.value))

    def _ready(self, asm: Assembly, completed: list[Any]) -> None:
        """``CallReady`` for the calls ``completed`` since. Each has started: the buffer's
        ``calls()`` read its name before this commit, as ``_starts`` read it just now. A call
        is found by its track (a call tracked before events were turned on has no sink)."""
        tracks = asm.tracks
        for order, call in completed[self.ready_at :]:
            sink = tracks[order].args.sink if order >= 0 else None  # -1: a text call
            if sink is None or sink.done:
                continue  # a call told incomplete already is never also ready
            sink.end()
            self.out.append(CallReady(sink.slot, call))
        self.ready_at = len(completed)

    # -- the text calls, on a driver's buffer: told as the drivers' rounds decide ---------------

    def take_back_text(self) -> int:
        """A codec comes (``attach_codec``): the TextDeltas recorded but not handed out yet
        are taken back (the scan decides what of that text is shown); returns how many
        characters they held."""
        taken = sum(len(e.text) for e in self.out if e.__class__ is TextDelta)
        self.out = [e for e in self.out if e.__class__ is not TextDelta]
        return taken

    def text_calls_ready(self) -> None:
        """The text calls the drivers decided in this round: each started, its arguments
        whole, then ready (it ran) or incomplete (reported to the model). A text call tells
        nothing before: until a driver decides, it may still turn out to be text."""
        out = self.out
        for slot, decided, arguments in self.text_ready:
            out.append(CallStarted(slot, decided.name, None))
            partial = PartialJSON()
            partial.set_whole(arguments)
            out.append(ArgumentsDelta(slot, None, partial.value))
            out.append(decided if decided.__class__ is CallIncomplete else CallReady(slot, decided))
        self.text_ready.clear()
