"""The operations of the descriptor language that write the message: their compilers.

Each compiler turns an operation's arguments (one mapping, as its entry in
:data:`engine.compile.operations.OPERATIONS` shapes them) into a closure ``run(assembly, event,
choice)``, compiled once per descriptor; the table says what else the engine needs to know
of it (its schema, its source, the fields it streams). A new operation is a schema entry, a
compiler here, an entry in the table and its cases in ``tests/ops/``; the interpreter never
branches on a wire.

Common rules: ``from`` is a read path into the event (the wire's payload) and an absent or
null source makes the operation do nothing; ``at`` is a target path into the message, in which
``[path]`` steps address an item of a slotted list by the SLOT the event carries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from ..model.assembly import Assembly, ensure_slotted
from ..model.fragments import (
    Fragments,
    SlottedList,
    append_text,
    dig,
    ingest,
    make_way,
    shown_value,
    slot_misfit,
)
from ..model.fragments import json_kind as _json_kind
from ..model.journal import put, put_attr, refill, trim
from ..model.jsonscan import COMPLETE, ArgsStream
from .paths import (
    FIRST,
    Reader,
    Segment,
    compile_read,
    items_of,
    one_field,
    parse_target,
    pattern_of,
)
from .predicates import compile_predicate

if TYPE_CHECKING:
    from .strategy import Spec

Run = Callable[[Assembly, Any, Any], None]
Act = Callable[[Assembly, dict[str, Any], Any], None]  # what an operation does to the item it found


class RuleProblem(ValueError):
    """A problem an operation's compile finds in one of its arguments: ``keys`` lead from
    the rule's mapping to it (``("continuation", "text_value")``), so that the validator
    reports it at that argument's line."""

    def __init__(self, keys: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.keys = keys


@dataclass(frozen=True)
class CompileContext:
    """What an operation needs to know about the rest of its descriptor: the wire's facts
    (``wire``, the strategy's :class:`~engine.compile.strategy.Spec`, which the assembly reads
    at run time too), how its events read, and what the compile gathers."""

    wire: Spec
    choice_alias: str | None
    list_order: str
    # The patterns of the reasoning places (``wire.reasoning``) that some operation streams:
    # a place no rule streams is a descriptor error.
    reasoning_streamed: set[Any] = dataclass_field(default_factory=set)
    # What ends with the stream: each operation that keeps state open across events adds
    # the function that closes it, ``end(assembly, cut)`` (see ``ExtractionStrategy.at_end``).
    at_end: list[Any] = dataclass_field(default_factory=list)
    # The facts of every rule compiled, in order (``operations.Facts``), as the table reads
    # them from the rule's arguments: the validator's flow checks and the re-split read them.
    facts: list[Any] = dataclass_field(default_factory=list)


@dataclass(frozen=True)
class TextPlace:
    """One place of the message where a kind of text sits (reasoning): the pattern of its
    strings (``content[*].thinking``), and which items there hold it (tested on the innermost
    item of the pattern; None: every item)."""

    pattern: str
    where: Any = None


def reasoning_at(ctx: CompileContext, pattern: str) -> tuple[bool, Any]:
    """Is a string written at ``pattern`` reasoning, and on which items (None: every item)?
    Compiled once per operation, so that the per-chunk test is one truth test."""
    places = [place for place in ctx.wire.reasoning if place.pattern == pattern]
    if not places:
        return False, None
    ctx.reasoning_streamed.add(pattern)
    return True, any_where([place.where for place in places])


def reasoning_inside(
    ctx: CompileContext, list_pattern: str
) -> Callable[[Assembly, Any], None] | None:
    """The reader of the reasoning inside the items of the list at ``list_pattern`` (whole
    parts appended or joined there), None when no reasoning place is there: ``read(asm,
    part)`` appends to the assembly's reasoning (journaled) every non-empty string at each
    place's path relative to an item (``text``, ``thinking[*].text``), as it arrived, where
    the place's ``where`` holds."""
    prefix = f"{list_pattern}[*]."
    inside = []
    for place in ctx.wire.reasoning:
        if place.pattern.startswith(prefix):
            ctx.reasoning_streamed.add(place.pattern)
            steps = tuple(seg.field for seg in parse_target(place.pattern[len(prefix) :]))
            inside.append(partial(_fragments, steps, place.where))  # (no frame of its own)
    if not inside:
        return None

    def read(asm: Assembly, part: Any) -> None:
        trim(asm.journal, asm.reasoning)
        for strings_of in inside:
            strings_of(part, asm.reasoning)

    return read


def _fragments(
    steps: tuple[Any, ...], where: Any, node: Any, out: list[Any], i: int = 0, item: Any = None
) -> None:
    """The strings at ``steps`` (None: each entry of a list) under ``node``, where ``where``
    holds on the innermost item of the pattern (the part itself, ``item`` None, until a
    ``[*]`` step picks an entry inside it)."""
    step = steps[i]
    if step is None:
        if node.__class__ is list:
            for entry in node:
                _fragments(steps, where, entry, out, i + 1, entry)
        return
    if node.__class__ is not dict:
        return
    if item is None:
        item = node
    value = node.get(step)
    if i + 1 < len(steps):
        _fragments(steps, where, value, out, i + 1, item)
    elif value.__class__ is str and value and (where is None or where(item)):
        out.append(value)


def any_where(wheres: list[Any]) -> Any:
    if any(where is None for where in wheres):
        return None
    if len(wheres) == 1:
        return wheres[0]
    return lambda item: any(where(item) for where in wheres)


class Target:
    """A compiled target path: walks (and creates) the way to where an operation writes."""

    # Which step of a target is a field (``field`` set) and which a slot (``slot`` set) is
    # known by position, from parse_target's grammar, and a target's slots always have a
    # reader (``[*]`` is refused in a write path). The checker cannot follow positions, so the
    # walks, which run on every event, read steps as Any rather than narrowing each one.
    segments: tuple[Any, ...]
    locate_item: Callable[[Assembly, Any, Any, bool], Any]

    def __init__(self, spec: dict[str, Any], ctx: CompileContext) -> None:
        """The target of a rule's ``at``, in its ``scope``. ``without_slot: continue`` makes
        it ``continuing``: the wire sends a fragment without its slot key where it continues
        the item opened last (the default, ``skip``, lists such an event as unplaced)."""
        self.path, self.scope = spec["at"], spec.get("scope")
        self.continuing = spec.get("without_slot") == "continue"
        segments = parse_target(self.path, ctx.choice_alias)
        slots = [i for i, seg in enumerate(segments) if seg.field is None]
        self.last_slot = slots[-1] if slots else -1
        self.segments = _scoped(segments, self.scope, self.last_slot)
        self.pattern = pattern_of(segments)
        self.order = ctx.list_order
        # For each slot step, the pattern of the list it indexes (to recognise call lists).
        self.item_patterns = {i: pattern_of(segments[: i + 1]) for i in slots}
        # Fields after the innermost slot: the path inside the item; ``way``, to the last one.
        self.rel = tuple(cast(str, seg.field) for seg in segments[self.last_slot + 1 :])
        self.way = self.rel[:-1]
        # The walk runs on every event: the two shapes nearly every rule has get a walk of
        # their own (``role``: the root itself; ``content[index].text``: one slotted list).
        if not slots:
            self.locate_item = _at_root
        elif slots == [1]:
            self.locate_item = self._one_slot
        elif slots == [1, 3]:
            self.locate_item = self._two_slots
        else:
            self.locate_item = partial(self.walk, end=self.last_slot + 1)
        # ``role``: the field's parent is the message itself, with no walk at all.
        self.at_root = not slots and len(self.rel) == 1
        # ``content[index]``: the SLOTs of the first two slot steps, each one field of the
        # event (not of the choice, nor scoped), looked up in place.
        keyed = slots if self.scope is None else []
        fields = [segments[i].slot_path if i in keyed else None for i in (1, 3)]
        self.slot_field, self.inner_slot_field = (
            None if p == ctx.choice_alias else one_field(p) for p in fields
        )
        if self.continuing:
            if not slots:
                raise ValueError(
                    "without_slot: the path has no slot step, so no open item to continue "
                    "(e.g. content[id])"
                )
            self.locate_item = self._continuing(self.locate_item)

    def _continuing(self, direct: Callable[[Assembly, Any, Any, bool], Any]) -> Any:
        """``without_slot: continue``: an event that carries the SLOT finds its item as any
        other does; one without it continues the item its list (in its scope) opened last."""
        key = self.segments[self.last_slot].slot

        def locate(asm: Assembly, ev: Any, ch: Any, create: bool) -> Any:
            if key(ev, ch) is not None:
                return direct(asm, ev, ch, create)
            found = self.continued(asm, ev, ch)
            return None if found is None else found[0].get(found[1])

        return locate

    def continued(self, asm: Assembly, ev: Any, ch: Any) -> tuple[SlottedList, Any] | None:
        """The list of the addressed item and the SLOT of the item it (in this target's scope)
        opened last, for an event without the SLOT; None when there is none (nothing is
        created on the way: an event with nothing to continue changes nothing)."""
        lst = self.walk(asm, ev, ch, False, self.last_slot)
        if lst is None:
            return None
        slot, scope = lst.last, self.scope  # (in a scoped list: the last opened in the scope)
        if scope is not None and not _in_scope(slot, scope):
            slot = next((slot for slot in reversed(lst.by_slot) if _in_scope(slot, scope)), None)
        return None if slot is None else (lst, slot)

    def field_parent(self, asm: Assembly, ev: Any, ch: Any, op: str) -> dict[str, Any] | None:
        """The dict that holds the target's last field, the way to it created; None when no
        item is there for this event (listed as unplaced, in ``op``'s name)."""
        item = self.locate_item(asm, ev, ch, True)
        if item is None:
            report_unplaced(asm, op, self, ev, ch)
            return None
        return make_way(item, self.way, asm.journal)

    def explain(self, asm: Assembly, ev: Any, ch: Any) -> str:
        """Why ``locate_item`` found no item for this event (cold: only for a skip): the first
        slot step the walk stops at."""
        for i in self.item_patterns:  # (its keys: the slot steps, in order)
            seg = self.segments[i]
            slot = seg.slot(ev, ch)
            if slot is None:
                if self.continuing and i == self.last_slot:
                    scope = f" (scope {self.scope!r})" if self.scope is not None else ""
                    return (
                        f"the event has no slot key {seg.slot_path!r} and no item of "
                        f"{self.segments[i - 1].field}{scope} is open to continue"
                    )
                return f"the event has no slot key {seg.slot_path!r}"
            if self.walk(asm, ev, ch, False, i + 1) is None:
                return f"no item is open at {self.shown(i, slot)}"
        return "the way to it is not an object"

    def shown(self, step: int, slot: Any) -> str:
        """``content[1]`` (or ``content[tool '0']`` in a scope): the item at ``slot``."""
        field = self.segments[step - 1].field
        if slot.__class__ is tuple and len(slot) == 2 and self.scope is not None:
            return f"{field}[{slot[0]} {shown_value(slot[1], 200)}]"
        return f"{field}[{shown_value(slot, 200)}]"

    def slot_misfit(self, step: int, slot: Any) -> ValueError:
        """The error for a SLOT no key can hold, at slot step ``step`` (cold)."""
        where = f"{self.segments[step - 1].field}[{self.segments[step].slot_path}]"
        return slot_misfit(where, self.segments[step].slot_path, slot)

    def _one_slot(self, asm: Assembly, ev: Any, ch: Any, create: bool) -> Any:
        """``field[slot]...``: the item of the slotted list at the root's ``field``."""
        field = self.slot_field
        slot = ev.get(field) if field is not None else self.segments[1].slot(ev, ch)
        return self._item(asm, asm.root, 0, slot, create)

    def _two_slots(self, asm: Assembly, ev: Any, ch: Any, create: bool) -> Any:
        """``field[slot].field[slot]...`` (Responses' ``output[i].content[j]``): the item of
        the slotted list inside the item of the root's slotted list."""
        item = self._one_slot(asm, ev, ch, create)
        if item is None:
            return None
        inner = self.inner_slot_field
        slot = ev.get(inner) if inner is not None else self.segments[3].slot(ev, ch)
        return self._item(asm, item, 2, slot, create)

    def _item(self, asm: Assembly, node: dict[str, Any], at: int, slot: Any, create: bool) -> Any:
        """The item at ``slot`` of the slotted list ``node[segments[at].field]``, opened (and
        told to the assembly) when ``create`` and absent."""
        if slot is None:
            return None
        field = self.segments[at].field
        lst = node.get(field)
        if lst.__class__ is not SlottedList:  # (as in ``walk``, inline: this runs on every event)
            if lst is None and not create:
                return None
            lst = ensure_slotted(node, field, self.order, asm.journal)
        try:
            item = lst.get(slot)
        except TypeError:  # a list or an object as the SLOT (no cost until one comes)
            raise self.slot_misfit(at + 1, slot) from None
        if item is not None or not create:
            return item
        item = lst.put(slot, {}, asm.journal)
        asm.item_added(self.item_patterns[at + 1], item, slot)
        return item

    def walk(self, asm: Assembly, ev: Any, ch: Any, create: bool, end: int) -> Any:
        """The one walk of a target: the node after its first ``end`` steps (the item at a
        slot step, the slotted list at a field before one), the way created when ``create``
        (each item opened told to the assembly); None when the event lacks a SLOT on the way
        or, without ``create``, the way is not there."""
        node: Any = asm.root
        segs = self.segments
        i = 0
        while i < end and node is not None:
            field = segs[i].field
            if segs[i + 1].field is not None:
                child = node.get(field)
                if child.__class__ is not dict:
                    if not create:
                        return None
                    child = put(asm.journal, node, field, {})
                node = child
                i += 1
            elif i + 1 < end:  # a slotted list's item
                node = self._item(asm, node, i, segs[i + 1].slot(ev, ch), create)
                i += 2
            else:  # the slotted list itself
                lst = node.get(field)
                if lst.__class__ is SlottedList or (lst is None and not create):
                    return lst
                return ensure_slotted(node, field, self.order, asm.journal)
        return node


def _scoped(segments: tuple[Segment, ...], scope: str | None, last: int) -> tuple[Segment, ...]:
    """With a declared ``scope``, the SLOT of the addressed item (the last slot step, ``last``)
    is keyed by ``(scope, value)``: items of one list opened in different scopes never meet,
    however their ids collide (a text part "0" and a tool call "0"). Without one, a list has
    one scope, the wire's own index, as before."""
    if scope is None:
        return segments
    if last < 0:
        raise ValueError("scope: the path has no slot step to scope, e.g. content[id]")
    inner = segments[last].slot
    assert inner is not None, "the last slot step of a target path is never [*]"

    def scoped_slot(ev: Any, ch: Any) -> Any:
        value = inner(ev, ch)
        return None if value is None else (scope, value)

    return (*segments[:last], replace(segments[last], slot=scoped_slot), *segments[last + 1 :])


def _in_scope(slot: Any, scope: str) -> bool:
    """Is ``slot`` the SLOT of an item opened in ``scope`` (keyed ``(scope, value)``)?"""
    return slot.__class__ is tuple and len(slot) == 2 and slot[0] == scope


def report_unplaced(asm: Assembly, op: str, target: Target, ev: Any, ch: Any) -> None:
    """Record that ``op`` found no item at its target for this event (cold path)."""
    asm.skip(f"{op} {target.path}: {target.explain(asm, ev, ch)}; the event changed nothing")


def _at_root(asm: Assembly, ev: Any, ch: Any, create: bool) -> Any:
    return asm.root


# --- set, set_once, merge -----------------------------------------------------------------


def op_set(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Replace the value at ``at`` with the event's value at ``from`` (a copy)."""
    read = compile_read(spec["from"], ctx.choice_alias)
    if spec["at"] == "":

        def set_root(asm: Assembly, ev: Any, ch: Any) -> None:
            value = read(ev, ch)
            if value.__class__ is dict:
                refill(asm.journal, asm.root)
                asm.root.clear()
                asm.root.update(ingest(value))
            elif value is not None:
                asm.skip(f"set (the whole message) from {spec['from']}: {_not_an_object(value)}")

        return set_root
    target = Target(spec, ctx)
    if not target.rel:  # writing a whole item: an open by another name
        return _open(target, read, ctx, "set")
    last = target.rel[-1]

    def set_field(asm: Assembly, item: dict[str, Any], value: Any) -> None:
        put(asm.journal, make_way(item, target.way, asm.journal), last, ingest(value))

    return _into_item("set", read, target, set_field)


def op_set_once(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Set the value at ``at`` unless it already holds one (null and "" count as none)."""
    read = compile_read(spec["from"], ctx.choice_alias)
    target = Target(spec, ctx)
    last = target.rel[-1]

    def set_once(asm: Assembly, ev: Any, ch: Any) -> None:
        if target.at_root and asm.root.get(last) not in (None, ""):
            return  # set already (Gemini's role, on every chunk): the event is not read
        value = read(ev, ch)
        if value is None or value == "":
            return
        parent = asm.root if target.at_root else target.field_parent(asm, ev, ch, "set_once")
        if parent is not None and parent.get(last) in (None, ""):
            put(asm.journal, parent, last, ingest(value))

    return set_once


def op_merge(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Copy the fields of the event's object at ``from`` into the object at ``at``.

    Null fields never erase a value already there; ``except`` names fields left alone.
    """
    read = compile_read(spec["from"], ctx.choice_alias)
    excluded = frozenset(spec["except"])
    target = Target(spec, ctx)  # (``""``: the message)

    def merge(asm: Assembly, ev: Any, ch: Any) -> None:
        value = read(ev, ch)
        if value.__class__ is not dict:
            if value is not None:
                asm.skip(f"merge {target.path or '(the whole message)'}: {_not_an_object(value)}")
            return
        item = target.locate_item(asm, ev, ch, True)
        if item is None:
            report_unplaced(asm, "merge", target, ev, ch)
            return
        dest = make_way(item, target.rel, asm.journal)
        for key, val in value.items():
            if key in excluded or (val is None and dest.get(key) is not None):
                continue
            put(asm.journal, dest, key, ingest(val))

    return merge


def _not_an_object(value: Any) -> str:
    return f"expected an object, got {_json_kind(value)}; the event changed nothing"


# --- open, close --------------------------------------------------------------------------


def _open(
    target: Target, read: Reader | None, ctx: CompileContext, op: str, merge: bool = False
) -> Run:
    """Open the item at ``target``: an item at a free SLOT starts from the event's object
    (no ``read``: the item opens empty); one already there is the same item restated, and is
    merged (see :func:`_restate`), so that a start sent twice is one item and one call."""
    *_, last_seg = target.segments
    pattern = target.item_patterns[target.last_slot]
    calls = ctx.wire.calls
    args_fields = calls.args_fields if calls is not None and pattern == calls.pattern else ()

    def open_item(asm: Assembly, ev: Any, ch: Any) -> None:
        value = read(ev, ch) if read is not None else None
        slot = last_seg.slot(ev, ch)
        if slot is not None:
            lst = target.walk(asm, ev, ch, True, target.last_slot)  # the way created
        else:  # the wire may continue the item opened last: it is restated
            found = target.continued(asm, ev, ch) if target.continuing else None
            lst, slot = found if found is not None else (None, None)
        if lst is None:
            report_unplaced(asm, op, target, ev, ch)
            return
        try:
            existing = lst.get(slot)
        except TypeError:  # a list or an object as the SLOT
            raise target.slot_misfit(target.last_slot, slot) from None
        if existing is None:
            item = ingest(value) if value.__class__ is dict else {}
            lst.put(slot, item, asm.journal)
            asm.item_added(pattern, item, slot)
        elif _restate(asm, existing, value, args_fields, merge):
            put_attr(asm.journal, lst, "last", slot)
            if id(existing) not in asm.track_of:
                asm.item_added(pattern, existing, slot)  # what it carries may make it a call
        else:
            asm.skip(
                f"{op} {target.path}: {target.shown(target.last_slot, slot)} is a call "
                "whose arguments are complete already; the restated item is not taken"
            )

    return open_item


def op_open(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Open a new item at the slotted path ``at``, starting from the event's ``from`` object."""
    target = Target(spec, ctx)
    if target.rel or not target.segments:
        raise ValueError("open: 'at' must end with a slot step, e.g. content[index]")
    read = compile_read(spec["from"], ctx.choice_alias) if "from" in spec else None
    return _open(target, read, ctx, "open", spec["if_complete"] == "merge")


def _restate(
    asm: Assembly,
    item: dict[str, Any],
    value: Any,
    args_fields: tuple[str, ...],
    merge_complete: bool = False,
) -> bool:
    """An item opened again at its SLOT (a start restated, a call sent whole after its
    start): merge what the restatement adds into the item, keeping it (and its call track).

    A call whose arguments are complete already is never taken back nor run twice: by
    default (``if_complete: skip``) it is not changed at all (False: the caller lists the
    restatement as skipped). With ``if_complete: merge`` ("open if absent, else merge": a
    call streamed, then restated whole) the restatement's other fields are merged in, and
    its arguments must be the complete ones (or absent): different ones are refused whole.
    Otherwise nothing streamed is lost: an empty value ("", {}, [], null) never erases one,
    and the arguments go through the call's stream (whole arguments replace fragments)."""
    track = asm.track_of.get(id(item))
    if track is not None and track.args.state == COMPLETE:
        if not merge_complete or value.__class__ is not dict:
            return False
        restated = dig(value, args_fields)
        if not _is_empty(restated) and not track.args.restates(restated):
            return False
        _merge_into(asm, item, value, track, args_fields, keep_args=True)  # (they are kept)
        return True
    if value.__class__ is dict:
        _merge_into(asm, item, value, track, args_fields)
    return True


def _merge_into(
    asm: Assembly,
    node: dict[str, Any],
    value: dict[str, Any],
    track: Any,
    args_fields: tuple[str, ...],
    final: bool = False,
    keep_args: bool = False,
) -> None:
    """The one merger of a restated item into ``node``: a start sent again (``open``) or the
    final item a ``close`` carries (``final``). The arguments at ``args_fields`` (with
    ``track``; ``keep_args``: left as they are) and any argument stream go through their
    stream (whole arguments replace fragments); a shorter list never replaces streamed items.
    A restated start never erases (an empty value, "", {}, [] or null, leaves what is there)
    and merges its objects in; the final item's word is the last one, each field replaced
    (but along the arguments)."""
    for key, val in value.items():
        current = node.get(key)
        on_args = track is not None and bool(args_fields) and key == args_fields[0]
        if on_args and len(args_fields) == 1:
            if not keep_args and (final or not _is_empty(val)) and track.args.replace(val):
                asm.calls_dirty = True
            continue
        if not final and _is_empty(val) and current is not None:
            continue
        if val.__class__ is dict and current.__class__ is dict and (on_args or not final):
            track_on = track if on_args else None
            _merge_into(asm, current, val, track_on, args_fields[1:], final, keep_args)
        elif current.__class__ is ArgsStream:
            if current.replace(val):
                asm.calls_dirty = True
        elif not _shorter(val, current):  # never lose streamed items to a shorter restatement
            put(asm.journal, node, key, ingest(val))


def _shorter(val: Any, current: Any) -> bool:
    """A list restating a slotted list's items with fewer of them."""
    return current.__class__ is SlottedList and val.__class__ is list and len(val) < len(current)


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == []


def op_close(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """The item at ``at`` is complete: finalize its arguments (parse an object-form wire's
    JSON text); with ``from``, first adopt the fields of the final item the event carries."""
    target = Target(spec, ctx)
    read = compile_read(spec["from"], ctx.choice_alias) if "from" in spec else None

    def close(asm: Assembly, ev: Any, ch: Any) -> None:
        item = target.locate_item(asm, ev, ch, read is not None)
        if item is None:
            report_unplaced(asm, "close", target, ev, ch)
            return
        track = asm.track_of.get(id(item))
        restated = read(ev, ch) if read is not None else None
        if restated.__class__ is dict:  # the arguments of the place it sits at
            fields = track.place.args_fields if track is not None else ()
            _merge_into(asm, item, restated, track, fields, final=True)
        if track is None and asm.deferring:  # opened by this event: closed once judged
            asm.deferred.append((None, item, None))
        streams = [track.args] if track is not None else list(_streams_in(item))
        for stream in streams:
            if stream.close():
                asm.calls_dirty = True

    return close


def _streams_in(node: Any) -> Iterator[ArgsStream]:
    if node.__class__ is ArgsStream:
        yield node
    elif node.__class__ is dict:
        for value in node.values():
            yield from _streams_in(value)


# --- append, args -------------------------------------------------------------------------


def op_append(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Append the event's string at ``from`` to the string at ``at``."""
    read = compile_read(spec["from"], ctx.choice_alias)
    target = Target(spec, ctx)
    display = target.pattern == ctx.wire.text.pattern  # its text is display text
    text_where = ctx.wire.text.where
    reasoning, reasoning_where = reasoning_at(ctx, target.pattern)
    last, way, locate = target.rel[-1], target.way, target.locate_item

    def append(asm: Assembly, ev: Any, ch: Any) -> None:
        piece = read(ev, ch)
        if piece.__class__ is not str or not piece:
            if piece is not None and piece.__class__ is not str:
                asm.skip(
                    f"append {target.path}: expected a string at {spec['from']}, got "
                    f"{_json_kind(piece)}; the event changed nothing"
                )
            return
        item = locate(asm, ev, ch, True)
        if item is None:
            report_unplaced(asm, "append", target, ev, ch)
            return
        journal = asm.journal
        parent = make_way(item, way, journal) if way else item
        current = parent.get(last)
        if current.__class__ is Fragments:  # the usual delta: no frame of ours
            journal.append(current.pieces)
            current.append(piece)
        else:
            append_text(parent, last, piece, journal)
        if display and (text_where is None or text_where(item)):
            journal.append(asm.display)
            asm.display.append(piece)
        elif reasoning and (reasoning_where is None or reasoning_where(item)):
            journal.append(asm.reasoning)
            asm.reasoning.append(piece)

    return append


def _into_item(op: str, read: Reader, target: Target, act: Act) -> Run:
    """The shape of an operation that puts what the event carries into the item at ``at``:
    read ``from`` (absent: nothing to do), find or open the item (none: the event is listed
    as unplaced), then ``act(assembly, item, value)``."""

    def into_item(asm: Assembly, ev: Any, ch: Any) -> None:
        value = read(ev, ch)
        if value is None:
            return
        item = target.locate_item(asm, ev, ch, True)
        if item is None:
            report_unplaced(asm, op, target, ev, ch)
            return
        act(asm, item, value)

    return into_item


def op_args(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Feed an argument fragment (a JSON text piece, or a whole object) to the call at ``at``."""
    return _into_args("args", spec, ctx, ArgsStream.feed)


def op_args_final(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """The wire restates a call's whole argument text (``...arguments.done``): adopt it."""
    return _into_args("args_final", spec, ctx, ArgsStream.replace)


def _into_args(op: str, spec: dict[str, Any], ctx: CompileContext, how: Callable[..., bool]) -> Run:
    """Hand the event's value to the argument stream of the call at ``at``, ``how`` the
    stream takes it: a fragment fed, or the whole text adopted."""
    target = Target(spec, ctx)

    def into_args(asm: Assembly, item: dict[str, Any], value: Any) -> None:
        if how(asm.args_of(item, target.rel), value):
            asm.calls_dirty = True

    return _into_item(op, compile_read(spec["from"], ctx.choice_alias), target, into_args)


def op_push(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Add the event's value at ``from`` as a new element of the list at ``at``.

    The list may be a slotted one (items another rule opened by SLOT): the value then takes
    the first free integer SLOT after them, so it is appended and nothing there is replaced.
    With ``update_by`` (fields such as ``[type, id]``), an object whose fields there are all
    present updates, in its place, the element equal to it on every one of them (the AI SDK
    replaces a data part of the same type and id), and is added when none is."""
    target = Target(spec, ctx)
    last = target.rel[-1]
    item_pattern = items_of(target.pattern)
    keys = tuple(spec.get("update_by", ()))

    def push(asm: Assembly, item: dict[str, Any], value: Any) -> None:
        parent = make_way(item, target.way, asm.journal)
        current = parent.get(last)
        if keys and value.__class__ is dict and all(value.get(k) is not None for k in keys):
            elements = current.items if current.__class__ is SlottedList else current
            for old in elements if elements.__class__ is list else ():
                if old.__class__ is dict and all(old.get(k) == value[k] for k in keys):
                    replacing = ingest(value)  # (a value it refuses has changed nothing)
                    refill(asm.journal, old)
                    old.clear()
                    old.update(replacing)
                    return
        if current.__class__ is list:
            trim(asm.journal, current)
            current.append(ingest(value))
        elif current is None:
            put(asm.journal, parent, last, [ingest(value)])
        elif current.__class__ is SlottedList:
            stored = current.put(current.free_slot(), ingest(value), asm.journal)
            if stored.__class__ is dict:
                asm.item_added(item_pattern, stored)
        else:
            asm.skip(
                f"push {target.path}: it holds {_json_kind(current)}, not a list; "
                "the value is not added"
            )

    return _into_item("push", compile_read(spec["from"], ctx.choice_alias), target, push)


# --- turn-level fields, DONE, errors ------------------------------------------------------


def op_stop_reason(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Record the provider's raw stop reason (the first non-null of the paths ``from``), as
    text: a wire that sends a number (a protobuf enum's, in JSON) gives its JSON text, so
    that ``buf.stop_reason`` is a str and a descriptor's ``finish_reasons`` can name it."""
    paths = spec["from"]  # one path, or the first non-null of a list of them (a ``first`` read)
    if isinstance(paths, list):
        paths = {FIRST: paths} if len(paths) > 1 else paths[0]
    read = compile_read(paths, ctx.choice_alias)

    def stop_reason(asm: Assembly, ev: Any, ch: Any) -> None:
        value = read(ev, ch)
        if value is not None:
            text = value if value.__class__ is str else json.dumps(value)
            put_attr(asm.journal, asm, "stop_reason", text)

    return stop_reason


def op_usage(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """Record the provider's usage object: ``replace`` (the latest wins) or ``merge``."""
    read = compile_read(spec["from"], ctx.choice_alias)
    merge = spec["mode"] == "merge"

    def usage(asm: Assembly, ev: Any, ch: Any) -> None:
        value = read(ev, ch)
        if value is None:
            return
        if merge and asm.usage.__class__ is dict and value.__class__ is dict:
            value = {**asm.usage, **{k: v for k, v in value.items() if v is not None}}
        put_attr(asm.journal, asm, "usage", ingest(value))
        asm.took_usage(ev)

    return usage


def op_finish(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """The wire's DONE: the turn is over. (``finish: {when: PATH}``, only if that path holds
    a true value, a finish reason or ``done: true``, is the rules' own ``when`` guard.)"""

    def finish(asm: Assembly, ev: Any, ch: Any) -> None:
        asm.finish(event=ev)

    return finish


def op_error(spec: dict[str, Any], ctx: CompileContext) -> Run:
    """A provider error event: keep its payload in ``buf.error`` and end the stream.

    With ``where`` (a predicate on the event), only an event it holds for is the error: a
    wire whose error is the whole event in a shape of its own, beside its ordinary chunks
    (vLLM's ``{"object": "error", "message": ...}`` on an OpenAI-compatible stream), names the
    shape there rather than reading ``from: ""`` on every chunk."""
    read = compile_read(spec["from"], ctx.choice_alias)
    where = compile_predicate(spec["where"]) if spec.get("where") else None

    def error(asm: Assembly, ev: Any, ch: Any) -> None:
        if where is not None and not where(ev):
            return
        value = read(ev, ch)
        if value is None:
            return
        put_attr(asm.journal, asm, "error", ingest(value))
        asm.finish(cut=True, event=ev)  # an error ends the stream inside whatever is open

    return error
