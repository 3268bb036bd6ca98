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
# JSON whitespace is space, tab, LF and CR only (RFC 8259); ``\s`` would also pass \x1c-\x1f,
# U+2028 and the other Unicode spaces, which ``json.loads`` rejects around a value.
_NOT_SPACE = re.compile(r"[^ \t\n\r]")

# The deepest nesting a call's arguments may have: arrays and objects, the top object counted.
# Deeper arguments are never a call (reason "too deep"). The bound is below what ``json.loads``
# reads at CPython's default recursion limit, on every Python version, so that the verdict
# does not depend on the stack, and so that a tool, its result and the history built from the
# call can copy and serialize the arguments without a RecursionError.
MAX_DEPTH = 512

# Why the arguments can never become a call (``ArgsStream.reason``).
INVALID_TEXT = "invalid"  # not a JSON object
TOO_DEEP = "too deep"  # nested deeper than MAX_DEPTH, or than the JSON parser reads

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
        "reason",
        "sink",
        "text_key",
    )

    def __init__(self, form: str, initial: Any = None, text_key: str | None = None) -> None:
        self.parts: list[str] = []
        self.initial = initial
        self.form = form  # "string", "object", or "text": the native final form
        # Free-form text (form "text"): never scanned nor parsed; complete when its item
        # closes, its value then ``{text_key: the text}``.
        self.text_key = text_key if form == "text" else None
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
        self.reason: str | None = None  # INVALID_TEXT or TOO_DEEP once the state is INVALID
        # On a buffer with events: the call's engine.stream.recorder.CallSink, told every fragment,
        # whole value and restart, so that its ``partial`` grows by the fragment only.
        self.sink: Any = None

    # -- feeding -------------------------------------------------------------------------

    def feed(self, fragment: Any) -> bool:
        """Take one fragment; return True when this fragment changed the parse outcome."""
        if fragment.__class__ is not str:
            return self.set_whole(fragment)
        if not fragment:
            return False
        self.parts.append(fragment)
        if self.sink is not None:
            self.sink.fed(fragment)
        if self.text_key is not None:
            return False  # free-form text: nothing to scan, complete when its item closes
        if self.state == INVALID:
            return False
        if self._ended:
            if _NOT_SPACE.search(fragment):
                self._regress()
                self._invalid(INVALID_TEXT)
                self.value = None
                return True
            return False
        if self._in_string and not self._escape and '"' not in fragment and "\\" not in fragment:
            return False  # inside a string value, and nothing here can end it: most fragments
        return self._scan(fragment)

    def set_whole(self, value: Any) -> bool:
        """The wire sent the arguments whole, as an object (or other JSON value)."""
        if self.text_key is not None:  # free-form: any value is its text
            self.reset()
            return self.feed(value if value.__class__ is str else dumps_any_depth(value))
        if value.__class__ is str:
            self.reset()
            return self.feed(value) or True
        if self.owner is not None:
            self._regress()
        if self.sink is not None:
            self.sink.whole(value)
        self._whole = value
        self.parts = []
        self._ended = True
        before = self.state
        if not isinstance(value, dict):
            self._invalid(INVALID_TEXT)
            self.value = None
        elif nests_deeper(value, MAX_DEPTH):
            self._invalid(TOO_DEEP)
            self.value = None
        else:
            self.state, self.value, self.reason = COMPLETE, value, None
        return before != self.state or True

    def cut_whole(self, value: Any) -> None:
        """The wire sent the arguments as values, and the stream was cut before they were
        whole (a call streamed over parts): kept to show (``text``, the message), closed,
        never runnable (``incomplete_reason`` ``"cut"``)."""
        self._regress()
        self._whole = value
        self.parts = []
        self._ended = True
        self.state, self.value, self.reason = OPEN, None, None
        self.closed = True

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

    def _invalid(self, reason: str) -> None:
        """The arguments can never become a call, and why."""
        self.state = INVALID
        self.reason = reason

    def _regress(self) -> None:
        if self.state == COMPLETE and self.owner is not None:
            self.owner.calls_regressed = True

    def reset(self) -> None:
        self._regress()
        if self.sink is not None:
            self.sink.reset()
        self.parts = []
        self.state = OPEN
        self.reason = None
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
                self._invalid(INVALID_TEXT)
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
                    if depth > MAX_DEPTH:
                        self._depth = depth
                        self._in_string = False
                        self._invalid(TOO_DEEP)
                        return True
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
            self._invalid(INVALID_TEXT)
            return True
        try:
            value = json.loads("".join(self.parts))
        except ValueError:
            self._invalid(INVALID_TEXT)
            return True
        except RecursionError:  # deeper than the parser reads here (below MAX_DEPTH: rare)
            self._invalid(TOO_DEEP)
            return True
        if isinstance(value, dict):
            self.state, self.value = COMPLETE, value
        else:
            self._invalid(INVALID_TEXT)
        return True

    # -- reading -------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The argument text as streamed (raw, never re-escaped)."""
        if self._whole is not None:
            return dumps_any_depth(self._whole)
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def whole_value(self) -> Any:
        """The value the wire handed over whole, or None when the arguments are text."""
        return self._whole

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
        if self.text_key is not None:  # free-form text: whole once its item is done
            if cut:
                return False
            self.state, self.value = COMPLETE, {self.text_key: self.text}
            return True
        if not cut and self.is_empty and self.state == OPEN:
            if self.parts:  # whitespace only: not "" and not JSON (json.loads rejects it)
                self._invalid(INVALID_TEXT)
                return False
            initial = self.initial if isinstance(self.initial, dict) else {}
            if nests_deeper(initial, MAX_DEPTH):
                self._invalid(TOO_DEEP)
                return False
            self.state, self.value = COMPLETE, initial
            if initial and self.sink is not None:  # the start event gave them whole
                self.sink.whole(initial)
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
        if self.form != "object":  # a JSON text, or free-form text, as sent
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


def nests_deeper(value: Any, limit: int) -> bool:
    """Do dicts and lists nest deeper than ``limit`` in ``value`` (the top one counted)?
    Without recursion, so that any depth is measured; it stops at the first branch too deep."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


class _Token(str):
    """Literal JSON text on :func:`dumps_any_depth`'s stack (a value is encoded, a token not)."""


def dumps_any_depth(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``, also for a value nested deeper than the
    encoder's recursion reaches (such a value is never a call, but its text is still shown)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        pass
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is _Token:
            out.append(item)
        elif isinstance(item, dict):
            out.append("{")
            stack.append(_Token("}"))
            entries = list(item.items())
            for position in range(len(entries) - 1, -1, -1):
                key, child = entries[position]
                stack.append(child)
                key_text = json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False)
                stack.append(_Token((", " if position else "") + key_text + ": "))
        elif isinstance(item, (list, tuple)):
            out.append("[")
            stack.append(_Token("]"))
            for position in range(len(item) - 1, -1, -1):
                stack.append(item[position])
                if position:
                    stack.append(_Token(", "))
        else:
            out.append(json.dumps(item, ensure_ascii=False))
    return "".join(out)
