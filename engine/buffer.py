"""``LLMStreamBuffer``: one stream, chunk by chunk.

The buffer resolves the wire among its strategies from the first chunk one of them recognises
(keeping earlier, unrecognised chunks and replaying them), hands every event to the compiled
rules, and answers the per-chunk questions (``forming()``, ``calls()``) from state the rules
keep up to date, so that the client loop costs O(1) amortized per chunk.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .assembly import Assembly
from .chunks import SKIP, Sentinel, decode
from .errors import ChunkError, UnknownFormatError
from .extend import finish_open_parts
from .strategy import NOT_FORMING, ExtractedCall, ExtractionStrategy, Forming


class LLMStreamBuffer:
    """Accumulates one streamed response into the provider's own ``stream=false`` message."""

    def __init__(
        self, strategies: list[ExtractionStrategy] | None = None, choice: int = 0
    ) -> None:
        if strategies is None:
            from .registry import wire_strategies

            strategies = wire_strategies()
        self.strategies = list(strategies)
        self.choice = choice
        self._strategy: ExtractionStrategy | None = None
        self._asm: Assembly | None = None
        self._pending: list[dict] = []  # chunks seen before the wire was resolved
        self._pending_end = False
        self._index = 0  # position of the next chunk, for error messages
        self._sse: dict = {}
        self._reset_view()

    def _reset_view(self) -> None:
        self._shown = 0  # display fragments already handed out by text()
        self._held = False
        self._calls: list[ExtractedCall] = []
        self._forming: tuple[Any, Forming] = (None, NOT_FORMING)
        self._closed = False
        self._content: tuple[int, str] = (0, "")

    # -- input -----------------------------------------------------------------------------

    def add(self, chunk: Any) -> None:
        """Take one chunk: a dict, JSON text (also an SSE line) or an SDK object."""
        index = self._index
        self._index += 1
        self._held = False
        event = decode(chunk, index, self._sse)
        if event is SKIP:
            return
        if event.__class__ is Sentinel:
            self._take_sentinel(event, index)
            return
        asm = self._asm
        if asm is None:
            if not self._resolve(event):
                self._pending.append(event)
                return
            asm = self._asm
        try:
            self._strategy.program.apply(asm, event, self.choice)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            raise ChunkError(index, f"event does not fit {self._strategy.name}: {exc}") from exc

    def _take_sentinel(self, sentinel: str, index: int) -> None:
        strategy = self._strategy
        if strategy is None:
            if any(sentinel in s.spec.sentinels for s in self.strategies):
                self._pending_end = True
                return
        elif sentinel in strategy.spec.sentinels:
            self._asm.finished = True
            return
        raise ChunkError(index, f"expected a JSON object, got the text {sentinel!r}")

    def _resolve(self, event: dict) -> bool:
        for strategy in self.strategies:
            if strategy.recognizes_chunk(event):
                self._strategy = strategy
                self._asm = strategy.new_assembly()
                pending, self._pending = self._pending, []
                for earlier in pending:
                    strategy.program.apply(self._asm, earlier, self.choice)
                if self._pending_end and strategy.spec.sentinels:
                    self._asm.finished = True
                return True
        return False

    def close(self) -> None:
        """End of input: close whatever is still open; nothing stays held after this."""
        self._closed = True
        self._held = False
        if self._asm is None:
            if self._pending:
                tried = ", ".join(s.name for s in self.strategies)
                raise UnknownFormatError(
                    f"no format recognised any of the {len(self._pending)} chunk(s); tried: {tried}"
                )
            return
        finish_open_parts(self._asm)
        for track in self._asm.tracks:
            if not track.args.closed:
                track.args.closed = True
                self._asm.calls_dirty = True

    def hold(self) -> None:
        """Veto display for this round (until the next ``add``)."""
        self._held = True

    def reset(self) -> None:
        """Forget the stream so far, keeping the resolved wire."""
        if self._strategy is not None:
            self._asm = self._strategy.new_assembly()
        self._pending = []
        self._reset_view()

    # -- questions ---------------------------------------------------------------------------

    @property
    def format(self) -> str | None:
        return self._strategy.name if self._strategy is not None else None

    @property
    def strategy(self) -> ExtractionStrategy | None:
        return self._strategy

    def is_finished(self) -> bool:
        return self._asm is not None and self._asm.finished or (
            self._asm is None and self._pending_end
        )

    def forming(self) -> Forming:
        """Is a call coming, and its name once streamed. O(1)."""
        asm = self._asm
        if asm is None or not asm.tracks:
            return NOT_FORMING
        track = asm.tracks[0]
        for candidate in asm.tracks:
            if candidate.args.state == 0:
                track = candidate
                break
        name = asm.strategy.spec.calls.name(track.item)
        cached_key, cached = self._forming
        key = (track.order, name)
        if cached_key == key:
            return cached
        forming = Forming(True, name if name.__class__ is str and name else None)
        self._forming = (key, forming)
        return forming

    def calls(self) -> list[ExtractedCall]:
        """Calls whose arguments are complete so far, in message order."""
        asm = self._asm
        if asm is None or not asm.calls_dirty:
            return self._calls
        asm.calls_dirty = False
        spec = asm.strategy.spec.calls
        out = []
        for track in asm.complete_calls():
            name = spec.name(track.item)
            if name.__class__ is not str or not name:
                asm.calls_dirty = True  # the name may still arrive
                continue
            call_id = spec.id(track.item)
            out.append(ExtractedCall(name, track.args.value, call_id if call_id else None))
        self._calls = out
        return out

    def as_dict(self) -> dict:
        """The provider's ``stream=false`` message, as far as streamed."""
        if self._asm is None:
            return {}
        return self._strategy.message_of(self._asm)

    @property
    def stop_reason(self) -> Any:
        return self._asm.stop_reason if self._asm is not None else None

    @property
    def usage(self) -> Any:
        return self._asm.usage if self._asm is not None else None

    @property
    def error(self) -> Any:
        return self._asm.error if self._asm is not None else None

    @property
    def unknown_events(self) -> Counter:
        """Events no rule handles, by name: skipped (providers add events), and counted."""
        return self._asm.unknown if self._asm is not None else Counter()

    def text(self) -> str:
        """Display text released since the last call ("" while held)."""
        if self._held or self._asm is None:
            return ""
        display = self._asm.display
        if self._shown == len(display):
            return ""
        new = "".join(display[self._shown :])
        self._shown = len(display)
        return new

    def get_content(self) -> str:
        """All display text so far."""
        if self._asm is None:
            return ""
        display = self._asm.display
        count, joined = self._content
        if count != len(display):
            joined += "".join(display[count:])
            self._content = (len(display), joined)
        return joined
