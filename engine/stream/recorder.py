"""What a buffer made with ``events=True`` records (API.md, "Events"), chunk by chunk.

The operations write into the message as they always did; what they need to report is small:
an argument stream tells its call's :class:`CallSink` each fragment, whole value or path-set
piece it takes (``ArgsStream.sink``, None on a buffer without events: one attribute test per
fragment), and the assembly attaches a sink to every call it starts tracking. Everything else
is read, once per chunk, from the growth of state the assembly keeps anyway (display and
reasoning fragments, tracks, the calls handed out, the incomplete list, ``finished``).

Nothing is recorded while a chunk is applied: the sinks queue what they were told, and the
buffer :meth:`EventRecorder.commit`\\ s after the chunk went in whole. A chunk that raises is
rolled back by replay (engine.buffer); its queue is dropped (:meth:`EventRecorder.rolled_back`)
and the replayed assembly's calls get back the sinks they had, so no event is recorded twice
or for a chunk that did not go in, and each ``partial`` stays the same dict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import (
    ArgumentsDelta,
    CallReady,
    CallStarted,
    Event,
    Finished,
    ProviderError,
    ReasoningDelta,
    TextDelta,
)
from ..model.partial import PartialJSON

if TYPE_CHECKING:
    from ..model.assembly import Assembly, CallTrack

_FED, _WHOLE, _PATH, _RESET = 0, 1, 2, 3
_new = object.__new__


def _delta(slot: Any, text: str | None, partial: dict) -> ArgumentsDelta:
    """``ArgumentsDelta(slot, text, partial)``, built the way a frozen dataclass's own
    ``__init__`` cannot be fast: one per argument fragment, where that ``__init__`` (an
    ``object.__setattr__`` per field) was a third of what recording a fragment costs."""
    event = _new(ArgumentsDelta)
    fields = event.__dict__
    fields["slot"] = slot
    fields["text"] = text
    fields["partial"] = partial
    return event


def _text_delta(text: str) -> TextDelta:
    """``TextDelta(text)``, fast as :func:`_delta` (one per display fragment)."""
    event = _new(TextDelta)
    event.__dict__["text"] = text
    return event


def _reasoning_of(asm: Assembly) -> Any:
    """The reasoning fragments the descriptors' rules push (``asm.reasoning``), where the
    assembly has them: a getattr with a default that misses costs an exception per chunk."""
    return asm.reasoning


class CallSink:
    """One call's side of the events: its ``partial`` and whether it has started."""

    __slots__ = ("queue", "track", "partial", "started", "slot", "early", "early_text", "done")

    def __init__(self, queue: list, track: CallTrack) -> None:
        self.queue = queue  # the recorder's queue of this chunk
        self.track = track
        self.partial = PartialJSON()
        self.started = False
        self.slot: Any = None
        self.early = False  # the arguments grew before the call started
        self.early_text: list[str] = []  # the raw fragments of that growth
        self.done = False  # ready or incomplete: nothing more is told of it

    # Told by the call's ArgsStream while a chunk is applied (queued, see the module doc).
    def fed(self, fragment: str) -> None:
        self.queue.append((self, _FED, fragment))

    def whole(self, value: Any) -> None:
        self.queue.append((self, _WHOLE, value))

    def path(self, path: str, value: Any, more: bool) -> None:
        self.queue.append((self, _PATH, (path, value, more)))

    def reset(self) -> None:
        self.queue.append((self, _RESET, None))


class EventRecorder:
    """The events of one buffer, and the cursors they are read from."""

    __slots__ = (
        "out",
        "queue",
        "sinks",
        "replaying",
        "tracks_at",
        "unstarted",
        "display_at",
        "reasoning_at",
        "ready_at",
        "incomplete_at",
        "finished",
        "text_chars",
        "skip_chars",
        "for_text",
        "text_ready",
        "text_n",
        "text_started",
    )

    def __init__(self) -> None:
        self.out: list[Event] = []  # recorded, not yet handed out by events()
        self.queue: list[tuple[CallSink, int, Any]] = []  # told during the chunk being applied
        self.sinks: list[CallSink] = []  # by track order
        self.replaying = False  # a rollback's replay: sinks are given back, nothing is told
        self.tracks_at = 0
        self.unstarted: list[CallSink] = []
        self.display_at = 0
        self.reasoning_at = 0
        self.ready_at = 0  # into the buffer's completion list
        self.incomplete_at = 0
        self.finished = False
        self.text_chars = 0  # display characters given as TextDelta before a codec scanned
        self.skip_chars = 0  # of the codec's released text: given already (see attach_codec)
        self.for_text: list[str] = []  # released for events that text() has not handed out
        self.text_ready: list[tuple[int, Any]] = []  # text calls a driver ran: (start, call)
        self.text_n = 0  # text calls started so far
        self.text_started: tuple[int, Any, str] | None = None  # (start, slot, name) forming

    # -- the assembly's side ---------------------------------------------------------------

    def attach(self, asm: Assembly, track: CallTrack) -> None:
        """A call is tracked: give it its sink (on a replay, the one it had), seeded with
        what its arguments hold already (a start event's fragment, whole arguments)."""
        args = track.args
        if self.replaying and track.order < len(self.sinks):
            sink = self.sinks[track.order]
            sink.track = track
            args.sink = sink
            return
        sink = CallSink(self.queue, track)
        del self.sinks[track.order :]
        self.sinks.append(sink)
        args.sink = sink
        whole = args.whole_value()
        if whole is not None:
            sink.whole(whole)
        elif args.parts:
            sink.fed(args.text)

    def rolled_back(self, asm: Assembly) -> None:
        """The chunk raised and the assembly was rebuilt: forget what the chunk told."""
        self.queue.clear()
        del self.sinks[len(asm.tracks) :]
        self.tracks_at = min(self.tracks_at, len(asm.tracks))
        self.unstarted = [s for s in self.unstarted if s.track.order < len(asm.tracks)]
        for sink in self.unstarted:
            sink.track = asm.tracks[sink.track.order]

    # -- after each chunk --------------------------------------------------------------------

    def commit(self, buf: Any, asm: Assembly, scanned: bool) -> None:
        """Record what the chunk just applied changed (``scanned``: a text codec scans the
        display text, which is then released by the driver's round, not here)."""
        out = self.out
        if not scanned:
            display = asm.display
            if len(display) != self.display_at:
                new = display[-1] if len(display) == self.display_at + 1 else "".join(
                    display[self.display_at :]
                )
                self.display_at = len(display)
                self.text_chars += len(new)
                out.append(_text_delta(new))
        if _HAS_REASONING:
            reasoning = _reasoning_of(asm)
            if reasoning and len(reasoning) != self.reasoning_at:
                out.append(ReasoningDelta("".join(reasoning[self.reasoning_at :])))
                self.reasoning_at = len(reasoning)
        if len(asm.tracks) != self.tracks_at or self.unstarted:
            self._starts(asm)
        queue = self.queue
        if queue:
            sink, kind, payload = queue[0]
            if len(queue) == 1 and kind == _FED and sink.started and not sink.early:
                queue.clear()  # one fragment of a started call: most chunks of a call
                partial = sink.partial
                partial.feed(payload)
                if not sink.done:
                    out.append(_delta(sink.slot, payload, partial.value))
            else:
                self._arguments()
        if asm.calls_dirty:
            buf.calls()
        completed = buf._completed
        if len(completed) != self.ready_at:
            self._ready(asm, completed)
        if len(asm.incomplete) != self.incomplete_at:
            for event in asm.incomplete[self.incomplete_at :]:
                out.append(event)
            self.incomplete_at = len(asm.incomplete)
            for sink in self.sinks:
                if sink.track.reported:
                    sink.done = True
        if asm.finished and not self.finished and not scanned:
            self.finish(asm)

    def finish(self, asm: Assembly) -> None:
        if self.finished or not asm.finished:
            return
        self.finished = True
        if asm.error is not None:
            self.out.append(ProviderError(asm.error))
        self.out.append(Finished(asm.stop_reason, asm.usage))

    def _starts(self, asm: Assembly) -> None:
        tracks = asm.tracks
        for track in tracks[self.tracks_at :]:
            sink = track.args.sink
            if sink is not None and not sink.started:
                self.unstarted.append(sink)
        self.tracks_at = len(tracks)
        calls = asm.strategy.spec.calls
        assert calls is not None  # sinks exist only for call tracks, which need calls
        waiting = []
        for sink in self.unstarted:
            track = sink.track
            if track.reported:
                continue  # incomplete before its name came: CallIncomplete says so
            name = calls.name(track.item)
            if name.__class__ is not str or not name:
                waiting.append(sink)
                continue
            self._start(asm, sink, name, calls.id(track.item))
        self.unstarted = waiting

    def _start(self, asm: Assembly, sink: CallSink, name: str, call_id: Any) -> None:
        sink.started = True
        sink.slot = asm.track_slot(sink.track)
        known_id = call_id if call_id.__class__ is str and call_id else None
        self.out.append(CallStarted(sink.slot, name, known_id))
        if sink.early:
            self._early(sink)

    def _arguments(self) -> None:
        """The fragments, values and pieces the chunk fed, in order, into each ``partial``."""
        out = self.out
        for sink, kind, payload in self.queue:
            partial = sink.partial
            if kind == _FED:
                partial.feed(payload)
                text = payload
            elif kind == _WHOLE:
                if payload == partial.value and (partial.closed or partial.value):
                    continue  # the same object again (pieces assembled, then set whole)
                partial.set_whole(payload)
                text = None
            elif kind == _PATH:
                partial.set_path(*payload)
                text = None
            else:
                partial.reset()
                continue
            if sink.done:
                continue
            if sink.started:
                if sink.early:
                    self._early(sink)
                out.append(_delta(sink.slot, text, partial.value))
            else:
                sink.early = True
                if text is not None:
                    sink.early_text.append(text)
        self.queue.clear()

    def _early(self, sink: CallSink) -> None:
        """The growth before the name, as one delta right after ``CallStarted``."""
        text = "".join(sink.early_text) if sink.early_text else None
        sink.early, sink.early_text = False, []
        self.out.append(_delta(sink.slot, text, sink.partial.value))

    def _ready(self, asm: Assembly, completed: list) -> None:
        sinks = self.sinks
        for order, call in completed[self.ready_at :]:
            sink = sinks[order] if 0 <= order < len(sinks) else None  # -1: a text call
            if sink is None or sink.done:
                continue  # a call told incomplete already is never also ready
            if not sink.started:  # its name came with its last fragment, past _starts
                if sink in self.unstarted:
                    self.unstarted.remove(sink)
                self._start(asm, sink, call.name, call.id)
            sink.done = True
            self.out.append(CallReady(sink.slot, call))
        self.ready_at = len(completed)


def _assembly_has_reasoning() -> bool:
    from ..model.assembly import Assembly

    return "reasoning" in getattr(Assembly, "__slots__", ())


_HAS_REASONING = _assembly_has_reasoning()  # asm.reasoning: the reasoning engineer's slot
