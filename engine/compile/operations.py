"""The table of operations: one self-contained entry per operation of the descriptor language.

An entry says everything the rest of the engine asks of an operation, so that nothing walks
the rules by an operation's name:

- ``schema``: its fragment of ``schemas/format.schema.json`` (``#/$defs/op_NAME``; a test
  checks the schema's operation list against this table), and whether it may be written bare;
- ``arguments``: its YAML arguments, whatever form the schema allows (``stop_reason: PATH``,
  ``finish``), as one mapping shape;
- ``compile``: that mapping (less ``when``, which guards any rule) compiled to its effect, a
  closure ``run(assembly, event, choice)`` (a problem it finds is a ``ValueError``, located
  at its rule by the compiler; :class:`~engine.compile.ops.RuleProblem` names the argument);
- ``source``: the read path without which it does nothing (the dispatcher then runs it only
  for events that carry that path; ``None``: it acts without one, as ``close`` does);
- ``streamed``: the event fields whose strings it concatenates (``streamed_fields``);
- ``ends``: the event fields whose value makes the event the wire's DONE (``done_fields``:
  a re-split keeps them on the last piece of an event only);
- ``writes_args``: the patterns of call arguments it writes (the validator's
  ``args-unwritten`` check), and ``opens`` / ``slot_keyed``: how it addresses an item by its
  slot key (the ``slot-key`` check).

The table is built here, from the operations' own modules (:mod:`engine.compile.ops`,
:mod:`engine.compile.fold`, :mod:`engine.compile.extend_op`); importing an operation's module
registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import escape
from .extend_op import op_extend
from .fold import op_fold
from .ops import (
    CompileContext,
    Run,
    op_append,
    op_args,
    op_args_final,
    op_close,
    op_error,
    op_finish,
    op_merge,
    op_open,
    op_push,
    op_set,
    op_set_once,
    op_stop_reason,
    op_usage,
)
from .paths import items_of, parse_chain, parse_target, pattern
from .schema import with_defaults


class Source(NamedTuple):
    """The read path an operation needs in an event (with ``must_be_true``: a true value
    there, as for a ``when`` guard); without it the operation does nothing."""

    path: str
    must_be_true: bool = False


Streamed = tuple[str, tuple[str, ...]]  # (read path into the event, fields below it)


def _as_given(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else {}


def _from(args: dict[str, Any]) -> Source | None:
    path = args.get("from")
    return Source(path) if isinstance(path, str) and path else None


def _nothing(args: dict[str, Any]) -> tuple[Any, ...]:
    return ()


def _no(args: dict[str, Any]) -> bool:
    return False


@dataclass(frozen=True)
class Operation:
    """One operation of the language: what it takes, what it reads, what it does."""

    name: str
    compile: Callable[[dict[str, Any], CompileContext], Run]
    doc: str
    bare: bool = False  # may be written as its bare name (``- finish``)
    arguments: Callable[[Any], dict[str, Any]] = _as_given
    source: Callable[[dict[str, Any]], Source | None] = _from
    streamed: Callable[[dict[str, Any]], tuple[Streamed, ...]] = _nothing
    ends: Callable[[dict[str, Any]], tuple[str, ...]] = _nothing
    writes_args: Callable[[dict[str, Any]], tuple[str, ...]] = _nothing
    opens: Callable[[dict[str, Any]], bool] = _no  # opens the item its ``at`` addresses by slot key
    slot_keyed: bool = True  # its ``at`` addresses an item by the slot key the event carries

    @property
    def schema(self) -> str:
        """Its fragment of the descriptor schema."""
        return f"#/$defs/op_{self.name}"


# -- what each operation declares ------------------------------------------------------------


def _set_source(args: dict[str, Any]) -> Source | None:
    """A ``set`` of a whole item (``at`` ends with a slot) opens it, event value or not."""
    at = args.get("at", "")
    if isinstance(at, str) and at and parse_target(at)[-1].field is None:
        return None
    return _from(args)


def _error_source(args: dict[str, Any]) -> Source | None:
    """The payload's path; for the whole event (``from: ""``) guarded by ``where`` on one
    field, that field (an event without it is no error), so the dispatcher keeps its look-up."""
    source = _from(args)
    where = args.get("where")
    if source is not None or not isinstance(where, dict) or set(where) - {"field", "equals"}:
        return source
    field = where.get("field")
    return Source(field) if isinstance(field, str) and field and "." not in field else None


def _set_opens(args: dict[str, Any]) -> bool:
    at = args.get("at")
    return isinstance(at, str) and bool(at) and parse_target(at)[-1].field is None


def _read_streamed(args: dict[str, Any]) -> tuple[Streamed, ...]:
    path = args.get("from")
    return ((path, ()),) if isinstance(path, str) else ()


def _args_written(args: dict[str, Any]) -> tuple[str, ...]:
    at = args.get("at")
    return (pattern(at),) if isinstance(at, str) else ()


def _paths(raw: Any) -> dict[str, Any]:
    """``stop_reason: PATH`` or ``[PATH, ...]``: the first non-null of the paths."""
    return {"from": raw}


def _usage_arguments(raw: Any) -> dict[str, Any]:
    return with_defaults({"from": raw}, "op_usage") if isinstance(raw, str) else _as_given(raw)


def _fold_streamed(args: dict[str, Any]) -> tuple[Streamed, ...]:
    base = args.get("from", "")
    found: list[Streamed] = [(base, (key,)) for key in args.get("concat", ())]
    for name, lspec in (args.get("lists") or {}).items():
        if lspec.get("args"):
            found.append((base, (name, "*", *parse_chain(lspec["args"]))))
        found.extend((base, (name, "*", key)) for key in lspec.get("concat", ()))
    for name, ospec in (args.get("objects") or {}).items():
        if ospec.get("args"):
            found.append((base, (name, *parse_chain(ospec["args"]))))
        found.extend((base, (name, key)) for key in ospec.get("concat", ()))
    return tuple(found)


def _finish_ends(args: dict[str, Any]) -> tuple[str, ...]:
    """``finish: {when: PATH}``: the value at PATH (a finish reason, ``done: true``) is the
    DONE; a bare ``finish`` is its event's name, no field."""
    when = args.get("when")
    return (when,) if isinstance(when, str) and when else ()


def _error_ends(args: dict[str, Any]) -> tuple[str, ...]:
    """``error: {from: PATH}``: an error payload there ends the stream (``""``, the whole
    event, is no one field)."""
    path = args.get("from")
    return (path,) if isinstance(path, str) and path else ()


def _fold_args_written(args: dict[str, Any]) -> tuple[str, ...]:
    base = pattern(args.get("at", ""))
    out = []
    for name, lspec in (args.get("lists") or {}).items():
        if isinstance(lspec, dict) and lspec.get("args"):
            written = items_of(base, name)
            out.append(f"{written}.{lspec['args']}")
    for name, ospec in (args.get("objects") or {}).items():
        if isinstance(ospec, dict) and ospec.get("args"):
            out.append(f"{base}.{name}.{ospec['args']}" if base else f"{name}.{ospec['args']}")
    return tuple(out)


# -- the table -------------------------------------------------------------------------------

_ENTRIES = (
    Operation(
        "set",
        op_set,
        "replace the value at `at` with the event's value at `from`",
        source=_set_source,
        opens=_set_opens,
    ),
    Operation("set_once", op_set_once, "set the value at `at` unless it holds one already"),
    Operation("merge", op_merge, "copy the fields of the event's object into the one at `at`"),
    Operation(
        "open",
        op_open,
        "open the item at the slotted `at`, from the event's object",
        source=lambda args: None,
        opens=lambda args: True,
    ),
    Operation("close", op_close, "the item at `at` is complete", source=lambda args: None),
    Operation(
        "append",
        op_append,
        "append the event's string to the string at `at`",
        streamed=_read_streamed,
    ),
    Operation(
        "args",
        op_args,
        "feed an argument fragment to the call at `at`",
        streamed=_read_streamed,
        writes_args=_args_written,
    ),
    # The whole argument text, restated: a value, never a fragment to concatenate.
    Operation(
        "args_final",
        op_args_final,
        "adopt the whole argument text of the call at `at`",
        writes_args=_args_written,
    ),
    Operation("push", op_push, "add the event's value as a new element of the list at `at`"),
    Operation(
        "fold",
        op_fold,
        "merge the event's delta into the message (concat strings, merge lists by slot)",
        streamed=_fold_streamed,
        writes_args=_fold_args_written,
        slot_keyed=False,
    ),
    # Whole parts, each taken as it comes (or joined to the part before): none is a fragment.
    Operation(
        "extend",
        op_extend,
        "append the event's whole parts to the list at `at`",
        slot_keyed=False,
    ),
    Operation(
        "stop_reason",
        op_stop_reason,
        "record the provider's stop reason (the first non-null of the paths)",
        arguments=_paths,
        source=lambda args: Source(args["from"]) if isinstance(args["from"], str) else None,
    ),
    Operation(
        "usage",
        op_usage,
        "record the provider's usage object",
        arguments=_usage_arguments,
    ),
    Operation(
        "finish",
        op_finish,
        "the wire's DONE (with `when`: only if that path holds a true value)",
        bare=True,  # a bare ``finish`` (or ``finish: true``) takes nothing
        ends=_finish_ends,
    ),
    Operation(
        "error",
        op_error,
        "keep a provider error's payload and end the stream",
        source=_error_source,
        ends=_error_ends,
    ),
)

OPERATIONS: dict[str, Operation] = {entry.name: entry for entry in _ENTRIES}
"""Every operation of the language, by its YAML key."""


# -- the rules of a descriptor, as the table sees them ---------------------------------------


def rule_lists(events: Any) -> Iterator[tuple[str, list[Any]]]:
    """Every list of rules in an ``events`` section, with its JSON pointer."""
    if not isinstance(events, dict):
        return
    if isinstance(events.get("every"), list):
        yield "/events/every", events["every"]
    table = events.get("on")
    if not isinstance(table, dict):
        return
    for name, rules in table.items():
        base = f"/events/on/{escape(name)}"
        if isinstance(rules, list):
            yield base, rules
        elif isinstance(rules, dict) and isinstance(rules.get("on"), dict):
            for sub, sub_rules in rules["on"].items():
                if isinstance(sub_rules, list):
                    yield f"{base}/on/{escape(sub)}", sub_rules


def operation_rules(events: Any) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every rule of a known operation: the pointer of its operation (of the entry, for a bare
    name), the name, and its arguments in the entry's one mapping shape."""
    for base, rules in rule_lists(events):
        for i, rule in enumerate(rules):
            if isinstance(rule, str) and rule in OPERATIONS:
                yield f"{base}/{i}", rule, OPERATIONS[rule].arguments(None)
            elif isinstance(rule, dict) and len(rule) == 1:
                ((name, raw),) = rule.items()
                if name in OPERATIONS:
                    pointer = f"{base}/{i}/{escape(name)}"
                    yield pointer, name, OPERATIONS[name].arguments(raw)
