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

from .model import Fragments, ingest

_ABSENT = object()


@dataclass(frozen=True)
class JoinRule:
    key: tuple[str, ...]
    text: tuple[str, ...]
    string_part: dict | None = None  # how a bare string delta becomes a part: {type: text}
    string_field: str | None = None
    blocked_by: tuple[str, ...] = ()  # fields on the incoming part that prevent a join
    attach: tuple[str, ...] = ()  # fields an empty-text part brings onto the run before it

    @classmethod
    def from_spec(cls, spec: dict) -> JoinRule:
        string = spec.get("string")
        return cls(
            key=tuple(spec.get("key", ())),
            text=tuple(spec.get("text", ("text",))),
            string_part={k: v for k, v in string.items() if k != "field"} if string else None,
            string_field=string.get("field", "text") if string else None,
            blocked_by=tuple(spec.get("unless", ())),
            attach=tuple(spec.get("attach", ())),
        )


def _may_join(rule: JoinRule, last: dict, part: dict) -> bool:
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


def _attaches(rule: JoinRule, last: dict, part: dict, field: str) -> bool:
    """Does ``part`` only bring ``field`` to the run before it: it has no text of its own
    and the run does not hold that field yet (a second signature is never merged away)."""
    if last.get(field) is not None:
        return False
    for f in rule.text:  # noqa: SIM110  (a generator costs a call per part)
        if part.get(f):
            return False
    return True


def join_parts(
    parts: list, incoming: list, rule: JoinRule, on_part: Callable[[dict, dict], None] | None
) -> None:
    """Append ``incoming`` parts to ``parts``, joining each with the last one where it may.

    ``on_part(stored, incoming_part)`` is told about every part taken (to show display text,
    or to track a call).
    """
    for part in incoming:
        if part.__class__ is not dict:
            continue
        stored = join_one(parts, part, rule)
        if on_part is not None:
            on_part(stored, part)


def join_one(parts: list, part: dict, rule: JoinRule) -> dict:
    """Join one part into the last of ``parts`` where it may, else append a copy; the part
    that holds it now."""
    if parts and _may_join(rule, parts[-1], part):
        last = parts[-1]
        if len(part) == 1:  # the usual delta, one text field: appended without a walk
            ((key, value),) = part.items()
            current = last.get(key)
            if value.__class__ is str and current.__class__ is Fragments:
                if value:
                    current.parts.append(value)
                return last
        _join_into(last, part, rule)
        return last
    stored = ingest(part)
    for f in rule.text:
        if stored.get(f).__class__ is str:
            stored[f] = Fragments(stored[f])
    parts.append(stored)
    return stored


def _join_into(last: dict, part: dict, rule: JoinRule) -> None:
    for key, value in part.items():
        if key in rule.text:
            current = last.get(key)
            if value.__class__ is str:
                if current.__class__ is Fragments:
                    if value:
                        current.parts.append(value)
                else:
                    last[key] = Fragments((current or "") + value)
            elif value.__class__ is list and current.__class__ is list:
                join_parts(current, value, rule, None)
            elif current is None:
                last[key] = ingest(value)
        elif last.get(key) in (None, ""):
            last[key] = ingest(value)


def string_as_part(parts: list, text: str, rule: JoinRule) -> dict:
    """A bare string delta on a parts list joins the last text part, or starts one."""
    part = {**(rule.string_part or {}), rule.string_field or "text": text}
    join_parts(parts, [part], rule, None)
    return parts[-1]
