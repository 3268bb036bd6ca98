"""Incremental completeness tracking for streamed JSON arguments.

A call is runnable once its arguments parse to a JSON object. Re-parsing the growing argument
text on every fragment would cost O(n^2) over a stream, so :class:`ArgsStream` keeps the
scanner state (nesting depth, inside-a-string, pending escape) and reads each fragment once.
It calls :func:`json.loads` exactly once, when the top-level value closes, so that the verdict
always agrees with the standard parser on what is complete and valid.

One fate per call (README, "With a driver"): a call's arguments are its FIRST complete JSON value,
and once a tracked call's fate is decided (its arguments complete, or its item closed with them
still open) nothing the wire sends changes it. A stream that a call track owns is given its
``tracker`` (the assembly): what it does not take (text after the value, a different restatement, a
fragment after its item closed open) is told there, so that the buffer lists it in
``skipped()``, and is kept out of the text, the message and the events' ``partial``.
"""

from __future__ import annotations

import json
import re
import sys
from operator import attrgetter
from typing import Any

from ..events import CAUSE_NOT_JSON, CAUSE_NOT_OBJECT, CAUSE_TOO_DEEP
from .journal import put_attr, put_back, trim

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

# What a decided call's stream refuses (the ``why`` its tracker is told).
AFTER_COMPLETE = "complete"  # the arguments are complete: text after them, another value
AFTER_CLOSED = "closed"  # the item closed with the arguments open: they never will be

_FIRST_VALUE = json.JSONDecoder()  # raw_decode: the first JSON value of a text, and its end


def first_value(text: str) -> Any:
    """The first JSON value of ``text`` (which starts with it: no leading whitespace), what
    follows it ignored: a call's arguments (ValueError when there is none, RecursionError
    when it nests deeper than the parser reads)."""
    return _FIRST_VALUE.raw_decode(text)[0]


# Parse outcomes.
OPEN = 0  # still streaming (or nothing yet)
COMPLETE = 1  # parsed to a JSON object
INVALID = 2  # can never become a JSON object


class ArgsStream:
    """The arguments of one call (one SLOT), streamed as JSON text or given whole.

    ``initial`` is what the start event carried for an object-form wire (Anthropic's
    ``input: {}``); it is shown until the item closes and is never a prefix of the text.
    """

    def __init__(self, form: str, initial: Any = None, text_key: str | None = None) -> None:
        self.initial = initial
        self.form = form  # "string", "object", or "text": the native final form
        # Free-form text (form "text"): never scanned nor parsed; complete when its item
        # closes, its value then ``{text_key: the text}``.
        self.text_key = text_key if form == "text" else None
        self.closed = False
        # Set by the consumer that emitted this call as complete, and told (``calls_regressed``)
        # when it stops being one; a call nobody has emitted can change without a rebuild.
        self.owner: Any = None
        # On a buffer with events: the call's engine.stream.recorder.CallSink, told every fragment,
        # whole value and restart, so that its ``partial`` grows by the fragment only.
        self.sink: Any = None
        # Set on a call track's stream: the assembly tracking the call (engine.model.assembly),
        # told ``tracker.refused(stream, what, why)`` of what the stream does not take once
        # the call's fate is decided (see the module docstring). An object, not a closure per
        # call, so that tracking a call allocates nothing more. None: the stream takes
        # everything, as any value the message holds.
        self.tracker: Any = None
        # The assembly's undo journal (engine.model.journal), given by the assembly that
        # holds the stream: each change is journaled first. None: a stream of its own.
        self.journal: list[Any] | None = None
        self._start()

    def _start(self) -> None:
        """The scan before the first fragment (at the start, and when the wire restates)."""
        self.parts: list[str] = []
        self.state = OPEN
        self.value: Any = None  # the parsed object once COMPLETE
        self.reason: str | None = None  # INVALID_TEXT or TOO_DEEP once the state is INVALID
        self._depth = 0  # (0 before the first character that is not whitespace)
        self._in_string = False
        self._escape = False
        self._ended = False  # the top-level value has closed
        self._whole: Any = None  # a whole (non-string) value handed over by the wire
        # Text other than whitespace came after the complete arguments (refused): from then
        # on nothing more is taken, whitespace neither, so that the text kept (the value
        # and the whitespace right after it) is the same however the wire split it.
        self._spilled = False

    def _save(self) -> None:
        """Journal the parts and the stream's state, before a change other than a plain
        append: every field (:data:`_FIELDS`, ``parts`` the list itself), and that list,
        changed in place, by its length: ``text`` joins into a new list, never the old one,
        and the only fragment ever rewritten (cut at the value) is the one a ``feed`` appended,
        so taking back what came after that length is all it takes."""
        journal = self.journal
        if journal is not None:
            trim(journal, self.parts)
            journal.append((put_back, self, _FIELDS, _read_fields(self)))

    # -- feeding -------------------------------------------------------------------------

    def feed(self, fragment: Any) -> bool:
        """Take one fragment; return True when this fragment changed the parse outcome."""
        if fragment.__class__ is not str:
            return self.set_whole(fragment)
        if not fragment:
            return False
        if (
            self._in_string
            and not self._escape
            and not self._ended
            and not self.closed
            and '"' not in fragment
            and "\\" not in fragment
        ):  # inside a string value, and nothing here can end it: most fragments, a plain append
            if self.journal is not None:  # the record of an append: the list (undo pops)
                self.journal.append(self.parts)
            self.parts.append(fragment)
            if self.sink is not None:
                self.sink.fed(fragment)
            return False
        self._save()
        if (self._ended or self.closed) and self.tracker is not None and self._refused(fragment):
            return False
        self.parts.append(fragment)
        if self.text_key is None and self.state != INVALID and not self._ended:
            changed = self._scan(fragment)
        else:  # nothing to scan: free-form text (whole once it closes), or arguments decided
            changed = self._ended and self.state != INVALID and bool(_NOT_SPACE.search(fragment))
            if changed:  # (a stream no call owns: text after its value spoils it)
                self._regress()
                self._invalid(INVALID_TEXT)
        if self.sink is not None:  # the fragment as taken: cut where the value ended (_conclude)
            self.sink.fed(self.parts[-1])
        return changed

    def _refused(self, fragment: str) -> bool:
        """A fragment for a call whose fate is decided: whitespace after complete arguments
        is taken (JSON allows it); anything else after them, and any fragment once the item
        closed with them open, is told to the tracker and not taken (True)."""
        if self.state != COMPLETE:  # open, it grows (not JSON though its braces closed)
            if self.closed:
                self.tracker.refused(self, fragment, AFTER_CLOSED)
            return self.closed
        extra = _NOT_SPACE.search(fragment)
        if extra is None:  # whitespace: taken, unless text was refused before it
            return self._spilled
        at = 0 if self._spilled else extra.start()
        if at:  # the whitespace before the first text refused is the arguments' still
            self.parts.append(fragment[:at])
            if self.sink is not None:
                self.sink.fed(fragment[:at])
        self._spilled = True
        self.tracker.refused(self, fragment[at:], AFTER_COMPLETE)
        return True

    def _decided(self, value: Any) -> bool:
        """A whole value or restated text for a tracked call whose fate is decided: True
        when it is not taken, told to the tracker unless it restates the arguments as they
        are (then there is nothing to tell)."""
        if self.tracker is None:
            return False
        if not self.restates(value):
            why = AFTER_COMPLETE if self.state == COMPLETE else AFTER_CLOSED
            self.tracker.refused(self, value, why)
        return True

    def restates(self, value: Any) -> bool:
        """Does ``value`` (text, or a whole value) say what the stream holds?"""
        if value.__class__ is str:
            if self._whole is None and value.strip() == self.text.strip():
                return True
            if self.state != COMPLETE:
                return False
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                return False
        if self.state == COMPLETE:
            return bool(value == self.value)
        return self._whole is not None and bool(value == self._whole)

    def set_whole(self, value: Any) -> bool:
        """The wire sent the arguments whole, as an object (or other JSON value)."""
        if (self.state == COMPLETE or self.closed) and self._decided(value):
            return False
        if value.__class__ is str or self.text_key is not None:  # (free-form: any value is text)
            self.reset()
            self.feed(value if value.__class__ is str else dumps_any_depth(value))
            return self.text_key is None
        too_deep = nests_deeper(value, MAX_DEPTH)
        if too_deep and nests_deeper(value, sys.getrecursionlimit()):
            raise TooDeepError(TOO_DEEP_TO_TAKE)  # before anything moved: the chunk is refused
        self._hold(value)
        if self.sink is not None:
            self.sink.whole(value)
        if isinstance(value, dict) and not too_deep:
            self.state, self.value, self.reason = COMPLETE, value, None
        else:
            self._invalid(TOO_DEEP if isinstance(value, dict) else INVALID_TEXT)
        return True

    def cut_whole(self, value: Any) -> None:
        """The wire sent the arguments as values, and the stream was cut before they were
        whole (a call streamed over parts): kept to show (``text``, the message), closed,
        never runnable (``incomplete_reason`` ``"cut"``)."""
        self._hold(value)
        self.state, self.value, self.reason = OPEN, None, None
        self.closed = True

    def _hold(self, value: Any) -> None:
        """The arguments are ``value``, handed over whole (the text so far let go)."""
        if self.journal is not None:  # (not a stream's seed: a frame less per whole call)
            self._save()
        if self.owner is not None:  # (the test _regress makes first: a frame less per value)
            self._regress()
        self._whole = value
        self.parts = []
        self._ended = True

    def replace(self, text: Any) -> bool:
        """The wire restated the whole argument text (a ``...done`` event): adopt it."""
        if text.__class__ is str and self._whole is None and "".join(self.parts) == text:
            return False
        if (self.state == COMPLETE or self.closed) and self._decided(text):
            return False
        self.reset()
        self.feed(text)  # (a value that is not text is set whole)
        return True

    def _invalid(self, reason: str) -> None:
        """The arguments can never become a call, and why."""
        self.state, self.value, self.reason = INVALID, None, reason

    def _regress(self) -> None:
        # (an owner is a buffer that emitted the call: the stream is its assembly's, journaled)
        if self.state == COMPLETE and self.owner is not None and self.journal is not None:
            put_attr(self.journal, self.owner, "calls_regressed", True)

    def reset(self) -> None:
        self._save()
        self._regress()
        if self.sink is not None:
            self.sink.reset()
        self._start()

    def _scan(self, s: str) -> bool:
        pos = 0
        n = len(s)
        depth = self._depth
        if not depth:
            m = _NOT_SPACE.search(s)
            if m is None:
                return False
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
            m = (_INSIDE if in_string else _OUTSIDE).search(s, pos)
            if m is None:
                break
            c = m.group()
            pos = m.end()
            if in_string:
                if c == '"':
                    in_string = False
                elif pos < n:  # an escape: the character after the backslash is skipped
                    pos += 1
                else:
                    self._escape = True
            elif c == '"':
                in_string = True
            elif c == "{" or c == "[":
                depth += 1
                if depth > MAX_DEPTH:
                    self._invalid(TOO_DEEP)
                    break
            else:
                depth -= 1
                if depth <= 0:
                    self._ended = True
                    break
        self._depth, self._in_string = depth, in_string
        if self._ended:
            return self._conclude(s[pos:])
        return self.state == INVALID

    def _conclude(self, rest: str) -> bool:
        """The top-level value closed, ``rest`` the text of the last fragment after it. A
        call's arguments are that first value: once it parsed, a call's stream cuts the
        fragment there and refuses the rest; a stream no call owns is spoilt by it. Text that
        never parsed stays whole (there is no first value to cut at)."""
        found = _NOT_SPACE.search(rest)
        if found is not None and self.tracker is None:
            self._invalid(INVALID_TEXT)
            return True
        extra = rest[found.start() :] if found is not None else ""
        text = "".join(self.parts)
        try:
            value = json.loads(text[: len(text) - len(extra)])
        except ValueError:
            value = None
        except RecursionError:  # deeper than the parser reads here (below MAX_DEPTH: rare)
            self._invalid(TOO_DEEP)
            value = None
        if not isinstance(value, dict):
            if self.state != INVALID:
                self._invalid(INVALID_TEXT)
            return True
        self.state, self.value = COMPLETE, value
        if extra:  # refused as text after the arguments (only a call's stream cuts: a tracker's)
            last = self.parts[-1]
            self.parts[-1] = last[: len(last) - len(extra)]
            self._refused(extra)
        return True

    # -- reading -------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The argument text as streamed (raw, never re-escaped)."""
        if self._whole is not None:
            return dumps_any_depth(self._whole)
        if len(self.parts) > 1:  # joined into a new list (see _save), the old one journaled
            if self.journal:  # (records of this chunk may name it: an append's does)
                self.journal.append((setattr, self, "parts", self.parts))
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def whole_value(self) -> Any:
        """The value the wire handed over whole, or None when the arguments are text."""
        return self._whole

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
        self._save()
        self.closed = True
        if cut:
            return False
        if self.text_key is not None:  # free-form text: whole once its item is done
            self.state, self.value = COMPLETE, {self.text_key: self.text}
            return True
        if self._whole is not None or self._depth or self.state != OPEN:
            return False
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

    def invalid_cause(self) -> str:
        """Why arguments that will never parse are not a call, finer than ``reason``
        (``CallIncomplete.cause``): too deep; valid JSON of another type (the first value of
        the text: an array, a string...); or not JSON. Asked once, when the call is reported
        (O(text)), so that the scan per fragment stays as it is."""
        if self.reason == TOO_DEEP:
            return CAUSE_TOO_DEEP
        value = self._whole
        if value is None:
            try:
                value = first_value(self.text.lstrip(" \t\n\r"))
            except RecursionError:  # an array nested past the parser: JSON, not an object
                return CAUSE_NOT_OBJECT
            except ValueError:
                return CAUSE_NOT_JSON
        return CAUSE_NOT_JSON if isinstance(value, dict) else CAUSE_NOT_OBJECT

    @property
    def incomplete_reason(self) -> str | None:
        """Why these closed arguments will never be runnable (``"cut"``, ``"invalid"``,
        ``"too deep"``), or None: complete, or still open."""
        if not self.closed or self.state == COMPLETE:
            return None
        return (self.reason or INVALID_TEXT) if self.state == INVALID else "cut"

    def materialize(self) -> Any:
        """What the assembled message shows at this field: the text as sent on a string
        wire (``""`` for a call without arguments too); on an object wire the start event's
        value while the item streams, then the parsed object, or the raw text when it never
        parsed (``""`` for one cut before any fragment), so that a cut call is never
        mistaken for a call without arguments."""
        if self.form != "object":  # a JSON text, or free-form text, as sent
            return self.text
        if self.closed and self.state == COMPLETE:
            return self.value
        if self._whole is not None:
            return self._whole
        if not self.closed:
            return self.initial if self.initial is not None else {}
        return self.text


# Every field of a stream, read off a fresh one, so that a field added to __init__ is never
# missed by the undo. Not ``self.__dict__``: asking a live object for its dict makes CPython
# 3.11 give up the object's inline attribute values, and every later attribute access on it
# is slower (~10% per argument chunk, measured in one process against the __dict__ copy).
_FIELDS = tuple(vars(ArgsStream("object")))
_read_fields = attrgetter(*_FIELDS)


class TooDeepError(ValueError):
    """A chunk's value nested deeper than JSON text decodes to (the decoder stops at the
    stack's limit): no wire sent it, and a message holding it could never be sent back
    (``json.dumps`` stops there too). The buffer refuses the chunk (``ChunkError``), as it
    refuses JSON text that deep."""


TOO_DEEP_TO_TAKE = (
    "a value nested deeper than JSON text decodes to (the stack's limit): no wire sends it, "
    "and the message could never be sent back"
)


def nests_deeper(value: Any, limit: int) -> bool:
    """Do dicts and lists nest deeper than ``limit`` in ``value`` (the top one counted)?
    Without recursion, so that any depth is measured; it stops at the first branch too deep.
    Plain dicts and lists, as the wire's values are (``ingest`` copies only those, by class
    too, and a class test costs no call per node)."""
    if value.__class__ is not dict and value.__class__ is not list:
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if node.__class__ is dict else node:
            if child.__class__ is dict or child.__class__ is list:
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
    stack: list[Any] = [value]  # what is left to write, last first: values and tokens
    while stack:
        item = stack.pop()
        if item.__class__ is _Token or not isinstance(item, (dict, list, tuple)):
            out.append(item if item.__class__ is _Token else json.dumps(item, ensure_ascii=False))
            continue
        is_dict = isinstance(item, dict)
        pieces: list[Any] = [_Token("{" if is_dict else "[")]
        entries = item.items() if isinstance(item, dict) else enumerate(item)
        for position, (key, child) in enumerate(entries):
            # A key that is not a string is named as JSON names it (``true``, ``null``, ``NaN``:
            # the text json.dumps gives the key alone), never as Python does (``True``, ``nan``).
            name = json.dumps(key if isinstance(key, str) else json.dumps(key), ensure_ascii=False)
            pieces += (_Token((", " if position else "") + (name + ": " if is_dict else "")), child)
        stack += reversed([*pieces, _Token("}" if is_dict else "]")])
    return "".join(out)
