"""A call's arguments so far, as a value a UI can render while they stream.

The README ("Events") defines ``partial``: the value that the argument text so far describes, with
every open container closed. An object holds its complete members and the member being
streamed; an array its complete items and the item being streamed; an open string is cut where
the text stops (never inside an escape or a surrogate pair); ``true``, ``false``, ``null`` appear
once whole, a number once the character after it ends it; a key still waiting for its value is
absent; ``{}`` until the object opens.

The openai SDK re-parses the whole argument text on every chunk, which costs O(n^2) over a
stream. :class:`PartialJSON` instead keeps its scanner state (an explicit stack of open
containers, the pending key, an unfinished escape or number) and reads each fragment once, so a
fragment costs O(fragment). It keeps ONE dict, :attr:`PartialJSON.value`, updated in place.

Growing an open string is the one place where a naive reader turns quadratic: a ``str`` is
immutable, so ``d[k] = d[k] + piece`` copies the whole string each time.
:meth:`PartialJSON._grow` lets go of the dict's reference before appending, so that CPython
resizes the string in place (it does that for a string nobody else holds); a caller that keeps
a reference to the old string keeps it unchanged, and that one append then copies, as it must.

At the end the value agrees exactly with :func:`json.loads` (which this module follows where it
is more liberal than RFC 8259: ``NaN``, ``Infinity``, ``-Infinity``, lone surrogate escapes;
and where it is stricter: control characters in strings, the limit on digits of an int).
Invalid text stops the updates and is reported (:attr:`PartialJSON.invalid`, with
:attr:`PartialJSON.error` naming the offset and what was expected); nothing here raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import JSONDecodeError
from operator import attrgetter
from typing import Any

from .fragments import copy_json
from .journal import put, put_back, refill, trim
from .jsonpath import place_at, set_item

__all__ = ["PartialJSON"]

# Scanner modes: what the next character may be. Where a key or a value is next, the container
# may also close instead when it has just opened: no member or item yet (``_key`` None).
_START = 0  # before the top-level object
_KEY = 1  # after '{' or after ',' in an object: a key
_IN_KEY = 2  # inside a member name
_COLON = 3  # after a member name
_VALUE = 4  # after ':', '[' or ',' in an array: a value
_IN_STRING = 5  # inside a string value
_SCALAR = 6  # inside a number or a literal
_AFTER = 7  # after a value: ',' or the container's closer
_DONE = 8  # the top-level object closed: only whitespace may follow
_STOPPED = 9  # invalid or too deep: nothing more is read

# The modes that take one character, what it is, the mode after it, and how an error says it
# (after the object, none: only whitespace may follow); and the closer that a container just
# opened takes in place of its first member or item (``_key`` still None).
_ONE_CHARACTER = {
    _COLON: (":", _VALUE, "':' after the member name"),
    _START: ("{", _KEY, "'{' (arguments are a JSON object)"),
    _KEY: ('"', _IN_KEY, "a member name in double quotes"),
    _DONE: ("", _DONE, "nothing after the object"),
}
_EMPTY_CLOSER = {_KEY: "}", _VALUE: "]"}
_WHITESPACE = " \t\n\r"  # json's whitespace; any other space is an error there too
_NOT_WS = re.compile(r"[^ \t\n\r]")
_STRING_STOP = re.compile(r'["\\\x00-\x1f]')
_STRING_END = re.compile(r'(?:[^"\\]|\\.)*+"', re.S)  # string text up to its closing quote
# json's own string scanner (C in CPython), which the stubs of json.decoder do not name.
_scanstring: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]
_SCALAR_END = re.compile(r"[ \t\n\r,\]}]")
_SCALAR_START = frozenset("-0123456789tfnNI")
# ASCII digits only, as json's scanner reads them (``\d`` would take other scripts' digits).
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:(?<=[0-9])[eE][-+]?[0-9]*)?)?")
_PREFIX_CHECKED = 64  # a longer unfinished number is checked once, when it ends
_LITERAL_NAMES = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_LITERALS: dict[str, Any] = {name: json.loads(name) for name in _LITERAL_NAMES}  # as json reads
_LITERAL_OF = {name[: 1 + (name[0] == "-")]: name for name in _LITERALS}  # by its head: "-I"...
_LITERAL_START = frozenset("tfnNI-")  # '-' may begin -Infinity
# What a fragment inside a string may end with that its next fragment completes, so that it is
# read again with that one: an escape cut short, a high surrogate's escape (its low one may
# follow), or both. After an even run of backslashes: an escaped backslash cuts nothing.
_CUT_TAIL = re.compile(
    r"(?<!\\)(?:\\\\)*((?:\\u[dD][89abAB][0-9a-fA-F]{2})?(?:\\(?:u[0-9a-fA-F]{0,3})?)?)\Z"
)
# What json refuses in a string, by its words: as this reader says it, how far before json's
# offset it starts (a ``\\u`` escape at its backslash, not its ``u``), and its length shown.
_REFUSED = {
    "Invalid control character at": ("control character {!r} inside a string (escape it)", 0, 1),
    "Invalid \\escape": ("invalid escape {!r}", 0, 2),
    "Invalid \\uXXXX escape": ("invalid \\u escape {!r}", 1, 6),
}


class _Invalid(Exception):
    """The text can never become a JSON object: its arguments are where (the offset in the
    fragment), what was expected, and the reason when it is not ``"invalid"`` (as ``_stop``
    takes them)."""


def _grown(reader: PartialJSON, container: Any, key: Any, length: int, seen: int) -> None:
    """Take back the growing of a string (and the characters the fast path counted)."""
    container[key] = container[key][:length]
    reader._seen = seen


class PartialJSON:
    """The arguments of one call, read incrementally into one dict updated in place.

    Feed the argument text fragment by fragment (:meth:`feed`); or, where the wire sends
    values rather than text, set values at JSON paths (:meth:`set_path`, Gemini's
    ``partialArgs``) or the whole object at once (:meth:`set_whole`). ``value`` is the same
    dict object for the reader's whole life: a client may hold it; copy it to keep a snapshot.

    ``max_depth`` (None: no limit) stops the reader, with reason ``"too deep"``, when a
    container would open beyond it; the reader itself never recurses, whatever the depth.
    """

    def __init__(self, max_depth: int | None = None) -> None:
        self.value: dict[str, Any] = {}
        self._max_depth = max_depth
        # The undo journal of the assembly whose call this reads (engine.model.journal), on
        # a buffer's reader: each change is journaled first. None: a reader of its own.
        self.journal: list[Any] | None = None
        self._start()

    def _start(self) -> None:
        self.invalid = False  # True once the text can never be a JSON object
        self.reason: str | None = None  # "invalid" or "too deep" once stopped
        self.error: str | None = None  # where and what, once stopped
        self.closed = False  # the top-level object has closed
        self._mode = _START
        self._cont: Any = self.value  # the innermost open container
        self._key: Any = None  # its member (or item index) being streamed
        self._stack: list[tuple[Any, Any]] = []  # the enclosing (container, key) pairs
        self._pending = ""  # an unfinished escape, read again with the next fragment
        # The pieces of an unfinished member name, number or literal (one at a time: empty
        # again whenever one ends), and a scalar's length so far.
        self._token: list[str] = []
        self._token_len = 0
        self._seen = 0  # characters fed so far, for error offsets
        # set_path: a string leaf that continues, by its steps (``$.a`` and ``$['a']`` are one)
        self._continuing: dict[tuple[str | int, ...], bool] = {}

    def _save(self) -> None:
        """Journal the scanner's state, before a change other than a string growing: every
        field (:data:`_FIELDS`); its lists, changed in place, are copies from then on (the
        journal keeps the old ones)."""
        journal = self.journal
        if journal is not None:
            journal.append((put_back, self, _FIELDS, _read_fields(self)))
            self._stack, self._token = list(self._stack), list(self._token)

    def _grow(self, container: Any, key: Any, piece: str) -> None:
        """Append ``piece`` to the string at ``container[key]``, in place where CPython can.

        With the container's reference dropped, ``text`` is the string's only holder, and
        ``+=`` on a local resizes it instead of copying it: O(piece), not O(string). The
        journal keeps the length, never the string (which would make every append a copy)."""
        text = container[key]
        if self.journal is not None:
            self.journal.append((_grown, self, container, key, len(text), self._seen))
        container[key] = None
        text += piece
        container[key] = text

    @property
    def complete(self) -> bool:
        """The text so far is one whole JSON object (and ``value`` is what json.loads gives)."""
        return self.closed and not self.invalid

    def reset(self) -> None:
        """Start again (the wire restated the arguments); ``value`` stays the same dict."""
        if self.journal is not None:
            self._save()
            refill(self.journal, self.value)
        self.value.clear()
        self._start()

    # -- text ----------------------------------------------------------------------------

    def feed(self, fragment: str) -> None:
        """Read the next fragment of the argument text; O(len(fragment))."""
        mode = self._mode
        if (
            mode == _IN_STRING
            and not self._pending
            and fragment.__class__ is str
            and '"' not in fragment
            and "\\" not in fragment
            and fragment.isprintable()  # no control character (nor some others: slow path)
        ):  # most fragments: string text only; self._grow(), inlined
            cont, key = self._cont, self._key
            text = cont[key]
            journal = self.journal
            if journal is not None:
                journal.append((_grown, self, cont, key, len(text), self._seen))
            cont[key] = None
            text += fragment
            cont[key] = text
            self._seen += len(fragment)
            return
        self._save()
        if mode == _STOPPED:
            return
        if not isinstance(fragment, str):
            self._stop(self._seen, f"a fragment must be text, not {type(fragment).__name__}")
            return
        text = self._pending + fragment if self._pending else fragment
        base = self._seen - len(self._pending)
        self._pending = ""
        try:
            self._read(text)
        except _Invalid as bad:
            offset, *said = bad.args
            self._stop(base + offset, *said)
        self._seen += len(fragment)

    def _stop(self, offset: int | None, message: str, reason: str = "invalid") -> None:
        """Stop reading; ``offset`` (None for values set by path or whole) names where."""
        self._mode = _STOPPED
        self.invalid = True
        self.reason = reason
        self.error = message if offset is None else f"at offset {offset}: {message}"

    def _read(self, s: str) -> None:
        """The scanner: one pass over ``s``, jumping over string text and whitespace."""
        pos, n = 0, len(s)
        while pos < n:
            mode = self._mode
            if mode == _IN_STRING:
                pos = self._string_value(s, pos)
                continue
            if mode == _SCALAR:
                pos = self._scalar(s, pos)
                continue
            if mode == _IN_KEY:
                pos = self._member_name(s, pos)
                continue
            c = s[pos]
            if c in _WHITESPACE:
                past = _NOT_WS.search(s, pos)
                if past is None:
                    return
                pos = past.start()
                c = s[pos]
            if mode == _AFTER:
                if c == ",":
                    self._mode = _KEY if self._cont.__class__ is dict else _VALUE
                elif c == ("}" if self._cont.__class__ is dict else "]"):
                    self._close()
                else:
                    closer = "'}'" if self._cont.__class__ is dict else "']'"
                    raise _Invalid(pos, f"expected ',' or {closer}, got {c!r}")
                pos += 1
            elif self._key is None and c == _EMPTY_CLOSER.get(mode):  # ``{}``, ``[]``
                self._close()
                pos += 1
            elif mode == _VALUE:
                pos = self._value_start(s, pos, c)
            else:  # _KEY, _COLON, _START, _DONE: one character (or none), then the next mode
                wanted, then, what = _ONE_CHARACTER[mode]
                if c != wanted:
                    raise _Invalid(pos, f"expected {what}, got {c!r}")
                self._mode = then
                pos += 1

    def _value_start(self, s: str, pos: int, c: str) -> int:
        if c == '"':
            self._place("")
            self._mode = _IN_STRING
            return pos + 1
        if c == "{" or c == "[":
            self._open({} if c == "{" else [], pos)
            return pos + 1
        if c in _SCALAR_START:  # (its token is empty: every scalar that ends empties it)
            self._mode = _SCALAR
            return self._scalar(s, pos)
        raise _Invalid(pos, f"expected a JSON value, got {c!r}")

    def _place(self, item: Any) -> None:
        """Show a value that has started (a container, a string) or ended (a scalar)."""
        cont = self._cont
        journal = self.journal
        if cont.__class__ is list:
            if journal is not None:
                trim(journal, cont)
            cont.append(item)
            self._key = len(cont) - 1
        elif journal is not None:
            put(journal, cont, self._key, item)
        else:
            cont[self._key] = item

    def _open(self, container: Any, pos: int) -> None:
        if self._max_depth is not None and len(self._stack) + 2 > self._max_depth:
            raise _Invalid(pos, f"nesting deeper than {self._max_depth}", "too deep")
        self._place(container)
        self._stack.append((self._cont, self._key))
        self._cont, self._key = container, None
        self._mode = _KEY if container.__class__ is dict else _VALUE

    def _close(self) -> None:
        if self._stack:
            self._cont, self._key = self._stack.pop()
            self._mode = _AFTER
        else:  # the top-level object (``_cont`` already): nothing reads its key from now on
            self._mode = _DONE
            self.closed = True

    # -- strings -------------------------------------------------------------------------

    def _string_value(self, s: str, pos: int) -> int:
        piece, pos, ended = self._string(s, pos)
        if piece:
            self._grow(self._cont, self._key, piece)
        if ended:
            self._mode = _AFTER
        return pos

    def _member_name(self, s: str, pos: int) -> int:
        piece, pos, ended = self._string(s, pos)
        self._token.append(piece)
        if ended:
            self._key = "".join(self._token)
            self._token = []
            self._mode = _COLON
        return pos

    def _string(self, s: str, pos: int) -> tuple[str, int, bool]:
        """Decode string text from ``pos``: (the text, where reading stopped, string ended).

        Text with an escape or a control character is read by json's own string scanner, so
        that escapes, surrogate pairs and what is refused are exactly json.loads's. An escape
        the fragment cuts (or a high surrogate whose low may follow) is kept in ``_pending``
        and read again, whole, with the next fragment."""
        stop = _STRING_STOP.search(s, pos)
        if stop is None:  # plain text up to the end of the fragment
            return s[pos:], len(s), False
        if s[stop.start()] == '"':  # plain text up to the closing quote
            return s[pos : stop.start()], stop.end(), True
        if _STRING_END.match(s, pos) is not None:  # the string ends in this fragment
            text, end = _json_string(s, pos)
            return text, end, True
        tail = _CUT_TAIL.search(s, pos)  # what waits for the next fragment (maybe nothing)
        cut = tail.start(1) if tail is not None else len(s)
        text = _json_string(s, pos, cut)[0]
        self._pending = s[cut:]
        return text, len(s), False

    # -- numbers and literals ------------------------------------------------------------

    def _scalar(self, s: str, pos: int) -> int:
        m = _SCALAR_END.search(s, pos)
        end = m.start() if m is not None else len(s)
        if m is not None and not self._token and s[pos] not in _LITERAL_START:
            self._end_scalar(_number(s[pos:end], pos))  # a whole number in this fragment
            return end
        tokens = self._token
        tokens.append(s[pos:end])
        self._token_len += end - pos
        if m is None and self._token_len > _PREFIX_CHECKED:
            return end  # a very long number: checked once, when it ends
        token = tokens[0] if len(tokens) == 1 else "".join(tokens)
        tokens[:] = [token]
        at = end - self._token_len  # where the token began, for errors
        head = token[:2] if token[:1] == "-" else token[:1]
        literal = _LITERAL_OF.get(head)
        if literal is not None:
            if token.startswith(literal):  # whole: shown now, whatever follows
                self._end_scalar(_LITERALS[literal])
                return end - (len(token) - len(literal))
            if m is None and literal.startswith(token):
                return end
            raise _Invalid(at, f"expected {literal!r}, got {token!r}")
        if m is not None:
            self._end_scalar(_number(token, at))
        elif not _NUMBER_PREFIX.fullmatch(token):  # (an unfinished number so far)
            raise _Invalid(at, f"not a JSON number: {token!r}")
        return end

    def _end_scalar(self, value: Any) -> None:
        self._token = []
        self._token_len = 0
        self._place(value)
        self._mode = _AFTER

    # -- values rather than text ---------------------------------------------------------

    def set_whole(self, obj: Any) -> None:
        """The wire sent the arguments whole: ``value`` becomes (a copy of) ``obj``."""
        self.reset()
        if obj.__class__ is not dict:
            self._stop(None, f"the arguments are a JSON object, not {type(obj).__name__}")
            return
        self.value.update(copy_json(obj))
        self._close()  # (the top-level object: whole)

    def set_path(self, path: str, item: Any, will_continue: bool = False) -> None:
        """Set ``item`` at the JSON path ``path`` (RFC 9535: ``$.a.b[0]``, ``$['x y']``).

        A string continues the string the previous piece of that path (however spelled: the
        same steps) left there when that piece said more would follow (``will_continue``), as
        Gemini 3 streams a string over several ``partialArgs``. Containers on the way are
        created as the path implies; an array is padded with None up to the index. A path
        that cannot be read, or that meets a value of the other kind on the way, stops the
        reader with an error naming it."""
        if self._mode == _STOPPED:
            return
        self._save()
        journal = self.journal if self.journal is not None else []
        try:
            steps, node, last = place_at(journal, self.value, path)
        except ValueError as bad:
            self._stop(None, str(bad))
            return
        current = node[last] if isinstance(last, int) else node.get(last)
        if item.__class__ is str and self._continuing.get(steps) and current.__class__ is str:
            self._grow(node, last, item)  # (an empty piece grows nothing)
        else:
            set_item(journal, node, last, copy_json(item))
        put(journal, self._continuing, steps, bool(will_continue))


# Every field of a reader, read off a fresh one (see jsonscan's _FIELDS: not ``__dict__``,
# which would slow every later attribute access on the live reader).
_FIELDS = tuple(vars(PartialJSON()))
_read_fields = attrgetter(*_FIELDS)


def _json_string(s: str, pos: int, cut: int | None = None) -> tuple[str, int]:
    """The string from ``s[pos]`` (after its opening quote) to its closing quote, or to
    ``cut`` where the fragment stops it, and where it ends: read by json's scanner, what it
    refuses said as this reader says it, at its offset in ``s``."""
    try:
        return _scanstring(s, pos) if cut is None else _scanstring(s[pos:cut] + '"', 0)
    except JSONDecodeError as bad:
        what, back, width = _REFUSED[bad.msg]
        at = bad.pos - back + (0 if cut is None else pos)
        raise _Invalid(at, what.format(s[at : at + width])) from None


def _number(token: str, at: int) -> Any:
    m = _NUMBER.fullmatch(token)
    if m is None:
        raise _Invalid(at, f"not a JSON number: {token!r}")
    if m.group(1) or m.group(2):
        return float(token)
    try:
        return int(token)
    except ValueError as too_long:  # json.loads refuses the same (sys.set_int_max_str_digits)
        raise _Invalid(at, str(too_long)) from None
