"""Typed parts that join: Mistral's content chunks, Gemini's parts.

Some wires stream a list of typed parts (``{type: thinking, thinking: [...]}``,
``{type: text, text}``, ``{text, thought: true}``) where the non-streaming message holds one part
per run: adjacent parts of one kind join into one, their text fields concatenating (nested part
lists join the same way), other fields set once. A :class:`JoinRule` says what "one kind" is
(``key``: the fields that must be equal) and which fields are text; a part without any text
field (a function call) never joins. ``attach`` names fields that a part with no text of its
own brings onto the run before it: Gemini ends a streamed answer with
``{"text": "", "thoughtSignature": ...}``, where the non-streaming response has one part
``{text, thoughtSignature}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .fragments import Fragments, grow, ingest, json_kind, shown_value
from .journal import put, trim

_ABSENT = object()


@dataclass(frozen=True)
class JoinRule:
    key: tuple[str, ...]
    text: tuple[str, ...]
    string_part: dict[str, Any] | None = None  # how a bare string delta becomes a part
    string_field: str = ""  # the field of that part that takes the string (see from_spec)
    blocked_by: tuple[str, ...] = ()  # fields on the incoming part that prevent a join
    attach: tuple[str, ...] = ()  # fields an empty-text part brings onto the run before it
    where: str = ""  # the message path of the parts list, named in an error

    @classmethod
    def from_spec(cls, spec: dict[str, Any], where: str = "") -> JoinRule:
        """The rule as the schema requires it: the text fields (and ``string``'s field) are
        the wire's names, so the descriptor states them. Without ``string``, earlier plain
        text that becomes a part goes into the first of the declared text fields."""
        string = spec.get("string")
        text = tuple(spec["text"])
        return cls(
            where=where,
            key=tuple(spec.get("key", ())),
            text=text,
            string_part={k: v for k, v in string.items() if k != "field"} if string else None,
            string_field=string["field"] if string else text[0],
            blocked_by=tuple(spec.get("unless", ())),
            attach=tuple(spec.get("attach", ())),
        )

    def part_of(self, text: str) -> dict[str, Any]:
        """The text part a bare string delta stands for (``string``: its fields, the string
        at its field)."""
        return {**(self.string_part or {}), self.string_field: text}


def _may_join(rule: JoinRule, last: dict[str, Any], part: dict[str, Any]) -> bool:
    """May ``part`` join ``last``: nothing blocks it, both carry text, their keys agree.
    Plain loops, no generators: this runs on every part of every chunk. A part the wire sent
    as something else than an object (kept as sent) joins nothing."""
    if last.__class__ is not dict:
        return False
    for f in rule.blocked_by:
        if part.get(f) is not None:
            return False
    for f in rule.attach:
        if part.get(f) is not None and not _attaches(rule, last, part, f):
            return False
    for f in rule.text:
        if f in last:
            break
    else:
        return False
    for f in rule.text:
        if f in part:
            break
    else:
        return False
    for k in rule.key:  # noqa: SIM110  (a generator costs a call per part)
        if last.get(k, _ABSENT) != part.get(k, _ABSENT):
            return False
    return True


def _attaches(rule: JoinRule, last: dict[str, Any], part: dict[str, Any], field: str) -> bool:
    """Does ``part`` only bring ``field`` to the run before it: it has no text of its own
    and the run does not hold that field yet (a second signature is never merged away)."""
    if last.get(field) is not None:
        return False
    for f in rule.text:  # noqa: SIM110  (a generator costs a call per part)
        if part.get(f):
            return False
    return True


def join_parts(
    journal: list[Any],
    parts: list[Any],
    incoming: list[Any],
    rule: JoinRule,
    on_part: Callable[[dict[str, Any], dict[str, Any]], None] | None,
    where: Any = None,
) -> None:
    """Append ``incoming`` parts to ``parts``, joining each with the last one where it may
    (each write journaled, engine.model.journal).

    ``on_part(stored, incoming_part)`` is told about every part taken (to show display text,
    or to track a call). ``where`` locates ``parts`` for an error (see :func:`join_one`).
    """
    for part in incoming:
        if part.__class__ is not dict:  # kept as sent; it joins nothing (see _may_join)
            trim(journal, parts)
            parts.append(ingest(part))
            continue
        stored = join_one(journal, parts, part, rule, where)
        if on_part is not None:
            on_part(stored, part)


def join_one(
    journal: list[Any], parts: list[Any], part: dict[str, Any], rule: JoinRule, where: Any = None
) -> dict[str, Any]:
    """Join one part into the last of ``parts`` where it may, else append a copy; the part
    that holds it now. A text field that cannot continue the run's (a number there, or a
    list of parts meeting text with no ``string`` rule) is a ValueError naming its place:
    ``where`` (the rule's list by default; a nested list's place, built only for an error)."""
    if parts and _may_join(rule, parts[-1], part):
        last: dict[str, Any] = parts[-1]
        if len(part) == 1:  # the usual delta, one text field: appended without a walk
            ((key, value),) = part.items()
            current = last.get(key)
            if value.__class__ is str and current.__class__ is Fragments:
                if value:
                    grow(journal, current, value)
                return last
        where = rule.where if where is None else where
        for key, value in part.items():
            if key in rule.text:
                _join_text(journal, last, key, value, rule, (where, len(parts) - 1, key))
            elif last.get(key) in (None, ""):
                put(journal, last, key, ingest(value))
        return last
    stored: dict[str, Any] = ingest(part)
    for f in rule.text:
        if stored.get(f).__class__ is str:
            stored[f] = Fragments(stored[f], journal)
    trim(journal, parts)
    parts.append(stored)
    return stored


def _join_text(
    journal: list[Any], last: dict[str, Any], key: str, value: Any, rule: JoinRule, place: Any
) -> None:
    """Continue the text field ``key`` of the run ``last`` (the field at ``place``, see
    :func:`_place`) with ``value``: a string appends to text, a list of parts joins a list of
    parts (Mistral's ``thinking``). A string on a list of parts is placed by the rule's
    ``string`` (a bare string is a text part), without loss; what cannot continue the field (a
    list on text: the text so far would become a part the stream never showed as one) is a
    ValueError naming the place, what it holds and what came. ``null`` adds nothing."""
    current: Any = last.get(key)  # narrowed by class below, which mypy does not follow
    kind = value.__class__
    held = current.__class__
    if kind is str and held is Fragments:
        if value:
            grow(journal, current, value)
    elif kind is str and (current is None or held is str):
        put(journal, last, key, Fragments((current or "") + value, journal))
    elif current is None:  # a list of parts, or another value, where nothing is yet
        put(journal, last, key, ingest(value))
    elif kind is str and held is list and rule.string_part is not None:
        string_as_part(journal, current, value, rule, place)
    elif kind is list and held is list:
        join_parts(journal, current, value, rule, None, place)
    elif value is not None:
        raise _text_misfit(place, current, value, rule)


def as_placed(part: dict[str, Any], stored: dict[str, Any], rule: JoinRule) -> dict[str, Any]:
    """``part`` as the run ``stored`` took it: a bare string on a text field that holds a list
    of parts there stands for the text part it became (``rule.string``), so that what is read
    from the part (reasoning) agrees with the message. The part itself in every other case."""
    if rule.string_part is None:
        return part
    for f in rule.text:
        value = part.get(f)
        if value.__class__ is str and stored.get(f).__class__ is list:
            return {**part, f: [rule.part_of(value)]}
    return part


# What may continue a text field, by what it holds (see _join_text); a list of parts also takes
# a string where the rule says how one becomes a part.
_CONTINUES = {str: "a string", Fragments: "a string", list: "a list of parts"}


def _text_misfit(place: tuple[Any, ...], current: Any, value: Any, rule: JoinRule) -> ValueError:
    held = current.__class__
    wanted = _CONTINUES.get(held, "nothing more (only text and lists of parts continue)")
    if held is list and rule.string_part is not None:
        wanted += " or a string"
    return ValueError(
        f"{_place(place)}: holds {json_kind(current)} so far, so expected {wanted}; got "
        f"{json_kind(value)}: {shown_value(value)}"
    )


def _place(where: Any) -> str:
    """The message path a location names: the list's path (``content``), or ``(list, index,
    field)`` for a field of one of its parts (``content[0].thinking``), nested as deep as
    the parts nest. Built only for an error."""
    if where.__class__ is tuple:
        parent, index, key = where
        return f"{_place(parent)}[{index}].{key}"
    return where or "(the parts)"


def string_as_part(
    journal: list[Any], parts: list[Any], text: str, rule: JoinRule, where: Any = None
) -> dict[str, Any]:
    """A bare string delta on a parts list joins the last text part, or starts one."""
    return join_one(journal, parts, rule.part_of(text), rule, where)
