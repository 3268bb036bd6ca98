"""Predicates: the descriptor's small language for "does this object look like X".

Used to recognise a wire from one chunk (``recognize``), and to pick items out of an assembled
message (``where`` in ``calls`` and ``text``). Every form is a mapping:

``{field: P, equals: V}``, ``{field: P, in: [V, ...]}``, ``{field: P, prefix: S}``,
``{field: P, is: object|list|string|number|boolean|null}`` (a YAML null for ``is``, an unquoted
``is: null``, means ``"null"``), ``{has: P}`` (present and not null),
``{any: [...]}``, ``{all: [...]}``, ``{not: {...}}``. ``P`` is a read path of
:mod:`engine.compile.paths` (a field chain with ``[n]``, or ``{jmespath: expr}``); for ``is: null``
it is the presence form, which asks whether the key is there.

Values compare as JSON's, not Python's: ``true`` is not ``1`` (in Python ``True == 1`` and a
``bool`` is an ``int``), ``1`` is ``1.0``, ``null`` is only null; objects and lists compare member
by member, as deep as the descriptor's value goes (a chunk's value may nest 100,000 deep).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from .paths import compile_get, compile_presence, one_field

Predicate = Callable[[Any], bool]

# By a value's own class: a bool before an int (a bool is an int in Python, not a number in
# JSON), as a subclass is tested in this order.
_KINDS: dict[type, str] = {
    bool: "boolean", str: "string", int: "number", float: "number", dict: "object",
    list: "list", type(None): "null",
}


def json_kind(value: Any) -> str | None:
    """The JSON kind of ``value`` (``"number"`` for an int or a float, not for a bool)."""
    kind = _KINDS.get(value.__class__)
    if kind is None:  # a subclass (a mapping type of the client's): the first class it is
        kind = next((name for cls, name in _KINDS.items() if isinstance(value, cls)), None)
    return kind


def json_equal(value: Any, expected: Any) -> bool:
    """JSON's equality of a chunk's ``value`` and a descriptor's ``expected``."""
    kind = json_kind(expected)
    if kind != json_kind(value):
        return False
    if kind == "object":
        return value.keys() == expected.keys() and all(
            json_equal(value[k], v) for k, v in expected.items()
        )
    if kind == "list":
        return len(value) == len(expected) and all(map(json_equal, value, expected))
    return bool(value == expected)


def _equal_to(expected: Any) -> Callable[[Any], bool]:
    """A test of "equals ``expected``" as JSON's: ``is`` for a boolean, ``==`` for a string or
    null (where Python's equality is JSON's), :func:`json_equal` otherwise."""
    if expected.__class__ is bool:
        return lambda value: value is expected
    if expected is None or expected.__class__ is str:
        return lambda value: bool(value == expected)
    return lambda value: json_equal(value, expected)


def compile_predicate(spec: dict[str, Any]) -> Predicate:
    if "any" in spec:
        keys = _plain_has(spec["any"])
        if keys is not None:  # {any: [{has: a}, {has: b}]}, asked of chunks: one call, a loop

            def has_any(obj: Any) -> bool:
                if obj.__class__ is dict:
                    for key in keys:
                        if obj.get(key) is not None:
                            return True
                return False

            return has_any
    for key, quantifier in (("any", any), ("all", all)):
        if key in spec:
            parts = [compile_predicate(p) for p in spec[key]]
            return lambda obj: quantifier(p(obj) for p in parts)
    if "not" in spec:
        # {not: {field: thought, equals: true}}, asked of every part: two calls, as the inner
        # test of one plain field is the one-call look-up below.
        inner = compile_predicate(spec["not"])
        return lambda obj: not inner(obj)
    if "has" in spec:
        get = compile_get(spec["has"])
        return lambda obj: obj.__class__ is dict and get(obj) is not None
    # {field: F, equals: V} with F one plain field: tested with one look-up and no call, as
    # display-text predicates run on every item of every chunk.
    field = one_field(spec.get("field")) if set(spec) == {"field", "equals"} else None
    if field is not None:
        expected = spec["equals"]
        if expected.__class__ is bool:
            return lambda obj: obj.__class__ is dict and obj.get(field) is expected
        if expected is None or expected.__class__ is str:  # (asked of every chunk: no 2nd call)
            return lambda obj: obj.__class__ is dict and obj.get(field) == expected
        return lambda obj: obj.__class__ is dict and json_equal(obj.get(field), expected)
    get = compile_get(spec["field"])
    # The test of the value at ``field``, one per form; the object's own test comes last.
    if "equals" in spec:
        test = _equal_to(spec["equals"])
    elif "in" in spec:  # asked of every chunk (discriminators, ``when``): one call
        # Strings (what the discriminators list) in a set, null a flag; others a test each.
        strings = frozenset(v for v in spec["in"] if v.__class__ is str)
        null = None in spec["in"]
        tests = [_equal_to(v) for v in spec["in"] if v.__class__ is not str and v is not None]

        def is_in(obj: Any) -> bool:
            if obj.__class__ is not dict:
                return False
            value = get(obj)
            if value.__class__ is str:
                return value in strings
            return null if value is None else any(t(value) for t in tests)

        return is_in
    elif "prefix" in spec:
        prefix = spec["prefix"]
        # A string only: ``str()`` of an object or a list would render all of it (a chunk's
        # value may nest 100,000 deep), to compare a few characters.

        def test(value: Any) -> bool:
            return value.__class__ is str and value.startswith(prefix)

    elif "is" in spec:
        kind = "null" if spec["is"] is None else spec["is"]
        if kind == "null":  # the presence form: the key is there, its value null
            present = compile_presence(spec["field"])
            return lambda obj: obj.__class__ is dict and get(obj) is None and present(obj)

        def test(value: Any) -> bool:
            return json_kind(value) == kind

    else:
        raise ValueError(f"unknown predicate form: {sorted(spec)}")
    return lambda obj: obj.__class__ is dict and test(get(obj))


def _plain_has(specs: Any) -> tuple[str, ...] | None:
    """The fields of a list of ``{has: F}`` predicates, each F one plain field; else None."""
    if not all(isinstance(spec, dict) and set(spec) == {"has"} for spec in specs):
        return None
    keys = tuple(one_field(spec["has"]) for spec in specs)
    return None if None in keys else cast(tuple[str, ...], keys)
