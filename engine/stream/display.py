"""Where each reader of a stream's display text has got to: :class:`DisplayCursors`.

The display text has four readers: ``text()`` (what the client shows), the events
(``TextDelta``), ``get_content()`` (all of it, joined) and the text codec's scanner (which
decides what ``text()`` may show once a codec scans). Each used to keep its own counter in
the buffer or the recorder, with the rule that made the buffer's fast paths right written
beside each one; here they are one object, and the rule is written once, in its docstring.
The event recorder (engine.stream.recorder) moves its cursor through :meth:`tell`, and
what the two readers owe each other (``for_text``) is kept here too.
"""

from __future__ import annotations

from ..text.codec import TextCodec, TextScanner


class DisplayCursors:
    """Every position into one stream's display text, and the codec's scan of it.

    The invariant. The display text is the assembly's list of display fragments
    (``asm.display``): it only grows while the stream lasts (a chunk that raises is taken
    back before any reader reads, ``reset()`` starts new cursors, and :meth:`compact` joins
    fragments only between two cursors), and every cursor counts fragments of it, so
    ``0 <= cursor <= len(display)``:

    - ``shown``: handed out by ``text()`` without a scanner (with one, the scanner holds
      what it has not released and hands out the rest: a codec that comes mid-stream starts
      scanning at ``shown``);
    - ``told``: told as ``TextDelta`` events (engine.stream.recorder, without a scanner,
      through :meth:`tell`);
    - ``joined_at``: joined into ``joined``, which is always ``"".join(display[:joined_at])``;
    - ``fed``: given to the scanner (from fragment ``shown`` on, when it came mid-stream);
      once the scanner is closed (``scan_closed``), what comes later goes into ``late``
      instead, shown unscanned;
    - ``quiet_at`` and ``drained_at`` mark a value of ``fed`` (``-1``: none yet).
      ``quiet_at == fed``: the scanner, fed this far, holds nothing (no call complete, none
      forming). ``drained_at == fed``: ``text()`` has handed out everything the scanner
      released by then. Only more display text, a driver's hold or the end of the stream
      changes what the scanner holds, and each of those moves ``fed`` or goes through
      :meth:`release`; so a mark stays true while ``fed`` stays put, and stops matching by
      itself when it moves. Every fast path below is one of these comparisons.

    And ``for_text``: display text the events released (a driver's round) that ``text()``
    has not handed out yet, handed out first by its next call.
    """

    def __init__(self, codec: TextCodec | None = None, rule: str | None = None) -> None:
        self.shown = 0
        self.told = 0
        self.for_text: list[str] = []
        self.joined_at = 0
        self.joined = ""
        self.scanner = codec.new_scanner(rule=rule) if codec is not None else None
        self.fed = 0
        self.quiet_at = -1
        self.drained_at = -1
        self.scan_closed = False
        self.late: list[str] = []

    def scan_with(self, codec: TextCodec, display: list[str], at: int, rule: str | None) -> None:
        """A codec comes mid-stream: its scanner (under the driver's ``rule``) reads the
        display text from fragment ``at`` on, where its readers got to (what they handed out
        is shown, and cannot be held any more). The scanner's offsets (where a call starts
        and ends) still count in all the display text, and it knows whether anything but
        whitespace came before (a bare call must be the whole text)."""
        before = "".join(display[:at])
        probe = codec.new_scanner(rule=rule)  # read once, as the codec reads it (whitespace
        probe.feed(before)  # and reasoning spans aside; nothing before: at_lead stays True)
        self.scanner = codec.new_scanner(len(before), rule=rule, lead=probe.at_lead)
        self.fed = at

    # -- the events' text ----------------------------------------------------------------------

    def tell(self, display: list[str]) -> str:
        """The display text the events have not told yet (a ``TextDelta``'s), now told."""
        told = self.told
        new = display[-1] if len(display) == told + 1 else "".join(display[told:])
        self.told = len(display)
        return new

    def told_fragments(self, display: list[str], taken_back: int) -> int:
        """How many display fragments the events have handed out, once the ``taken_back``
        characters they recorded but never handed out (the last they told) are theirs no more
        (a codec came): the fewest whose text holds all the rest of what they told."""
        told = self.told
        while told and len(display[told - 1]) <= taken_back:  # each TextDelta told whole ones
            taken_back -= len(display[told - 1])
            told -= 1
        return told

    # -- a finished stream's text -----------------------------------------------------------

    def compact(self, display: list[str]) -> None:
        """Join the display fragments between every two places a reader has got to (the
        stream has ended: what it keeps is then the size of its text, not a few dozen bytes
        per fragment). Each cursor stays on the boundary it was on, renumbered; a mark that
        is no cursor's (stale) is dropped, and the fast path it stood for is found again."""
        cuts = sorted({0, len(display), self.shown, self.told, self.joined_at, self.fed})
        renumbered = {at: i for i, at in enumerate(cuts)}
        display[:] = ["".join(display[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]
        self.shown, self.told = renumbered[self.shown], renumbered[self.told]
        self.joined_at, self.fed = renumbered[self.joined_at], renumbered[self.fed]
        self.quiet_at = renumbered.get(self.quiet_at, -1)
        self.drained_at = renumbered.get(self.drained_at, -1)

    # -- the joined text ---------------------------------------------------------------------

    def content(self, display: list[str]) -> str:
        """All the display text so far, joined once per new fragment."""
        if self.joined_at != len(display):
            self.joined += "".join(display[self.joined_at :])
            self.joined_at = len(display)
        return self.joined

    # -- the scan ----------------------------------------------------------------------------

    def sync(self, display: list[str]) -> TextScanner | None:
        """The scanner, fed the display fragments that came since it was last fed."""
        scanner = self.scanner
        fed = self.fed
        if fed != len(display) and scanner is not None:
            if self.scan_closed:
                self.late.extend(display[fed:])
            else:
                for piece in display[fed:]:
                    scanner.feed(piece)
            self.fed = len(display)
        return scanner

    def quiet(self, display: list[str]) -> bool:
        """Does the scanner hold nothing, no call complete and none forming? True without
        one. O(1) amortized: the answer is kept (``quiet_at``) until more text is fed."""
        scanner = self.scanner
        if scanner is None:
            return True
        fed = self.fed
        if fed != len(display):
            if fed + 1 == len(display) and not self.scan_closed:
                # One new fragment, the common case: the scanner says if it is quiet.
                quiet = scanner.feed(display[fed])
                self.fed = fed = fed + 1
                if quiet:
                    self.quiet_at = fed
                return quiet
            self.sync(display)
            fed = self.fed
        if self.quiet_at == fed:
            return True
        quiet = scanner.quiet()
        if quiet:
            self.quiet_at = fed
        return quiet

    def has_calls(self, display: list[str]) -> bool:
        """May the scanner hold a complete call (after feeding it)? False when it is quiet."""
        self.sync(display)
        return self.scanner is not None and self.quiet_at != self.fed

    # -- what text() hands out ----------------------------------------------------------------

    def release(self, display: list[str], holds_call: bool, ended: bool) -> str:
        """``text()``'s text: the display text released now. Without a scanner, all that is
        new. With one, what no driver held in this round: everything before a text call a
        driver holds (``holds_call``) flows, the rest of what the scanner held too; once
        the stream has ended (its DONE, or ``close()``), everything still held flows."""
        scanner = self.scanner
        if scanner is None:
            if self.shown == len(display):
                return ""
            new = "".join(display[self.shown :])
            self.shown = len(display)
            return new
        fed = self.fed
        if fed == self.quiet_at == len(display) and not self.late and not ended:
            # Fed, holding nothing, the stream running: most rounds.
            if self.drained_at == fed:
                return ""  # handed out already
            self.drained_at = fed  # nothing held: releasable() hands out everything
            return scanner.releasable()
        self.sync(display)
        fed = self.fed
        if ended:  # (the end stays: a second close() of the scanner does nothing)
            scanner.close()  # all it held is let go: releasable() hands it out
            self.scan_closed = True
        elif self.quiet_at != fed:  # (quiet: nothing held, nothing to release)
            if not holds_call:  # no driver may run what is held: it is text
                if scanner.forming()[0]:
                    scanner.release_held()
                for call in scanner.waiting_calls():
                    scanner.release_call(call)
            for call in [*scanner.complete_calls(), *scanner.incomplete_calls()]:
                scanner.release_call(call)  # the round decided; no driver took these
        released = scanner.releasable()
        if self.late:
            released += "".join(self.late)
            self.late = []
        if self.quiet_at == fed:
            self.drained_at = fed  # nothing was held, so releasable() handed out everything
        return released
