"""Paths, compiled once when a descriptor loads.

Two kinds of path appear in a descriptor:

- a *read path* says where a value sits in a chunk (or in an assembled item). A plain field
  chain (``delta.partial_json``) compiles to direct dictionary look-ups, because this runs on
  every chunk; anything else is JMESPath, compiled once. The empty path is the object itself.
  A read path whose first field is the descriptor's choice alias (``choice.delta``) reads from
  the choice the buffer follows rather than from the chunk.
- a *target path* says where in the message under assembly an operation writes. It is a field
  chain in which ``[read-path]`` addresses an item of a slotted list by the SLOT that the
  chunk carries: ``output[output_index].content[content_index].text``. In patterns (the
  ``calls`` and ``text`` sections) ``[*]`` stands for every item.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import jmespath

Reader = Callable[[Any, Any], Any]  # (event, choice) -> value or None

_FIELD = r"[A-Za-z_$][A-Za-z0-9_$-]*"
_PLAIN = re.compile(rf"^{_FIELD}(\.{_FIELD})*$")
_FIELD_AT = re.compile(_FIELD)
_FIELD_ONLY = re.compile(rf"^{_FIELD}$")
_TARGET_TOKEN = re.compile(rf"({_FIELD})|\[([^\]]*)\]|(\.)")


class PathError(ValueError):
    """A path that does not compile; the message says why."""


def is_plain(path: str) -> bool:
    return path == "" or bool(_PLAIN.match(path))


def parse_chain(path: str) -> tuple[str, ...]:
    """A *field chain* (``function.arguments``): field names joined by ``.``, nothing else.

    Some places in a descriptor are not read but written or tested for presence: ``calls.args``
    is where the arguments stream is installed in a call item, and a value can only be put at a
    field, never at a JMESPath result. Those places take a field chain, parsed here (the one
    definition, shared with the validator) so that a JMESPath or a slot there is refused with
    the reason, never split on ``.`` into nonsense fields.
    """
    if not isinstance(path, str) or not path:
        raise PathError("expected a field chain such as function.arguments, got nothing")
    if _PLAIN.match(path):
        return tuple(path.split("."))
    pos = 0
    expect_field = True
    while pos < len(path):
        m = _FIELD_AT.match(path, pos) if expect_field else None
        if m is not None:
            pos, expect_field = m.end(), False
        elif not expect_field and path[pos] == ".":
            pos, expect_field = pos + 1, True
        else:
            break
    if pos >= len(path):
        where = "path ends with '.'"
    else:
        where = f"unexpected {path[pos]!r} at column {pos + 1}"
    raise PathError(
        f"expected a plain field chain such as function.arguments (field names joined by '.', "
        f"no JMESPath, no [slot]): {where}"
    )


def single_field(path: Any, choice_alias: str | None = None) -> str | None:
    """The field name when ``path`` reads one plain field of the event itself (``index``,
    ``delta``, ``candidates``), else None. The hot path reads such a field with a look-up in
    place rather than a call to its compiled reader."""
    if not isinstance(path, str) or not _FIELD_ONLY.match(path) or path == choice_alias:
        return None
    return path


def compile_read(path: str, choice_alias: str | None = None) -> Reader:
    """Compile a read path into ``reader(event, choice)``."""
    if path == "":
        return _whole_event
    if is_plain(path):
        fields = path.split(".")
        if choice_alias is not None and fields[0] == choice_alias:
            return _chain(fields[1:], on_choice=True) if len(fields) > 1 else _the_choice
        return _chain(fields)
    try:
        expression = jmespath.compile(path)
    except jmespath.exceptions.JMESPathError as exc:
        raise PathError(f"JMESPath does not compile: {_jmespath_reason(exc)}") from None
    search = expression.search
    if choice_alias is not None:
        return lambda ev, ch: search({**ev, choice_alias: ch} if ch is not None else ev)

    def search_event(ev: Any, ch: Any = None) -> Any:
        return search(ev)

    return search_event


def compile_get(path: str) -> Callable[[Any], Any]:
    """Compile a read path over one object (an assembled item or message).

    Every reader takes the choice as an optional second argument, so a reader of the object
    itself is its own getter: no wrapper call on the hot path."""
    # Compiled without a choice alias, every reader's second argument is optional.
    return cast(Callable[[Any], Any], compile_read(path))


def _whole_event(ev: Any, ch: Any = None) -> Any:
    return ev


def _the_choice(ev: Any, ch: Any) -> Any:
    return ch


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


def _chain(fields: list[str], on_choice: bool = False) -> Reader:
    """Direct look-ups for a plain chain, from the event or (``on_choice``) from the choice.

    Specialised for the short chains of the hot path: each read is one call, no loop."""
    if on_choice:
        if len(fields) == 1:
            (a,) = fields

            def choice1(ev: Any, ch: Any) -> Any:
                return ch.get(a) if ch.__class__ is dict else None

            return choice1
        if len(fields) == 2:
            a, b = fields

            def choice2(ev: Any, ch: Any) -> Any:
                if ch.__class__ is not dict:
                    return None
                ch = ch.get(a)
                return ch.get(b) if ch.__class__ is dict else None

            return choice2
        inner = _chain(fields)
        return lambda ev, ch: inner(ch, None)
    if len(fields) == 1:
        (a,) = fields

        def get1(obj: Any, _ch: Any = None) -> Any:
            return obj.get(a) if obj.__class__ is dict else None

        return get1
    if len(fields) == 2:
        a, b = fields

        def get2(obj: Any, _ch: Any = None) -> Any:
            if obj.__class__ is not dict:
                return None
            obj = obj.get(a)
            return obj.get(b) if obj.__class__ is dict else None

        return get2
    if len(fields) == 3:
        a, b, c = fields

        def get3(obj: Any, _ch: Any = None) -> Any:
            if obj.__class__ is not dict:
                return None
            obj = obj.get(a)
            if obj.__class__ is not dict:
                return None
            obj = obj.get(b)
            return obj.get(c) if obj.__class__ is dict else None

        return get3

    def get_n(obj: Any, _ch: Any = None) -> Any:
        for field in fields:
            if obj.__class__ is not dict:
                return None
            obj = obj.get(field)
        return obj

    return get_n


@dataclass(frozen=True)
class Segment:
    """One step of a target path: a field, or an item of a slotted list."""

    field: str | None = None
    slot: Reader | None = None  # for an item step; None with ``any`` for ``[*]``
    slot_path: str | None = None
    any: bool = False


def parse_target(path: str, choice_alias: str | None = None) -> tuple[Segment, ...]:
    """Parse ``a.b[slot].c`` into segments; ``""`` is the message root."""
    if path == "":
        return ()
    segments: list[Segment] = []
    pos = 0
    expect_field = True
    while pos < len(path):
        m = _TARGET_TOKEN.match(path, pos)
        if m is None:
            raise PathError(f"unexpected {path[pos]!r} at column {pos + 1}")
        field, slot, dot = m.groups()
        if field is not None:
            if not expect_field:
                raise PathError(f"expected '.' or '[' before {field!r} at column {pos + 1}")
            segments.append(Segment(field=field))
            expect_field = False
        elif slot is not None:
            if expect_field or not segments:
                raise PathError(f"a slot [..] must follow a field at column {pos + 1}")
            slot = slot.strip()
            if slot == "*":
                segments.append(Segment(any=True, slot_path="*"))
            else:
                if not slot:
                    raise PathError(f"empty slot [] at column {pos + 1}")
                segments.append(Segment(slot=compile_read(slot, choice_alias), slot_path=slot))
        else:
            if expect_field:
                raise PathError(f"unexpected '.' at column {pos + 1}")
            expect_field = True
        pos = m.end()
    if expect_field:
        raise PathError("path ends with '.'")
    return tuple(segments)
