"""Predicates: the descriptor's small language for "does this object look like X".

Used to recognise a wire from one chunk (``recognize``), and to pick items out of an assembled
message (``where`` in ``calls`` and ``text``). Every form is a mapping:

``{field: P, equals: V}``, ``{field: P, in: [V, ...]}``, ``{field: P, prefix: S}``,
``{field: P, is: object|list|string|number|boolean|null}`` (a YAML null for ``is``, an unquoted
``is: null``, means ``"null"``), ``{has: P}`` (present and not null),
``{any: [...]}``, ``{all: [...]}``, ``{not: {...}}``. ``P`` is a read path of
:mod:`engine.compile.paths` (a field chain with ``[n]``, or ``{jmespath: expr}``); for ``is: null``
it is the presence form, which asks whether the key is there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .paths import compile_get, compile_presence

Predicate = Callable[[Any], bool]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "list": (list,),
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def compile_predicate(spec: dict) -> Predicate:
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
        parts = [compile_predicate(p) for p in spec["any"]]
        if len(parts) == 2:
            first, second = parts
            return lambda obj: first(obj) or second(obj)
        return lambda obj: any(p(obj) for p in parts)
    if "all" in spec:
        parts = [compile_predicate(p) for p in spec["all"]]
        if len(parts) == 2:  # a call's ``where`` asked of every whole call: no generator
            first, second = parts
            return lambda obj: first(obj) and second(obj)
        return lambda obj: all(p(obj) for p in parts)
    if "not" in spec:
        simple = _one_field_equals(spec["not"])
        if simple is not None:  # {not: {field: thought, equals: true}}, asked of every part
            field, expected = simple
            return lambda obj: obj.__class__ is not dict or obj.get(field) != expected
        inner = compile_predicate(spec["not"])
        return lambda obj: not inner(obj)
    if "has" in spec:
        get = compile_get(spec["has"])
        return lambda obj: obj.__class__ is dict and get(obj) is not None
    simple = _one_field_equals(spec)
    if simple is not None:
        field, expected = simple
        return lambda obj: obj.__class__ is dict and obj.get(field) == expected
    get = compile_get(spec["field"])
    if "equals" in spec:
        expected = spec["equals"]
        return lambda obj: obj.__class__ is dict and get(obj) == expected
    if "in" in spec:
        allowed = frozenset(spec["in"])
        return lambda obj: obj.__class__ is dict and _hashable(get(obj)) in allowed
    if "prefix" in spec:
        prefix = spec["prefix"]
        # A string only: ``str()`` of an object or a list would render all of it (a chunk's
        # value may nest 100,000 deep), to compare a few characters.

        def has_prefix(obj: Any) -> bool:
            if obj.__class__ is not dict:
                return False
            value = get(obj)
            return value.__class__ is str and value.startswith(prefix)

        return has_prefix
    if "is" in spec:
        kind = "null" if spec["is"] is None else spec["is"]
        kinds = _TYPES[kind]
        present = compile_presence(spec["field"]) if kind == "null" else None

        def is_kind(obj: Any) -> bool:
            if obj.__class__ is not dict:
                return False
            value = get(obj)
            if present is not None:
                return value is None and present(obj)
            return isinstance(value, kinds) and not (kinds == (int, float) and value is True)

        return is_kind
    raise ValueError(f"unknown predicate form: {sorted(spec)}")


def _plain_has(specs: Any) -> tuple[str, ...] | None:
    """The fields of a list of ``{has: F}`` predicates, each F one plain field; else None."""
    keys = []
    for spec in specs:
        if not isinstance(spec, dict) or set(spec) != {"has"}:
            return None
        field = compile_get(spec["has"]).field
        if field is None:
            return None
        keys.append(field)
    return tuple(keys)


def _one_field_equals(spec: Any) -> tuple[str, Any] | None:
    """``{field: F, equals: V}`` with F one plain field: tested with one look-up and no call,
    as display-text predicates run on every item of every chunk."""
    if not isinstance(spec, dict) or set(spec) != {"field", "equals"}:
        return None
    field = compile_get(spec["field"]).field
    return None if field is None else (field, spec["equals"])


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return None
    return value
