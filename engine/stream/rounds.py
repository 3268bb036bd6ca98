"""The drivers' round state of one stream: one object, beside the buffer's message.

A round is what happens between two ``add``s (or an ``add`` and ``close``): every driver fed
the buffer looks at it, then the client reads ``text()``, which releases what no driver held.
What the drivers share across a stream's rounds lives here, not in the buffer's own fields:
what the round that runs holds (nothing, all display text, or the text call forming), how many
text calls the drivers decided (the next one's slot is ``("text", n)``), the text calls they
reported as never runnable, and the cursor and cache of the call they hold on. Each driver's
own record of a stream (what it handled: its marks) stays the driver's
(``engine.drivers.driver._StreamView``); the buffer answers "what changed since this mark" in
one call (``LLMStreamBuffer.changes``).

The buffer owns one :class:`RoundState` per stream (``reset()`` starts a new one); it reads
only ``held``, to release display text, and writes only ``held = False`` as a round ends.
"""

from __future__ import annotations

from typing import Any, Final

from ..compile.strategy import NOT_FORMING, Forming
from ..events import CallIncomplete
from ..model.assembly import CallTrack

# ``held``'s third value (beside False and True, ``hold()``'s veto of all display): a driver
# holds the text call forming, so ``text()`` releases everything before its possible start.
TEXT_CALL_HELD: Final = "text call held"

# The forming cache: (the track, once its name is a whole string; else (order, name)), and
# the Forming handed out for it, the same object while the name stays the same.
FormingCache = tuple[Any, Forming]
NO_FORMING: FormingCache = (None, NOT_FORMING)


class RoundState:
    """What the drivers fed one stream share from round to round."""

    __slots__ = ("held", "text_n", "reported", "first_open", "forming")

    def __init__(self) -> None:
        self.held: bool | str = False  # True: hold(); TEXT_CALL_HELD: hold_text_call()
        self.text_n = 0  # text calls decided so far: the next one's slot is ("text", n)
        self.reported: list[CallIncomplete] = []  # text calls a driver reported, in order
        self.first_open = 0  # tracks before this index are not open (hold_on's cursor)
        self.forming: FormingCache = NO_FORMING

    def hold(self) -> None:
        """Veto display for this round."""
        self.held = True

    def hold_text_call(self) -> None:
        """Hold the text call forming for this round (unless all display is held)."""
        if self.held is False:
            self.held = TEXT_CALL_HELD

    def text_slot(self) -> tuple[str, int]:
        """The slot of the next text call decided (run or reported), counted."""
        slot = ("text", self.text_n)
        self.text_n += 1
        return slot

    def hold_on(self, tracks: list[CallTrack]) -> Forming:
        """The call the drivers hold on while the stream runs: the first call whose arguments
        are still streaming, else the first call of the stream, so that a complete native
        call waiting for its batch's DONE still holds. O(1) amortized (``tracks`` not empty)."""
        count = len(tracks)
        i = self.first_open
        while i < count and tracks[i].args.state != 0:
            i += 1
        self.first_open = i
        forming, self.forming = forming_of(tracks[i] if i < count else tracks[0], self.forming)
        return forming


def forming_of(track: CallTrack, cache: FormingCache) -> tuple[Forming, FormingCache]:
    """The Forming of ``track``, the same object while its name stays the same (drivers
    compare it by identity), and the cache to keep."""
    cached_key, cached = cache
    if cached_key is track:
        return cached, cache  # this call's name was known already, and a known name stays
    name = track.place.name(track.item)
    key = (track.order, name)
    if cached_key == key:
        return cached, cache
    named = name.__class__ is str and name
    forming = Forming(True, name if named else None)
    # Once the name is a whole string the answer for this call is final: key on the
    # track itself, so that later rounds read no name at all.
    return forming, (track if named else key, forming)
