"""The message under assembly: plain dicts plus three growing node types.

A streamed message is mostly dicts and scalars copied from the wire. Three things grow and so
get their own node, each cheap to extend and turned into plain JSON only when asked
(:func:`materialize`, called by ``as_dict()``):

- :class:`Fragments`: a string built by appends, kept as a list and joined on demand, so that
  a stream of n fragments never copies its prefix n times;
- :class:`SlottedList`: a list whose items are addressed by a SLOT (an index, an id) rather
  than by position, the way every wire names the call or block a fragment belongs to;
- :class:`~engine.model.jsonscan.ArgsStream`: a call's arguments with their parse state.

Each node's writes while a chunk is applied are journaled (engine.model.journal).
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any

from .journal import ABSENT, put, put_back
from .jsonscan import TOO_DEEP_TO_TAKE, ArgsStream, TooDeepError


def grow(journal: list[Any], text: Fragments, piece: str) -> None:
    """``text.append(piece)``, journaled: the record is the list of pieces itself (undone
    by ``pop``), written out where a text delta is appended (a frame less shows there)."""
    journal.append(text.pieces)
    text.append(piece)


def append_text(parent: dict[str, Any], field: str, piece: str, journal: list[Any]) -> None:
    """``parent[field]`` grows by ``piece``: its ``Fragments`` (journaled as by :func:`grow`,
    written out here: this runs on every text delta, and a frame less shows in its cost), or
    a new one, after the text the wire sent whole before, if any."""
    current = parent.get(field)
    if current.__class__ is Fragments:
        journal.append(current.pieces)
        current.append(piece)
    else:
        whole = current if current.__class__ is str else ""
        put(journal, parent, field, Fragments(whole + piece, journal))


class Fragments:
    """A string assembled from streamed pieces.

    Its callers append, join and measure through its methods; ``append`` is the list of
    pieces' own ``append``, bound once, so appending a piece (once per text delta) costs what
    a list append costs, with no frame of ours. The journal's record of an append is that
    list, ``pieces`` (engine.model.journal: undone by ``pop``), which is why a join that may
    come after such a record in the same chunk journals itself: it gives ``pieces`` a new
    list, and its undo gives the old one back before the old one's appends are taken back.
    ``journal``: the assembly's, for a text of one (None: a text of its own)."""

    __slots__ = ("pieces", "append", "journal")

    def __init__(self, first: str = "", journal: list[Any] | None = None) -> None:
        self.pieces: list[str] = [first] if first else []
        self.append: Callable[[str], None] = self.pieces.append
        self.journal = journal

    def joined(self) -> str:
        """The string so far, joined once: the pieces become that one string, in a new list
        (journaled while a chunk is applied: an empty journal holds no record of the old)."""
        pieces = self.pieces
        if len(pieces) > 1:
            if self.journal:
                self.journal.append((put_back, self, _JOIN_FIELDS, (pieces, self.append)))
            pieces = self.pieces = ["".join(pieces)]
            self.append = pieces.append
        return pieces[0] if pieces else ""

    __str__ = joined


_JOIN_FIELDS = ("pieces", "append")  # what a join changes, and its undo puts back


class SlottedList:
    """Items keyed by the wire's SLOT, kept in the order they were opened.

    ``order`` says how the list materializes: ``"slot"`` sorts integer slots (a wire index is a
    key, not a position: a first call at index 1 still gives a dense list), ``"arrival"``
    keeps the order of first appearance.
    """

    __slots__ = ("by_slot", "get", "order", "last", "next_int")

    def __init__(self, items: list[Any] | None = None, order: str = "slot") -> None:
        # The items by SLOT, in the order their slots opened (a dict keeps it: the one record
        # of both the order and the look-up, so that a put or its undo writes one entry).
        # A list the wire sent is adopted, its positions for slots (nothing to undo).
        self.by_slot: dict[Any, dict[str, Any]] = dict(enumerate(items or ()))
        # ``get(slot)``: the item at ``slot``, or None. Every event that streams into an item
        # finds it so: the dict's own look-up, bound once, so that finding an item is one call
        # into C. (An unhashable SLOT raises TypeError.)
        self.get: Callable[[Any], dict[str, Any] | None] = self.by_slot.get
        self.order = order
        # The slot of the most recently opened item, and the smallest integer above every
        # integer slot (a free slot).
        self.last: Any = len(self.by_slot) - 1 if self.by_slot else None
        self.next_int = len(self.by_slot)

    @property
    def items(self) -> list[dict[str, Any]]:
        """The items in the order their slots opened (a new list)."""
        return list(self.by_slot.values())

    def put(self, slot: Any, item: dict[str, Any], journal: list[Any]) -> dict[str, Any]:
        """``item`` at ``slot`` (a new slot opens at the end), journaled."""
        old = self.by_slot.get(slot, ABSENT)
        journal.append((self._unput, slot, old, self.last, self.next_int))
        if type(slot) is int and slot >= self.next_int:  # (only a new slot can be above it)
            self.next_int = slot + 1
        self.by_slot[slot] = item
        self.last = slot
        return item

    def _unput(self, slot: Any, old: Any, last: Any, next_int: int) -> None:
        """Take back a ``put``: the item it replaced, or the slot it opened (the last one, so
        that deleting it leaves the order as it was)."""
        if old is ABSENT:
            del self.by_slot[slot]
        else:
            self.by_slot[slot] = old
        self.last, self.next_int = last, next_int

    def free_slot(self) -> int:
        """The first integer SLOT above every item's (items may sit at keys the wire chose):
        where a value added without a SLOT of its own goes, after all that is there."""
        return max(self.next_int, len(self.by_slot))

    def ordered(self) -> list[dict[str, Any]]:
        """The items as the message lists them (see ``order``)."""
        if self.order == "slot" and all(type(k) is int for k in self.by_slot):
            return [self.by_slot[k] for k in sorted(self.by_slot)]
        return list(self.by_slot.values())

    def __len__(self) -> int:
        return len(self.by_slot)


def compact(root: Any) -> None:
    """Join every growing text of a finished message (its ``Fragments``, its argument
    streams' fragments) into one string each: what the stream keeps is then the size of its
    text, not a few dozen bytes per fragment. Without recursion, whatever the depth; each
    join is into a new list, so that a journal record of the old one stays true."""
    stack = [root]
    while stack:
        node = stack.pop()
        cls = node.__class__
        if cls is dict:
            stack.extend(node.values())
        elif cls is list:
            stack.extend(node)
        elif cls is SlottedList:
            stack.extend(node.by_slot.values())
        elif cls is Fragments:
            node.joined()
        elif cls is ArgsStream and node.whole_value() is None:
            node.text  # noqa: B018  (reading it joins its fragments)


def materialize(node: Any) -> Any:
    """Turn an assembly tree into plain JSON-compatible values (a fresh copy: arguments too,
    so that nothing of it is the assembly's own, nor a call's handed out)."""
    try:
        cls = node.__class__
        if cls is dict:
            return {k: materialize(v) for k, v in node.items()}
        if cls is list:
            return [materialize(v) for v in node]
        return materialize(_PLAIN[cls](node)) if cls in _PLAIN else node
    except RecursionError:  # a wire value nested deeper than the stack: copied without it
        return copy_any_depth(node, _plain)


# What a growing node stands for, as plain values (still to copy): a slotted list its items
# in order, a text its string, an argument stream the value the message shows.
_PLAIN: dict[type, Callable[[Any], Any]] = {
    SlottedList: SlottedList.ordered,
    Fragments: Fragments.joined,
    ArgsStream: ArgsStream.materialize,
}


def _plain(node: Any) -> Any:
    plain = _PLAIN.get(node.__class__)
    return node if plain is None else plain(node)


# A JSON value's copy: dicts and lists copied all the way down, leaves (immutable scalars, or a
# tool's own result objects) shared. What ``copy.deepcopy`` does for JSON, at a fraction of
# its cost (no memo, no dispatch): the history a driver builds, the arguments a tool gets.
def _copy(value: Any) -> Any:
    """dicts and lists copied all the way down, recursively (the fast path of both copies)."""
    cls = value.__class__
    if cls is dict:
        # A loop, not a comprehension, and leaves copied inline: this copies every part a
        # whole-part wire sends, and each extra frame showed in its per-chunk cost.
        out = {}
        for k, v in value.items():
            out[k] = _copy(v) if v.__class__ is dict or v.__class__ is list else v
        return out
    if cls is list:
        return [_copy(v) if v.__class__ is dict or v.__class__ is list else v for v in value]
    return value


def ingest(value: Any) -> Any:
    """Copy a wire value into the assembly tree, so later merges never alias the chunk."""
    try:
        return _copy(value)
    except RecursionError:
        # Nested deeper than the stack, so deeper than any JSON text decodes to (the decoder
        # stops at the same limit): no wire sent it, and a message holding it could never be
        # sent back (``json.dumps`` stops there too). The chunk is refused; the ``try`` costs
        # nothing until it catches.
        raise TooDeepError(TOO_DEEP_TO_TAKE) from None


def copy_json(value: Any) -> Any:
    """A copy of a JSON value that shares nothing with it, at any depth (a value the engine
    holds already: deeper than the stack, it is copied without recursion)."""
    try:
        return _copy(value)
    except RecursionError:
        return copy_any_depth(value, lambda node: node)


def copy_any_depth(root: Any, children: Callable[[Any], Any]) -> Any:
    """Copy dicts and lists all the way down without recursion, whatever the depth.

    ``children(node)`` says what a node holds: a dict or list to copy (the node itself, or
    what it stands for, as a slotted list's items), or a leaf to keep as it is. Each copy is
    made when its parent is filled (a list as long as the original, a dict empty) and filled
    whole when its turn comes, each entry at its key or position, so that keys and items
    keep their order."""
    out: list[Any] = [None]  # the copy of [root]
    stack: list[tuple[Any, Any]] = [([root], out)]
    while stack:
        node, dest = stack.pop()
        for key, child in node.items() if node.__class__ is dict else enumerate(node):
            child = children(child)
            if child.__class__ is dict or child.__class__ is list:
                copy: Any = {} if child.__class__ is dict else [None] * len(child)
                stack.append((child, copy))
                child = copy
            dest[key] = child
    return out[0]



def dig(obj: Any, fields: tuple[str, ...]) -> Any:
    """The value at the field chain ``fields`` of ``obj``; None where the way is not an
    object (the one reader of a field chain: a message's, an event's, an item's)."""
    for field in fields:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(field)
    return obj


def make_way(node: dict[str, Any], fields: tuple[str, ...], journal: list[Any]) -> dict[str, Any]:
    """The object at the field chain ``fields`` under ``node``, each step that is not an
    object made an empty one, written to ``journal`` (the one writer's way down a chain)."""
    for field in fields:
        child = node.get(field)
        if child.__class__ is not dict:
            child = put(journal, node, field, {})
        node = child
    return node


def json_kind(value: Any) -> str:
    """``a string``, ``a number``...: how a wrong value is named in a reason or an error."""
    return _KINDS.get(value.__class__) or type(value).__name__


# By the value's own class (a subclass is named by its type, as the wire never sends one).
_KINDS: dict[type, str] = {
    bool: "a boolean", int: "a number", float: "a number", type(None): "null",
    str: "a string", Fragments: "a string", list: "a list", SlottedList: "a list",
    dict: "an object", ArgsStream: "an object",
}


def shown_value(value: Any, limit: int = 40) -> str:
    """A wrong value as an error shows it: its repr, cut to ``limit`` characters.

    Bounded whatever the value: a chunk's value may nest 100,000 deep or hold a string of
    megabytes, and a plain ``repr`` would recurse through all of it (a RecursionError out of
    the error message itself) or build all of it to keep 40 characters. ``reprlib`` stops at
    a few levels and a few items, so the cost and the depth are bounded."""
    try:
        text = _SHOWN.repr(value)
    except Exception:  # an object whose __repr__ raises: its type is what can be said
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Shown(reprlib.Repr):
    """``reprlib`` bounds, but a dict in the order it came (``reprlib`` sorts the keys, and
    an error should show the value as the wire sent it)."""

    def repr_dict(self, x: dict[str, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{" + self.fillvalue + "}"
        pieces = []
        for number, (key, item) in enumerate(x.items()):
            if number == self.maxdict:
                pieces.append(self.fillvalue)
                break
            pieces.append(f"{self.repr1(key, level - 1)}: {self.repr1(item, level - 1)}")
        return "{" + ", ".join(pieces) + "}"


_SHOWN = _Shown()
_SHOWN.maxlevel = 6
_SHOWN.maxdict = _SHOWN.maxlist = _SHOWN.maxtuple = 20
_SHOWN.maxstring = _SHOWN.maxother = 200


def slot_misfit(where: str, slot_path: str | None, slot: Any) -> ValueError:
    """A SLOT the event sent as a list or an object, which no key can hold: what was expected
    and what came, at the list ``where`` and the event's ``slot_path`` (built only for the
    error: callers try the look-up and turn its TypeError into this)."""
    if slot.__class__ is tuple and len(slot) == 2:  # a scoped SLOT: (scope, the wire's value)
        slot = slot[1]
    named = f" {slot_path!r}" if slot_path else ""
    return ValueError(
        f"{where}: the SLOT{named} must be a string or an integer, got "
        f"{json_kind(slot)}: {shown_value(slot)}"
    )
