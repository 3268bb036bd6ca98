"""``fold``: the delta-merge operation of OpenAI Chat, Cohere-style and Ollama wires.

On a delta-merge wire the message is a fold of deltas: the content-like strings named in
``concat`` concatenate, lists named in ``lists`` merge their entries by a SLOT key, objects
named in ``objects`` are one item each (a wire's single call outside any list), the
arguments field of a list entry or of such an object streams through its
:class:`~engine.model.jsonscan.ArgsStream`, and every other value is set once (a later
``null`` or ``""`` never erases it, and an id or name repeated on every fragment is never
concatenated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.assembly import Assembly, ensure_slotted
from ..model.fragments import (
    Fragments,
    SlottedList,
    append_text,
    dig,
    ingest,
    shown_value,
    slot_misfit,
)
from ..model.journal import put
from ..model.jsonscan import COMPLETE
from ..model.parts import JoinRule, as_placed, join_parts, string_as_part
from .ops import CompileContext, Run, Target, reasoning_at, reasoning_inside, report_unplaced
from .paths import compile_get, compile_read, items_of, one_field, parse_chain


@dataclass(frozen=True)
class ListFold:
    """How one list field of a delta merges into the message."""

    pattern: str
    slot: Any  # getter on the entry, or None
    without_slot: str  # "continue": continue the open entry unless it brings a new identity;
    #                    "new": every entry without a slot is a new item
    identity: tuple[tuple[str, ...], ...]  # fields whose arrival starts a new entry
    drop: frozenset[str]
    args: tuple[str, ...]  # args field chain inside an entry, or ()
    concat: frozenset[str]
    slot_path: str | None = None  # the entry's SLOT field as declared (for an error)


def op_fold(spec: dict[str, Any], ctx: CompileContext) -> Run:
    read = compile_read(spec["from"], ctx.choice_alias)
    at = spec["at"]
    target = Target(spec, ctx) if at else None
    base = target.pattern if target is not None else ""
    concat = frozenset(spec["concat"])
    display_key = next((k for k in concat if ctx.wire.text.pattern == _under(base, k)), None)
    lists = {name: _entry_fold(items_of(base, name), how) for name, how in _named(spec, "lists")}
    objects = {name: _entry_fold(_under(base, name), how) for name, how in _named(spec, "objects")}
    parts = {name: JoinRule.from_spec(how, _under(at, name)) for name, how in _named(spec, "parts")}
    strings = concat | frozenset(parts)  # the keys whose strings concatenate (parts' too)
    # Concat keys that are reasoning (key -> which messages hold it, None: all), and for each
    # parts key the readers of the reasoning inside an incoming part (none: no reasoning
    # there; Mistral's ``{type: thinking, thinking: [{type: text, text}]}``).
    found = {key: reasoning_at(ctx, _under(base, key)) for key in strings}
    reasoning_keys = {key: where for key, (is_reasoning, where) in found.items() if is_reasoning}
    reasoning_parts = {key: reasoning_inside(ctx, _under(base, key)) for key in parts}
    shown = ctx.wire.text.part_where  # which parts of the display key are display text
    # The display parts' text field: ``text.parts.field`` where the descriptor declares it,
    # else the first text field of the display key's join rule (the descriptor's names both).
    display_field = ctx.wire.text.part_field
    if display_field is None and display_key in parts:
        display_field = parts[display_key].text[0]
    order = ctx.list_order
    # ``message``: looked up in place, a frame less (the choice itself: read from the choice)
    field_name = None if spec["from"] == ctx.choice_alias else one_field(spec["from"])

    def run(asm: Assembly, ev: Any, ch: Any) -> None:
        delta = ev.get(field_name) if field_name is not None else read(ev, ch)
        if delta.__class__ is not dict:
            return
        dest = asm.root if target is None else target.locate_item(asm, ev, ch, True)
        if dest is None:
            assert target is not None, "the root is always there"
            report_unplaced(asm, "fold", target, ev, ch)
            return
        journal = asm.journal
        for key, value in delta.items():
            if key in strings:
                current = dest.get(key)
                if value.__class__ is list and key in parts:
                    fold_parts(asm, dest, key, value)
                elif current.__class__ is list and value.__class__ is str and key in parts:
                    if value:
                        part = string_as_part(journal, current, value, parts[key])
                        if key == display_key and (shown is None or shown(part)):
                            journal.append(asm.display)
                            asm.display.append(value)
                        elif (reading := reasoning_parts[key]) is not None:
                            # reasoning where a reasoning place reads the part it stands for
                            reading(asm, parts[key].part_of(value))
                elif value.__class__ is str:
                    if value:
                        if current.__class__ is Fragments:  # the usual delta: no frame of ours
                            journal.append(current.pieces)
                            current.append(value)
                        else:
                            append_text(dest, key, value, journal)
                        if key == display_key:
                            journal.append(asm.display)
                            asm.display.append(value)
                        elif key in reasoning_keys:
                            where = reasoning_keys[key]
                            if where is None or where(dest):
                                journal.append(asm.reasoning)
                                asm.reasoning.append(value)
                    elif current is None:
                        put(journal, dest, key, "")
                else:
                    _set_once(journal, dest, key, value)
            elif key in lists and value is not None:  # (a null one is set once, as any value)
                lst = dest.get(key)
                if lst.__class__ is not SlottedList:
                    lst = ensure_slotted(dest, key, order, journal)
                for entry in value if value.__class__ is list else [value]:
                    if entry.__class__ is dict:
                        _fold_entry(asm, lst, entry, lists[key])
            elif key in objects and value.__class__ is dict:
                # Its first delta makes the item, told to the assembly once it holds that
                # delta (so that ``calls.where`` reads what it carries); later ones merge in.
                item = dest.get(key)
                if item.__class__ is dict:
                    _merge_entry(asm, item, item, value, objects[key], 0)
                    continue
                item = put(journal, dest, key, {})
                _merge_entry(asm, item, item, value, objects[key], 0)
                asm.item_added(objects[key].pattern, item)
            else:
                _set_once(journal, dest, key, value)

    def fold_parts(asm: Assembly, dest: dict[str, Any], key: str, value: list[Any]) -> None:
        """A list delta on a content-like key: typed parts that join (Mistral's content
        chunks). Text that arrived earlier as plain strings becomes the first text part."""
        rule = parts[key]
        current = dest.get(key)
        if current.__class__ is not list:
            earlier = str(current) if current is not None else ""
            current = put(asm.journal, dest, key, [])
            if earlier:
                string_as_part(asm.journal, current, earlier, rule)
        text_field = display_field if key == display_key else None
        reading = reasoning_parts[key]

        def on_part(stored: dict[str, Any], part: dict[str, Any]) -> None:
            if text_field is not None and (shown is None or shown(stored)):
                piece = part.get(text_field)
                if piece.__class__ is str and piece:
                    asm.journal.append(asm.display)
                    asm.display.append(piece)
                    return
            if reading is not None:
                reading(asm, as_placed(part, stored, rule))

        join_parts(asm.journal, current, value, rule, on_part)

    return run


def _named(spec: dict[str, Any], key: str) -> Any:
    """A fold's ``lists``, ``objects`` or ``parts``: (field name, how it folds) pairs."""
    return (spec.get(key) or {}).items()


def _under(base: str, key: str) -> str:
    """The pattern of the field ``key`` of the objects at ``base`` (``""``: the root)."""
    return f"{base}.{key}" if base else key


def _entry_fold(pattern: str, spec: dict[str, Any]) -> ListFold:
    """How the entries of one list of a delta (or its one object: no slot, no identity, no
    fields dropped) merge, as the descriptor's ``lists`` or ``objects`` entry says."""
    return ListFold(
        pattern=pattern,
        slot=compile_get(spec["slot"]) if spec.get("slot") else None,
        without_slot=spec.get("without_slot", "continue"),
        identity=tuple(parse_chain(p) for p in spec.get("identity", ())),
        drop=frozenset(spec.get("drop", ())),
        args=parse_chain(spec["args"]) if spec.get("args") else (),
        concat=frozenset(spec["concat"]),
        slot_path=spec.get("slot"),
    )


def _set_once(journal: list[Any], dest: dict[str, Any], key: str, value: Any) -> None:
    current = dest.get(key)
    if value is None:
        if key not in dest:
            put(journal, dest, key, None)
        return
    if current is None or current == "":
        put(journal, dest, key, ingest(value))
    elif current.__class__ is dict and value.__class__ is dict:
        for k, v in value.items():
            _set_once(journal, current, k, v)


def _fold_entry(asm: Assembly, lst: SlottedList, entry: dict[str, Any], spec: ListFold) -> None:
    slot = spec.slot(entry) if spec.slot is not None else None
    if slot is not None:
        try:
            item = lst.get(slot)
        except TypeError:  # a list or an object as the SLOT (no cost until one comes)
            where = f"{spec.pattern[:-3]}[{spec.slot_path}]"
            raise slot_misfit(where, spec.slot_path, slot) from None
    elif spec.without_slot == "new" or lst.last is None:
        slot, item = lst.free_slot(), None
    else:
        slot = _slot_without_key(lst, entry, spec, asm)
        item = lst.get(slot)
    if item is None:
        # A new item is told to the assembly once it holds its first entry: whether it is
        # a call (``calls.where``) is decided on what it carries, and whole arguments are
        # taken once rather than seeded empty and then replaced.
        if spec.drop or spec.concat:
            item = lst.put(slot, {}, asm.journal)
            _merge_entry(asm, item, item, entry, spec, 0)
        else:  # nothing to leave out or join: merging into an empty item is a copy
            item = lst.put(slot, ingest(entry), asm.journal)
        asm.item_added(spec.pattern, item, slot)
        return
    if slot != lst.last:  # (most entries continue the last item: nothing to journal)
        asm.journal.append((setattr, lst, "last", lst.last))  # put_attr, inline: a frame less
        lst.last = slot
    _merge_entry(asm, item, item, entry, spec, 0)


def _slot_without_key(
    lst: SlottedList, entry: dict[str, Any], spec: ListFold, asm: Assembly
) -> Any:
    """An entry that names no SLOT (``without_slot: continue``, an item open) continues the
    open item, unless it starts a new one: it
    brings a value of the first identity field (the call id) that differs from the open
    item's, or it brings any identity while the open item's arguments are already complete.
    An id or name merely repeated on every fragment therefore never splits a call."""
    open_item = lst.get(lst.last)
    if spec.identity:
        strong = _dig(entry, spec.identity[0])
        known = _dig(open_item, spec.identity[0])
        if strong not in (None, "") and known not in (None, ""):
            if strong != known:
                return lst.free_slot()
        elif any(_dig(entry, chain) not in (None, "") for chain in spec.identity):
            track = asm.track_of.get(id(open_item))
            if track is not None and track.args.state == COMPLETE:
                return lst.free_slot()
    return lst.last


def _dig(obj: Any, chain: tuple[str, ...]) -> Any:
    """The value at ``chain``, streamed text read as its string."""
    found = dig(obj, chain)
    return str(found) if found.__class__ is Fragments else found


def _merge_entry(
    asm: Assembly,
    item: dict[str, Any],
    dest: dict[str, Any],
    entry: dict[str, Any],
    spec: ListFold,
    depth: int,
) -> None:
    args = spec.args
    # The args field at this depth, and whether it is the last of the chain.
    args_key = args[depth] if depth < len(args) else None
    args_here = depth == len(args) - 1
    for key, value in entry.items():
        if depth == 0 and key in spec.drop:
            continue
        if key == args_key:
            if args_here:
                if value is None:
                    continue
                if dest.get(key) is None and id(item) not in asm.track_of:
                    # A new item's first entry: its arguments as sent, read by the call's
                    # track once the item is told (so the track's rules hold from the first
                    # fragment: the arguments are the first JSON value of the text). Kept
                    # as given, as the argument stream keeps a whole value (never written).
                    put(asm.journal, dest, key, value)
                    continue
                stream = asm.args_of(item, args)
                if stream.state == COMPLETE and stream.restates(value):
                    track = asm.track_of.get(id(item))
                    name = track.place.name(item) if track is not None else None
                    asm.skip(
                        f"fold {spec.pattern}: the entry restates the arguments of the call "
                        f"{shown_value(name, 200)}, which are complete already; the "
                        "restatement is not taken"
                    )
                elif stream.feed(value):
                    asm.calls_dirty = True
                continue
            if value.__class__ is dict:
                sub = dest.get(key)
                if sub.__class__ is not dict:
                    sub = put(asm.journal, dest, key, {})
                _merge_entry(asm, item, sub, value, spec, depth + 1)
                continue
        if depth == 0 and key in spec.concat and value.__class__ is str:
            if value:
                append_text(dest, key, value, asm.journal)
            continue
        _set_once(asm.journal, dest, key, value)
