"""The descriptor schema (``schemas/format.schema.json``) as data, for every floor that asks it.

The validator (:mod:`engine.language.validate`) checks a whole descriptor against it and
locates each error in the file. A compiler handed a section that never went through the
validator (a strategy built from a dict) asks the same schema of that section
(:func:`section_errors`, or located and worded: :func:`section_problems`), so that no rule
the schema states is written again in code.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, ValidationError

from ..errors import escape


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


Located = tuple[str, str, str]  # (JSON pointer, message, rule), as a template problem is


def section_problems(
    value: Any, definition: str, pointer: str, templates: tuple[str, ...] = ()
) -> list[Located]:
    """What ``$defs/<definition>`` says of ``value``, the section at ``pointer``: every error,
    in pointer order, each ``(pointer, message, rule)`` in the schema's own words (its
    ``errorMessage``) where it has them. Inside the ``templates`` (pointers of the section's
    templates, typed in the schema for editors only) the template compiler reports, not this."""
    found: set[Located] = set()
    for err in section_errors(value, definition):
        at = pointer + "".join(f"/{escape(str(part))}" for part in err.absolute_path)
        if not any(_template_says(err, at, pointer, t) for t in templates):
            found.update(_described(err, at))
    return sorted(found)


def _template_says(err: ValidationError, at: str, pointer: str, template: str) -> bool:
    """Whether ``err`` (at ``at``) is the template compiler's to report: it is inside the
    template at ``template``, or at it and from the template's own schema (reached through
    the section's ``properties``). A rule of the section about the template's key itself (a
    results mode refusing it) is the schema's."""
    if at.startswith(template + "/"):
        return True
    if at != template:
        return False
    keys = template[len(pointer) + 1 :].split("/")
    through = [step for key in keys for step in ("properties", key)]
    return list(err.absolute_schema_path)[: len(through)] == through


def _described(err: ValidationError, at: str) -> list[Located]:
    """One schema error as located problems (an object with two unknown keys gives two)."""
    rule_schema: Any = err.schema if isinstance(err.schema, dict) else {}
    custom = rule_schema.get("errorMessage")
    # An error of iter_errors always carries its keyword and value (validate.py says why).
    instance, keyword, expected = err.instance, err.validator, cast(Any, err.validator_value)
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = ", ".join(sorted(rule_schema.get("properties", {})))
        return [
            (f"{at}/{escape(key)}", f"unknown key; known: {known}", "unknown-key")
            for key in instance
            if key not in rule_schema.get("properties", {})
        ]
    if keyword == "required" and isinstance(instance, dict):
        return [
            (at, custom if isinstance(custom, str) else f"missing {key!r}", "required")
            for key in expected
            if key not in instance
        ]
    if keyword == "enum":
        choices = ", ".join(json.dumps(v) if not str(v).isprintable() else str(v) for v in expected)
        return [(at, f"one of {choices}, got {instance!r}", "enum")]
    if keyword == "type":
        wanted = expected if isinstance(expected, list) else [expected]
        return [(at, f"expected {' or '.join(wanted)}, got {instance!r}", "type")]
    if isinstance(custom, str):
        return [(at, custom, str(keyword))]
    if keyword in ("minItems", "minLength", "minProperties") and expected == 1:
        return [(at, "must not be empty", str(keyword))]
    return [(at, err.message, str(keyword))]
