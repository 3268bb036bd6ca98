"""The one path language of descriptors, compiled once when a descriptor loads.

A path is a *field chain*: field names joined by ``.``, each optionally followed by bracket
steps. ``""`` is the object itself. The bracket steps are

- ``[n]`` (digits): the n-th item of a list (``tool_calls[0].function.arguments``);
- ``[slot]`` (a field chain of the *event*): the item of a slotted list whose SLOT the event
  carries there (``content[index].text``, ``output[output_index].content[content_index]``);
- ``[*]``: every item of a list (``output[*].content[*].text``).

A place in a descriptor compiles a path into one of its *forms*, and each form takes the steps
that mean something there (a problem names the column and what the form takes):

=============  ===========================  ================================================
form           steps                        used by
=============  ===========================  ================================================
read           fields, ``[n]``              ``from``, ``when``, predicates' ``field``/``has``,
                                            ``calls.name``/``id``, fold's ``slot``, templates
presence       fields, ``[n]`` (not ``""``)  ``{field: P, is: "null"}``: is the key there?
target         fields, ``[slot]``, ``[*]``  ``at`` of operations (``[*]`` is the validator's
                                            to refuse) and patterns (``calls.at``, ``text``)
chain          fields                       where a value is installed in an item
                                            (``calls.args``, fold's ``args``/``identity``)
=============  ===========================  ================================================

A read whose first field is the descriptor's choice alias (``choice.delta``) reads from the
choice the buffer follows rather than from the chunk. A plain field chain compiles to direct
dictionary look-ups, because reads run on every chunk.

JMESPath is still there for the reads a chain cannot say (a projection, a multiselect hash),
behind an explicit marker: the mapping ``{jmespath: "expr"}`` in place of the path string.
A mapping rather than a prefix, because a prefix would be a legal field name (``$``, ``=``
and ``-`` all appear in wire fields) or a YAML indicator to quote, while a one-key mapping
cannot be mistaken for a path, is typed by the schema (an editor completes it), and reads as
what it is. The strings of the old dialects (a bare JMESPath, the templates' ``a.0.b``) do not
compile; :func:`old_form` says what their new form is.

Where a wire packs two facts into one string (a part ``type`` of ``tool-get_weather`` names
both the kind and the tool), a read takes the string apart declaratively, never by code:
``{path: type, strip_prefix: "tool-"}`` reads the value at ``path`` and gives what follows
the prefix; a value that is no string, or does not start with the prefix, reads as absent.
(The kind is a predicate's to test: ``{field: type, prefix: "tool-"}``.)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import jmespath

#: A compiled read: ``reader(event, choice=None)`` is the value there, or None. Reads run on
#: every chunk and a call costs a tenth of a chunk's budget, so the reader is its own fast path:
#: a plain field chain compiles to the direct look-ups of :func:`_chain` (``ev.get(key)`` for one
#: field), and its callers call it, never a second copy of that look-up.
Reader = Callable[..., Any]

JMESPATH = "jmespath"  # {jmespath: E}: the marker that makes a read path a JMESPath expression
STRIP_PREFIX = "strip_prefix"  # {path: P, strip_prefix: S}: the read that takes a prefix off
FIRST = "first"  # {first: [READ, ...]}: the first of several places that holds a value
CONSTANT = "value"  # {value: V}: the constant V, whatever the event
OMIT_NULL = "omit_null"  # {jmespath: E, omit_null: true}: the objects E builds leave nulls out

_FIELD = r"[A-Za-z_$][A-Za-z0-9_$-]*"
_FIELD_AT = re.compile(_FIELD)
_CHAIN = re.compile(rf"{_FIELD}(\.{_FIELD})*")  # a plain chain: fullmatch; where one stops: match


class PathError(ValueError):
    """A path that does not compile in the form asked for.

    ``column`` (1-based, None when the path as a whole is wrong) points into the path text;
    ``in_slot`` says the problem is inside a ``[slot]`` step; ``hint`` is the path's new form
    when it is written in an old dialect (see :func:`old_form`)."""

    def __init__(
        self,
        message: str,
        column: int | None = None,
        in_slot: bool = False,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.column, self.in_slot, self.hint = column, in_slot, hint


@dataclass(frozen=True)
class Step:
    """One step of a parsed path: a field, an index ``[n]``, a ``[slot]`` or ``[*]``.

    ``text`` is the field name, or the slot's field chain; ``column`` where the step begins."""

    kind: str  # "field" | "index" | "slot" | "every"
    text: str = ""
    index: int = 0
    column: int = 1


def parse(path: str) -> tuple[Step, ...]:
    """The steps of ``path`` (``""``: none). Raises :class:`PathError` naming the column."""
    if not isinstance(path, str):
        raise PathError(f"a path is a string, got {type(path).__name__}")
    steps: list[Step] = []
    pos, n = 0, len(path)
    if n == 0:
        return ()
    while True:
        m = _FIELD_AT.match(path, pos)
        if m is None:
            raise _unexpected(path, pos)
        steps.append(Step("field", m.group(), column=pos + 1))
        pos = m.end()
        while pos < n and path[pos] == "[":
            close = path.find("]", pos)
            if close < 0:
                raise PathError(f"'[' at column {pos + 1} is never closed", pos + 1)
            steps.append(_bracket(path[pos + 1 : close], pos + 1))
            pos = close + 1
        if pos == n:
            return tuple(steps)
        if path[pos] != ".":
            raise _unexpected(path, pos)
        pos += 1
        if pos == n:
            raise PathError("path ends with '.'", pos)


@functools.lru_cache(maxsize=4096)
def _parsed(path: str) -> tuple[Step, ...]:
    """:func:`parse` once per path string: a load asks for the steps of one path in each of
    its forms (the schema's check, the read or target compiled, its pattern, the validator's
    flow checks), and the steps are immutable, so the first parse serves them all."""
    return parse(path)


def _bracket(inner: str, column: int) -> Step:
    if inner == "*":
        return Step("every", "*", column=column)
    if inner.isascii() and inner.isdigit():
        return Step("index", inner, index=int(inner), column=column)
    if not inner:
        raise PathError(f"empty [] at column {column}", column, in_slot=True)
    if not _CHAIN.fullmatch(inner):
        # Where the chain stops being one: past the longest chain it starts with, and past a
        # '.' that no field follows (len(inner) when it only ends badly).
        m = _CHAIN.match(inner)
        pos = m.end() if m else 0
        pos += 1 if m and inner[pos : pos + 1] == "." else 0
        what = "ends with '.'" if pos >= len(inner) else f"unexpected {inner[pos]!r}"
        raise PathError(
            f"slot [{inner}]: a slot is a field chain of the event (index, choice.index), "
            f"an index [0] or [*]: {what} at column {column + 1 + pos}",
            column + 1 + pos,
            in_slot=True,
        )
    return Step("slot", inner, column=column)


def _unexpected(path: str, pos: int) -> PathError:
    """The character at ``pos`` (never past the end: an empty path and a final '.' are said
    apart) begins no step there."""
    return PathError(f"unexpected {path[pos]!r} at column {pos + 1}", pos + 1)


# -- old dialects -------------------------------------------------------------------------------

_DIGIT_FIELD = re.compile(r"(?<=[A-Za-z0-9_$\]-])\.([0-9]+)(?=\.|$)")


def old_form(path: Any, form: str = "read") -> str | None:
    """The new form of a path written in an old dialect, or None when it is in none.

    - the templates' ``a.0.b`` (a segment of digits indexes a list) is ``a[0].b``;
    - a bare JMESPath read (``a || b``, ``[?x]``, ``a[*].b`` in a read) is
      ``{jmespath: "..."}`` where a read takes it."""
    if not isinstance(path, str) or not path:
        return None
    steps = _steps_or_none(path)
    if steps is not None and all(step.kind in ("field", "index") for step in steps):
        return None  # in the one language already, as a read
    rewritten = _DIGIT_FIELD.sub(lambda m: f"[{m.group(1)}]", path)
    if rewritten != path and _steps_or_none(rewritten) is not None:
        return rewritten
    if form == "read":
        try:
            jmespath.compile(path)
        except jmespath.exceptions.JMESPathError:
            return None
        return f"{{{JMESPATH}: {json.dumps(path, ensure_ascii=False)}}}"
    return None


def _steps_or_none(path: str) -> tuple[Step, ...] | None:
    try:
        return _parsed(path)
    except PathError:
        return None


def _with_hint(exc: PathError, path: Any, form: str) -> PathError:
    hint = old_form(path, form)
    if hint is None:
        return exc
    return PathError(f"{exc}; an old form of path: write {hint}", exc.column, exc.in_slot, hint)


# -- the forms ------------------------------------------------------------------------------------


def is_plain(path: Any) -> bool:
    """A chain of fields only (``""`` included): the paths read with look-ups and nothing
    else, which the dispatcher may key on."""
    return path == "" or (isinstance(path, str) and bool(_CHAIN.fullmatch(path)))


def read_steps(path: str, form: str = "read") -> tuple[Step, ...]:
    """The steps of a read path string (fields and ``[n]``), the old forms named (``form``:
    ``read``, where a JMESPath may be written with its marker, or ``template``)."""
    try:
        steps = _parsed(path)
    except PathError as exc:
        raise _with_hint(exc, path, form) from None
    for step in steps:
        if step.kind in ("slot", "every"):  # (the text of [*] is *)
            refused = PathError(
                f"a read gives one value: [{step.text}] at column {step.column} is for an `at` "
                "(a [slot] of a target, a [*] of a pattern); a read takes fields and [n]",
                step.column,
            )
            raise _with_hint(refused, path, form) from None
    return steps


def parse_chain(path: str) -> tuple[str, ...]:
    """A *chain*: field names joined by ``.``, nothing else.

    Some places in a descriptor are not read but written: ``calls.args`` is where the
    arguments stream is installed in a call item, and a value is put at a field, never at an
    index or a JMESPath result. Those places take a chain, parsed here (the one definition,
    shared with the validator) so that anything else is refused with the reason."""
    if not isinstance(path, str) or not path:
        raise PathError("expected a field chain such as function.arguments, got nothing")
    expected = "expected a field chain such as function.arguments (fields joined by '.')"
    try:
        steps = _parsed(path)
    except PathError as exc:
        raise PathError(f"{expected}: {exc}", exc.column) from None
    bracket = next((step for step in steps if step.kind != "field"), None)
    if bracket is None:
        return tuple(step.text for step in steps)
    where = f"a value is written at a field, so no [..] here: '[' at column {bracket.column}"
    raise PathError(f"{expected}: {where}", bracket.column)


def one_field(path: Any) -> str | None:
    """The one plain field a read path names (``index``, ``delta``), else None: where a
    compiled test looks that key up itself (a predicate's ``{field: F, equals: V}``)."""
    return path if isinstance(path, str) and _FIELD_AT.fullmatch(path) else None


def compile_read(path: str | dict[str, Any], choice_alias: str | None = None) -> Reader:
    """Compile a read path (a string, ``{jmespath: expr}``, ``{path: P, strip_prefix: S}``,
    ``{first: [READ, ...]}`` or the constant ``{value: V}``) into ``reader(event, choice)``."""
    if isinstance(path, dict):
        if STRIP_PREFIX in path:
            return _compile_strip_prefix(path, choice_alias)
        if FIRST in path:
            return _compile_first(path, choice_alias)
        if CONSTANT in path:
            return _compile_constant(path)
        return _compile_jmespath(path, choice_alias)
    keys = _walk_keys(path)
    on_choice = bool(keys) and keys[0] == choice_alias
    keys = keys[1:] if on_choice else keys
    if all(key.__class__ is str for key in keys):  # a plain chain: the look-ups of _chain
        return _chain(cast(list[str], keys), on_choice)
    return lambda ev, ch=None: _walk(ch if on_choice else ev, keys)


#: A read path over one object (an assembled item or message): a read without a choice alias,
#: whose second argument (the choice) is optional, so that it is its own getter.
compile_get = compile_read


def compile_lookup(path: str) -> Callable[[Any], Any]:
    """A read path over a template's context (plain data a caller built, so any mapping and
    any list): the value there, or None when the way is absent."""
    steps = _walk_keys(path, "template")
    return lambda obj: _walk(obj, steps, exact=False)


def compile_presence(path: str) -> Callable[[Any], bool]:
    """Is the last step of ``path`` there (the key present, the index inside its list),
    whatever its value: what ``is: "null"`` asks, which a read cannot tell from absent."""
    if not isinstance(path, str) or not path:
        raise PathError("a presence test names the key it asks about, got nothing")
    steps = _walk_keys(path)
    parents, last = steps[:-1], steps[-1]

    def present(obj: Any) -> bool:
        holder = _walk(obj, parents)
        if last.__class__ is int:
            return holder.__class__ is list and last < len(holder)
        return holder.__class__ is dict and last in holder

    return present


def _walk_keys(path: str, form: str = "read") -> list[str | int]:
    """A read path string as the keys ``_walk`` takes: field names and list indexes."""
    return [s.index if s.kind == "index" else s.text for s in read_steps(path, form)]


def _walk(obj: Any, steps: list[str | int], exact: bool = True) -> Any:
    """The value at ``steps`` (field names and list indexes), or None."""
    for step in steps:
        if step.__class__ is int:
            if not (obj.__class__ is list if exact else isinstance(obj, list)) or step >= len(obj):
                return None
            obj = obj[step]
        elif obj.__class__ is dict if exact else isinstance(obj, dict):
            obj = obj.get(step)
        else:
            return None
    return obj


def _compile_jmespath(path: dict[str, Any], choice_alias: str | None) -> Callable[..., Any]:
    if set(path) - {OMIT_NULL} != {JMESPATH} or not isinstance(path[JMESPATH], str):
        raise PathError(f'a read path is a string or {{{JMESPATH}: "expression"}}, got {path!r}')
    try:
        expression = jmespath.compile(path[JMESPATH])
    except jmespath.exceptions.JMESPathError as exc:
        raise PathError(f"JMESPath does not compile: {_jmespath_reason(exc)}") from None
    search: Callable[[Any], Any] = expression.search
    if path.get(OMIT_NULL) is True:
        search = lambda obj: _without_nulls(expression.search(obj))  # noqa: E731
    if choice_alias is not None:
        return lambda ev, ch: search({**ev, choice_alias: ch} if ch is not None else ev)
    return lambda ev, ch=None: search(ev)


def _without_nulls(value: Any) -> Any:
    """``omit_null``: a multiselect hash writes null for a key the event lacks; the objects
    of the result leave such keys out (at every depth), so that the message holds only what
    the wire sent, as a field chain's absent read writes nothing."""
    if value.__class__ is dict:
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if value.__class__ is list:
        return [_without_nulls(v) for v in value]
    return value


def _compile_first(spec: dict[str, Any], choice_alias: str | None) -> Callable[..., Any]:
    """The first of several reads (two or more: the schema's) that holds a value (not null):
    one read for a value the wire sends in one of several places or shapes."""
    readers = [compile_read(read, choice_alias) for read in spec[FIRST]]

    def first(ev: Any, ch: Any = None) -> Any:
        for read in readers:
            if (value := read(ev, ch)) is not None:
                return value
        return None

    return first


def _compile_constant(spec: dict[str, Any]) -> Callable[..., Any]:
    """``{value: V}``: V whatever the event (a type, a state the wire leaves implicit),
    without a JMESPath literal; a fresh copy each time, so that the message never shares it."""
    text = json.dumps(spec[CONSTANT])
    return lambda ev, ch=None: json.loads(text)


def _compile_strip_prefix(spec: dict[str, Any], choice_alias: str | None) -> Callable[..., Any]:
    """What follows ``strip_prefix`` in the string at ``path`` (absent when the value is no
    string or does not start with it): one field read and a ``startswith``, no expression.
    The schema (``$defs/strip_prefix_read``) holds it to its two keys, a non-empty prefix and
    a read path, for a file and a dict alike (ExtractionStrategy asks a dict of it first)."""
    prefix = spec[STRIP_PREFIX]
    read = compile_read(spec["path"], choice_alias)
    size = len(prefix)

    def strip(ev: Any, ch: Any = None) -> Any:
        value = read(ev, ch)
        if value.__class__ is str and value.startswith(prefix) and len(value) > size:
            return value[size:]
        return None

    return strip


def _jmespath_reason(exc: Exception) -> str:
    """One short line: jmespath's own messages span lines and repeat the expression."""
    if isinstance(exc, jmespath.exceptions.IncompleteExpressionError):
        return "incomplete expression"
    if isinstance(exc, jmespath.exceptions.LexerError):
        message = exc.message[:1].lower() + exc.message[1:]
        return f"{message} at column {exc.lexer_position + 1}"
    if isinstance(exc, jmespath.exceptions.ParseError):
        if exc.token_value not in (None, ""):
            return f"unexpected {exc.token_value!r} at column {exc.lex_position + 1}"
        return f"{exc.msg} at column {exc.lex_position + 1}"
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


def _chain(fields: list[str], on_choice: bool = False) -> Callable[..., Any]:
    """Direct look-ups for a plain chain, from the event or (``on_choice``) from the choice.

    Specialised for the short chains of the hot path: each read is one call, no loop. One
    factory serves both roots: the root is picked by a closed-over flag, never by a second
    call (an event-side reader is also a one-argument getter of an item)."""
    if not fields:
        return lambda ev, ch=None: ch if on_choice else ev
    if len(fields) == 1:
        (a,) = fields

        def get1(ev: Any, ch: Any = None) -> Any:
            obj = ch if on_choice else ev
            return obj.get(a) if obj.__class__ is dict else None

        return get1
    if len(fields) == 2:
        a, b = fields

        def get2(ev: Any, ch: Any = None) -> Any:
            obj = ch if on_choice else ev
            obj = obj.get(a) if obj.__class__ is dict else None
            return obj.get(b) if obj.__class__ is dict else None

        return get2

    def get_n(ev: Any, ch: Any = None) -> Any:
        obj = ch if on_choice else ev
        for field in fields:
            if obj.__class__ is not dict:
                return None
            obj = obj.get(field)
        return obj

    return get_n


@dataclass(frozen=True)
class Segment:
    """One step of a target path or pattern: a field, or an item of a slotted list."""

    field: str | None = None
    slot: Reader | None = None  # for an item step; None with ``any`` for ``[*]``
    slot_path: str | None = None
    any: bool = False


def parse_target(path: str, choice_alias: str | None = None) -> tuple[Segment, ...]:
    """The target form: ``a.b[slot].c`` (or a pattern's ``a[*].b``) as segments; ``""`` is
    the message root. An index ``[n]`` names no item of a slotted list and is refused."""
    segments: list[Segment] = []
    for step in _parsed(path):
        if step.kind == "field":
            segments.append(Segment(field=step.text))
            continue
        if step.kind == "index":
            raise PathError(
                f"an index [{step.text}] at column {step.column} names no item here: items of "
                "the message are addressed by the SLOT their event carries (content[index]), "
                "or all at once in a pattern (content[*])",
                step.column,
                in_slot=True,
            )
        # An item step: a [slot] reads the item's SLOT off the event, [*] (its text *) none.
        slot = compile_read(step.text, choice_alias) if step.kind == "slot" else None
        segments.append(Segment(slot=slot, slot_path=step.text, any=step.kind == "every"))
    return tuple(segments)


# -- patterns: the one place they are cut and joined -------------------------------------------

EVERY = "[*]"


def pattern_of(segments: tuple[Segment, ...]) -> str:
    """The pattern of a target's segments: each slot step ``[*]`` (``content[*].text``)."""
    out = ""
    for seg in segments:
        out += EVERY if seg.field is None else f"{'.' if out else ''}{seg.field}"
    return out


def pattern(path: Any) -> str:
    """The pattern of a target path's text (``content[index].text`` -> ``content[*].text``);
    ``""`` for the message root, or for what is no path text. A slot's reader (what the choice
    alias changes) is no part of a pattern."""
    return pattern_of(parse_target(path)) if isinstance(path, str) and path else ""


def items_of(base: str, name: str | None = None) -> str:
    """The pattern of the items of the list at ``base`` (or at its field ``name``)."""
    if name is not None:
        base = f"{base}.{name}" if base else name
    return base + EVERY


def pattern_parts(path: str) -> tuple[str, tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """``output[*].content[*].text`` -> pattern, field chains before each [*], tail fields."""
    segments = parse_target(path)
    chains: list[tuple[str, ...]] = [()]  # the fields before each [*], then the tail's
    for seg in segments:
        if seg.field is None:
            chains.append(())
        else:
            chains[-1] += (seg.field,)
    return pattern_of(segments), tuple(chains[:-1]), chains[-1]
