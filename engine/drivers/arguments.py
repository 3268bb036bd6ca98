"""A tool's arguments checked against its JSON Schema before the tool sees them.

Model output is untrusted input: a tool that requires ``city: string`` must never receive
``{}`` or ``{"city": 42}``. Each tool's ``parameters`` is compiled once into a validator of
the draft its ``$schema`` names (2020-12 when it names none), and a call's arguments are
checked against it before the call runs, on every path (native calls and text calls, sync
and async). What fails is reported as ``(JSON pointer, what was expected)`` pairs, the
words a retry prompt and an error result carry to the model.

A ``parameters`` that is not a usable schema is the programmer's error, not the model's: a
``ValueError`` naming the tool, raised when the driver first lists the tool.

A free-form call (``ExtractedCall.free_form``: its input is text, not JSON) is never checked
against a schema: :func:`free_form_problems` checks it against its tool's ``format``.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

from ..errors import pointer_of
from ..records import Tool

# A failing argument: the JSON pointer of the value (``""`` for the arguments object) and
# what the schema expected there.
ArgumentProblem = tuple[str, str]

_MAX_PROBLEMS = 10  # a prompt names at most this many; a model fixes the first ones first


class ArgumentsSchema:
    """One tool's compiled ``parameters``: ``problems(arguments)`` is ``[]`` when they
    validate. The fast path is one ``is_valid`` (the plain-Python check below when the
    schema has one, else jsonschema's); the error walk runs only for a call that fails, so
    a valid call pays the validation alone. Neither holds per-call state: one serves every
    driver and thread."""

    __slots__ = ("_validator", "_is_valid")

    def __init__(self, schema: Any) -> None:
        """``schema`` checked against the metaschema of the draft its ``$schema`` names
        (2020-12 when it names none): a SchemaError when it is no usable schema."""
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        self._validator = cls(schema)
        self._is_valid = fast_check(schema, cls) or self._validator.is_valid

    def problems(self, arguments: Any) -> list[ArgumentProblem]:
        """What in ``arguments`` fails the schema, in document order; ``[]`` when valid."""
        if self._is_valid(arguments):
            return []
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: [*map(str, e.path)])
        return [(pointer_of(e.path), e.message) for e in errors[:_MAX_PROBLEMS]]


# The schema objects seen last, by identity: ``list_tools()`` may build new ``Tool`` objects
# on every call (the README's drivers do), and a driver made per request lists the same
# module-level schema dicts each time, whose canonical JSON costs as much as several
# validations. The entry keeps its schema alive, so an id is never reused while cached; a
# schema changed in place after it was first listed is not read again (make a new one).
_BY_IDENTITY: dict[int, tuple[Any, ArgumentsSchema]] = {}
_IDENTITIES = 512


def schema_of(tool: Tool) -> ArgumentsSchema:
    """The compiled ``parameters`` of ``tool``: the same schema object compiles once, a
    changed one compiles anew; one that is no usable schema is a ValueError naming the tool."""
    declared = tool.parameters
    seen = _BY_IDENTITY.get(id(declared))
    if seen is not None and seen[0] is declared:
        return seen[1]
    # A tool declared without parameters takes any object.
    schema = {"type": "object"} if declared is None else declared
    if not isinstance(schema, dict):
        raise ValueError(
            f"tool {tool.name!r}: parameters must be a JSON Schema object, "
            f"got {type(schema).__name__}"
        )
    try:
        try:
            text = json.dumps(schema, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"parameters is not JSON: {exc}") from None
        compiled = _compiled(text)
    except SchemaError as exc:
        where = pointer_of(exc.path) or "/"
        raise ValueError(
            f"tool {tool.name!r}: parameters is not a usable JSON Schema "
            f"(the draft its $schema names, else 2020-12): at {where}: {exc.message}"
        ) from None
    if len(_BY_IDENTITY) >= _IDENTITIES:
        _BY_IDENTITY.clear()  # rare: a process that makes new schema objects per request
    _BY_IDENTITY[id(declared)] = (declared, compiled)
    return compiled


@functools.lru_cache(maxsize=512)
def _compiled(schema_text: str) -> ArgumentsSchema:
    """A schema by its canonical JSON text, compiled: checking a schema against its
    metaschema costs a thousand validations, so each distinct schema is checked and
    compiled once per process, however many drivers (one per request, in a server)
    declare it."""
    return ArgumentsSchema(json.loads(schema_text))


def problems_of(tool: Tool, arguments: Any, free_form: bool = False) -> list[ArgumentProblem]:
    """What in a call's ``arguments`` fails its tool: its ``parameters`` (JSON Schema), or,
    for a free-form call (its input is text), its ``format``; ``[]`` when they pass."""
    return free_form_problems(tool, arguments) if free_form else schema_of(tool).problems(arguments)


# -- free-form calls: their input against the tool's format ------------------------------------


def free_form_problems(tool: Tool, arguments: Any) -> list[ArgumentProblem]:
    """What in a free-form call's input fails its tool's ``format`` (``engine.Tool.format``),
    ``[]`` when it passes. Never a JSON Schema: the input is text. A ``regex`` definition is
    checked (the whole input must match it, read by Python's ``re``; a definition ``re``
    cannot compile is not checked); any other format (any text, a ``lark`` grammar, for
    which no parser is at hand) passes unchecked."""
    fmt = tool.format if isinstance(tool.format, dict) else {}
    definition = fmt.get("definition")
    if fmt.get("syntax") != "regex" or not isinstance(definition, str):
        return []
    try:
        pattern = re.compile(definition)  # re caches what it compiles
    except re.error:
        return []  # a definition re cannot compile is not checked
    ((key, text),) = arguments.items() if len(arguments) == 1 else ((None, None),)
    if not isinstance(text, str):
        return [("", "a free-form call takes its input as text")]
    if pattern.fullmatch(text):
        return []
    return [(pointer_of([key]), f"{text!r} does not match the tool's regex {pattern.pattern!r}")]


# -- the fast path: the keywords tool schemas use, checked in plain Python ----------------------
#
# jsonschema's ``is_valid`` walks its keyword table for every value: ~15-40 us for a small
# tool schema, as much as a dozen chunks cost the buffer. Tool schemas mostly use a handful
# of keywords whose meaning is the same in drafts 6 to 2020-12; such a schema compiles to
# nested closures that answer "valid?" in about a microsecond. Anything else (``$ref``,
# ``anyOf``, ``pattern``, ``format`` assertions, ...) has no fast path and goes to
# jsonschema, which also words every failure: the fast path only ever answers "valid", the
# error walk stays jsonschema's. tests/test_tool_loop.py checks that both agree.

_Check = Callable[[Any], bool]
# ``format`` is an annotation in every draft unless a format checker asserts it.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "format",
     "readOnly", "writeOnly", "deprecated"}
)
_FAST_DRAFTS = (
    jsonschema.Draft6Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft202012Validator,
)


_NUMBERS = frozenset({int, float})
# Each type's value classes (what ``json.loads`` gives); an integral float is an integer too.
_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "number": _NUMBERS,
    "integer": frozenset({int}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
}


class _NoFastPath(Exception):
    """The schema uses something the fast path does not read: jsonschema checks it."""


def fast_check(schema: Any, draft: type) -> _Check | None:
    """``check(value) -> bool`` agreeing with the draft's validator on ``schema``, or None
    when the schema needs the full validator. Values are what ``json.loads`` gives."""
    if draft not in _FAST_DRAFTS:
        return None
    try:
        return _compile(schema)
    except _NoFastPath:
        return None


def _compile(schema: Any) -> _Check:
    if schema is True or schema is False:
        return lambda v: schema  # a boolean schema is its own answer
    # Not a schema object, or one with a keyword the fast path does not read.
    if schema.__class__ is not dict or schema.keys() - _ANNOTATIONS - _KEYWORDS.keys():
        raise _NoFastPath
    checks = [_KEYWORDS[k](v, schema) for k, v in schema.items() if k not in _ANNOTATIONS]
    if len(checks) == 1:
        return checks[0]  # a lone check as itself, so that a value pays no call more for it
    return lambda v: all(check(v) for check in checks)  # all must pass


def _type(value: Any, schema: dict[str, Any]) -> _Check:
    names = [value] if value.__class__ is str else value
    if names.__class__ is not list or not all(n in _TYPES for n in names):
        raise _NoFastPath
    kinds = frozenset().union(*(_TYPES[n] for n in names))
    if "integer" in names and float not in kinds:
        return lambda v: v.__class__ in kinds or (v.__class__ is float and v.is_integer())
    return lambda v: v.__class__ in kinds


def _properties(value: Any, schema: dict[str, Any]) -> _Check:
    if value.__class__ is not dict:
        raise _NoFastPath
    members = [(name, _compile(sub)) for name, sub in value.items()]
    return lambda v: v.__class__ is not dict or all(s(v[n]) for n, s in members if n in v)


def _additional(value: Any, schema: dict[str, Any]) -> _Check:
    if "patternProperties" in schema:
        raise _NoFastPath
    known = frozenset(schema.get("properties") or ())
    rest = _compile(value)
    return lambda v: v.__class__ is not dict or all(rest(x) for n, x in v.items() if n not in known)


def _strings(value: Any) -> list[str]:
    """A keyword's list of strings; anything else has no fast path."""
    if value.__class__ is not list or not all(x.__class__ is str for x in value):
        raise _NoFastPath
    return value


def _required(value: Any, schema: dict[str, Any]) -> _Check:
    names = tuple(_strings(value))
    return lambda v: v.__class__ is not dict or all(n in v for n in names)


def _enum(value: Any, schema: dict[str, Any]) -> _Check:
    # Strings only: JSON equality of other values (1 == 1.0, True != 1) is jsonschema's.
    allowed = frozenset(_strings(value))
    return lambda v: v.__class__ is str and v in allowed


def _items(value: Any, schema: dict[str, Any]) -> _Check:
    if "prefixItems" in schema or "additionalItems" in schema:
        raise _NoFastPath
    each = _compile(value)  # a list (tuple validation) is no schema: _NoFastPath
    return lambda v: v.__class__ is not list or all(each(item) for item in v)


def _bound(kinds: frozenset[type], measure: Callable[[Any], Any], fails: Any) -> Any:
    """A bound keyword on values of ``kinds``, worded as jsonschema tests it
    (``fails(measured, bound)``), so that what compares false both ways (NaN) is judged
    alike."""

    def make(value: Any, schema: dict[str, Any]) -> _Check:
        if value.__class__ not in _NUMBERS:
            raise _NoFastPath
        return lambda v: v.__class__ not in kinds or not fails(measure(v), value)

    return make


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], _Check]] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "enum": _enum,
    "items": _items,
    "minLength": _bound(_TYPES["string"], len, operator.lt),
    "maxLength": _bound(_TYPES["string"], len, operator.gt),
    "minItems": _bound(_TYPES["array"], len, operator.lt),
    "maxItems": _bound(_TYPES["array"], len, operator.gt),
    "minimum": _bound(_NUMBERS, operator.pos, operator.lt),
    "maximum": _bound(_NUMBERS, operator.pos, operator.gt),
    "exclusiveMinimum": _bound(_NUMBERS, operator.pos, operator.le),
    "exclusiveMaximum": _bound(_NUMBERS, operator.pos, operator.ge),
}
