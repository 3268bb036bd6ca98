"""A compiled descriptor: the immutable, shared strategy for one wire format.

:func:`compile_descriptor` turns a validated descriptor (plain data) into an
:class:`ExtractionStrategy`. Compilation happens once per load; the strategy holds only
compiled closures and never per-stream state, which lives in
:class:`~engine.model.assembly.Assembly`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from os.path import commonprefix
from typing import Any, NamedTuple, TypeVar, cast

from ..errors import DescriptorError, Problem, escape, pointer_of
from ..events import CallIncomplete, ExtractedCall
from ..model.assembly import Assembly, items_under, judged_after_the_event, new_args_stream
from ..model.fragments import copy_json, dig, materialize, shown_value
from ..model.journal import count
from ..model.jsonscan import MAX_DEPTH, dumps_any_depth, first_value, nests_deeper
from . import paths
from .operations import OPERATIONS, Facts
from .ops import CompileContext, RuleProblem, Run, TextPlace, any_where
from .paths import compile_read, is_plain, items_of, one_field, parse_chain, pattern_parts
from .predicates import Predicate, compile_predicate
from .results import check_sections, result_messages, tool_declarations
from .schema import missing_key, schema_problems, with_defaults
from .turn import TurnSpec, compile_turn


@dataclass(frozen=True)
class Forming:
    """Is a call coming, and (once streamed) its tool name. Falsy when not forming."""

    forming: bool
    tool_name: str | None = None

    def __bool__(self) -> bool:
        return self.forming


T = TypeVar("T")
NOT_FORMING = Forming(False)
NOT_COMPILED = object()  # a section the strategy compiles when first asked for it
_CODEC = "a text codec, no wire: engine.text.strategy.TextStrategy compiles it"


@dataclass(frozen=True)
class CallsSpec:
    pattern: str
    list_fields: tuple[tuple[str, ...], ...]  # field chains between [*] steps
    where: Predicate | None  # None: every item of the list is a call
    name: Callable[[Any], Any]
    id: Callable[[Any], Any]
    args_fields: tuple[str, ...]
    args_form: str
    args_whole: bool = False  # the wire sends arguments whole (Gemini, Ollama)
    # A call item the message marks as cut short (Gemini's ``willContinue`` left on a call
    # whose stream ended): never a call, an incomplete one ("cut"), in a whole message.
    cut_when: Predicate | None = None
    # A place that is one object at this field chain of the message, not the items of a
    # list (a wire whose turn carries at most one call there): ``pattern`` is the chain, and
    # the call's SLOT is that pattern, the same for the call's life.
    single: tuple[str, ...] = ()
    # ``answered.later``: the stream may answer a call after the call's own end (AG-UI's
    # TOOL_CALL_RESULT), so no call here is the client's before the wire's DONE: the items
    # are tracked then, those answered by then never (engine.model.assembly, ``held``).
    held: bool = False

    def is_cut(self, item: dict[str, Any]) -> bool:
        """Does the whole message mark this call item as cut short (``cut_when``)?"""
        return self.cut_when is not None and self.cut_when(item)

    @property
    def free_form(self) -> bool:
        """Its calls' input is free-form text (``args_form: text``), not JSON."""
        return self.args_form == "text"

    def arguments_of(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments of a call item of a whole message, or None when they never parse
        (free-form text is never parsed: ``{ARGS: text}``, ARGS the last field of ``args``)."""
        raw = dig(item, self.args_fields)
        if self.args_form == "text":
            text = "" if raw is None else raw if isinstance(raw, str) else dumps_any_depth(raw)
            return {self.args_fields[-1]: text}
        return parse_arguments(raw, self.args_form)

    def incomplete_call(
        self, item: dict[str, Any], slot: Any, raw: str, reason: str, cause: str | None
    ) -> CallIncomplete:
        """A call item of this place that will never run, as it is reported (by the buffer at
        the stream's end, by ``incomplete_calls`` for a whole message): its name and id read
        off the item, each a non-empty string or None."""
        name, call_id = _text_or_none(self.name(item)), _text_or_none(self.id(item))
        return CallIncomplete(slot, name, call_id, raw, reason, cause)

    def items_at(self, message: Any) -> list[tuple[Any, dict[str, Any]]]:
        """The call items of this place in a whole message, each with its SLOT (its position
        in its list; the pattern for a single place), ``where`` applied."""
        if self.single:
            item = dig(message, self.single)
            found = [(self.pattern, item)] if isinstance(item, dict) else []
        else:
            found = items_under(message, self.list_fields)
        return [(slot, item) for slot, item in found if self.where is None or self.where(item)]


@dataclass(frozen=True)
class TextSpec:
    """Where the display text sits (the ``text`` section); ``pattern`` None: the wire has
    none, so that an operation asks ``wire.text.pattern`` of every wire alike."""

    pattern: str | None = None
    list_fields: tuple[tuple[str, ...], ...] = ()  # field chains between [*] steps
    tail: tuple[str, ...] = ()  # the text's field chain in the innermost item
    where: Predicate | None = None  # which items' text is display text (None: every item's)
    part_where: Predicate | None = None  # the text field may hold typed parts instead
    part_field: str | None = None  # text.parts.field: the display parts' text field


@dataclass(frozen=True)
class Spec:
    """The facts of one wire, built once per load and read twice: by the compile of its
    rules (``CompileContext.wire``: is what an operation writes display text, reasoning, a
    call's arguments?) and by the assembly at run time (where the calls sit, how they read)."""

    initial_message: dict[str, Any]
    text: TextSpec
    sentinels: frozenset[str]
    # The finish-reason mapping and the usage reading (engine.compile.turn).
    turn: TurnSpec = TurnSpec()
    # Where reasoning sits in the message (the ``reasoning`` section), in declaration order.
    reasoning: tuple[TextPlace, ...] = ()
    # Every place the calls sit in the message: ``calls`` first, then each of ``calls.also``
    # (a second shape of call the wire may send instead, in another place of the message).
    places: tuple[CallsSpec, ...] = ()

    @cached_property
    def length_stops(self) -> frozenset[str]:
        """The raw stop reasons that mean a length limit cut the output (those the turn's
        ``finish_reasons.length`` lists): at such a DONE, open items are cut. Read off the
        turn, so that the two never disagree; computed once, then an attribute."""
        return frozenset(raw for raw, word in self.turn.reasons.items() if word == "length")

    @property
    def calls(self) -> CallsSpec | None:
        """The first place of the calls (``calls`` itself), None on a wire without calls."""
        return self.places[0] if self.places else None

    def place_of(self, pattern: str, item: dict[str, Any]) -> CallsSpec | None:
        """The place whose pattern this item sits at and whose ``where`` it passes."""
        for place in self.places:
            if place.pattern == pattern and (place.where is None or place.where(item)):
                return place
        return None


class Program:
    """The event rules: dispatch by discriminator to compiled operation lists."""

    def __init__(self, events: dict[str, Any], ctx: CompileContext, problems: Problems) -> None:
        disc = events.get("discriminator")  # a read path, or {field: PATH, or_wrapped: BOOL}
        self.wrapped: bool = isinstance(disc, dict) and disc["or_wrapped"]
        disc = disc["field"] if isinstance(disc, dict) else disc
        self.discriminator = compile_read(disc) if disc else None
        # The one field the discriminator and the choice list name, which apply looks up in
        # the event itself (None: a reader's call, for a longer path or a JMESPath).
        self.name_key = one_field(disc)
        choice = events.get("choice")
        self.choice_list = compile_read(choice["list"]) if choice else None
        self.list_key = one_field(choice["list"]) if choice else None
        self.choice_key = choice["key"] if choice else None
        self.every = tuple(compile_ops(events.get("every", []), ctx, problems, "/events/every"))
        self.table = _compile_table(events.get("on", {}), ctx, problems)
        self.ignored = frozenset(events.get("ignore", ()))
        # Which chunks are this wire's events once it is resolved (``events.accept``): one it
        # rejects runs no rule and is counted with the events no rule handles. Without it a
        # wire with no discriminator would hand any chunk to its ``every`` rules, and another
        # wire's event would go through them without a trace.
        self.accept = _predicate(events, "accept")
        self.after_done = self._compile_after_done(events, problems)

    def _compile_after_done(
        self, events: dict[str, Any], problems: Problems
    ) -> Callable[[Any, str | None], bool] | None:
        """``after_done``: what may follow the DONE, as one test of an event (None: nothing
        may). A name is the event's name as the discriminator reads it, and must be one the
        rule table handles (taking an event no rule handles would take nothing). The test is
        given the event and its name, read once by the buffer."""
        entries = events.get("after_done") or []
        names = {entry for entry in entries if isinstance(entry, str)}
        tests: list[Predicate] = []
        for i, entry in enumerate(entries):
            pointer, named = f"/events/after_done/{i}", f"after_done names the event {entry!r}"
            if isinstance(entry, dict):
                tests += problems.compiled(pointer, "after_done", compile_predicate, entry)
            elif isinstance(entry, str) and self.discriminator is None:
                problems.add(
                    pointer,
                    f"{named}, but this wire has no event names (no events.discriminator): "
                    "give a predicate on the event",
                )
            elif isinstance(entry, str) and self.table.get(entry) is None:
                problems.add(pointer, f"{named}, which no rule of events.on handles")
        if not names and not tests:
            return None
        return lambda chunk, name: name in names or any(test(chunk) for test in tests)

    def _named(self, chunk: dict[str, Any]) -> tuple[Any, Any]:
        """The event's name (None on a wire without event names) and what its rules read, as
        :meth:`apply` finds them: the chunk, or the value of its one key on a wrapped wire
        (``{"<event name>": {...}}``). Cold: apply reads them in place."""
        name = None if self.discriminator is None else self.discriminator(chunk)
        if name is None and self.wrapped and len(chunk) == 1:
            ((name, payload),) = chunk.items()
            return name, payload
        return name, chunk

    def of_another_choice(self, chunk: Any, choice: int) -> bool:
        """Is this an event of another choice than ``choice`` (an n>1 stream): its choice
        list holds entries and none is ``choice``? Cold: asked only after the DONE."""
        if self.choice_list is None or chunk.__class__ is not dict:
            return False
        entries = self.choice_list(self._named(chunk)[1])  # None in what is no object
        return entries.__class__ is list and bool(entries) and self.choose(entries, choice) is None

    def choose(self, entries: Any, choice: int) -> Any:
        """The entry of the choice list ``entries`` that is ``choice`` (its key, else its
        position), None when none is."""
        if entries.__class__ is not list:
            return None
        key = self.choice_key
        for position, entry in enumerate(entries):
            if entry.__class__ is dict and entry.get(key, position) == choice:
                return entry
        return None

    def event_name(self, chunk: Any) -> str | None:
        """The event's name as the discriminator reads it (``content_block_delta``), None on a
        wire without event names. Cold: it names a skipped event, never runs per chunk."""
        name = self._named(chunk)[0] if chunk.__class__ is dict else None
        return None if name is None else str(name)

    def apply(self, asm: Assembly, chunk: dict[str, Any], choice: int) -> None:
        # Runs on every chunk: a one-field discriminator or choice list is looked up in the
        # event itself, any other read is one call of its compiled reader (paths.Reader).
        discriminator = self.discriminator
        name: Any = None  # what the wire put at the discriminator: any JSON value, or None
        payload = chunk
        if discriminator is not None:  # (a wire without one has no name: event_name stays None)
            key = self.name_key
            name = chunk.get(key) if key is not None else discriminator(chunk)
            if name is None and self.wrapped and len(chunk) == 1:
                ((name, payload),) = chunk.items()
            asm.event_name = name  # what a skip of this event is listed under: read once
        if payload.__class__ is not dict:
            count(asm.journal, asm.unknown, str(name))
            return
        ch = None
        if self.choice_list is not None:
            key = self.list_key
            entries = payload.get(key) if key is not None else self.choice_list(payload)
            ch = entries[0] if entries.__class__ is list and entries else None
            if ch.__class__ is not dict or ch.get(self.choice_key, 0) != choice:
                ch = self.choose(entries, choice)  # the usual choice, the first, is tested first
        if ch is None and self.accept is not None and not self.accept(chunk):
            # Not this wire's (a chunk that carries the followed choice always is: only the
            # others are asked, so the usual chunk pays one test).
            named = str(name) if name.__class__ is not dict else shown_value(name)
            count(asm.journal, asm.unknown, named)
            return
        for op in self.every:
            op(asm, payload, ch)
        if discriminator is None:
            return
        try:
            rules = self.table.get(name)
        except TypeError:  # a name that is no name (a list, an object): no rule has it
            # bounded: str() would render all of it
            count(asm.journal, asm.unknown, shown_value(name))
            return
        if rules is None:
            if name not in self.ignored:
                count(asm.journal, asm.unknown, str(name))
            return
        if rules.__class__ is SubTable:
            try:
                rules = rules.table.get(rules.discriminator(payload))
            except TypeError:
                rules = None
            if rules is None:
                count(asm.journal, asm.unknown, str(name))
                return
        for op in rules:
            op(asm, payload, ch)


class SubTable(NamedTuple):
    """A nested discriminator (Anthropic's ``content_block_delta`` by ``delta.type``): its
    reader and its table."""

    discriminator: Callable[..., Any]
    table: dict[str, Any]


def _compile_table(
    on: dict[str, Any], ctx: CompileContext, problems: Problems, base: str = "/events/on"
) -> dict[str, Any]:
    """A rule table (at ``base``): each name's rules, or a :class:`SubTable` (whose own
    table, the schema's ``sub_table``, holds rules only); a :class:`PatternTable` when some
    name is a pattern (a prefix and one ``*`` at its end), else the plain dict itself."""
    table: dict[str, Any] = {}
    patterns = []
    for name, rules in on.items():
        at = f"{base}/{escape(name)}"
        if isinstance(rules, dict):
            compiled: Any = SubTable(
                compile_read(rules["discriminator"]),
                _compile_table(rules["on"], ctx, problems, f"{at}/on"),
            )
        else:
            compiled = tuple(compile_ops(rules or [], ctx, problems, at))
        prefix = name[:-1]
        if WILDCARD not in name:
            table[name] = compiled
        elif name.endswith(WILDCARD) and prefix and WILDCARD not in prefix:
            patterns.append((prefix, compiled))
        else:
            problems.add(
                at,
                f"event-name pattern {name!r}: a pattern is a prefix and one * at its end "
                "(data-*); a * elsewhere, or alone, is not one",
            )
    return PatternTable(table, patterns) if patterns else table


WILDCARD = "*"


class PatternTable(dict[str, Any]):
    """A rule table with event-name patterns (``data-*``: every name that starts with
    ``data-``) beside its exact names. An exact name always wins; among patterns, the
    longest prefix wins, so ``data-weather-*`` takes over from ``data-*``.

    Only a table that declares a pattern is one: every other table stays a plain dict, whose
    ``get`` the dispatcher calls on every chunk. A miss here costs a test per pattern."""

    __slots__ = ("patterns",)

    def __init__(self, exact: dict[str, Any], patterns: list[tuple[str, Any]]) -> None:
        super().__init__(exact)
        self.patterns = tuple(sorted(patterns, key=lambda entry: -len(entry[0])))

    def get(self, name: Any, default: Any = None) -> Any:
        found = dict.get(self, name)  # an unhashable name raises TypeError, as dict.get does
        if found is not None:
            return found
        if name.__class__ is str:
            for prefix, rules in self.patterns:
                if name.startswith(prefix):
                    return rules
        return default


class Problems(list[tuple[str, str]]):
    """What compiling a descriptor refused, each ``(pointer, message)`` at the JSON pointer
    of the value at fault.

    One compile finds them all (a rule that does not compile leaves the others to compile);
    whoever asked for the strategy decides what they mean: the validator locates them in the
    YAML source, a direct ``ExtractionStrategy(data)`` raises the first."""

    def add(self, pointer: str, message: str) -> None:
        self.append((pointer, message))

    def compiled(self, pointer: str, what: str, compile: Callable[..., T], *spec: Any) -> list[T]:
        """``[compile(*spec)]``, or ``[]`` with its refusal added at ``pointer`` (``what: why``;
        an operation's :class:`RuleProblem` at the argument it names, in its own words), so
        that the rest of the section still compiles (a list: the caller adds it to its own)."""
        try:
            return [compile(*spec)]
        except RuleProblem as exc:
            self.add(pointer + pointer_of(exc.keys), str(exc))
        except (ValueError, LookupError, TypeError) as exc:
            self.add(pointer, f"{what}: {exc}")
        return []


class Rule(NamedTuple):
    """A compiled rule: its effect, and its facts as its operation's entry reads them (the
    source it declares, the pattern of the item it opens...)."""

    run: Run
    facts: Facts


def compile_ops(rules: list[Any], ctx: CompileContext, problems: Problems, base: str) -> list[Run]:
    """The rules of one list (at the JSON pointer ``base``), compiled through the table; a
    rule that does not compile is a problem at its pointer, and the others still compile."""
    out = []
    for i, rule in enumerate(rules):
        name, raw = (rule, None) if isinstance(rule, str) else next(iter(rule.items()))
        pointer = f"{base}/{i}/{escape(name)}"
        out += problems.compiled(pointer, name, compile_rule, name, raw, ctx, pointer)
    runs = by_source_key(out, ctx)
    if any(_opens_a_call(rule.facts.opens, ctx) for rule in out[:-1]):
        return [judged_after_the_event(runs)]
    return runs


def _opens_a_call(pattern: str | None, ctx: CompileContext) -> bool:
    """Does a rule that opens the item at ``pattern`` open one of the calls' list, when a
    ``calls.where`` judges them? Followed by another rule of the same event (which may still
    change what ``where`` reads), the judgement is then deferred to the end of the event;
    every other list (each built-in's among them) runs as it is."""
    calls = ctx.wire.calls
    if pattern is None or calls is None or calls.where is None:
        return False
    steps = paths.parse_target(calls.pattern)
    return paths.parse_target(pattern)[: len(steps)] == steps


def compile_rule(name: str, raw: Any, ctx: CompileContext, pointer: str = "") -> Rule:
    """One rule through its operation's entry; a ``when`` in its arguments guards it."""
    entry = OPERATIONS[name]
    args = dict(entry.arguments(raw))  # a copy: the descriptor's is never changed
    facts = entry.facts(args, ctx, pointer)
    when_path = args.pop("when", None)
    op = entry.compile(args, ctx)
    if when_path is not None:
        op = _guarded(op, compile_read(when_path, ctx.choice_alias))
    return Rule(op, facts)


def by_source_key(rules: list[Rule], ctx: CompileContext) -> list[Run]:
    """Dispatch an event's rules on which of their sources the event carries.

    Most rules find nothing in most events: Bedrock's ``contentBlockDelta`` has six rules
    under ``delta`` (text, toolUse, reasoning text, signature, redacted content, toolResult)
    and each event carries one; Gemini's rules for every chunk read a finish reason, usage
    and an error that nearly every chunk lacks. A dictionary look-up decides instead of a
    call that reads a path and finds nothing. Only rules whose operation declares a source
    (it does nothing without it) qualify, and only when every rule of the list does, so that
    the declared order always holds.
    """
    ops = [rule.run for rule in rules]
    declared = (rule.facts.source for rule in rules)
    sources = [source for source in declared if source and source.path and is_plain(source.path)]
    if len(ops) < 2 or len(sources) < len(ops):
        return ops
    rooted = []  # (reads the choice, field chain under that root)
    for source in sources:
        chain = parse_chain(source.path)
        on_choice = chain[0] == ctx.choice_alias
        rooted.append((on_choice, chain[1:] if on_choice else chain))
    if not all(chain for _, chain in rooted):
        return ops
    keyed = _keyed_under_common_prefix(ops, rooted, ctx)
    if keyed is not None:
        return [keyed]
    # A guard on a single field (``when: done``) needs a true value there, not just the key.
    entries = tuple(
        (on_choice, chain[0], len(chain) == 1 and source.must_be_true, op)
        for (on_choice, chain), source, op in zip(rooted, sources, ops, strict=True)
    )

    def present_only(asm: Assembly, ev: Any, ch: Any) -> None:
        for on_choice, key, must_be_true, op in entries:
            root = ch if on_choice else ev
            if root.__class__ is dict and (root.get(key) if must_be_true else key in root):
                op(asm, ev, ch)

    return [present_only]


def _keyed_under_common_prefix(
    ops: list[Run], rooted: list[Any], ctx: CompileContext
) -> Run | None:
    """Rules whose sources share an object under one root (``delta.text``,
    ``delta.toolUse.input``): one read of that object, then the rules of the key it holds."""
    on_choice = rooted[0][0]
    chains = [chain for _, chain in rooted]
    prefix = commonprefix([chain[:-1] for chain in chains])  # the object every source is in
    if not prefix or len({root for root, _ in rooted}) > 1:
        return None
    alias = ctx.choice_alias  # a source reads the choice only through its alias
    path = ".".join([alias, *prefix] if alias is not None and on_choice else prefix)
    under = compile_read(path, alias)
    keyed = tuple((chain[len(prefix)], op) for chain, op in zip(chains, ops, strict=True))
    by_key = {key: tuple(op for k, op in keyed if k == key) for key, _ in keyed}  # in order

    def dispatch(asm: Assembly, ev: Any, ch: Any) -> None:
        sub = under(ev, ch)
        if sub.__class__ is dict and len(sub) == 1:  # the usual event: one source present
            for key in sub:
                for op in by_key.get(key, ()):
                    op(asm, ev, ch)
        elif sub.__class__ is dict:
            for key, op in keyed:  # several sources present: the declared order
                if key in sub:
                    op(asm, ev, ch)

    return dispatch


def _guarded(op: Run, when: Any) -> Run:
    """An operation that runs only when the event holds a true value at ``when``."""

    def guarded(asm: Assembly, ev: Any, ch: Any) -> None:
        if when(ev, ch):
            op(asm, ev, ch)

    return guarded


def _reasoning_places(spec: Any) -> tuple[TextPlace, ...]:
    """The ``reasoning`` section (one place, or a list of them) as compiled places."""
    if not spec:
        return ()
    places = spec if isinstance(spec, list) else [spec]
    return tuple(
        TextPlace(pattern=paths.pattern(place["at"]), where=_predicate(place, "where"))
        for place in places
    )


def _check_reasoning_streamed(section: Any, ctx: CompileContext, problems: Problems) -> None:
    """A reasoning place (of the wire's, ``ctx.wire.reasoning``) that no event rule writes
    would never stream: say so at load, at its place in the ``reasoning`` ``section`` (a
    list of places, or one place)."""
    for i, place in enumerate(ctx.wire.reasoning):
        if place.pattern not in ctx.reasoning_streamed:
            problems.add(
                f"/reasoning/{i}/at" if isinstance(section, list) else "/reasoning/at",
                f"reasoning[{i}].at {place.pattern}: no event rule streams text there (an "
                "append at it, a fold's concat key or parts, or an extend's parts); its "
                "reasoning would never stream",
            )


def _message_reader(places: tuple[TextPlace, ...]) -> Callable[[dict[str, Any]], str]:
    """A reader of the reasoning of a whole message, its strings joined in message order: a
    walk that descends only along the declared patterns."""
    # each pattern once, in order, with the wheres of every place at it
    at = {p.pattern: any_where([q.where for q in places if q.pattern == p.pattern]) for p in places}
    steps_of = [paths.parse_target(pattern) for pattern in at]
    # the patterns the walk goes down: every step of a declared one but its last
    prefixes = {paths.pattern_of(steps[:k]) for steps in steps_of for k in range(1, len(steps))}

    def strings(node: Any, item: Any, pattern: str) -> Iterator[str]:
        if isinstance(node, list):
            inner = items_of(pattern)
            for entry in node:
                if isinstance(entry, dict):
                    yield from strings(entry, entry, inner)
            return
        for key, value in node.items():
            here = f"{pattern}.{key}" if pattern else key
            if here in at:
                where = at[here]
                if isinstance(value, str) and value and (where is None or where(item)):
                    yield value
            elif here in prefixes and isinstance(value, (dict, list)):
                yield from strings(value, item, here)

    return lambda message: "".join(strings(message, message, ""))


def _call_place(spec: dict[str, Any], pointer: str, problems: Problems) -> CallsSpec:
    """One place of the calls: ``calls`` itself (the items of a list), or one of
    ``calls.also``, which may also be a single object at a field chain (``single``: the
    schema's ``call-pattern`` refuses one for ``calls.at``)."""
    pattern, chains, tail = pattern_parts(spec["at"])
    single = () if chains else tail
    if tail and chains:
        problems.add(f"{pointer}/at", "calls.at must end with [*]")
    where = spec.get("where")
    answered = spec.get("answered")
    if answered:  # the stream's own calls are no client's: never calls, however they end
        own = {"not": answered["where"]}
        where = {"all": [where, own]} if where else own
    return CallsSpec(
        pattern=pattern,
        list_fields=chains,
        where=compile_predicate(where) if where else None,
        name=compile_read(spec["name"]),
        id=compile_read(spec["id"]) if spec.get("id") else (lambda item: None),
        args_fields=parse_chain(spec["args"]),
        args_form=spec["args_form"],
        args_whole=spec["args_arrive"] == "whole",
        cut_when=_predicate(spec, "cut_when"),
        single=single,
        held=bool(answered and answered["later"]),
    )


def _text_spec(spec: dict[str, Any] | None) -> TextSpec:
    """The ``text`` section compiled (an empty :class:`TextSpec` when the wire has none)."""
    if not spec:
        return TextSpec()
    pattern, chains, tail = pattern_parts(spec["at"])
    parts = spec.get("parts")
    return TextSpec(
        pattern=pattern,
        list_fields=chains,
        tail=tail,
        where=_predicate(spec, "where"),
        part_where=_predicate(parts, "where"),
        part_field=parts["field"] if parts else None,
    )


class ExtractionStrategy:
    """One wire format, compiled from its descriptor. Immutable and shared between streams."""

    # The end of a stream, as the operations that keep state open across events close it:
    # ``end(assembly, cut)`` each, run by ``Assembly.close_open`` before the calls close, so
    # that the assembly needs to know no operation.
    at_end: tuple[Callable[[Assembly, bool], None], ...] = ()
    nothing_follows = True
    is_wire = True  # every compiled descriptor is a wire (a codec's TextStrategy says False)

    def __init__(
        self,
        descriptor: dict[str, Any],
        source: str | None = None,
        *,
        problems: Problems | None = None,
        sections: Any = None,
        serve: Any = NOT_COMPILED,
    ) -> None:
        """Compile ``descriptor``. With ``problems``, every problem found is added there (the
        validator's one pass: it locates them); without, they are raised together as a
        :class:`~engine.errors.DescriptorError` (a ValueError), each at its JSON pointer (a
        dict has no lines: ``source``, or ``<descriptor>``, names it).
        ``sections``: its ``results`` and ``declarations`` compiled already (by that pass);
        ``serve``: its ``serve`` section compiled already (None: it has none)."""
        self._serve, self.source = serve, source
        file = source or "<descriptor>"
        if problems is None:  # a dict no validator saw: asked of the schema first, as a file is
            descriptor = _as_yaml_1_2(descriptor)
            # A dict need not carry a file's header (``title``, ``docs``) nor every section:
            # a top-level key it lacks (``required`` at the root) is no problem of it, unless
            # nothing compiles without it (``_A_WIRE_NEEDS``).
            said = schema_problems(descriptor)  # each (pointer, message, rule, ...)
            checked = [problem[:3] for problem in said if _of_a_dict(problem, descriptor)]
            if checked:
                raise DescriptorError([Problem(file, 0, 0, *problem) for problem in checked])
            if "codec" in descriptor:  # no wire: what compiles a codec is engine.text's
                raise DescriptorError([Problem(file, 0, 0, "/codec", _CODEC, "compile")])
        found = Problems() if problems is None else problems
        self._compile(descriptor, found, sections)
        if problems is None and found:
            raise DescriptorError(
                [Problem(file, 0, 0, at, message, "compile") for at, message in found]
            )

    def _compile(self, descriptor: dict[str, Any], problems: Problems, sections: Any) -> None:
        self.descriptor = descriptor
        descriptor = with_defaults(descriptor)  # the one place defaults are written in
        # The ``results`` and ``declarations`` sections, compiled with the strategy (or as the
        # validating pass compiled them), so that they live and die with it. The schema has
        # checked them already (the validator, or __init__ for a dict): what is left to find
        # is in their templates, every problem at its own pointer.
        if sections is None:
            sections, found = check_sections(descriptor)
            problems.extend((pointer, message) for pointer, message, _ in found)
        self.sections = sections
        self.name: str = descriptor["name"]
        self.title: str = descriptor.get("title", self.name)
        calls_spec = descriptor.get("calls") or {}
        places = [_call_place(calls_spec, "/calls", problems)] if calls_spec else []
        for i, also in enumerate(calls_spec.get("also") or ()):
            places.append(_call_place(also, f"/calls/also/{i}", problems))
        self.spec = Spec(
            initial_message=descriptor.get("message") or {},
            text=_text_spec(descriptor.get("text")),
            sentinels=frozenset(descriptor.get("done_sentinels", ())),
            reasoning=_reasoning_places(descriptor.get("reasoning")),
            turn=compile_turn(descriptor, problems),
            places=tuple(places),
        )
        events = descriptor["events"]
        self._choice = choice = events.get("choice")
        alias = choice["alias"] if choice else None
        ctx = CompileContext(self.spec, choice_alias=alias, list_order=events["list_order"])
        self.leaks_into_text: bool = descriptor["leaks_into_text"]
        before = len(problems)
        self.program = Program(events, ctx, problems)
        # Nothing may follow the DONE (no ``events.after_done``): the DONE ends it all.
        self.nothing_follows = self.program.after_done is None
        self.at_end = tuple(ctx.at_end)
        self.rule_facts = tuple(ctx.facts)
        if len(problems) == before:  # what the rules stream is known when all compiled
            _check_reasoning_streamed(descriptor.get("reasoning"), ctx, problems)
        self._reasoning_read = _message_reader(self.spec.reasoning)
        recognize = descriptor.get("recognize", {})
        self._recognize_chunk = compile_predicate(recognize["chunk"])
        self._recognize_message = _predicate(recognize, "message")
        self._recognize_error = _predicate(recognize, "error")

    def __repr__(self) -> str:
        return f"<ExtractionStrategy {self.name}>"

    # -- identification ----------------------------------------------------------------------

    def recognizes(self, shape: Any) -> bool:
        """Is ``shape`` (one chunk, or a whole assembled message) of this wire?"""
        if not isinstance(shape, dict):
            return False
        message = self._recognize_message
        return self._recognize_chunk(shape) or (message is not None and message(shape))

    def recognizes_chunk(self, chunk: Any) -> bool:
        return isinstance(chunk, dict) and self._recognize_chunk(chunk)

    def recognizes_error(self, chunk: Any) -> bool:
        """Is ``chunk`` this wire's provider error as it may come first (``recognize.error``)?
        Asked only of a chunk that no strategy's ``recognizes_chunk`` claims: an error
        envelope is often shared, so it names this wire only when nothing else does."""
        check = self._recognize_error
        return check is not None and isinstance(chunk, dict) and check(chunk)

    def is_stream_complete(self, chunk: Any) -> bool:
        """Is this chunk the wire's DONE?"""
        if not isinstance(chunk, dict):  # no JSON object: the DONE only as a sentinel line
            return isinstance(chunk, str) and chunk.strip() in self.spec.sentinels
        # Run the rules on a scratch assembly: DONE is whatever a finish or error rule says.
        scratch = self.new_assembly()
        try:
            self.program.apply(scratch, chunk, 0)
        except Exception:  # a chunk that does not fit is not a DONE
            return False
        return scratch.finished

    # -- whole messages ------------------------------------------------------------------------

    def _call_items(self, message: Any) -> list[tuple[CallsSpec, Any, dict[str, Any]]]:
        """Every call item of a whole message: each place's, in the order of the places."""
        if not isinstance(message, dict):
            return []
        return [(place, *found) for place in self.spec.places for found in place.items_at(message)]

    def answerable(self, message: Any) -> Any:
        """``message`` as the API accepts it back in a history: a copy in which each call
        whose arguments never parsed (cut, invalid, too deep: ``incomplete_calls``) carries
        the empty arguments in the wire's form (``"{}"`` on a string wire, ``{}`` on an
        object wire) instead of its raw text, which the API would refuse (an object wire's
        ``input`` must be an object). Its error result says what was wrong; the message
        itself is unchanged. Without such a call, ``message`` itself."""
        if not self.incomplete_calls(message):
            return message
        copy = json.loads(json.dumps(message))  # plain JSON: the assembled message is
        for calls, _, item in self._call_items(copy):
            # absent arguments are no arguments; free-form text always reads (is never refused)
            if dig(item, calls.args_fields) is not None and calls.arguments_of(item) is None:
                parent = dig(item, calls.args_fields[:-1])  # an object: the arguments are in it
                parent[calls.args_fields[-1]] = "{}" if calls.args_form == "string" else {}
        return copy

    def free_form_ids(self, message: Any) -> list[Any]:
        """The CALL-IDs of the free-form calls of a whole message (``args_form: text``)."""
        return [
            calls.id(item)
            for calls, _, item in self._call_items(message)
            if calls.free_form and calls.id(item) is not None
        ]

    def forming(self, message: Any) -> Forming:
        for calls, _, first in self._call_items(message):  # the first call item, if any
            return Forming(True, _text_or_none(calls.name(first)))
        return NOT_FORMING

    def extract(self, message: Any) -> list[ExtractedCall]:
        out: list[ExtractedCall] = []
        for calls, _, item in self._call_items(message):
            name, args = calls.name(item), calls.arguments_of(item)
            # a call cut short is none: incomplete_calls() reports it
            if isinstance(name, str) and name and args is not None and not calls.is_cut(item):
                # The message's own object is copied: a client may edit what it was handed.
                args = copy_json(args) if args is dig(item, calls.args_fields) else args
                out.append(ExtractedCall(name, args, calls.id(item), free_form=calls.free_form))
        return out

    def incomplete_calls(self, message: Any) -> list[CallIncomplete]:
        """The calls of a whole message that ``extract`` leaves out because their arguments
        never parse, as the buffer reports them at the stream's DONE: ``reason`` ``"cut"``
        (a JSON text that stops short), ``"invalid"`` or ``"too deep"``; ``slot`` the call's
        position in its list. A driver reports them (README, "With a driver": ``incomplete_calls``),
        so that a message handed over whole is never silent where its stream would not be. Absent
        arguments are not among them: there is nothing that failed to parse."""
        out = []
        for calls, slot, item in self._call_items(message):
            raw, cut = dig(item, calls.args_fields), calls.is_cut(item)
            # free-form text is whole in a whole message, never invalid
            if not cut and (calls.free_form or raw is None or calls.arguments_of(item) is not None):
                continue
            raw = "" if raw is None else raw
            reason, cause = ("cut", None) if cut else _never_parsed(raw, calls.args_form)
            shown = raw if isinstance(raw, str) else dumps_any_depth(raw)
            out.append(calls.incomplete_call(item, slot, shown, reason, cause))
        return out

    def content_text(self, message: Any) -> str:
        text = self.spec.text
        if text.pattern is None or not isinstance(message, dict):
            return ""
        pieces = []
        for _, item in items_under(message, text.list_fields):
            if text.list_fields and text.where is not None and not text.where(item):
                continue
            value = dig(item, text.tail)
            if isinstance(value, str):
                pieces.append(value)
            elif isinstance(value, list) and text.part_field is not None:
                # typed parts (``text.parts``): every part's text without a ``where``, as the
                # stream shows it
                field, where = text.part_field, text.part_where
                for part in value:
                    shown = isinstance(part, dict) and (where is None or where(part))
                    if shown and isinstance(part.get(field), str):
                        pieces.append(part[field])
        return "".join(pieces)

    def reasoning_text(self, message: Any) -> str:
        """The reasoning a whole message carries, in message order, at the places the
        descriptor's ``reasoning`` section declares ("" when none: never display text)."""
        return self._reasoning_read(message) if isinstance(message, dict) else ""

    # -- history -------------------------------------------------------------------------------

    def result_messages(self, message: Any, records: list[Any]) -> list[dict[str, Any]]:
        """The native history for these calls: the assistant turn and the results, keyed by
        call id, as the descriptor's ``results`` section declares them."""
        return result_messages(self, message, records)

    def tool_declarations(self, tools: list[Any]) -> Any:
        """The wire's request fragment declaring these tools (``declarations`` section)."""
        return tool_declarations(self, tools)

    # -- streams -------------------------------------------------------------------------------

    def streamed_fields(self) -> list[tuple[str, ...]]:
        """Where string fragments sit in an event: the field chains (``*`` for every list
        entry) whose strings an operation concatenates (what each declares in the table:
        ``append``, ``args``, ``fold``'s concat keys and lists). Tools and property tests use
        it to re-split a stream's fragments without knowing the wire."""
        streamed = (streamed for facts in self.rule_facts for streamed in facts.streamed)
        chains = [(self._field_chain(path), tail) for path, tail in streamed]
        return sorted({(*fields, *tail) for fields, tail in chains if fields is not None})

    def done_fields(self) -> list[tuple[str, ...]]:
        """Where a value makes an event the wire's DONE (a ``finish`` rule's ``when``, an
        ``error`` rule's ``from``), as field chains like ``streamed_fields``'. A re-split
        keeps them on the last piece of an event only: a DONE copied into the first piece
        would end the stream before the rest of the event, which no provider sends."""
        chains = (self._field_chain(path) for facts in self.rule_facts for path in facts.ends)
        return sorted({fields for fields in chains if fields})

    def _field_chain(self, path: Any) -> tuple[str, ...] | None:
        """A read path as a field chain in the event (the choice alias as its list and
        ``*``); None for a JMESPath, which names no one field."""
        choice = self._choice  # as compiled: its alias written in where the descriptor has none
        if not is_plain(path) or not is_plain(choice["list"] if choice else ""):
            return None
        fields = parse_chain(path) if path else ()
        if choice and fields and fields[0] == choice["alias"]:
            fields = (*parse_chain(choice["list"]), "*", *fields[1:])
        return fields

    def serve_spec(self) -> Any:
        """The compiled ``serve`` section (:class:`~engine.compile.serve.ServeSpec`), None when
        the descriptor has none: as the validating pass compiled it, else compiled on first
        use (raising :class:`~engine.compile.serve.ServeError` with every problem)."""
        if self._serve is NOT_COMPILED:
            from .serve import compile_serve

            self._serve = compile_serve(self.descriptor)
        return self._serve

    def new_assembly(self) -> Assembly:
        return Assembly(self)

    def message_of(self, asm: Assembly) -> dict[str, Any]:
        return cast("dict[str, Any]", materialize(asm.root))  # the root is a dict


_A_WIRE_NEEDS = ("name", "recognize", "events")  # the top-level keys a wire compiles from


def _of_a_dict(problem: tuple[Any, ...], descriptor: dict[str, Any]) -> bool:
    """Is a schema problem one of a dict too? All are but a top-level key it lacks (a root
    ``required``), unless a wire compiles from it (``_A_WIRE_NEEDS``; a codec's keys are
    engine.text's to ask)."""
    pointer, message, rule = problem[:3]
    if pointer or rule != "required":
        return True
    return "codec" not in descriptor and message in map(missing_key, _A_WIRE_NEEDS)


def _text_or_none(value: Any) -> str | None:
    """A name or an id as a call carries it: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _predicate(section: dict[str, Any] | None, key: str) -> Predicate | None:
    """The predicate a section declares at ``key``, None when it (or the section) has none."""
    spec = section.get(key) if section else None
    return compile_predicate(spec) if spec else None


def _as_yaml_1_2(data: Any) -> Any:
    """``data`` with each key ``True`` read as ``on``: a YAML 1.1 loader (PyYAML's
    ``safe_load``) reads an unquoted ``on:`` key as the boolean, and no key of a descriptor
    is a boolean (JSON keys are strings), so the descriptor file means ``on`` there."""
    if isinstance(data, list):
        return [_as_yaml_1_2(item) for item in data]
    if not isinstance(data, dict):
        return data
    return {("on" if key is True else key): _as_yaml_1_2(value) for key, value in data.items()}


def parse_arguments(raw: Any, form: str = "string") -> dict[str, Any] | None:
    """The rule (README, "What it does"): an object passes; a JSON text counts once its
    first JSON value is an object (the call's arguments, as in a stream: issue 16, one fate per
    call).

    A whole message is at its DONE: on a string wire its ``""`` is a call without arguments
    (as the stream's DONE makes it). On an object wire a string is the raw text of arguments
    that never parsed (a cut call keeps it, ``""`` included), never a call. Arguments nested
    deeper than the buffer takes (``MAX_DEPTH``) are never a call either, as in a stream."""
    if isinstance(raw, str):
        if not raw.strip():
            return {} if raw == "" and form == "string" else None
        text = raw.lstrip(" \t\n\r")
        try:  # anything but an object's text on a string wire is never a call: loads says so
            raw = first_value(text) if form == "string" and text[:1] == "{" else json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: deeper than the parser reads
            return None
    return raw if isinstance(raw, dict) and not nests_deeper(raw, MAX_DEPTH) else None


def _never_parsed(raw: Any, form: str) -> tuple[str, str | None]:
    """Why arguments that ``parse_arguments`` refused will never run, in the words of the
    buffer's argument reader (:class:`ArgsStream`) at a normal DONE: the reason, and the
    cause (``CallIncomplete.cause``) where the message alone can say it: not JSON, not an
    object, too deep; for text that stops short it cannot (a length limit, the connection,
    or the DONE inside the call: None). One case reads otherwise: ``""`` on an object wire
    is what the buffer leaves of a call cut before its first fragment ("cut"), where the
    reader alone would take it for no arguments."""
    stream = new_args_stream(form, raw, whole=raw.__class__ is not str)  # text is scanned
    stream.close()
    reason = stream.incomplete_reason
    if reason is None or reason == "cut":
        return "cut", None
    return reason, stream.invalid_cause()
