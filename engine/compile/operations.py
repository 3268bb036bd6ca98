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

When a rule compiles, its entry reads these once from its arguments into the rule's
:class:`Facts`, which the compiled strategy keeps (``rule_facts``): the dispatcher, the
validator's flow checks and ``streamed_fields`` / ``done_fields`` read them, never the rules'
YAML again.

The table is built here, from the operations' own modules (:mod:`engine.compile.ops`,
:mod:`engine.compile.fold`, :mod:`engine.compile.extend_op`); importing an operation's module
registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

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
from .paths import items_of, parse_chain, parse_target, pattern, pattern_of
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


class Facts(NamedTuple):
    """A rule's facts, read once from its arguments when it compiles and carried beside its
    effect (``CompileContext.facts``, then ``ExtractionStrategy.rule_facts``): what the
    dispatcher, the validator's flow checks and the re-split tools know of a rule, so that
    none of them walks the descriptor's rules again."""

    name: str  # its operation
    pointer: str  # the JSON pointer of its operation in the descriptor
    source: Source | None  # the read path without which it does nothing (guarded: ``when``)
    streamed: tuple[Streamed, ...]  # the event fields whose strings it concatenates
    ends: tuple[str, ...]  # the event fields whose value makes the event the wire's DONE
    writes_args: tuple[str, ...]  # the patterns of call arguments it writes
    opens: str | None  # the pattern of the item it opens (None: it opens none)
    at: str | None  # the target it addresses an item by slot key with (None: it does not)
    scope: Any  # its ``scope``
    slot_key: tuple[str, str] | None  # (the list's pattern, the slot path) at ``at``'s last slot


@dataclass(frozen=True)
class Operation:
    """One operation of the language: what it takes, what it reads, what it does."""

    name: str
    compile: Callable[[dict[str, Any], CompileContext], Run]
    bare: bool = False  # may be written as its bare name (``- finish``)
    arguments: Callable[[Any], dict[str, Any]] = _as_given
    source: Callable[[dict[str, Any]], Source | None] = _from
    streamed: Callable[[dict[str, Any]], tuple[Streamed, ...]] = lambda args: ()
    ends: Callable[[dict[str, Any]], tuple[str, ...]] = lambda args: ()
    writes_args: Callable[[dict[str, Any]], tuple[str, ...]] = lambda args: ()
    # opens the item at ``at``: whatever the event holds, so with no source
    opens: Callable[[dict[str, Any]], bool] = lambda args: False
    slot_keyed: bool = True  # its ``at`` addresses an item by the slot key the event carries

    @property
    def schema(self) -> str:
        """Its fragment of the descriptor schema."""
        return f"#/$defs/op_{self.name}"

    def facts(self, args: dict[str, Any], ctx: CompileContext, pointer: str) -> Facts:
        """The facts of a rule of this operation with the arguments ``args`` (``when``, its
        guard, among them), recorded in ``ctx.facts`` before it compiles: a rule that then
        fails to compile is still seen by the flow checks, which may say why."""
        at, when, opens = args.get("at"), args.get("when"), self.opens(args)
        keyed = at if self.slot_keyed and isinstance(at, str) else None
        segments = parse_target(keyed) if keyed is not None else ()
        last = max((i for i, seg in enumerate(segments) if seg.field is None), default=-1)
        slot_key = None  # at the last slot step: the list's pattern, and its slot path
        if last >= 0:
            slot_key = (pattern_of(segments[: last + 1]), segments[last].slot_path or "")
        facts = Facts(
            self.name,
            pointer,
            Source(when, True) if when is not None else None if opens else self.source(args),
            self.streamed(args),
            self.ends(args),
            self.writes_args(args),
            pattern(at) if opens else None,
            keyed,
            args.get("scope"),
            slot_key,
        )
        ctx.facts.append(facts)
        return facts


# -- what each operation declares ------------------------------------------------------------


def _set_opens(args: dict[str, Any]) -> bool:
    """A ``set`` of a whole item (``at`` ends with a slot) opens it, event value or not."""
    at = args.get("at")
    return isinstance(at, str) and bool(at) and parse_target(at)[-1].field is None


def _error_source(args: dict[str, Any]) -> Source | None:
    """The payload's path; for the whole event (``from: ""``) guarded by ``where`` on one
    field, that field (an event without it is no error), so the dispatcher keeps its look-up."""
    source = _from(args)
    where = args.get("where")
    if source is not None or not isinstance(where, dict) or set(where) - {"field", "equals"}:
        return source
    field = where.get("field")
    return Source(field) if isinstance(field, str) and field and "." not in field else None


def _read_streamed(args: dict[str, Any]) -> tuple[Streamed, ...]:
    path = args.get("from")
    return ((path, ()),) if isinstance(path, str) else ()


def _args_written(args: dict[str, Any]) -> tuple[str, ...]:
    at = args.get("at")
    return (pattern(at),) if isinstance(at, str) else ()


def _field(path: Any) -> tuple[str, ...]:
    """The one event field a path names (``""``, the whole event, is no one field): where
    the DONE is for a ``finish`` rule's ``when`` (a finish reason, ``done: true``; a bare
    ``finish`` is its event's name, no field) and an ``error`` rule's ``from``."""
    return (path,) if isinstance(path, str) and path else ()


def _usage_arguments(raw: Any) -> dict[str, Any]:
    return with_defaults({"from": raw}, "op_usage") if isinstance(raw, str) else _as_given(raw)


def _fold_entries(args: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """A ``fold``'s lists and objects: the fields from its delta to an entry, the pattern of
    the entries in the message, and how they fold."""
    base = pattern(args.get("at", ""))
    for name, spec in (args.get("lists") or {}).items():
        if isinstance(spec, dict):
            yield (name, "*"), items_of(base, name), spec
    for name, spec in (args.get("objects") or {}).items():
        if isinstance(spec, dict):
            yield (name,), f"{base}.{name}" if base else name, spec


def _fold_streamed(args: dict[str, Any]) -> tuple[Streamed, ...]:
    base = args.get("from", "")
    found: list[Streamed] = [(base, (key,)) for key in args.get("concat", ())]
    for fields, _, spec in _fold_entries(args):
        if spec.get("args"):
            found.append((base, (*fields, *parse_chain(spec["args"]))))
        found.extend((base, (*fields, key)) for key in spec.get("concat", ()))
    return tuple(found)


def _fold_args_written(args: dict[str, Any]) -> tuple[str, ...]:
    return tuple(f"{at}.{spec['args']}" for _, at, spec in _fold_entries(args) if spec.get("args"))


# -- the table -------------------------------------------------------------------------------

# Each entry's comment says what its operation does (its compiler's docstring says how).
_ENTRIES = (
    # replace the value at `at` with the event's value at `from` (a whole item: open it)
    Operation("set", op_set, opens=_set_opens),
    # set the value at `at` unless it holds one already
    Operation("set_once", op_set_once),
    # copy the fields of the event's object into the one at `at`
    Operation("merge", op_merge),
    # open the item at the slotted `at`, from the event's object
    Operation("open", op_open, opens=lambda args: True),
    # the item at `at` is complete
    Operation("close", op_close, source=lambda args: None),
    # append the event's string to the string at `at`
    Operation("append", op_append, streamed=_read_streamed),
    # feed an argument fragment to the call at `at`
    Operation("args", op_args, streamed=_read_streamed, writes_args=_args_written),
    # adopt the whole argument text of the call at `at`: a value, never a fragment to concatenate
    Operation("args_final", op_args_final, writes_args=_args_written),
    # add the event's value as a new element of the list at `at`
    Operation("push", op_push),
    # merge the event's delta into the message (concat strings, merge lists by slot)
    Operation(
        "fold", op_fold, streamed=_fold_streamed, writes_args=_fold_args_written, slot_keyed=False
    ),
    # append the event's whole parts to the list at `at`: each taken as it comes (or joined to
    # the part before), none is a fragment
    Operation("extend", op_extend, slot_keyed=False),
    # record the provider's stop reason (PATH or [PATH, ...]: the first non-null of the paths)
    Operation("stop_reason", op_stop_reason, arguments=lambda raw: {"from": raw}),
    # record the provider's usage object
    Operation("usage", op_usage, arguments=_usage_arguments),
    # the wire's DONE (with `when`: only if that path holds a true value); a bare ``finish``
    # (or ``finish: true``) takes nothing
    Operation("finish", op_finish, bare=True, ends=lambda args: _field(args.get("when"))),
    # keep a provider error's payload and end the stream
    Operation("error", op_error, source=_error_source, ends=lambda args: _field(args.get("from"))),
)

OPERATIONS: dict[str, Operation] = {entry.name: entry for entry in _ENTRIES}
"""Every operation of the language, by its YAML key."""
