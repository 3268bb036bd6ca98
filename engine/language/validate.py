"""Checking a descriptor: every problem, each located in the YAML source.

A descriptor is read with the safe loader, keeping the line and column of every key and value
(:mod:`engine.language.yamlsource`); one that ``extends`` another is first resolved with its parents
(:mod:`engine.language.extends`), positions kept, and the resolved descriptor is what is checked, in
three passes; every problem found is reported, sorted by position, as
``FILE:LINE:COL: /json/pointer: message``:

1. the JSON Schema (``schemas/format.schema.json``, draft 2020-12), all errors collected. The
   schema's custom formats (``read-path``, ``jmespath``, ``presence-path``, ``template-path``,
   ``target-path``, ``item-target``, ``field-target``, ``pattern``, ``call-pattern``,
   ``field-chain``, ``python-regex``) are checked here by compiling the value in its form of
   the one path language (:mod:`engine.compile.paths`): a path that does not parse (its column
   named), a path of an old dialect (its new form named), a JMESPath that does not compile, a
   ``[*]`` where an operation needs one SLOT, an ``open`` that does not end with a SLOT step,
   ``calls.at`` without ``[*]``, an index where a value is installed at a field, a healing
   pattern that is not a regular expression;
2. what a schema cannot say: ``name`` equals the file's stem, sections in the schema's order
   (as the file writes them), every operation known to the engine, the ``results`` and
   ``declarations`` templates (checked by :mod:`engine.compile.templates`, every problem at its
   pointer; the schema types templates too, and where both see a problem in one part of a
   template the compiler's wording is the one reported);
3. when all of that passes, the descriptor is compiled (a wire, or the text codec), so that
   whatever the checks above miss is still a reported problem and never a traceback at load.

A problem's ``rule`` names the check: a schema keyword (``type``, ``required``,
``enum``...), or ``unknown-key``, ``moved`` (a key of before, its new form named),
``operation``, ``path``, ``old-path``, ``jmespath``, ``slot``, ``target``, ``item-target``,
``field-target``, ``pattern``, ``call-pattern``, ``field-chain``, ``regex``, ``name``,
``order``, ``template``, ``yaml``, ``compile``, ``extends``, and for what can be known of
the flow when the descriptor loads, ``args-unwritten`` (``calls.args`` that no operation
writes) and ``slot-key`` (a rule that looks an item up by a slot key no rule opens it by).

A problem in a value the file inherited (through ``extends``) is reported in the file being
checked, at its ``extends`` line, with the pointer into the resolved descriptor, and says where
the inherited value is written: ``... (inherited from formats/openai_chat.yaml:52:7)``. The fix
is usually an override in this file, and a built-in's own file may not even be writable.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.exceptions import relevance

from ..compile.operations import OPERATIONS, operation_rules, rule_lists
from ..compile.ops import pattern_of
from ..compile.paths import (
    JMESPATH,
    PathError,
    Segment,
    compile_lookup,
    compile_presence,
    compile_read,
    parse_chain,
    parse_target,
    read_steps,
)
from ..compile.schema import schema
from ..compile.schema import schema_path as schema_path  # the CLI and tests read it here
from ..compile.serve import TEMPLATES as SERVE_TEMPLATES
from ..errors import Problem, escape
from .extends import KEY as EXTENDS
from .extends import resolve
from .yamlsource import SourceMap, YAMLSourceError, load

# -- the schema --------------------------------------------------------------------------------


def operation_names() -> list[str]:
    """The operations the schema declares, in its order."""
    return list(schema()["$defs"]["operation_mapping"]["properties"])


def descriptor_kind(data: Any) -> str:
    """``codec_descriptor`` (a text codec) or ``wire_descriptor``, as the schema's root
    chooses between them."""
    return "codec_descriptor" if isinstance(data, dict) and "codec" in data else "wire_descriptor"


def section_order(kind: str = "wire_descriptor") -> list[str]:
    """Top-level keys in the order a descriptor writes them: the header, then the sections."""
    defs = schema()["$defs"]
    return [*defs["header"]["properties"], *defs[kind]["properties"]]


# -- the custom formats: paths compiled as the engine compiles them -----------------------------


class PathProblem(ValueError):
    """A path the engine would refuse; ``rule`` names the check."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


def _path_problem(exc: PathError, prefix: str = "") -> PathProblem:
    """A path of an old dialect is its own rule, ``old-path``: the message says its new form."""
    return PathProblem(f"{prefix}{exc}", "old-path" if exc.hint else "path")


def _read_path(value: str) -> None:
    if value == "":
        return
    try:
        read_steps(value)
    except PathError as exc:
        raise _path_problem(exc, "not a read path: ") from None


def _jmespath(value: str) -> None:
    try:
        compile_read({JMESPATH: value})
    except PathError as exc:
        raise PathProblem(str(exc), "jmespath") from None


def _template_path(value: str) -> None:
    try:
        compile_lookup(value)
    except PathError as exc:
        raise _path_problem(exc, "not a template path: ") from None


def _segments(value: str) -> tuple[Segment, ...]:
    """Parse a target or pattern; a bad slot step is reported as such."""
    try:
        return parse_target(value)
    except PathError as exc:
        if exc.in_slot:
            raise PathProblem(str(exc), "slot") from None
        raise PathProblem(f"target path does not parse: {exc}", "target") from None


def _target(value: str) -> tuple[Segment, ...]:
    segments = _segments(value)
    if any(seg.any for seg in segments):
        raise PathProblem(
            "[*] is for patterns; an operation writes one item: name its SLOT, e.g. content[index]",
            "slot",
        )
    return segments


def _item_target(value: str) -> None:
    segments = _target(value)
    if not segments or segments[-1].field is not None:
        raise PathProblem("must end with a SLOT step, e.g. content[index]", "item-target")


def _field_target(value: str) -> None:
    segments = _target(value)
    if not segments or segments[-1].field is None:
        raise PathProblem("must end with a field, e.g. content[index].text", "field-target")


def _field_chain(value: str) -> None:
    try:
        parse_chain(value)
    except PathError as exc:
        raise PathProblem(str(exc), "field-chain") from None


def _presence_path(value: Any) -> None:
    """``is: "null"`` asks whether a key is there: a field chain (with ``[n]``), never a
    JMESPath, whose result cannot tell an absent key from a null one."""
    if isinstance(value, dict):
        raise PathProblem(
            "is: null asks whether a key is present, which a JMESPath result cannot tell from "
            "null: write the field chain of the key (meta.flags[0])",
            "field-chain",
        )
    try:
        compile_presence(value)
    except PathError as exc:
        raise PathProblem(f"a presence test takes a field chain: {exc}", "field-chain") from None


def _python_regex(value: str) -> None:
    try:
        re.compile(value)
    except re.error as exc:
        raise PathProblem(f"not a Python regular expression: {exc}", "regex") from None


def _pattern(value: str) -> tuple[Segment, ...]:
    segments = _segments(value)
    for seg in segments:
        if seg.field is None and not seg.any:
            raise PathProblem(
                f"a pattern matches every item with [*], not a SLOT [{seg.slot_path}]", "pattern"
            )
    return segments


def _call_pattern(value: str) -> None:
    segments = _pattern(value)
    if not segments or not segments[-1].any:
        raise PathProblem("must end with [*], e.g. content[*]", "call-pattern")


FORMATS = {
    "read-path": _read_path,
    "jmespath": _jmespath,
    "presence-path": _presence_path,
    "template-path": _template_path,
    "target-path": _target,
    "item-target": _item_target,
    "field-target": _field_target,
    "pattern": _pattern,
    "call-pattern": _call_pattern,
    "field-chain": _field_chain,
    "python-regex": _python_regex,
}
"""The schema's custom ``format`` values and their checks. Editors ignore them."""


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    for name, check in FORMATS.items():

        def run(instance: Any, check=check, name=name) -> bool:
            if isinstance(instance, str) or name == "presence-path":
                check(instance)
            return True

        checker.checks(name, raises=PathProblem)(run)
    return checker


@functools.cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(schema(), format_checker=_format_checker())


# -- schema errors as problems ------------------------------------------------------------------

_JSON_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)

# Errors whose own wording is better than a subschema's ``errorMessage``.
_SELF_EXPLAINING = frozenset(
    {
        "type",
        "enum",
        "const",
        "required",
        "additionalProperties",
        "unevaluatedProperties",
        "dependentRequired",
        "format",
    }
)


def _kind(value: Any) -> str:
    if isinstance(value, datetime.date):  # an unquoted 2023-06-01 is a YAML timestamp
        return "a date (quote it)"
    for cls, name in _JSON_TYPES:
        if type(value) is cls:
            return name
    return type(value).__name__


def _pointer(path: Iterable[Any]) -> str:
    return "".join("/" + escape(str(part)) for part in path)


def _resolve(fragment: dict) -> dict | None:
    ref = fragment.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = schema()
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _declared_keys(fragment: dict, deep: bool) -> set[str]:
    """The keys an object schema declares; with ``deep``, also those of the subschemas it
    applies in place (what ``unevaluatedProperties`` counts as evaluated)."""
    keys = set(fragment.get("properties", {}))
    if deep:
        subs = [_resolve(fragment), fragment.get("then"), fragment.get("else")]
        subs += fragment.get("allOf", [])
        for sub in subs:
            if isinstance(sub, dict):
                keys |= _declared_keys(sub, deep)
    return keys


def _is_def(fragment: Any, name: str) -> bool:
    target = schema()["$defs"][name]
    return fragment is target or fragment == target


class _Locator:
    """Builds problems for one file from pointers, using the YAML source map.

    A position inherited from a parent (``extends``) is not this file's: the problem is put at
    this file's ``extends`` and names where the inherited value is written.
    """

    def __init__(self, file: str, source: SourceMap) -> None:
        self.file = file
        self.source = source

    def at_value(self, pointer: str, message: str, rule: str) -> Problem:
        return self._problem(pointer, message, rule, prefer_key=False)

    def at_key(self, pointer: str, message: str, rule: str) -> Problem:
        return self._problem(pointer, message, rule, prefer_key=True)

    def _problem(self, pointer: str, message: str, rule: str, prefer_key: bool) -> Problem:
        origin, line, col = self.source.find(pointer, prefer_key)
        if origin is not None:
            message = f"{message} (inherited from {origin}:{line}:{col})"
            line, col = self.source.locate(f"/{EXTENDS}")
        return Problem(self.file, line, col, pointer, message, rule)


def _problems_of_error(err: ValidationError, where: _Locator) -> Iterator[Problem]:
    """One schema error as problems (an object with three unknown keys gives three)."""
    pointer = _pointer(err.absolute_path)
    # An error of iter_errors always carries its keyword, value and schema: jsonschema leaves
    # them unset only on an error built by hand.
    keyword = cast(str, err.validator)
    expected_value: Any = err.validator_value
    rule_schema: Any = err.schema
    instance = err.instance
    if keyword in ("additionalProperties", "unevaluatedProperties") and isinstance(instance, dict):
        allowed = _declared_keys(rule_schema, deep=keyword == "unevaluatedProperties")
        expected = ", ".join(sorted(allowed))
        is_operation = _is_def(rule_schema, "operation_mapping")
        moved = rule_schema.get("x-moved", {}) if isinstance(rule_schema, dict) else {}
        for key in instance:
            if key in allowed:
                continue
            if key in moved:  # a key of before, which the schema says where it went
                yield where.at_key(
                    f"{pointer}/{escape(key)}",
                    f"{key!r} is a key of before: write {moved[key]} (see CHANGELOG.md)",
                    "moved",
                )
            elif is_operation:
                yield where.at_key(
                    f"{pointer}/{escape(key)}",
                    f"unknown operation {key!r}, expected one of: {expected}",
                    "operation",
                )
            else:
                yield where.at_key(
                    f"{pointer}/{escape(key)}",
                    f"unknown key {key!r}, expected one of: {expected}",
                    "unknown-key",
                )
        return
    if keyword == "type":
        wanted = expected_value
        wanted = wanted if isinstance(wanted, list) else [wanted]
        yield where.at_value(
            pointer, f"expected {' or '.join(wanted)}, got {_kind(instance)}", "type"
        )
        return
    if keyword == "required" and isinstance(instance, dict):
        # A rule that requires a key only in some cases (a results mode) says which.
        custom = rule_schema.get("errorMessage") if isinstance(rule_schema, dict) else None
        for key in expected_value:
            if key not in instance:
                message = custom if isinstance(custom, str) else f"missing required key {key!r}"
                yield where.at_key(pointer, message, "required")
        return
    if keyword == "dependentRequired" and isinstance(instance, dict):
        for key, needs in expected_value.items():
            if key in instance:
                for need in needs:
                    if need not in instance:
                        yield where.at_key(
                            f"{pointer}/{escape(key)}",
                            f"{key!r} needs {need!r} beside it",
                            "dependentRequired",
                        )
        return
    if keyword == "enum" and _is_def(rule_schema, "bare_operation"):
        if instance in operation_names():
            message = f"operation {instance!r} takes arguments: write {{{instance}: {{...}}}}"
        else:
            names = ", ".join(sorted(operation_names()))
            message = f"unknown operation {instance!r}, expected one of: {names}"
        yield where.at_value(pointer, message, "operation")
        return
    if keyword in ("enum", "const"):
        choices = expected_value if keyword == "enum" else [expected_value]
        # A YAML null beside "null" in an enum (`is`) is one choice, shown once.
        shown = ", ".join(dict.fromkeys(_choice(v) for v in choices))
        yield where.at_value(pointer, f"{instance!r} is not one of: {shown}", keyword)
        return
    if keyword == "format" and isinstance(err.cause, PathProblem):
        yield where.at_value(pointer, str(err.cause), err.cause.rule)
        return
    custom = rule_schema.get("errorMessage") if isinstance(rule_schema, dict) else None
    if isinstance(custom, str) and keyword not in _SELF_EXPLAINING:
        yield where.at_value(pointer, custom, keyword)
        return
    yield where.at_value(pointer, _plain_message(err), keyword)


def _choice(value: Any) -> str:
    """A choice of an enum as written: bare, but quoted with its escapes when it holds a
    character that would not show (the ``"\\r\\n"`` of a line ending)."""
    if value is None:
        return "null"
    if isinstance(value, str) and not value.isprintable():
        return json.dumps(value)
    return str(value)


def _plain_message(err: ValidationError) -> str:
    value = err.validator_value
    keyword = err.validator
    if keyword == "minItems":
        return "must not be empty" if value == 1 else f"expected at least {value} items"
    if keyword == "maxItems":
        return f"expected at most {value} items"
    if keyword == "minProperties":
        return "must not be empty" if value == 1 else f"expected at least {value} keys"
    if keyword == "maxProperties":
        return f"expected at most {value} key(s)"
    if keyword == "minLength":
        return "must not be empty"
    if keyword == "uniqueItems":
        return "has repeated items"
    if keyword == "minimum":
        return f"expected at least {value}, got {err.instance!r}"
    if keyword == "pattern":
        return f"{err.instance!r} does not match {value}"
    return err.message


def _schema_problems(data: Any, where: _Locator) -> list[Problem]:
    """All schema errors, best first; at a value of the wrong type only that is said."""
    errors = sorted(_validator().iter_errors(data), key=relevance, reverse=True)
    type_errors: dict[str, ValidationError] = {}
    for err in errors:
        if err.validator == "type":
            pointer = _pointer(err.absolute_path)
            known = type_errors.get(pointer)
            # The outermost type check names every type allowed there.
            if known is None or len(err.absolute_schema_path) < len(known.absolute_schema_path):
                type_errors[pointer] = err
    # A custom format says more than the pattern that editors check in its place.
    formats = {_pointer(e.absolute_path) for e in errors if e.validator == "format"}
    out: list[Problem] = []
    for err in errors:
        pointer = _pointer(err.absolute_path)
        if pointer in type_errors and err is not type_errors[pointer]:
            continue
        if err.validator == "pattern" and pointer in formats:
            continue
        out.extend(_problems_of_error(err, where))
    return out


# -- what the schema cannot say -----------------------------------------------------------------


def _name_problems(data: dict, file: str, where: _Locator) -> list[Problem]:
    name = data.get("name")
    path = Path(file)
    if not isinstance(name, str) or path.suffix not in (".yaml", ".yml") or name == path.stem:
        return []
    return [
        where.at_value("/name", f"name {name!r} must equal the file's stem {path.stem!r}", "name")
    ]


def _order_problems(data: dict, where: _Locator, kind: str) -> list[Problem]:
    """Sections out of order, as the file writes them (a resolved descriptor is reordered)."""
    order = {key: i for i, key in enumerate(section_order(kind))}
    out = []
    latest: str | None = None
    for key in data:
        if key not in order:
            continue  # an unknown key is the schema's to report
        if latest is not None and order[key] < order[latest]:
            out.append(
                where.at_key(
                    f"/{escape(key)}", f"section {key!r} belongs before {latest!r}", "order"
                )
            )
        elif latest is None or order[key] > order[latest]:
            latest = key
    return out


def _engine_problems(data: dict, where: _Locator) -> list[Problem]:
    """Operations the schema allows but the engine's table lacks (schema and engine out of
    step: a developer's problem, said where it shows)."""
    out = []
    for base, rules in rule_lists(data.get("events")):
        for i, rule in enumerate(rules):
            if isinstance(rule, str):
                name, pointer = rule, f"{base}/{i}"
            elif isinstance(rule, dict) and len(rule) == 1:
                (name,) = rule
                pointer = f"{base}/{i}/{escape(name)}"
            else:
                continue
            if name in operation_names() and name not in OPERATIONS:
                out.append(
                    where.at_key(
                        pointer, f"operation {name!r} is not implemented by the engine", "operation"
                    )
                )
    return out


TEMPLATES = (
    "/declarations",
    "/results/assistant",
    "/results/result",
    "/results/message",
    "/results/leak/assistant",
    "/results/leak/message",
    *SERVE_TEMPLATES,
)
"""Where templates sit: the template compiler reports the problems inside them (every one,
each at its line), so the schema, which types them for editors, is not asked to repeat it."""


def in_template(pointer: str) -> bool:
    return any(pointer == t or pointer.startswith(t + "/") for t in TEMPLATES)


def _template_problems(
    data: dict, where: _Locator, results_checked: bool
) -> tuple[Any, list[Problem]]:
    """The ``results`` and ``declarations`` templates, checked by their own compiler: every
    problem, each at the JSON pointer of its part; with the sections it compiled (None when
    there is a problem), which the strategy takes as they are, so they compile once. With
    ``results_checked`` (the schema found a problem in the results section outside its
    templates) only the templates' own problems."""
    from ..compile.results import check_sections

    sections, found = check_sections(data)
    problems = [
        where.at_value(pointer, message, rule)
        for pointer, message, rule in found
        if not results_checked or in_template(pointer)
    ]
    return (None if found else sections), problems


def _covered(problem: Problem, by: list[Problem]) -> bool:
    """A schema problem inside a template at a part the template compiler already reports
    (the compiler's wording names the construct)."""
    return any(
        p.pointer.startswith(problem.pointer) or problem.pointer.startswith(p.pointer) for p in by
    )


def _serve_problems(data: dict, where: _Locator) -> list[Problem]:
    """What the schema cannot say of the ``serve`` section (its templates, a path's
    ``{name}`` twice), checked by its own compiler: every problem, each at its line. Asked of
    a section the schema refused too: the compiler reads only what has the schema's shape."""
    from ..compile.serve import check_serve

    _, found = check_serve(data)
    return [where.at_value(pointer, message, rule) for pointer, message, rule in found]


# -- what can be known of the flow when the descriptor loads ------------------------------------


def _unwritten_args(data: dict, where: _Locator) -> list[Problem]:
    """``calls.args`` streams fragments (the default ``args_arrive``) but no operation writes
    there: every call's arguments would stay empty, and no call would ever be runnable."""
    calls = data.get("calls")
    if not isinstance(calls, dict):
        return []
    places = [("/calls", calls)]
    also = calls.get("also")
    if isinstance(also, list):
        places += [(f"/calls/also/{i}", p) for i, p in enumerate(also) if isinstance(p, dict)]
    written = {
        path
        for _, name, spec in operation_rules(data.get("events"))
        for path in OPERATIONS[name].writes_args(spec)
    }
    out = []
    for pointer, place in places:
        at, args = place.get("at"), place.get("args")
        if place.get("args_arrive") == "whole" or not (
            isinstance(at, str) and isinstance(args, str)
        ):
            continue
        wanted = f"{_pattern_of(at)}.{args}"
        if wanted in written:
            continue
        slotted = wanted.replace("[*]", "[SLOT]")
        out.append(
            where.at_value(
                f"{pointer}/args",
                f"no operation writes the calls' arguments at {slotted} (an args or "
                "args_final there, or a fold list's args): every call would stay without "
                "arguments; write them, or declare args_arrive: whole if they come with the "
                "item",
                "args-unwritten",
            )
        )
    return out


def _pattern_of(path: str) -> str:
    return pattern_of(parse_target(path)) if path else ""


def _slot_keys(data: dict, where: _Locator) -> list[Problem]:
    """A rule that addresses an item of a list by a slot key (and ``scope``) with which no
    rule opens that list's items: the items it looks for are opened under another key, so
    every event it handles would be skipped (or start an item apart from them)."""
    opened: dict[str, set[tuple[Any, str]]] = {}
    addressed: list[tuple[str, str, tuple[Any, str], str]] = []
    out = []
    for pointer, name, spec in operation_rules(data.get("events")):
        at = spec.get("at")
        if not isinstance(at, str) or not OPERATIONS[name].slot_keyed:
            continue
        segments = parse_target(at)
        slots = [i for i, seg in enumerate(segments) if seg.field is None]
        if not slots:
            if spec.get("scope") is not None:
                out.append(
                    where.at_value(
                        f"{pointer}/scope",
                        f"a scope keys a SLOT, and {at!r} has no slot step to scope",
                        "slot-key",
                    )
                )
            continue
        last = slots[-1]
        list_pattern = pattern_of(segments[: last + 1])
        key = (spec.get("scope"), segments[last].slot_path or "")
        if OPERATIONS[name].opens(spec):
            opened.setdefault(list_pattern, set()).add(key)
        addressed.append((pointer, list_pattern, key, at))
    for pointer, list_pattern, key, at in addressed:
        keys = opened.get(list_pattern)
        if not keys or key in keys:
            continue
        shown = ", ".join(sorted(_key_text(k) for k in keys))
        out.append(
            where.at_value(
                f"{pointer}/at",
                f"slot key {_key_text(key)} of {at!r}: no rule opens an item of "
                f"{list_pattern} by it (they open by {shown}); its events would find no item",
                "slot-key",
            )
        )
    return out


def _key_text(key: tuple[Any, str]) -> str:
    scope, path = key
    return f"[{path}]" if scope is None else f"[{path}] in scope {scope!r}"


def _flow_problems(data: dict, where: _Locator) -> list[Problem]:
    """What the schema cannot see across sections, found before any stream runs."""
    if descriptor_kind(data) != "wire_descriptor" or not isinstance(data.get("events"), dict):
        return []
    try:
        return _unwritten_args(data, where) + _slot_keys(data, where)
    except PathError:  # a bad path is reported by the schema pass; compiling says the rest
        return []


def _compile(data: dict, where: _Locator, sections: Any) -> tuple[Any, list[Problem]]:
    """The one compile of a checked descriptor: its strategy, and every problem the compiler
    found at the pointer of the value at fault (a rule that does not compile, a reasoning
    place no rule streams), which the checks before it cannot see."""
    from ..compile.strategy import ExtractionStrategy, Problems

    found = Problems()
    try:
        if descriptor_kind(data) == "codec_descriptor":
            from ..text.strategy import TextStrategy

            strategy: Any = TextStrategy(data, source=where.file, sections=sections)
        else:
            strategy = ExtractionStrategy(
                data, source=where.file, problems=found, sections=sections
            )
    except Exception as exc:  # noqa: BLE001 - whatever the compiler refuses is a problem
        message = str(exc) or exc.__class__.__name__
        return None, [where.at_value("", f"does not compile: {message}", "compile")]
    problems = [
        where.at_value(pointer, f"does not compile: {message}", "compile")
        for pointer, message in found.found
    ]
    return (None if problems else strategy), problems


# -- entry points -------------------------------------------------------------------------------


def validate_text(text: str, file: str) -> tuple[Any, list[Problem]]:
    """Check a descriptor's YAML text; ``file`` names it in the problems (and gives the stem
    that ``name`` must equal, and the folder that ``extends: PATH`` is relative to). Returns
    the data, ``extends`` resolved (None when the YAML does not parse), and every problem,
    sorted by position."""
    data, problems, _ = compile_text(text, file)
    return data, problems


def compile_text(text: str, file: str) -> tuple[Any, list[Problem], Any]:
    """Check and compile a descriptor's YAML text in one pass: :func:`validate_text`'s data
    and problems, and the strategy compiled on the way (None when there is a problem), so
    that a descriptor that loads is compiled once."""
    try:
        written, source = load(text)
    except YAMLSourceError as exc:
        return None, [Problem(file, exc.line, exc.col, exc.pointer, str(exc), "yaml")], None
    data, source, problems = resolve(written, source, file)
    if problems:
        return written, _unique(problems), None
    if data is not written:
        data = _in_section_order(data)
    where = _Locator(file, source)
    checked = _schema_problems(data, where)
    problems = [p for p in checked if not in_template(p.pointer)]
    strategy = None
    if isinstance(data, dict):
        problems += _name_problems(data, file, where)
        problems += _order_problems(written, where, descriptor_kind(data))
        problems += _engine_problems(data, where)
        in_results = any(p.pointer.startswith(("/results", "/declarations")) for p in problems)
        sections, templates = _template_problems(data, where, in_results)
        templates += _serve_problems(data, where)
        inside = [p for p in checked if in_template(p.pointer) and not _covered(p, templates)]
        problems += templates + inside
        if not problems:
            problems += _flow_problems(data, where)
        if not problems:
            strategy, found = _compile(data, where, sections)
            problems += found
    return data, _unique(problems), strategy


def _unique(problems: list[Problem]) -> list[Problem]:
    """In position order, each problem said once: two schema rules (a ``maxProperties`` and a
    ``not``, say) may report the same message at the same place, which reads as a repeat."""
    seen: dict[tuple, Problem] = {}
    for problem in sorted(set(problems), key=_position):
        key = (problem.file, problem.line, problem.col, problem.pointer, problem.message)
        seen.setdefault(key, problem)
    return list(seen.values())


def _position(problem: Problem) -> tuple:
    return (problem.line, problem.col, problem.pointer, problem.message)


def _in_section_order(data: dict) -> dict:
    """A resolved descriptor's sections in the order a file writes them (a child may add a
    section its parent lacks; ``show`` prints the result)."""
    order = {key: i for i, key in enumerate(section_order(descriptor_kind(data)))}
    return dict(sorted(data.items(), key=lambda item: order.get(item[0], len(order))))


def validate_descriptor(path: str | Path) -> list[Problem]:
    """Every problem of the descriptor file at ``path``; ``[]`` when it is valid.

    ``Problem.file`` is ``path`` as given; a file that cannot be read is one problem.
    """
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return [Problem(file, 1, 1, "", f"not UTF-8 text: {exc.reason}", "file")]
    except OSError as exc:
        return [Problem(file, 1, 1, "", f"cannot read: {exc.strerror or exc}", "file")]
    return validate_text(text, file)[1]
