"""The operations' behaviour, as data: ``tests/ops/<op>.yaml``, one file per operation.

Like jmespath's compliance suite, a case is events in, rules, and what must come out; a new
case needs no test code. A file holds::

    operation: append        # the operation its cases are about (each case uses it)
    descriptor: {...}        # optional: sections merged into every case's descriptor
    cases:
      - case: what it shows
        descriptor: {...}    # optional: sections for this case only
        rules: [...]         # the rules run on every event (``events.every``), or
        on: {...}            # rules by event name (``events.on``, discriminator ``type``)
        events: [...]        # the chunks, in order
        message: {...}       # the assembled message (``buf.as_dict()``)
        skipped: [...]       # the reasons of ``buf.skipped()`` (default: none)
        unknown: {...}       # ``buf.unknown_events`` (default: none)
        calls: [...]         # optional: ``buf.calls()`` as {name, arguments, id}
        text: "..."          # optional: the display text (``buf.get_content()``)
        stop_reason, usage, error, finished: optional, as the buffer reports them

Every case's descriptor must validate as a user's file would, so that a case shows what a
descriptor can say, and the compiled strategy is the one that validation returns.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import engine
from engine.compile.operations import OPERATIONS
from engine.language.validate import compile_text, schema
from engine.language.yamlsource import load

OPS = Path(__file__).resolve().parent / "ops"
FILES = sorted(OPS.glob("*.yaml"))

BASE: dict[str, Any] = {
    "name": "op_case",
    "title": "An operation case",
    "docs": "https://example.invalid/op-case",
    # Every chunk is this wire's: nothing carries the key.
    "recognize": {"chunk": {"not": {"has": "__no_such_key__"}}},
    "message": {"role": "assistant"},
    "calls": {
        "at": "content[*]",
        "where": {"field": "type", "equals": "tool_use"},
        "name": "name",
        "id": "id",
        "args": "input",
        "args_arrive": "whole",
    },
    "text": {"at": "content[*].text", "where": {"field": "type", "equals": "text"}},
}
ORDER = ("name", "title", "docs", "recognize", "events", "message", "calls", "text", "reasoning")


def _load(path: Path) -> dict:
    """A case file, read as descriptors are (``on`` is a key, not YAML 1.1's true)."""
    data, _ = load(path.read_text(encoding="utf-8"))
    return data


def _cases() -> list:
    out = []
    for path in FILES:
        data = _load(path)
        for i, case in enumerate(data["cases"]):
            out.append(pytest.param(data, case, id=f"{path.stem}[{i}] {case['case']}"))
    return out


def _descriptor(data: dict, case: dict) -> dict:
    merged = copy.deepcopy(BASE)
    merged.update(copy.deepcopy(data.get("descriptor", {})))
    merged.update(copy.deepcopy(case.get("descriptor", {})))
    if "on" in case:
        merged["events"] = {"discriminator": "type", "on": case["on"]}
    else:
        merged["events"] = {"every": case["rules"]}
    return {key: merged[key] for key in sorted(merged, key=_section_rank)}


def _section_rank(key: str) -> int:
    return ORDER.index(key) if key in ORDER else len(ORDER)


def _strategy(descriptor: dict):
    text = yaml.safe_dump(descriptor, sort_keys=False, allow_unicode=True)
    _, problems, strategy = compile_text(text, "op_case.yaml")
    assert [str(p) for p in problems] == []
    return strategy


def test_every_operation_has_its_cases():
    assert sorted(path.stem for path in FILES) == sorted(OPERATIONS)
    for path in FILES:
        data = _load(path)
        assert data["operation"] == path.stem
        assert len(data["cases"]) >= 2, f"{path.name}: at least two cases"


def test_each_case_uses_its_operation():
    for path in FILES:
        data = _load(path)
        for case in data["cases"]:
            rules = case.get("rules") or [r for rs in case.get("on", {}).values() for r in rs]
            names = {r if isinstance(r, str) else next(iter(r)) for r in rules}
            assert data["operation"] in names, f"{path.name}: {case['case']}"


@pytest.mark.parametrize(("data", "case"), _cases())
def test_operation_case(data: dict, case: dict):
    buf = engine.LLMStreamBuffer(strategies=[_strategy(_descriptor(data, case))])
    for event in case["events"]:
        buf.add(copy.deepcopy(event))
    assert buf.as_dict() == case["message"]
    assert [s.reason for s in buf.skipped()] == case.get("skipped", [])
    assert dict(buf.unknown_events) == case.get("unknown", {})
    if "calls" in case:
        got = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in buf.calls()]
        assert got == case["calls"]
    if "text" in case:
        assert buf.get_content() == case["text"]
    for key in ("stop_reason", "usage", "error"):
        if key in case:
            assert getattr(buf, key) == case[key]
    if "finished" in case:
        assert buf.is_finished() is case["finished"]


def test_the_schema_declares_each_operation_of_the_table_by_its_fragment():
    defs = schema()["$defs"]
    declared = defs["operation_mapping"]["properties"]
    assert declared == {name: {"$ref": entry.schema} for name, entry in OPERATIONS.items()}
    for entry in OPERATIONS.values():
        assert entry.schema.removeprefix("#/$defs/") in defs, entry.name
    bare = [name for name, entry in OPERATIONS.items() if entry.bare]
    assert defs["bare_operation"]["enum"] == bare
