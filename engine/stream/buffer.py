"""``LLMStreamBuffer``: one stream, chunk by chunk.

The buffer resolves the wire among its strategies from the first chunk one of them recognises
(keeping earlier, unrecognised chunks and replaying them), hands every event to the compiled
rules, and answers the per-chunk questions (``forming()``, ``calls()``) from state the rules
keep up to date, so that the client loop costs O(1) amortized per chunk.

A chunk that raises changes nothing (README, "What it does": "the buffer is left as it was"),
whatever rule of its event raised and whatever the exception. The rules of one event run one after
the other and write into the message as they go, so an exception midway would leave the event half
applied. The ways to undo that that were weighed:

- a copy of the assembly before every chunk: O(message) per chunk, quadratic over a stream;
- replay (used until issue 17): keep the events the assembly was built from and, when one
  raises, build a fresh assembly from them. One list append per chunk, but the buffer kept
  every event (150 times the message it assembled), a rejected chunk cost O(stream) (2 s after
  100,000 chunks), and a client that refills one dict per chunk had its message rebuilt from
  what the dict held last;
- an undo journal written by every operation: a duty on every operation yet to be written (one
  that forgets is a silent corruption);
- an undo journal written by the model's few write primitives (chosen: engine.model.journal):
  a dict set, a list append, a text fragment, a slotted list's item, an argument stream's and a
  ``partial`` reader's state each journal what they overwrite, one tuple per write, and the
  operations write only through them. :meth:`_apply` is the one place that applies an event:
  it undoes the journal when the event raises and drops it when it went in. A rejected chunk
  costs what it wrote, the buffer keeps nothing but its message, and nothing of a chunk is
  read after ``add`` returns. The display and reasoning lists only grow inside an event, so
  their lengths are all their undo needs.

What the buffer derived from the assembly (the calls handed out, the display cursors, the
codec's feed count, the forming cache) is never written while an event applies, so it stays
as it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from types import TracebackType
from typing import Any

from ..compile.strategy import NOT_FORMING, ExtractionStrategy, Forming
from ..errors import ChunkError, UnknownFormatError
from ..events import CallIncomplete, Event, ExtractedCall, TextDelta
from ..model.assembly import Assembly
from ..model.fragments import copy_json
from ..model.journal import undo
from ..model.jsonscan import COMPLETE, TooDeepError
from ..records import FinishReason, Skipped, Usage
from ..transport.sse import SSEDecoder
from .chunks import SKIP, Sentinel, decode, error_text, utf8
from .display import DisplayCursors
from .rounds import NO_FORMING, TEXT_CALL_HELD, RoundState, forming_of

AFTER_THE_END = "after the stream's end"  # the reason of an event that came after it


class LLMStreamBuffer:
    """Accumulates one streamed response into the provider's own ``stream=false`` message."""

    # Slots: every per-chunk attribute read is a slot read, however many attributes the
    # buffer grows (an instance dict stops sharing its keys past 30, and reads slow down).
    __slots__ = (
        "_asm",
        "_calls",
        "_closed",
        "_completed",
        "_display",
        "_emitted",
        "_forming_at",
        "_forming_pub",
        "_index",
        "_new_at",
        "_pending",
        "_pending_end",
        "_plain",
        "_rec",
        "_round",
        "_scan_from",
        "_sse",
        "_text_rule",
        "choice",
        "codec",
        "strategies",
        "__weakref__",
    )

    def __init__(
        self,
        strategies: list[ExtractionStrategy] | None = None,
        choice: int = 0,
        events: bool = False,
    ) -> None:
        if strategies is None:
            from ..language.registry import wire_strategies

            strategies = wire_strategies()
        self.strategies = list(strategies)
        # A buffer of the text codec alone streams plain text: its text chunks are events of
        # the codec's plain-text wire (engine.text.strategy). None on every other buffer.
        wire = not self.strategies or any(getattr(s, "is_wire", False) for s in self.strategies)
        plain = (s for s in self.strategies if callable(getattr(s, "plain_text_wire", None)))
        self._plain: Any = None if wire else next(plain, None)
        self.choice = choice
        self._asm: Assembly | None = None
        self.codec: Any = None  # the text codec scanning display text (attach_codec)
        self._text_rule: str | None = None  # the rule it scans the turn under (attach_codec)
        # The events (engine.stream.recorder), on a buffer made with events=True: None
        # otherwise, and then the one attribute test per chunk that events cost.
        self._rec: Any = None
        self._reset_view()
        if events:
            self._record_events()

    def _reset_view(self) -> None:
        # Chunks seen before the wire was resolved, with their indexes (to say what they
        # could not place).
        self._pending: list[tuple[int, dict[str, Any]]] = []
        self._pending_end = False  # an end marker came before the wire was resolved
        self._index = 0  # position of the next chunk, for error messages
        self._sse = SSEDecoder()  # SSE lines a chunk at a time: an event: line names the next
        self._round = RoundState()  # the drivers' round state (engine.stream.rounds)
        self._calls: list[ExtractedCall] = []
        self._emitted: dict[int, ExtractedCall] = {}  # track index -> its call in _calls
        self._scan_from = 0
        self._forming_pub = NO_FORMING  # forming()'s own cache (the drivers': the round's)
        self._forming_at = 0  # tracks before this index are ready or incomplete (forming())
        # (track order, call), in the order calls completed, each once (new_calls)
        self._completed: list[tuple[int, ExtractedCall]] = []
        self._new_at = 0  # new_calls()' cursor into _completed
        self._closed = False
        # Where text(), the events, get_content() and the codec's scan have got to in the
        # display text, and the scan itself: one object, whose docstring states the rule.
        self._display = DisplayCursors(self.codec, self._text_rule)

    # -- input -----------------------------------------------------------------------------

    def add(self, chunk: Any) -> None:
        """Take one chunk: a dict, JSON text (also an SSE line or block) or an SDK object;
        on a buffer of the text codec alone, a piece of plain text. After ``close()`` a
        ``ChunkError`` that changes nothing (``reset()`` reopens the buffer)."""
        index = self._index
        if self._closed:
            raise ChunkError(
                index,
                "the buffer was closed (close() ended its input): a chunk after it is not "
                "taken; reset() reopens the buffer for a new stream",
            )
        self._index += 1
        rec = self._rec
        if rec is not None and self.codec is not None:
            self._flush_round()  # the round that ends decided what its text is
        self._round.held = False
        if chunk.__class__ is dict:  # the common case, without a call
            event = chunk
        elif self._plain is not None and isinstance(chunk, (str, bytes, bytearray)):
            # A text chunk of a plain text stream: taken as it is (its whitespace is text),
            # never read as JSON or SSE.
            event = self._plain.text_chunk(chunk if isinstance(chunk, str) else utf8(chunk, index))
        else:
            event = decode(chunk, index, self._sse)
            if event is SKIP:
                return
            if event.__class__ is Sentinel:
                self._take_sentinel(event, index)
                return
        asm = self._asm
        if asm is None:
            self._add_unresolved(event, index)
            return
        if asm.finished and self._after_the_end(asm, event, index):
            return
        try:  # what _apply does, inline: a frame less on every chunk
            asm.strategy.program.apply(asm, event, self.choice)
        except BaseException as exc:
            self._undo(asm)
            if isinstance(exc, Exception):  # (anything else, KeyboardInterrupt, on its way)
                raise self._misfit(asm, index, exc) from exc
            raise
        del asm.journal[:]  # (no method call: this runs on every chunk)
        asm.usage_event = None  # "usage came with the DONE" is a fact of one event, read in it
        if asm.unplaced or rec is not None:  # the happy path without events pays this test
            self._commit(asm, index)

    def _apply(self, asm: Assembly, event: dict[str, Any], index: int) -> None:
        """Apply ``event`` (of chunk ``index``), all or nothing: what its rules wrote is
        journaled (engine.model.journal) and undone if any of them raises, whatever the
        exception, which then propagates (an Exception as the chunk's ChunkError); once they
        all ran, it is committed."""
        try:
            asm.strategy.program.apply(asm, event, self.choice)
        except BaseException as exc:
            self._undo(asm)
            if isinstance(exc, Exception):  # (anything else, KeyboardInterrupt, on its way)
                raise self._misfit(asm, index, exc) from exc
            raise
        asm.usage_event = None
        self._commit(asm, index)

    def _undo(self, asm: Assembly) -> None:
        """Take back the event being applied: its journal (which also holds what it added to
        the display and reasoning text)."""
        undo(asm.journal)
        asm.unplaced.clear()
        asm.deferring, asm.deferred, asm.seeding = False, [], None  # (inside an event only)
        if self._rec is not None:  # (the sinks of the calls it started were in the journal)
            self._rec.pending = []  # the argument deltas it told

    def _after_the_end(self, asm: Assembly, event: dict[str, Any], index: int) -> bool:
        """After the wire's DONE (README, "Events": after the DONE): is ``event`` left out? What the
        descriptor declares may follow (``events.after_done``) is taken while the end is not
        final; a chunk of another choice is not this stream's event (neither taken nor
        listed); any other event changes nothing, is listed in ``skipped()``, and makes the
        end final. Per chunk this costs the one test of ``finished`` in ``add``."""
        program = asm.strategy.program
        name = _event_name(asm, event)
        if not asm.over and program.after_done is not None and program.after_done(event, name):
            return False
        if program.of_another_choice(event, self.choice):
            return True
        asm.over = True
        asm.skipped.append(Skipped(index, name, AFTER_THE_END))
        self._commit(asm)
        return True

    @staticmethod
    def _misfit(asm: Assembly, index: int, exc: BaseException) -> ChunkError:
        if isinstance(exc, TooDeepError):
            return ChunkError(index, str(exc))
        reason = error_text(exc, 500) or "no detail"
        wire = asm.strategy.name
        return ChunkError(index, f"event does not fit {wire}: {type(exc).__name__}: {reason}")

    def _add_unresolved(self, event: dict[str, Any], index: int) -> None:
        """Before the wire is resolved: resolve it on ``event`` or keep the event. The wire is
        the first strategy whose chunk predicate claims it; failing all, the first whose error
        predicate does (a provider error as the first chunk, in an envelope several wires
        share: theirs only when nothing else claims it). The events kept are replayed first.
        An event that resolves the wire but does not fit it leaves the wire unresolved, as
        before."""
        strategies = self.strategies if self._plain is None else [self._plain.plain_text_wire()]
        strategy = next((s for s in strategies if s.recognizes_chunk(event)), None)
        if strategy is None:
            strategy = next((s for s in strategies if s.recognizes_error(event)), None)
        if strategy is None:
            self._pending.append((index, event))
            return
        told = len(self._rec.out) if self._rec is not None else 0
        calls = self._calls  # the list calls() handed out, empty: the replay may fill it
        asm = self._asm = strategy.new_assembly()
        asm.events = self._rec
        try:
            for at, earlier in self._pending:
                # Never recognised, so one that does not fit the wire is not an error of the
                # chunk being added: it is undone and counted with the events no rule handles.
                try:
                    self._apply(asm, earlier, at)
                except ChunkError:
                    asm.unknown[str(_event_name(asm, earlier))] += 1
            if self._pending_end:
                asm.finish()
                self._commit(asm)
            self._apply(asm, event, index)
        except BaseException:
            self._asm = None  # (the chunks kept, still unplaced, stay kept)
            del calls[:]  # no call of the undone replay is handed out, nor counted as new
            self._calls, self._emitted, self._scan_from, self._completed = calls, {}, 0, []
            self._display = DisplayCursors(self.codec, self._text_rule)  # nothing shown of it
            if self._rec is not None:  # the replayed earlier chunks are undone too
                self._record_events(self._rec.out[:told])
            raise
        self._pending = []  # replayed: the assembly holds them now

    def _take_sentinel(self, sentinel: str, index: int) -> None:
        """An end marker (``data: [DONE]``): the DONE of the wire that declares it, and the end
        of the stream on any other wire too (proxies and SDKs end every SSE stream with it)."""
        from ..language.registry import end_markers

        own = (s.spec.sentinels for s in self.strategies if getattr(s, "spec", None) is not None)
        if sentinel not in end_markers().union(*own):  # this buffer's wires' and the built-ins'
            raise ChunkError(
                index,
                f"expected a JSON object, got the text {sentinel!r} "
                "(not JSON, and not an end marker of any known wire)",
            )
        if self._asm is None:
            self._pending_end = True  # remembered: the wire it ends is not known yet
        else:
            self._asm.finish()
            self._commit(self._asm)

    def close(self) -> None:
        """End of input: close whatever is still open; nothing stays held after this."""
        self._closed = True
        self._round.held = False
        if self._asm is None:
            if self._pending:
                tried = ", ".join(s.name for s in self.strategies)
                raise UnknownFormatError(
                    f"no format recognised any of the {len(self._pending)} chunk(s); tried: {tried}"
                )
            return
        self._asm.end_input()
        self._commit(self._asm)
        self._display.compact(self._asm.display)

    def hold(self) -> None:
        """Veto display for this round (until the next ``add``)."""
        self._round.hold()

    def reset(self) -> None:
        """Forget the stream so far, keeping the resolved wire: its chunks are counted again
        from 0, and an SSE ``event:`` line of the old stream names nothing of the new one."""
        self._reset_view()
        if self._asm is not None:
            self._asm = self._asm.strategy.new_assembly()
        if self._rec is not None:
            self._record_events(self._rec.out)  # what was recorded is still handed out

    # -- questions ---------------------------------------------------------------------------

    @property
    def format(self) -> str | None:
        return self._asm.strategy.name if self._asm is not None else None

    @property
    def strategy(self) -> ExtractionStrategy | None:
        return self._asm.strategy if self._asm is not None else None

    @property
    def closed(self) -> bool:
        """The client called ``close()``: no more input (until ``reset()``). A stream may end
        this way without its wire's DONE (``is_finished()`` stays false)."""
        return self._closed

    def is_finished(self) -> bool:
        return self._asm.finished if self._asm is not None else self._pending_end

    def forming(self) -> Forming:
        """Is a call coming: one has started and is neither ready nor incomplete (false
        after ``close()``, and after the wire's DONE, which closes every call); with its
        name once streamed. O(1) amortized: a cursor passes the calls that are done."""
        asm = self._asm
        if asm is None or not asm.tracks or self._closed:
            return NOT_FORMING
        tracks = asm.tracks
        count = len(tracks)
        i = self._forming_at
        while i < count and (tracks[i].args.state != 0 or tracks[i].args.closed):
            i += 1
        self._forming_at = i
        if i == count:
            return NOT_FORMING
        forming, self._forming_pub = forming_of(tracks[i], self._forming_pub)
        return forming

    def calls(self) -> list[ExtractedCall]:
        """Calls whose arguments are complete so far, in message order. O(new calls).

        The list is the buffer's own and grows in place as calls complete (copying it per
        chunk would make a stream of whole calls quadratic); copy it to keep a snapshot."""
        asm = self._asm
        if asm is None or not asm.calls_dirty:
            return self._calls
        asm.calls_dirty = False
        if asm.calls_regressed:
            asm.calls_regressed = False
            self._emitted, self._calls, self._scan_from = {}, [], 0
        # Each call is built once, its arguments sharing nothing with the message (a client may
        # edit what it was handed: README, "With a driver"): parsed from text they are the call's
        # alone; a value the message holds (an object wire's input, arguments sent whole) is copied,
        # once. Each call reads as its place says (``calls`` or ``calls.also``).
        tracks = asm.tracks
        emitted = self._emitted
        out_of_order = False
        for index in range(self._scan_from, len(tracks)):
            track = tracks[index]
            if index in emitted or track.args.state != COMPLETE:
                continue
            place = track.place
            name = place.name(track.item)
            if name.__class__ is not str or not name:
                asm.calls_dirty = True  # the name may still arrive
                continue
            if emitted and next(reversed(emitted)) > index:  # (the last is the greatest)
                out_of_order = True
            args = track.args
            value = args.value
            if args.form == "object" or args.whole_value() is not None:
                value = copy_json(value)  # the message holds it: the call gets its own
            call_id = place.id(track.item) or None
            call = ExtractedCall(name, value, call_id, free_form=args.form == "text")
            self._calls.append(call)
            emitted[index] = call
            if args.owner is None:  # first handed out: completed now (a rebuild lists it again)
                self._completed.append((index, call))
            args.owner = asm
        while self._scan_from in emitted:
            self._scan_from += 1
        if out_of_order:
            self._emitted = dict(sorted(emitted.items()))
            self._calls = list(self._emitted.values())
        return self._calls

    def new_calls(self) -> list[ExtractedCall]:
        """The calls completed since the last ``new_calls()``, each exactly once, in the
        order they completed: what a per-chunk loop runs. A text codec's calls (on a
        driver's buffer) count once a driver ran them. A fresh list."""
        if self._asm is not None and self._asm.calls_dirty:
            self.calls()
        completed = self._completed
        if self._new_at == len(completed):
            return []
        new = [call for _, call in completed[self._new_at :]]
        self._new_at = len(completed)
        return new

    # -- events ------------------------------------------------------------------------------

    def _record_events(self, kept: Iterable[Event] = ()) -> None:
        """Turn events on (or start them again after ``reset()`` or an undone resolution),
        keeping ``kept``: what was recorded and not yet handed out."""
        from .recorder import EventRecorder

        rec = self._rec = EventRecorder(kept)
        if self._asm is not None:
            self._asm.events = rec

    def _commit(self, asm: Assembly, index: int | None = None) -> None:
        """What was just applied is in (the journal of a DONE or ``close()`` dropped too):
        what the rules of chunk ``index`` could not place is recorded, located and named as
        the dispatcher read the event's name; and its events, on a buffer with events."""
        asm.journal.clear()
        if index is not None and asm.unplaced:
            name = None if asm.event_name is None else str(asm.event_name)
            asm.skipped.extend(Skipped(index, name, reason) for reason in asm.unplaced)
            asm.unplaced.clear()
        rec = self._rec
        if rec is not None:
            if asm.calls_dirty:
                self.calls()
            rec.commit(asm, self._display, self._completed)

    def events(self) -> list[Event]:
        """The events recorded since the last ``events()``, in stream order, each once
        (README, "Events"). On a driver's buffer call it after the drivers' round: the
        display text is released as the round decided. ValueError on a buffer made
        without ``events=True``: an event is never lost silently."""
        rec = self._rec
        if rec is None:
            raise ValueError(
                "this buffer records no events: make it with LLMStreamBuffer(events=True) "
                "(or driver.new_stream_buffer(events=True)), or iterate buf.consume(chunks)"
            )
        if self.codec is not None:
            self._flush_round()
        out: list[Event] = rec.out
        rec.out = []
        return out

    def consume(self, chunks: Iterable[Any]) -> Iterator[Event]:
        """The loop of a client without a driver: ``add`` each chunk and yield its events;
        at the end ``close()`` and yield the last ones. Turns events on. An exception the
        source raises propagates, and the buffer stays open and usable."""
        if self._rec is None:
            self._record_events()
        events, add = self.events, self.add
        spare: list[Event] = []  # the list handed out last, empty again: no list per chunk
        for chunk in chunks:
            add(chunk)
            rec = self._rec
            out = rec.out
            # Without a codec there is no round to flush, and the recorded list is handed
            # out here, never to a caller who could keep it: emptied, it takes the next
            # chunk's events, so that the loop makes no list per chunk.
            if out and self.codec is None:
                rec.out = spare
                if len(out) == 1:
                    yield out[0]
                else:
                    yield from out
                out.clear()  # nobody else holds it: events() can no longer return it
                spare = out
            else:
                yield from events()
        self.close()
        yield from self.events()

    async def aconsume(self, chunks: AsyncIterable[Any]) -> AsyncIterator[Event]:
        """:meth:`consume` over an async iterable: ``async for ev in buf.aconsume(s)``."""
        if self._rec is None:
            self._record_events()
        async for chunk in chunks:
            self.add(chunk)
            for event in self.events():
                yield event
        self.close()
        for event in self.events():
            yield event

    def _flush_round(self) -> None:
        """On a driver's buffer with events: what the round that ends decided. The text
        calls a driver ran are ready, the display text no driver held is released (for
        the events, and kept for ``text()``: neither takes from the other), and the text
        call the drivers hold has started; then the DONE, once the text before it is out."""
        rec = self._rec
        asm = self._asm
        if asm is None:
            return
        if rec.text_ready:
            rec.text_calls_ready()
        self._release_to_events()
        rec.finish(asm)  # (once the end is final: finish() says when)

    def incomplete_calls(self) -> list[CallIncomplete]:
        """The calls that will never be runnable (cut, invalid, too deep), in message order,
        known from the wire's DONE or ``close()`` on; ``[]`` before. A copy. On a driver's
        buffer, the text calls that would have run but cannot come after the native ones, once
        the driver's round at the end has reported them."""
        return [*self._asm.incomplete, *self._round.reported] if self._asm is not None else []

    def as_dict(self) -> dict[str, Any]:
        """The provider's ``stream=false`` message, as far as streamed."""
        asm = self._asm
        return asm.strategy.message_of(asm) if asm is not None else {}

    @property
    def stop_reason(self) -> str | None:
        """The provider's raw stop reason, as the wire sends it (as text), or None."""
        return self._asm.stop_reason if self._asm is not None else None

    @property
    def finish_reason(self) -> FinishReason | None:
        """The stop reason in the words every wire shares (the descriptor's
        ``finish_reasons``): "stop", "length", "tool_calls", "content_filter", "error" or
        "other"; None until the wire's DONE, and for a stream that never sent one."""
        asm = self._asm
        return asm.strategy.spec.turn.finish_reason(asm) if asm is not None else None

    @property
    def usage(self) -> dict[str, Any] | None:
        """The provider's raw usage object (latest or merged, as the wire defines), or None."""
        return self._asm.usage if self._asm is not None else None

    @property
    def token_usage(self) -> Usage | None:
        """The usage as :class:`engine.Usage`, one meaning on every wire (the descriptor's
        ``token_usage``); None when the wire sent no usage."""
        asm = self._asm
        return asm.strategy.spec.turn.token_usage(asm.usage) if asm is not None else None

    # -- a context manager: the block is the stream ------------------------------------------

    def __enter__(self) -> LLMStreamBuffer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """``close()`` at the end of a ``with`` block (unless closed already). When the block
        raised, a close that finds no wire (UnknownFormatError) does not mask its exception:
        the block's exception propagates, the close's is dropped."""
        if self._closed:
            return
        try:
            self.close()
        except UnknownFormatError:
            if exc is None:
                raise

    async def __aenter__(self) -> LLMStreamBuffer:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    @property
    def error(self) -> Any:
        return self._asm.error if self._asm is not None else None

    def skipped(self) -> list[Skipped]:
        """What the buffer could not place, never silently: each event (or part of one) that
        an operation found no place for in the message, in stream order, with its reason
        (``Skipped(index, event, reason)``): an event without its slot key, one for an item
        that is not open, a restatement of a call already ready; and what a call whose fate
        is decided does not take (one fate per call): argument text after its first complete
        JSON value, a different restatement of its complete arguments, a fragment after it
        ended incomplete. Events that no rule handles at all are counted in
        ``unknown_events`` instead. A fresh list, cumulative."""
        return list(self._asm.skipped) if self._asm is not None else []

    @property
    def unknown_events(self) -> Counter[str]:
        """Events no rule handles, by name: skipped (providers add events), and counted."""
        return self._asm.unknown if self._asm is not None else Counter()

    def text(self) -> str:
        """Display text released since the last call ("" while held)."""
        if self._rec is not None and self.codec is not None:
            self._release_to_events()  # events see it too; what they released comes first
            new, self._display.for_text = "".join(self._display.for_text), []
            return new
        return self._release()

    def _release_to_events(self) -> None:
        """The display text released now, told as an event and kept for ``text()`` (neither
        reader takes from the other)."""
        new = self._release()
        if new:
            self._display.for_text.append(new)
            self._rec.out.append(TextDelta(new))

    def _release(self) -> str:
        """``text()``: the display text released now, by the codec's scanner if one scans."""
        asm = self._asm
        held = self._round.held
        if held is True or asm is None:
            return ""
        return self._display.release(
            asm.display, held is TEXT_CALL_HELD, self._closed or asm.finished
        )

    def get_content(self) -> str:
        """All display text so far."""
        return self._display.content(self._asm.display) if self._asm is not None else ""

    # -- what drivers read: the stream's state, the scan of its display text -----------------
    #
    # A round is what happens between two ``add``s (or an ``add`` and ``close``): every
    # driver fed this buffer looks at it, then the client reads ``text()``, which releases
    # what no driver held in the round. What the drivers share across rounds (the hold, the
    # text calls decided, the call held on) is one object, ``self._round``
    # (engine.stream.rounds); what each driver handled (its marks) is its own record of the
    # stream (engine.drivers), and ``changes()`` answers what changed since those marks.

    def attach_codec(self, codec: Any, rule: str = "end") -> None:
        """Scan the display text with a text codec (:class:`engine.text.codec.TextCodec`) for
        calls written into it, under a driver's ``rule`` (``"end"``: a call counts only when
        it ends the turn; ``"anywhere"``; see ``TextScanner``); ``text()`` then shows only
        what is not, or cannot be, a call. The first codec attached stays.

        The display text streamed so far is scanned too, but for what a reader has handed out
        already (``text()``, or ``events()`` as ``TextDelta``): shown, it can no longer be
        held. The two readers must tell the same text (README, "With a driver"), so the one behind
        is owed the difference, and text the events recorded but have not handed out yet is taken
        back, to be told as the scan releases it (the raw call JSON is never told)."""
        if self.codec is not None:
            return
        display = self._asm.display if self._asm else []
        cursors = self._display
        at = cursors.shown
        rec = self._rec
        if rec is not None:
            # The display fragments the events told and handed out already.
            told = cursors.told_fragments(display, rec.take_back_text())
            at = max(at, told)
            owed = "".join(display[told:at])  # shown by text() only: the events tell it first
            if owed:
                rec.out.insert(0, TextDelta(owed))
            cursors.for_text.append("".join(display[cursors.shown : at]))  # text(): told only
        cursors.scan_with(codec, display, at, rule)
        self._text_rule = rule
        self.codec = codec

    def hold_text_call(self) -> None:
        """A driver holds the text call forming (its own, or one whose name has not streamed
        yet), for this round (until the next ``add``). Unlike ``hold()``, which vetoes all
        display, ``text()`` still releases everything before the call's possible start: only
        the suffix that may still become a call stays held."""
        self._round.hold_text_call()

    def changes(
        self, calls_from: int = 0, incomplete_from: int = 0
    ) -> tuple[list[ExtractedCall], bool, Forming, bool, list[CallIncomplete]]:
        """What a driver's round reads, in one call: what changed since its mark. The calls
        complete so far from ``calls_from`` on (the driver handled the others; all: the
        buffer's own list, see ``calls()``); whether input has ended (the wire's DONE, or
        ``close()``), after which no input can change the calls; while the stream runs, the
        call the drivers hold on (``RoundState.hold_on``); whether the text codec holds
        nothing (no complete text call, none forming: O(1) amortized, True without a
        codec); and, once input has ended, the incomplete calls from ``incomplete_from``
        on (``incomplete_calls()``)."""
        asm = self._asm
        if asm is None:
            return self._calls, self._closed or self._pending_end, NOT_FORMING, True, []
        calls = self.calls() if asm.calls_dirty else self._calls
        if calls_from:
            calls = calls[calls_from:]
        quiet = self._display.quiet(asm.display)
        if self._closed or asm.finished:
            return calls, True, NOT_FORMING, quiet, self.incomplete_calls()[incomplete_from:]
        forming = self._round.hold_on(asm.tracks) if asm.tracks else NOT_FORMING
        return calls, False, forming, quiet, []

    def text_calls(self) -> list[ExtractedCall]:
        """Complete text calls not yet consumed that may run now, in text order, ``end`` set
        (under the rule ``"end"``, once the stream has ended: those that end the turn). None
        in a turn with a native call."""
        asm = self._asm
        if asm is None or asm.tracks or not self._display.has_calls(asm.display):
            return []
        calls = self._scan().complete_calls()
        return [ExtractedCall(c.name, c.arguments, None, c.end) for c in calls]

    def text_waiting(self) -> list[str | None]:
        """The names of the text calls held until the end of the turn (a driver that may
        run one holds them with ``hold_text_call``), in text order."""
        scanner = self._scan(text_turn=True)
        return [c.name for c in scanner.waiting_calls()] if scanner is not None else []

    def text_incomplete(self) -> list[Any]:
        """The text calls that would have run but cannot (``TextCall`` with ``reason`` and
        ``raw``), once the stream has ended: those that end the turn, cut short or whose JSON
        is no call object. A driver reports its own (``report_text_incomplete``); the others
        are shown."""
        scanner = self._scan(text_turn=True)
        return scanner.incomplete_calls() if scanner is not None else []

    def report_text_incomplete(self, call: Any) -> CallIncomplete | None:
        """A driver reports ``call`` (one of ``text_incomplete()``) to the model: its span is
        never shown, it is one of ``incomplete_calls()`` and of the events, at the slot
        ``("text", n)``. None when it was reported already."""
        scanner = self._scan()
        if scanner is None or call not in scanner.incomplete_calls():
            return None
        scanner.consume_call(call)
        slot = self._round.text_slot()
        event: CallIncomplete = call.as_incomplete(slot, self._asm.end_cause if self._asm else None)
        self._round.reported.append(event)
        if self._rec is not None:
            self._rec.text_ready.append((slot, event, call.arguments))
        return event

    def text_forming(self) -> Forming:
        """Is a text call forming, and its name once streamed (never in a turn with a native
        call)."""
        scanner = self._scan(text_turn=True)
        forming, name = scanner.forming() if scanner is not None else (False, None)
        return Forming(True, name) if forming else NOT_FORMING

    def consume_text_call(self, call: ExtractedCall) -> bool:
        """A driver runs ``call`` (one of ``text_calls()``): its span is never shown. False
        when it was consumed already (by another driver, or earlier in this round)."""
        scanner = self._scan()
        if scanner is None:
            return False
        for found in scanner.complete_calls():
            if (found.end, found.name, found.arguments) == (call.end, call.name, call.arguments):
                scanner.consume_call(found)
                self._completed.append((-1, call))  # a text call: new_calls() has it
                slot = self._round.text_slot()
                if self._rec is not None:
                    self._rec.text_ready.append((slot, call, call.arguments))
                return True
        return False

    def _scan(self, text_turn: bool = False) -> Any:
        """The codec's scanner, fed all the display text so far (and told that the turn's
        text is all in, once the stream has ended: its DONE, or ``close()``); None without
        a codec. ``text_turn``: None too in a turn with a native call, where the display text
        is not scanned for calls (README, "The text codec": the fall-through)."""
        asm = self._asm
        if asm is None:
            return None
        scanner = self._display.sync(asm.display)
        if scanner is not None and (self._closed or asm.finished):
            scanner.finish()
        return None if text_turn and asm.tracks else scanner


def _event_name(asm: Assembly, event: dict[str, Any]) -> Any:
    """The name of an event no rule has read (None where its name cannot be read)."""
    try:
        return asm.strategy.program.event_name(event)
    except Exception:
        return None
