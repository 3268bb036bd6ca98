"""A tool's arguments checked against its JSON Schema before the tool sees them.

Model output is untrusted input: a tool that requires ``city: string`` must never receive
``{}`` or ``{"city": 42}``. Each tool's ``parameters`` is compiled once into a validator of
the draft its ``$schema`` names (2020-12 when it names none), and a call's arguments are
checked against it before the call runs, on every path (native calls and text calls, sync
and async). What fails is reported as ``(JSON pointer, what was expected)`` pairs, the
words a retry prompt and an error result carry to the model.

A ``parameters`` that is not a usable schema is the programmer's error, not the model's: a
``ValueError`` naming the tool, raised when the driver first lists the tool.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

from ..records import Tool

# A failing argument: the JSON pointer of the value (``""`` for the arguments object) and
# what the schema expected there.
ArgumentProblem = tuple[str, str]

_MAX_PROBLEMS = 10  # a prompt names at most this many; a model fixes the first ones first


def _pointer(path: Any) -> str:
    """RFC 6901 pointer of a jsonschema error path (``deque(['a', 0])`` -> ``/a/0``)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


class ArgumentsSchema:
    """One tool's compiled ``parameters``: ``problems(arguments)`` is ``[]`` when they
    validate. The fast path is one ``is_valid``; the error walk runs only for a call that
    fails, so a valid call pays the validation alone."""

    __slots__ = ("tool_name", "schema", "_validator")

    def __init__(self, tool_name: str, schema: Any) -> None:
        self.tool_name = tool_name
        self.schema = schema  # kept: the cache's key is its identity, which must stay taken
        if schema is None:  # a tool declared without parameters takes any object
            schema = {"type": "object"}
        if not isinstance(schema, dict):
            raise ValueError(
                f"tool {tool_name!r}: parameters must be a JSON Schema object, "
                f"got {type(schema).__name__}"
            )
        try:
            text = json.dumps(schema, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tool {tool_name!r}: parameters is not JSON: {exc}") from None
        try:
            self._validator = _validator(text)
        except SchemaError as exc:
            where = _pointer(exc.path) or "/"
            raise ValueError(
                f"tool {tool_name!r}: parameters is not a usable JSON Schema "
                f"(the draft its $schema names, else 2020-12): at {where}: {exc.message}"
            ) from None

    def problems(self, arguments: Any) -> list[ArgumentProblem]:
        """What in ``arguments`` fails the schema, in document order; ``[]`` when valid."""
        if self._validator.is_valid(arguments):
            return []
        errors = sorted(
            self._validator.iter_errors(arguments), key=lambda e: [str(s) for s in e.path]
        )
        return [(_pointer(e.path), e.message) for e in errors[:_MAX_PROBLEMS]]


@functools.lru_cache(maxsize=512)
def _validator(schema_text: str) -> Validator:
    """The validator of a schema, by its canonical JSON text: checking a schema against its
    metaschema costs a thousand validations, so each distinct schema is checked and compiled
    once per process, however many drivers (one per request, in a server) declare it. A
    validator holds no per-call state: one serves every driver and thread."""
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


class SchemaCache:
    """The validators of one driver's tools, each compiled once.

    ``list_tools()`` may build new ``Tool`` objects on every call (the README's drivers do),
    so a validator is keyed on the tool's name and the identity of its ``parameters`` object
    (kept alive by the validator, so that identity is never reused while cached): the same
    schema object compiles once, a changed one compiles anew."""

    __slots__ = ("_by_tool",)

    def __init__(self) -> None:
        self._by_tool: dict[str, ArgumentsSchema] = {}

    def of(self, tool: Tool) -> ArgumentsSchema:
        known = self._by_tool.get(tool.name)
        if known is not None and known.schema is tool.parameters:
            return known
        compiled = self._by_tool[tool.name] = ArgumentsSchema(tool.name, tool.parameters)
        return compiled
