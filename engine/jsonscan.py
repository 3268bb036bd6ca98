"""Incremental completeness tracking for streamed JSON arguments.

A call is runnable once its arguments parse to a JSON object. Re-parsing the growing argument
text on every fragment would cost O(n^2) over a stream, so :class:`ArgsStream` keeps the
scanner state (nesting depth, inside-a-string, pending escape) and reads each fragment once.
It calls :func:`json.loads` exactly once, when the top-level value closes, so that the verdict
always agrees with the standard parser on what is complete and valid.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Characters that change scanner state outside / inside a JSON string.
_OUTSIDE = re.compile(r'["{}\[\]]')
_INSIDE = re.compile(r'["\\]')
_NOT_SPACE = re.compile(r"\S")

# Parse outcomes.
OPEN = 0  # still streaming (or nothing yet)
COMPLETE = 1  # parsed to a JSON object
INVALID = 2  # can never become a JSON object


class ArgsStream:
    """The arguments of one call (one SLOT), streamed as JSON text or given whole.

    ``initial`` is what the start event carried for an object-form wire (Anthropic's
    ``input: {}``); it is shown until the item closes and is never a prefix of the text.
    """

    __slots__ = (
        "parts",
        "initial",
        "form",
        "state",
        "value",
        "closed",
        "_depth",
        "_in_string",
        "_escape",
        "_started",
        "_ended",
        "_whole",
        "owner",
    )

    def __init__(self, form: str, initial: Any = None) -> None:
        self.parts: list[str] = []
        self.initial = initial
        self.form = form  # "string" or "object": the native final form
        self.state = OPEN
        self.value: Any = None  # the parsed object once COMPLETE
        self.closed = False
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._started = False  # a non-space character has been seen
        self._ended = False  # the top-level value has closed
        self._whole: Any = None  # a whole (non-string) value handed over by the wire
        # Set by the consumer that emitted this call as complete, and told (``calls_regressed``)
        # when it stops being one; a call nobody has emitted can change without a rebuild.
        self.owner: Any = None

    # -- feeding -------------------------------------------------------------------------

    def feed(self, fragment: Any) -> bool:
        """Take one fragment; return True when this fragment changed the parse outcome."""
        if fragment.__class__ is not str:
            return self.set_whole(fragment)
        if not fragment:
            return False
        self.parts.append(fragment)
        if self.state == INVALID:
            return False
        if self._ended:
            if _NOT_SPACE.search(fragment):
                self._regress()
                self.state = INVALID
                self.value = None
                return True
            return False
        if self._in_string and not self._escape and '"' not in fragment and "\\" not in fragment:
            return False  # inside a string value, and nothing here can end it: most fragments
        return self._scan(fragment)

    def set_whole(self, value: Any) -> bool:
        """The wire sent the arguments whole, as an object (or other JSON value)."""
        if value.__class__ is str:
            self.reset()
            return self.feed(value) or True
        if self.owner is not None:
            self._regress()
        self._whole = value
        self.parts = []
        self._ended = True
        before = self.state
        if isinstance(value, dict):
            self.state, self.value = COMPLETE, value
        else:
            self.state, self.value = INVALID, None
        return before != self.state or True

    def replace(self, text: Any) -> bool:
        """The wire restated the whole argument text (a ``...done`` event): adopt it."""
        if text.__class__ is str and self._whole is None and "".join(self.parts) == text:
            return False
        self.reset()
        if text.__class__ is str:
            self.feed(text)
        else:
            self.set_whole(text)
        return True

    def _regress(self) -> None:
        if self.state == COMPLETE and self.owner is not None:
            self.owner.calls_regressed = True

    def reset(self) -> None:
        self._regress()
        self.parts = []
        self.state = OPEN
        self.value = None
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._started = False
        self._ended = False
        self._whole = None

    def _scan(self, s: str) -> bool:
        pos = 0
        n = len(s)
        depth = self._depth
        if not self._started:
            m = _NOT_SPACE.search(s)
            if m is None:
                return False
            self._started = True
            pos = m.start()
            if s[pos] != "{":
                # A top-level value that is not an object is never a call.
                self.state = INVALID
                return True
        in_string = self._in_string
        if self._escape:
            self._escape = False
            pos += 1
        while pos < n:
            if in_string:
                m = _INSIDE.search(s, pos)
                if m is None:
                    break
                if m.group() == "\\":
                    if m.end() >= n:
                        self._escape = True
                        pos = n
                        break
                    pos = m.end() + 1
                    continue
                in_string = False
                pos = m.end()
            else:
                m = _OUTSIDE.search(s, pos)
                if m is None:
                    break
                c = m.group()
                pos = m.end()
                if c == '"':
                    in_string = True
                elif c == "{" or c == "[":
                    depth += 1
                else:
                    depth -= 1
                    if depth <= 0:
                        self._depth = 0
                        self._in_string = False
                        self._ended = True
                        return self._conclude(s[pos:])
        self._depth = depth
        self._in_string = in_string
        return False

    def _conclude(self, rest: str) -> bool:
        if _NOT_SPACE.search(rest):
            self.state = INVALID
            return True
        try:
            value = json.loads("".join(self.parts))
        except ValueError:
            self.state = INVALID
            return True
        if isinstance(value, dict):
            self.state, self.value = COMPLETE, value
        else:
            self.state = INVALID
        return True

    # -- reading -------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The argument text as streamed (raw, never re-escaped)."""
        if self._whole is not None:
            return json.dumps(self._whole, ensure_ascii=False)
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    @property
    def is_empty(self) -> bool:
        return self._whole is None and not self._started

    def close(self, cut: bool = False) -> bool:
        """The item ended; return True when that made the arguments runnable.

        Closed normally (its own stop event, or the wire's DONE without a length cut), empty
        text means a call without arguments: the start event's value stands (Anthropic
        ``input: {}``, Bedrock's missing ``input``), else ``{}`` (a server that sends ``""``
        for a tool without parameters). ``cut`` (input ended, or a length limit hit, inside
        the item): nothing becomes runnable; what is not complete stays so for good.
        """
        if self.closed:
            return False
        self.closed = True
        if not cut and self.is_empty and self.state == OPEN:
            initial = self.initial if isinstance(self.initial, dict) else {}
            self.state, self.value = COMPLETE, initial
            return True
        return False

    @property
    def incomplete_reason(self) -> str | None:
        """Why these closed arguments will never be runnable (``"cut"``, ``"invalid"``,
        ``"too deep"``), or None: complete, or still open."""
        if not self.closed or self.state == COMPLETE:
            return None
        if self.state == INVALID:
            return getattr(self, "reason", None) or "invalid"
        return "cut"

    def materialize(self) -> Any:
        """What the assembled message shows at this field: the text as sent on a string
        wire (``""`` for a call without arguments too); on an object wire the start event's
        value while the item streams, then the parsed object, or the raw text when it never
        parsed (``""`` for one cut before any fragment), so that a cut call is never
        mistaken for a call without arguments."""
        if self.form == "string":
            return self.text
        if not self.closed:
            if self._whole is not None:
                return self._whole
            return self.initial if self.initial is not None else {}
        if self.state == COMPLETE:
            return self.value
        if self._whole is not None:
            return self._whole
        return self.text
