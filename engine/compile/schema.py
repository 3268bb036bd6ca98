"""The descriptor schema (``schemas/format.schema.json``) as data, for every floor that asks it.

The check against it lives here, in one wording of its errors (:func:`schema_problems`),
with the custom path formats it names (``read-path``, ``target-path``...: :data:`FORMATS`,
each checked by compiling the value in the one path language). Whoever asks places the
problems, each ``(pointer, message, rule, at_key)`` (:data:`Said`; ``at_key``: said at the
key's own line, as an unknown key is): the validator (:mod:`engine.language.validate`)
locates each in the YAML file, a strategy built from a dict (never seen by the validator)
and a section compiled on its own (:func:`section_problems`) keep ``(pointer, message,
rule)``. So no rule the schema states is written again in code, and no error is worded
twice.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.exceptions import relevance

from ..errors import escape, pointer_of
from .paths import (
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


def data_dir(kind: str) -> Path:
    """``formats`` or ``schemas``: inside the installed package, or beside it in a checkout
    (the one place the engine looks for its data folders)."""
    here = Path(__file__).resolve().parent.parent  # engine/ (this module is in engine/compile/)
    for candidate in (here / kind, here.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the built-in {kind} folder near {here}")


def schema_path() -> Path:
    """``format.schema.json``, in the ``schemas`` folder."""
    return data_dir("schemas") / "format.schema.json"


@functools.cache
def schema() -> dict[str, Any]:
    """The descriptor schema, read once."""
    return cast(dict[str, Any], json.loads(schema_path().read_text(encoding="utf-8")))


Located = tuple[str, str, str]  # (JSON pointer, message, rule): a problem, for its caller to place
Said = tuple[str, str, str, bool]  # Located, and whether it is said at the key (its own line)


def section_problems(value: Any, definition: str, pointer: str) -> list[Located]:
    """What ``$defs/<definition>`` says of ``value``, the section at ``pointer``: every error,
    in pointer order, each ``(pointer, message, rule)`` worded as the validator words it."""
    said = schema_problems(value, definition)
    return sorted({(pointer + at, message, rule) for at, message, rule, _ in said})


def operation_names() -> list[str]:
    """The operations the schema declares, in its order."""
    return list(schema()["$defs"]["operation_mapping"]["properties"])

# -- defaults: the schema's ``default`` annotations, written in once at load ----------------------


def with_defaults(value: Any, definition: str | None = None) -> Any:
    """A copy of ``value`` (a descriptor, or a value of ``$defs/<definition>``) with every
    ``default`` the schema states written in where its key is absent, so that the compiler
    reads ``spec[key]`` and the schema is the one place a default is said. Only what has the
    schema's shape is filled (a value of the wrong type is the validator's to report); an
    ``if`` picks its branch as the validator does, and every alternative of a ``oneOf`` or an
    ``anyOf`` is followed (the schema never defaults one key two ways)."""
    root = schema()
    value = copy.deepcopy(value)  # the caller's descriptor stays as written
    _fill(value, root if definition is None else root["$defs"][definition])
    return value


def _fill(value: Any, node: dict[str, Any]) -> None:
    for sub in _applying(node, value):
        if isinstance(value, dict):
            declared = sub.get("properties", {})
            for key, prop in declared.items():
                if key in value:
                    _fill(value[key], prop)
                elif (default := _default(prop)) is not None:
                    value[key] = copy.deepcopy(default)
            extra = sub.get("additionalProperties")
            if isinstance(extra, dict):
                for key in value.keys() - declared.keys():
                    _fill(value[key], extra)
        elif isinstance(value, list) and isinstance(sub.get("items"), dict):
            for item in value:
                _fill(item, sub["items"])


def _applying(node: dict[str, Any], value: Any) -> Iterator[dict[str, Any]]:
    """``node`` and the subschemas it applies in place to ``value``."""
    for sub in _in_place(node):
        yield sub
        branch = sub.get("then" if _holds(sub["if"], value) else "else") if "if" in sub else None
        if isinstance(branch, dict):
            yield from _applying(branch, value)


def _in_place(node: dict[str, Any]) -> list[dict[str, Any]]:
    """``node`` and what it applies in place whatever the value (its ``$ref``, ``allOf``,
    ``oneOf`` and ``anyOf``), found once per node of the schema (read once: its id names it)."""
    found = _IN_PLACE.get(id(node))
    if found is None:
        subs = [_resolve(node), *node.get("allOf", ()), *node.get("oneOf", ())]
        found = [node] + [s for sub in subs + node.get("anyOf", []) if sub for s in _in_place(sub)]
        _IN_PLACE[id(node)] = found
    return found


_IN_PLACE: dict[int, list[dict[str, Any]]] = {}


def _default(prop: dict[str, Any] | None) -> Any:
    """The default a property's schema states, through its ``$ref`` (None: it states none)."""
    while prop is not None and "default" not in prop:
        prop = _resolve(prop)
    return None if prop is None else prop["default"]


def _resolve(fragment: dict[str, Any]) -> dict[str, Any] | None:
    """The definition a schema node's ``$ref`` names (None: it has none). Every ``$ref`` of the
    schema names one of its ``$defs`` (``#/$defs/NAME``), as :func:`_validator`'s own does."""
    ref = fragment.get("$ref")
    return schema()["$defs"][ref.removeprefix("#/$defs/")] if isinstance(ref, str) else None


def _holds(condition: dict[str, Any], value: Any) -> bool:
    """Does ``value`` meet an ``if`` of the schema (a node of the schema read once, so its id
    names it)?"""
    check = _CONDITIONS.get(id(condition))
    if check is None:
        check = Draft202012Validator({**condition, "$defs": schema()["$defs"]})
        _CONDITIONS[id(condition)] = check
    return check.is_valid(value)


_CONDITIONS: dict[int, Draft202012Validator] = {}

# -- the custom formats: paths compiled as the engine compiles them -----------------------------


class PathProblem(ValueError):
    """A path the engine would refuse; ``rule`` names the check."""

    def __init__(self, message: str, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


def _segments(value: str, every: bool = False) -> tuple[Segment, ...]:
    """Parse a target (``every``: a pattern); a bad slot step is reported as such, and so is
    an item step of the other form: a target writes one item, a pattern matches every item."""
    try:
        segments = parse_target(value)
    except PathError as exc:
        if exc.in_slot:
            raise PathProblem(str(exc), "slot") from None
        raise PathProblem(f"target path does not parse: {exc}", "target") from None
    for seg in (seg for seg in segments if seg.field is None and seg.any is not every):
        if every:
            message = f"a pattern matches every item with [*], not a SLOT [{seg.slot_path}]"
            raise PathProblem(message, "pattern")
        raise PathProblem(
            "[*] is for patterns; an operation writes one item: name its SLOT, e.g. content[index]",
            "slot",
        )
    return segments


def _presence_path(value: Any) -> None:
    """``is: "null"`` asks whether a key is there: a field chain (with ``[n]``), never a
    JMESPath, whose result cannot tell an absent key from a null one."""
    if isinstance(value, dict):
        raise PathProblem(
            "is: null asks whether a key is present, which a JMESPath result cannot tell from "
            "null: write the field chain of the key (meta.flags[0])",
            "field-chain",
        )
    compile_presence(value)


def _ending(wanted: str, item: bool, every: bool = False) -> Callable[[str], None]:
    """The check of a target (``every``: a pattern) whose last step must be ``wanted``: an
    item step (``item``) or a field; a refusal is a PathError, which its format's rule names."""

    def check(value: str) -> None:
        segments = _segments(value, every)
        if not segments or (segments[-1].field is None) is not item:
            raise PathError(f"must end with {wanted}")

    return check


#: The schema's custom ``format`` values, each ``(check, rule, prefix)``: the check compiles
#: the value in its form of the one path language (or as a regular expression), and what it
#: refuses is said as ``prefix`` and the reason, under ``rule`` (a read or template path of an
#: old dialect under its own, ``old-path``, its message saying its new form). Editors ignore them.
FORMATS: dict[str, tuple[Callable[[Any], Any], str, str]] = {
    "read-path": (read_steps, "path", "not a read path: "),
    "jmespath": (lambda value: compile_read({JMESPATH: value}), "jmespath", ""),
    "presence-path": (_presence_path, "field-chain", "a presence test takes a field chain: "),
    "template-path": (compile_lookup, "path", "not a template path: "),
    "target-path": (_segments, "target", ""),
    "item-target": (_ending("a SLOT step, e.g. content[index]", item=True), "item-target", ""),
    "field-target": (_ending("a field, e.g. content[index].text", item=False), "field-target", ""),
    "pattern": (functools.partial(_segments, every=True), "pattern", ""),
    "call-pattern": (_ending("[*], e.g. content[*]", item=True, every=True), "call-pattern", ""),
    "field-chain": (parse_chain, "field-chain", ""),
    "python-regex": (re.compile, "regex", "not a Python regular expression: "),
}


def _checked(check: Callable[[Any], Any], rule: str, prefix: str, instance: Any) -> bool:
    """One format's check of one value, what it refuses raised as a :class:`PathProblem`. A
    format judges strings only (the schema types the value), but for the presence test, whose
    check refuses a JMESPath mapping in its own words."""
    if not isinstance(instance, str) and check is not _presence_path:
        return True
    try:
        check(instance)
    except (PathError, re.error) as exc:
        old = rule == "path" and isinstance(exc, PathError) and exc.hint
        raise PathProblem(f"{prefix}{exc}", "old-path" if old else rule) from None
    return True


@functools.cache
def _validator(definition: str | None = None) -> Draft202012Validator:
    """The whole schema's validator, or ``$defs/<definition>``'s, custom formats checked.

    A template is any value here: the schema types templates for editors, and the template
    compiler (:mod:`engine.compile.templates`) reports every problem inside one, each at its
    pointer, so the schema is not asked to say them again in other words. A rule of a section
    about a template's key (a results mode refusing it) is still the schema's."""
    root = {**schema(), "$defs": {**schema()["$defs"], "template": {}}}
    if definition is not None:
        root = {"$defs": root["$defs"], "$ref": f"#/$defs/{definition}"}
    checker = FormatChecker(formats=())  # the custom formats only, each by its FORMATS entry
    for name, (check, rule, prefix) in FORMATS.items():
        checker.checks(name, raises=PathProblem)(functools.partial(_checked, check, rule, prefix))
    return Draft202012Validator(root, format_checker=checker)

# -- schema errors as problems ------------------------------------------------------------------

_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _is_def(fragment: Any, name: str) -> bool:
    """Is ``fragment`` (an error's subschema) ``$defs/<name>`` itself? The validators hold the
    schema's own nodes, so identity says it."""
    return fragment is schema()["$defs"][name]

def _said(err: ValidationError, pointer: str) -> Iterator[Said]:
    """One schema error, at ``pointer``, as problems (an object with three unknown keys gives
    three)."""
    # An error of iter_errors always carries its keyword and value: jsonschema leaves them
    # unset only on an error built by hand.
    keyword = cast(str, err.validator)
    expected: Any = err.validator_value
    rule: dict[str, Any] = err.schema if isinstance(err.schema, dict) else {}
    instance = err.instance
    custom = rule.get("errorMessage")
    if not isinstance(instance, dict) or keyword not in _PER_KEY:
        yield (pointer, *_worded(err, keyword, rule, custom), False)
    elif keyword in _UNKNOWN:
        # What unevaluatedProperties counts as evaluated: the subschemas applied in place.
        subs = _applying(rule, instance) if keyword == "unevaluatedProperties" else [rule]
        allowed = {key for sub in subs for key in sub.get("properties", {})}
        names = ", ".join(sorted(allowed))
        moved = rule.get("x-moved", {})
        for key in (key for key in instance if key not in allowed):
            if key in moved:  # a key of before, which the schema says where it went
                said = f"{key!r} is a key of before: write {moved[key]} (see CHANGELOG.md)", "moved"
            elif _is_def(rule, "operation_mapping"):
                said = f"unknown operation {key!r}, expected one of: {names}", "operation"
            else:
                said = f"unknown key {key!r}, expected one of: {names}", "unknown-key"
            yield (f"{pointer}/{escape(key)}", *said, True)
    elif keyword == "required":
        # A rule that requires a key only in some cases (a results mode) says which.
        for key in (key for key in expected if key not in instance):
            message = custom if isinstance(custom, str) else missing_key(key)
            yield (pointer, message, "required", True)
    else:
        for key, needs in expected.items():
            for need in (need for need in needs if key in instance and need not in instance):
                message = f"{key!r} needs {need!r} beside it"
                yield (f"{pointer}/{escape(key)}", message, keyword, True)


_UNKNOWN = ("additionalProperties", "unevaluatedProperties")
def missing_key(key: str) -> str:
    """What the schema says of a required key an object lacks: the one wording, which a
    caller that weighs such a problem by its key (a dict's compile) compares with."""
    return f"missing required key {key!r}"


_PER_KEY = (*_UNKNOWN, "required", "dependentRequired")  # a problem per key of the object


def _worded(
    err: ValidationError, keyword: str, rule: dict[str, Any], custom: Any
) -> tuple[str, str]:
    """The message and rule of an error at one value."""
    instance, expected = err.instance, cast(Any, err.validator_value)
    if keyword == "type":
        wanted = " or ".join(expected if isinstance(expected, list) else [expected])
        got = _JSON_TYPES.get(type(instance), type(instance).__name__)
        if isinstance(instance, datetime.date):  # an unquoted 2023-06-01 is a YAML timestamp
            got = "a date (quote it)"
        return f"expected {wanted}, got {got}", "type"
    if keyword == "enum" and _is_def(rule, "bare_operation"):
        names = ", ".join(sorted(operation_names()))
        message = f"unknown operation {instance!r}, expected one of: {names}"
        if instance in operation_names():
            message = f"operation {instance!r} takes arguments: write {{{instance}: {{...}}}}"
        return message, "operation"
    if keyword in ("enum", "const"):
        choices = expected if keyword == "enum" else [expected]
        # A YAML null beside "null" in an enum (`is`) is one choice, shown once.
        shown = ", ".join(dict.fromkeys(_choice(v) for v in choices))
        return f"{instance!r} is not one of: {shown}", keyword
    if keyword == "format" and isinstance(err.cause, PathProblem):
        return str(err.cause), err.cause.rule
    if isinstance(custom, str):  # the keywords above say more than a subschema's errorMessage
        return custom, keyword
    if keyword in ("minItems", "minProperties") and expected == 1:
        return "must not be empty", keyword
    wording = _WORDING.get(keyword)
    message = err.message if wording is None else wording.format(value=expected, instance=instance)
    return message, keyword


def _choice(value: Any) -> str:
    """A choice of an enum as written: bare, but quoted with its escapes when it holds a
    character that would not show (the ``"\\r\\n"`` of a line ending)."""
    if value is None:
        return "null"
    if isinstance(value, str) and not value.isprintable():
        return json.dumps(value)
    return str(value)


_WORDING = {
    "minItems": "expected at least {value} items",
    "maxItems": "expected at most {value} items",
    "minProperties": "expected at least {value} keys",
    "maxProperties": "expected at most {value} key(s)",
    "minLength": "must not be empty",
    "uniqueItems": "has repeated items",
    "minimum": "expected at least {value}, got {instance!r}",
    "pattern": "{instance!r} does not match {value}",
}


def schema_problems(data: Any, definition: str | None = None) -> list[Said]:
    """All schema errors of ``data`` (the whole descriptor, or a value checked against
    ``$defs/<definition>``), best first, each worded once, for the caller to place."""
    return [said for err, at in _best_errors(data, definition) for said in _said(err, at)]


def _best_errors(data: Any, definition: str | None) -> list[tuple[ValidationError, str]]:
    """The schema errors worth saying, each with its pointer, best first: at a value of the
    wrong type only that (the outermost type check, which names every type allowed there), and
    no pattern where a custom format (which says more) checks the value in its place."""
    errors = sorted(_validator(definition).iter_errors(data), key=relevance, reverse=True)
    placed = [(err, pointer_of(err.absolute_path)) for err in errors]
    typed: dict[str, ValidationError] = {}
    for err, at in placed:
        if err.validator == "type":  # the outermost (the first of equals) at each place
            typed[at] = min(typed.get(at, err), err, key=lambda e: len(e.absolute_schema_path))
    formats = {at for err, at in placed if err.validator == "format"}
    return [
        (err, at)
        for err, at in placed
        if typed.get(at, err) is err and (err.validator != "pattern" or at not in formats)
    ]
