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

from dataclasses import dataclass, field
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
    unappend,
)
from ..model.journal import put, trim
from ..model.jsonscan import COMPLETE
from ..model.parts import JoinRule, as_placed, join_parts, string_as_part
from .ops import (
    CompileContext,
    Run,
    Target,
    reasoning_at,
    reasoning_inside,
    report_unplaced,
)
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


@dataclass(frozen=True)
class FoldSpec:
    concat: frozenset[str]
    lists: dict[str, ListFold] = field(default_factory=dict)
    # Fields whose object is one item (not a list of them): merged like a list's entry, its
    # arguments streamed; the assembly is told of it once, as it is of a list's new item.
    objects: dict[str, ListFold] = field(default_factory=dict)
    display_key: str | None = None  # the concat key that is display text at this level
    parts: dict[str, JoinRule] = field(default_factory=dict)  # concat keys that may be parts
    display_part: Any = None  # predicate: which parts of the display key are display text
    display_field: str | None = None  # the display parts' text field (see op_fold)
    # Concat keys at this level that are reasoning: key -> which messages hold it (None: all).
    reasoning_keys: dict[str, Any] = field(default_factory=dict)
    # Parts keys whose parts hold reasoning: key -> readers of an incoming part's fragments.
    reasoning_parts: dict[str, tuple[Any, ...]] = field(default_factory=dict)


def op_fold(spec: dict[str, Any], ctx: CompileContext) -> Run:
    read = compile_read(spec["from"], ctx.choice_alias)
    at = spec["at"]
    target = Target(at, ctx) if at else None
    base = target.pattern if target is not None else ""
    concat = frozenset(spec["concat"])
    display_key = next((k for k in concat if ctx.text_pattern == _under(base, k)), None)
    lists = {
        name: _entry_fold(items_of(base, name), lspec)
        for name, lspec in (spec.get("lists") or {}).items()
    }
    objects = {
        name: _entry_fold(_under(base, name), ospec)
        for name, ospec in (spec.get("objects") or {}).items()
    }
    parts = {
        k: JoinRule.from_spec(v, _under(at, k))
        for k, v in (spec.get("parts") or {}).items()
    }
    reasoning_keys, reasoning_parts = _reasoning(ctx, base, concat, parts)
    fold = FoldSpec(
        concat=concat | frozenset(parts),
        lists=lists,
        objects=objects,
        display_key=display_key,
        parts=parts,
        display_part=ctx.text_part_where,
        display_field=_display_field(ctx, parts.get(display_key) if display_key else None),
        reasoning_keys=reasoning_keys,
        reasoning_parts=reasoning_parts,
    )
    order = ctx.list_order
    field_name = one_field(spec["from"])  # ``message``: looked up in place, a frame less
    if field_name == ctx.choice_alias:
        field_name = None  # (the choice itself, read from the choice)

    def run(asm: Assembly, ev: Any, ch: Any) -> None:
        delta = ev.get(field_name) if field_name is not None else read(ev, ch)
        if delta.__class__ is not dict:
            return
        dest = asm.root if target is None else target.locate_item(asm, ev, ch, True)
        if dest is not None:
            fold_delta(asm, dest, delta, fold, order)
        else:
            assert target is not None, "the root is always there"
            report_unplaced(asm, "fold", target, ev, ch)

    return run


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


def _reasoning(
    ctx: CompileContext, base: str, concat: frozenset[Any], parts: dict[str, Any]
) -> tuple[Any, ...]:
    """Which concat keys are reasoning strings, and which parts keys hold parts with reasoning
    inside (Mistral's ``{type: thinking, thinking: [{type: text, text}]}``)."""
    keys = {}
    for key in concat | frozenset(parts):
        is_reasoning, where = reasoning_at(ctx, _under(base, key))
        if is_reasoning:
            keys[key] = where
    inside = {}
    for key in parts:
        readers = reasoning_inside(ctx, _under(base, key))
        if readers:
            inside[key] = readers
    return keys, inside


def fold_delta(
    asm: Assembly, dest: dict[str, Any], delta: dict[str, Any], spec: FoldSpec, order: str
) -> None:
    concat = spec.concat
    lists = spec.lists
    for key, value in delta.items():
        if key in concat:
            current = dest.get(key)
            if value.__class__ is list and key in spec.parts:
                _fold_parts(asm, dest, key, value, spec)
            elif current.__class__ is list and value.__class__ is str and key in spec.parts:
                if value:
                    part = string_as_part(asm.journal, current, value, spec.parts[key])
                    if key == spec.display_key and _shows(spec, part):
                        asm.journal.append((list.pop, asm.display))
                        asm.display.append(value)
                    elif key in spec.reasoning_parts:
                        _reason_part(asm, spec.reasoning_parts[key], value, spec.parts[key])
            elif value.__class__ is str:
                if value:
                    journal = asm.journal
                    if current.__class__ is Fragments:  # the usual delta: no frame of ours
                        journal.append((unappend, current, current.append))
                        current.append(value)
                    else:
                        append_text(dest, key, value, journal)
                    if key == spec.display_key:
                        journal.append((list.pop, asm.display))
                        asm.display.append(value)
                    elif key in spec.reasoning_keys:
                        where = spec.reasoning_keys[key]
                        if where is None or where(dest):
                            journal.append((list.pop, asm.reasoning))
                            asm.reasoning.append(value)
                elif dest.get(key) is None:
                    put(asm.journal, dest, key, "")
            else:
                _set_once(asm.journal, dest, key, value)
        elif key in lists:
            if value is None:
                _set_once(asm.journal, dest, key, value)
                continue
            entries = value if value.__class__ is list else [value]
            lst = dest.get(key)
            if lst.__class__ is not SlottedList:
                lst = ensure_slotted(dest, key, order, asm.journal)
            lfold = lists[key]
            for entry in entries:
                if entry.__class__ is dict:
                    _fold_entry(asm, lst, entry, lfold)
        elif key in spec.objects and value.__class__ is dict:
            _fold_object(asm, dest, key, value, spec.objects[key])
        else:
            _set_once(asm.journal, dest, key, value)


def _fold_object(
    asm: Assembly, dest: dict[str, Any], key: str, value: dict[str, Any], spec: ListFold
) -> None:
    """An ``objects`` field: its first delta makes the item (told to the assembly once it
    holds that delta, so that ``calls.where`` reads what it carries), later ones merge in."""
    item = dest.get(key)
    if item.__class__ is dict:
        _merge_entry(asm, item, item, value, spec, 0)
        return
    item = put(asm.journal, dest, key, {})
    _merge_entry(asm, item, item, value, spec, 0)
    asm.item_added(spec.pattern, item)


def _shows(spec: FoldSpec, part: dict[str, Any]) -> bool:
    return spec.display_part is None or spec.display_part(part)


def _display_field(ctx: CompileContext, rule: JoinRule | None) -> str | None:
    """The field of a display part that holds its text: ``text.parts.field`` where the
    descriptor declares it, else the first text field of the display key's join rule; both
    are the descriptor's names, never one assumed here."""
    if ctx.text_part_field is not None:
        return ctx.text_part_field
    return rule.text[0] if rule is not None else None


def _fold_parts(
    asm: Assembly, dest: dict[str, Any], key: str, value: list[Any], spec: FoldSpec
) -> None:
    """A list delta on a content-like key: typed parts that join (Mistral's content chunks).
    Text that arrived earlier as plain strings becomes the first text part."""
    rule = spec.parts[key]
    current = dest.get(key)
    if current.__class__ is not list:
        earlier = str(current) if current is not None else ""
        current = put(asm.journal, dest, key, [])
        if earlier:
            string_as_part(asm.journal, current, earlier, rule)
    field_name = spec.display_field
    show = key == spec.display_key and field_name is not None
    readers = spec.reasoning_parts.get(key, ())

    def on_part(stored: dict[str, Any], part: dict[str, Any]) -> None:
        if show and field_name is not None and _shows(spec, stored):
            piece = part.get(field_name)
            if piece.__class__ is str and piece:
                asm.journal.append((list.pop, asm.display))
                asm.display.append(piece)
                return
        if readers:
            placed = as_placed(part, stored, rule)
            trim(asm.journal, asm.reasoning)
            for read in readers:
                read(placed, asm.reasoning)

    join_parts(asm.journal, current, value, rule, on_part)


def _reason_part(asm: Assembly, readers: tuple[Any, ...], text: str, rule: JoinRule) -> None:
    """A bare string delta on a parts key that is not display text: reasoning where a
    reasoning place reads the part the string stands for (``rule.string``)."""
    part = {**(rule.string_part or {}), rule.string_field: text}
    trim(asm.journal, asm.reasoning)
    for read in readers:
        read(part, asm.reasoning)


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
        slot, item = _next_free_slot(lst), None
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
    """An entry that names no SLOT continues the open item, unless it starts a new one: it
    brings a value of the first identity field (the call id) that differs from the open
    item's, or it brings any identity while the open item's arguments are already complete.
    An id or name merely repeated on every fragment therefore never splits a call."""
    if spec.without_slot == "continue" and lst.last is not None:
        open_item = lst.get(lst.last)
        new = False
        if spec.identity:
            strong = _dig(entry, spec.identity[0])
            known = _dig(open_item, spec.identity[0])
            if strong not in (None, "") and known not in (None, "") and strong != known:
                new = True
            elif strong in (None, "") or known in (None, ""):
                brings = any(_dig(entry, chain) not in (None, "") for chain in spec.identity)
                track = asm.track_of.get(id(open_item))
                new = brings and track is not None and track.args.state == COMPLETE
        if not new:
            return lst.last
    return _next_free_slot(lst)


def _next_free_slot(lst: SlottedList) -> Any:
    """The first integer SLOT no item holds (items may sit at keys the wire chose)."""
    count = len(lst.items)
    return lst.next_int if lst.next_int >= count else count


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
                    _skip_restated(asm, item, spec)
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


def _skip_restated(asm: Assembly, item: dict[str, Any], spec: ListFold) -> None:
    track = asm.track_of.get(id(item))
    name = track.place.name(item) if track is not None else None
    asm.skip(
        f"fold {spec.pattern}: the entry restates the arguments of the call "
        f"{shown_value(name, 200)}, which are "
        "complete already; the restatement is not taken"
    )
