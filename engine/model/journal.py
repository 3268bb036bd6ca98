"""The undo journal: how a chunk that raises changes nothing (engine.stream.buffer).

Every write into an assembly while a chunk is applied goes through a primitive here or in
the node it writes (``Fragments`` by :func:`grow`, ``SlottedList.put``, the argument
streams, the ``partial`` readers), which first appends to the assembly's journal a record of
what it overwrites: a tuple ``(function, *arguments)`` that puts it back, or, for one
append to a list that only grows inside a chunk (the display or reasoning text, the pieces
of a streamed text or of a call's arguments), the list itself, whose last item :func:`undo`
takes back (a join that gives a text a new list journals itself, so that its old list is
back before its appends are undone). :func:`undo` runs them, last first; once a chunk went
in, the buffer drops them. So a write costs at most one tuple, an undo the writes of that
one chunk, and nothing outlives the chunk.
"""

from __future__ import annotations

from typing import Any

ABSENT: Any = object()  # what a key held before it was set: nothing


def undo(journal: list[Any]) -> None:
    """Put back what the records of ``journal`` say, last first, and empty it. A record is
    a tuple ``(function, *arguments)``, or a list, whose last item is taken back: the record
    of one append, which then allocates nothing (a tuple per text delta was most of what the
    journal cost a text chunk: tools/bench_ab.py)."""
    for record in reversed(journal):
        if record.__class__ is list:
            record.pop()
        else:
            record[0](*record[1:])
    journal.clear()


def restore(node: dict[Any, Any], key: Any, old: Any) -> None:
    if old is ABSENT:
        node.pop(key, None)
    else:
        node[key] = old


def put(journal: list[Any], node: dict[Any, Any], key: Any, value: Any) -> Any:
    """``node[key] = value``, journaled; returns ``value`` (``child = put(j, node, k, {})``)."""
    journal.append((restore, node, key, node.get(key, ABSENT)))
    node[key] = value
    return value


def put_attr(journal: list[Any], target: Any, name: str, value: Any) -> None:
    """``target.name = value``, journaled."""
    journal.append((setattr, target, name, getattr(target, name)))
    setattr(target, name, value)


def put_back(target: Any, names: tuple[str, ...], values: tuple[Any, ...]) -> None:
    """The record of a node whose state is more than one field: ``(put_back, target, names,
    read(target))``, ``read`` the ``attrgetter(*names)`` of the node's class (one call into C,
    no frame of ours)."""
    for name, value in zip(names, values, strict=True):
        setattr(target, name, value)


def trim(journal: list[Any], items: list[Any]) -> None:
    """Before something is appended to ``items``: the record that takes it back (``del
    items[length:]``, by the list's own method: no frame of ours when it is undone)."""
    journal.append((items.__delitem__, slice(len(items), None)))


def refill(journal: list[Any], node: dict[Any, Any]) -> None:
    """Before ``node`` is emptied or rewritten whole: the records that give it back, by its
    own methods (undone last first: emptied, then given what it held)."""
    journal.append((node.update, dict(node)))
    journal.append((node.clear,))


def count(journal: list[Any], counter: Any, key: Any) -> None:
    """``counter[key] += 1`` (a ``Counter``), journaled: put back as it was, absent again
    if it was absent."""
    put(journal, counter, key, counter[key] + 1)
