"""The descriptor schema (``schemas/format.schema.json``) as data, for every floor that asks it.

The validator (:mod:`engine.language.validate`) checks a whole descriptor against it and
locates each error in the file. A compiler handed a section that never went through the
validator (a strategy built from a dict) asks the same schema of that section
(:func:`section_errors`), so that no rule the schema states is written again in code.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError


def schema_path() -> Path:
    """``format.schema.json``: inside the installed package, or beside it in a checkout."""
    here = Path(__file__).resolve().parent.parent  # engine/ (this module is in engine/compile/)
    for folder in (here / "schemas", here.parent / "schemas"):
        candidate = folder / "format.schema.json"
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"cannot find schemas/format.schema.json near {here}")


@functools.cache
def schema() -> dict:
    """The descriptor schema, read once."""
    return json.loads(schema_path().read_text(encoding="utf-8"))


@functools.cache
def _definition_validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": schema()["$defs"], "$ref": f"#/$defs/{name}"})


def section_errors(value: Any, definition: str) -> Iterator[ValidationError]:
    """The schema's errors of ``value`` checked against ``$defs/<definition>`` (the custom
    path formats, which only the validator checks, are not asked)."""
    return _definition_validator(definition).iter_errors(value)
