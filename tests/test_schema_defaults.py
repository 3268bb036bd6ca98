"""Defaults are said once, in the schema (its ``default`` annotations), and written in once
when a descriptor loads (:func:`engine.compile.schema.with_defaults`); the compiler then
reads ``spec[key]``. So the schema and the code cannot disagree: a descriptor without a key
compiles as one with the schema's default written out, for every default the schema states,
and a default changed in the schema changes what the compiler does.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import golden_streams, outcome, read_stream, toy_wires

import engine
from engine.compile.schema import schema, with_defaults


def _defaulted() -> list[tuple[str, str, dict[str, Any]]]:
    """Every default the schema states: (pointer of the object schema, key, the node whose
    ``default`` it is), a property's own or its ``$ref``'s."""
    found: list[tuple[str, str, dict[str, Any]]] = []

    def walk(node: Any, pointer: str) -> None:
        if isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{pointer}/{i}")
            return
        if not isinstance(node, dict):
            return
        for key, prop in node.get("properties", {}).items():
            holder = prop
            while isinstance(holder, dict) and "default" not in holder and "$ref" in holder:
                holder = schema()["$defs"][holder["$ref"].rsplit("/", 1)[1]]
            if isinstance(holder, dict) and "default" in holder:
                found.append((pointer, key, holder))
        for key, sub in node.items():
            if key != "default" or not isinstance(sub, (str, bool, int)):
                walk(sub, f"{pointer}/{key}")

    walk(schema(), "")
    return found


def _wires() -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Every wire with streams: the built-ins and the toys, each (name, descriptor, the
    paths of its first streams)."""
    out = []
    for name in engine.list_formats():
        fmt = engine.load_format(name)
        if fmt.is_wire:
            out.append((name, fmt.descriptor, golden_streams([name])[:4]))
    for folder in toy_wires():
        fmt = engine.load_format(str(folder / f"{folder.name}.yaml"))
        out.append((folder.name, fmt.descriptor, sorted(folder.glob("*.jsonl"))[:4]))
    return out


WIRES = _wires()


def _filled_keys(written: Any, filled: Any, pointer: str = "") -> set[str]:
    """The pointers ``with_defaults`` wrote in."""
    if isinstance(written, dict) and isinstance(filled, dict):
        return {f"{pointer}/{k}" for k in filled if k not in written} | {
            p for k in written for p in _filled_keys(written[k], filled[k], f"{pointer}/{k}")
        }
    if isinstance(written, list) and isinstance(filled, list):
        pairs = zip(written, filled, strict=True)
        return {p for i, (w, f) in enumerate(pairs) for p in _filled_keys(w, f, f"{pointer}/{i}")}
    return set()


def _results(descriptor: dict[str, Any], streams: list[Any]) -> list[dict[str, Any]]:
    """What the wire compiled from ``descriptor`` makes of each stream, events included, and
    what it says of itself."""
    strategy = engine.ExtractionStrategy(descriptor)
    out: list[Any] = [strategy.leaks_into_text, strategy.streamed_fields()]
    for path in streams:
        buf = engine.LLMStreamBuffer(strategies=[strategy], events=True)
        for event in read_stream(path):
            buf.add(event)
        buf.close()
        seen = {"skipped": [s.to_dict() for s in buf.skipped()], "events": buf.events()}
        out.append({**outcome(buf), **seen})
    return out


@pytest.mark.parametrize("name, descriptor, streams", WIRES, ids=[w[0] for w in WIRES])
def test_a_descriptor_with_its_defaults_written_out_streams_the_same(name, descriptor, streams):
    written = copy.deepcopy(descriptor)
    filled = with_defaults(descriptor)
    assert descriptor == written  # the caller's descriptor is left as it was written
    assert _results(filled, streams) == _results(descriptor, streams)


TOY: dict[str, Any] = {
    "name": "toy_defaults",
    "docs": "https://example.com/toy",
    "recognize": {"chunk": {"field": "type", "is": "string"}},
    "events": {
        "discriminator": "type",
        "on": {
            "start": [{"open": {"at": "items[i]", "from": "item"}}],
            "delta": [{"append": {"at": "items[i].text", "from": "d"}}],
            "usage": [{"usage": {"from": "u"}}],
            "error": [{"error": {}}],
        },
    },
    "calls": {"at": "items[*]", "where": {"has": "name"}, "name": "name", "args": "input"},
    "text": {"at": "items[*].text"},
}
STREAM = [
    {"type": "start", "i": 1, "item": {"text": ""}},
    {"type": "start", "i": 0, "item": {"text": ""}},
    {"type": "delta", "i": 0, "d": "a"},
    {"type": "delta", "d": "b"},  # no slot
    {"type": "usage", "u": {"in": 1}},
    {"type": "usage", "u": {"out": 2}},
]


def _toy(descriptor: dict[str, Any]) -> dict[str, Any]:
    strategy = engine.ExtractionStrategy(descriptor)
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    for event in STREAM:
        buf.add(event)
    calls = strategy.spec.calls
    return {
        "message": buf.as_dict(),
        "skipped": len(buf.skipped()),
        "usage": buf.usage,
        "leaks": strategy.leaks_into_text,
        "args": (calls.args_form, calls.args_whole),
    }


@pytest.mark.parametrize(
    "definition, key, other",
    [
        ("events", "list_order", "arrival"),
        ("without_slot", None, "continue"),
        ("else", "mode", "merge"),  # op_usage's mapping form
        ("leaks_into_text", None, True),
        ("calls", "args_form", "object"),
        ("calls", "args_arrive", "whole"),
    ],
)
def test_a_default_changed_in_the_schema_changes_what_compiles(monkeypatch, definition, key, other):
    """The compiler has no default of its own: with the schema's default changed, a
    descriptor without the key compiles as one with the new value written out, and the
    change shows."""
    holder = schema()["$defs"]["op_usage" if definition == "else" else definition]
    holder = holder["else"] if definition == "else" else holder
    holder = holder if key is None else holder["properties"][key]
    before = _toy(TOY)
    monkeypatch.setitem(holder, "default", other)
    written_out = with_defaults(TOY)
    assert written_out != TOY and _toy(written_out) != before
    assert _toy(TOY) == _toy(written_out)


# Defaults the wire compiler does not read: the codec's (its compiler reads them from the
# schema itself), the fake provider's (its test below), and two every wire writes out.
READ_ELSEWHERE = {"codec", "fences", "healing_rule", "tool_format", "stream", "else", "choice"}


def test_every_default_the_schema_states_is_one_a_descriptor_here_leaves_out():
    """The enumeration: each default the schema states is written in by ``with_defaults``
    for some wire above (so the agreement test covers it), or is read elsewhere."""
    filled = {
        (p.rsplit("/", 2)[-2:][0], p.rsplit("/", 1)[-1])
        for descriptor in [*(d for _, d, _ in WIRES), TOY]
        for p in _filled_keys(descriptor, with_defaults(descriptor))
    }
    keys = {key for _, key in filled}
    missing = [
        (pointer, key)
        for pointer, key, _ in _defaulted()
        if key not in keys and pointer.rsplit("/", 1)[-1] not in READ_ELSEWHERE
    ]
    assert missing == []
    assert len(_defaulted()) > 40


def test_templates_and_results_take_their_defaults_from_the_schema(monkeypatch):
    """A template compiled on its own, and the results section, read what a construct leaves
    out from the schema too (``$each``'s ``as``, ``$result``'s ``as``, ``$echo``'s
    ``records``, ``results.leak_role``)."""
    from engine.compile.results import check_sections
    from engine.compile.templates import compile_template

    defs = schema()["$defs"]
    monkeypatch.setitem(defs["template_each"]["properties"]["as"], "default", "it")
    monkeypatch.setitem(defs["template_result"]["properties"]["as"], "default", "object")
    monkeypatch.setitem(defs["template_echo"]["properties"]["records"], "default", "done")
    monkeypatch.setitem(defs["results"]["properties"]["leak_role"], "default", "tool")
    each = compile_template({"$each": "xs", "$emit": {"$path": "it"}})
    assert each.render({"xs": [1, 2], "item": 0}) == [1, 2]
    assert compile_template({"$result": "r"}).render({"r": {"result": 3}}) == {"result": 3}
    echo = compile_template({"$echo": "items", "calls": {"id": "id", "name": "name"}})
    answered = [{"tool_call_id": "a", "name": "f"}]
    assert echo.render({"items": [{"id": "a", "name": "f"}], "done": answered}) == [
        {"id": "a", "name": "f"}
    ]
    results = dict(engine.load_format("openai_chat").descriptor["results"])
    results.pop("leak_role", None)
    sections, problems = check_sections({"results": results})
    assert problems == [] and sections.results is not None
    assert sections.results.leak_role == "tool"


def test_the_serve_section_takes_its_defaults_from_the_schema(monkeypatch):
    """An endpoint without ``method`` answers the schema's default one."""
    from engine.compile.serve import check_serve

    serve = engine.load_format("openai_chat").descriptor["serve"]
    assert any("method" not in e for e in serve["endpoints"])
    endpoint = schema()["$defs"]["serve_endpoint"]["properties"]["method"]
    monkeypatch.setitem(endpoint, "default", "GET")
    compiled, problems = check_serve({"serve": serve})
    assert problems == [] and compiled is not None
    assert [e.method for e in compiled.endpoints] == [
        e.get("method", "GET") for e in serve["endpoints"]
    ]
