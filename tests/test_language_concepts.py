"""Issue 18, point 3: the concepts a new author of agent protocols needed, each with its toy
wire in ``tests/golden/<toy>/`` (goldens, expectations, snapshots) and a broken descriptor
in ``tests/broken/``; these tests hold what the snapshots cannot say (a stream cut short, the
fate of each call, copies):

- a value read from the first of several places (``{first: [...]}``): ``aisdk_first_of``;
- calls the stream answers itself (``calls.answered``): ``aisdk_provider_executed`` (known
  when the call starts) and ``agui_results`` (``later``: the answer follows the call's end);
- update an item by its identity, or add it (``push``'s ``update_by``): ``aisdk_data_upsert``;
- constants (``{value: V}``) and JMESPath objects without absent keys (``omit_null``):
  ``aisdk_values``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import read_stream, toy_wires

import engine
from engine.compile.paths import compile_read

GOLDEN = Path(__file__).parent / "golden"
CONCEPTS = {
    "aisdk_first_of",
    "aisdk_provider_executed",
    "agui_results",
    "aisdk_data_upsert",
    "aisdk_values",
}


def _fmt(toy: str) -> engine.ExtractionStrategy:
    return engine.load_format(GOLDEN / toy / f"{toy}.yaml")


def _buffer(toy: str) -> engine.LLMStreamBuffer:
    return engine.LLMStreamBuffer(strategies=[_fmt(toy)], events=True)


def _fed(toy: str, stream: str) -> engine.LLMStreamBuffer:
    buf = _buffer(toy)
    for ev in read_stream(GOLDEN / toy / stream):
        buf.add(ev)
    return buf


class Echo(engine.BaseDriver):
    """Owns every tool the toys name; echoes the arguments."""

    def list_tools(self):
        names = ["get_weather", "get_time", "web_search", "search", "confirm"]
        return [engine.Tool(name=n, description="", parameters={"type": "object"}) for n in names]

    def execute_tool(self, tool_name, arguments):
        return arguments


def test_every_concept_has_its_toy_wire_and_a_broken_descriptor():
    found = {folder.name for folder in toy_wires()}
    assert found >= CONCEPTS
    broken = {p.stem for p in (Path(__file__).parent / "broken").glob("*.yaml")}
    assert broken >= {
        "first_of_one",
        "constant_null",
        "omit_null_not_boolean",
        "update_by_empty",
        "answered_without_where",
    }


# -- a value from the first of several places ----------------------------------------------


def test_a_first_read_names_both_shapes_of_tool_part_streamed_and_whole():
    buf = _fed("aisdk_first_of", "static_and_dynamic.jsonl")
    names = [c.name for c in buf.calls()]
    assert names == ["get_weather", "get_time"]
    assert [c.name for c in buf.strategy.extract(buf.as_dict())] == names


def test_a_first_read_tries_its_reads_in_order_and_skips_null():
    read = compile_read({"first": ["a", "b.c", {"value": "fallback"}]})
    assert read({"a": None, "b": {"c": 2}}, None) == 2
    assert read({"a": 1, "b": {"c": 2}}, None) == 1
    assert read({}, None) == "fallback"


# -- calls the stream answers itself ---------------------------------------------------------


def test_a_provider_executed_call_is_never_runnable_nor_forming_nor_incomplete():
    buf = _buffer("aisdk_provider_executed")
    events = read_stream(GOLDEN / "aisdk_provider_executed" / "search_then_client_call.jsonl")
    for ev in events[:4]:  # the provider's call, streamed and complete
        buf.add(ev)
        assert not buf.forming()
        assert buf.calls() == []
    for ev in events[4:]:
        buf.add(ev)
    assert [c.id for c in buf.calls()] == ["call-2"]
    started = [ev.id for ev in buf.events() if isinstance(ev, engine.CallStarted)]
    assert started == ["call-2"]
    response = Echo().process_llm_response(buf)
    assert [r.tool_call_id for r in response.executed_calls] == ["call-2"]


def test_a_provider_executed_call_cut_short_is_no_incomplete_call():
    buf = _fed("aisdk_provider_executed", "search_cut.jsonl")
    buf.close()
    assert buf.incomplete_calls() == []
    assert buf.strategy.incomplete_calls(buf.as_dict()) == []
    response = Echo().process_llm_response(buf)
    assert response.retry_prompt is None and not response.executed_calls


def test_calls_answered_later_are_ready_at_the_done_and_the_answered_one_never():
    buf = _buffer("agui_results")
    events = read_stream(GOLDEN / "agui_results" / "backend_and_frontend_call.jsonl")
    for ev in events[:-1]:  # both calls complete, one answered after its end
        buf.add(ev)
        assert buf.calls() == [] and not buf.forming()
        kinds = (engine.CallStarted, engine.ArgumentsDelta, engine.CallReady)
        assert not any(isinstance(e, kinds) for e in buf.events())
    buf.add(events[-1])  # RUN_FINISHED
    assert [(c.name, c.id) for c in buf.calls()] == [("confirm", "tc-2")]
    recorded = buf.events()
    assert [e.call.id for e in recorded if isinstance(e, engine.CallReady)] == ["tc-2"]
    assert not [e for e in recorded if getattr(e, "id", None) == "tc-1"]
    buf.close()
    assert buf.incomplete_calls() == []
    assert not buf.forming()
    response = Echo().process_llm_response(buf)
    assert [r.tool_call_id for r in response.executed_calls] == ["tc-2"]


def test_a_call_answered_by_a_cut_stream_has_no_fate_and_an_unanswered_one_is_cut():
    buf = _fed("agui_results", "answered_then_cut.jsonl")
    buf.close()
    assert buf.calls() == [] and buf.incomplete_calls() == []
    cut = _buffer("agui_results")
    for ev in read_stream(GOLDEN / "agui_results" / "answered_then_cut.jsonl")[:3]:
        cut.add(ev)
    cut.close()
    assert [(c.id, c.reason) for c in cut.incomplete_calls()] == [("tc-1", "cut")]


def test_an_unanswered_call_whose_stream_was_cut_after_its_end_is_ready_at_close():
    buf = _buffer("agui_results")
    events = read_stream(GOLDEN / "agui_results" / "backend_and_frontend_call.jsonl")
    for ev in events[:7]:  # the search call, ended, no result yet, no RUN_FINISHED
        buf.add(ev)
    assert buf.calls() == []
    buf.close()
    assert [c.id for c in buf.calls()] == ["tc-1"]


# -- update by identity, or add ------------------------------------------------------------


def test_update_by_replaces_the_part_of_the_same_type_and_id_in_its_place():
    buf = _fed("aisdk_data_upsert", "loading_then_result.jsonl")
    parts = buf.as_dict()["parts"]
    assert [(p["type"], p.get("id")) for p in parts] == [
        ("data-weather", "w-1"),
        ("data-sources", None),
        ("text", None),
        ("data-weather", "w-2"),
        ("data-sources", None),
    ]
    assert parts[0]["data"]["status"] == "success"


def test_update_by_needs_every_field_and_an_equal_element():
    fmt = _fmt("aisdk_data_upsert")
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    buf.add({"type": "data-a", "id": "1", "data": 1})
    buf.add({"type": "data-b", "id": "1", "data": 2})  # another type: added
    buf.add({"type": "data-a", "id": "1", "data": 3})  # the same: replaced
    buf.add({"type": "data-a", "data": 4})  # no id: added
    assert [p["data"] for p in buf.as_dict()["parts"]] == [3, 2, 4]


# -- constants, and objects without absent keys ----------------------------------------------


def test_constants_and_omit_null_write_only_what_the_wire_sent():
    buf = _fed("aisdk_values", "titled_and_untitled.jsonl")
    first, second = buf.as_dict()["parts"]
    assert first["title"] == "Weather" and "title" not in second
    assert first["type"] == second["type"] == "dynamic-tool"
    assert [c.name for c in buf.calls()] == ["get_weather", "get_time"]


def test_a_constant_object_is_a_fresh_copy_each_time():
    read = compile_read({"value": {"kind": ["a"]}})
    one, two = read({}, None), read({}, None)
    one["kind"].append("b")
    assert two == {"kind": ["a"]} and read({}, None) == {"kind": ["a"]}


@pytest.mark.parametrize(
    ("expression", "event", "expected"),
    [
        ("{a: a, b: b}", {"a": 1}, {"a": 1}),
        ("{a: a, f: {n: n}}", {"a": 1}, {"a": 1, "f": {}}),
        ("[a, b]", {"a": 1}, [1, None]),  # a list keeps its positions
    ],
)
def test_omit_null_leaves_null_keys_out_of_objects_only(expression, event, expected):
    assert compile_read({"jmespath": expression, "omit_null": True})(event, None) == expected


def test_without_omit_null_a_multiselect_hash_writes_null():
    assert compile_read({"jmespath": "{a: a, b: b}"})({"a": 1}, None) == {"a": 1, "b": None}


def test_an_update_that_raises_leaves_the_element_it_would_replace():
    buf = engine.LLMStreamBuffer(strategies=[_fmt("aisdk_data_upsert")])
    buf.add({"type": "data-a", "id": "1", "data": {"status": "loading"}})
    deep: dict = {}
    node = deep
    for _ in range(100_000):  # deeper than JSON text decodes to: the chunk is refused
        node["x"] = {}
        node = node["x"]
    with pytest.raises(engine.ChunkError):
        buf.add({"type": "data-a", "id": "1", "data": deep})
    assert buf.as_dict()["parts"] == [{"type": "data-a", "id": "1", "data": {"status": "loading"}}]


def test_a_call_held_by_a_chunk_that_raises_is_taken_back_with_it():
    fmt = engine.ExtractionStrategy(
        {
            "name": "held_rollback",
            "title": "held_rollback",
            "docs": "https://example.invalid",
            "recognize": {"chunk": {"has": "type"}},
            "events": {
                "discriminator": "type",
                "on": {
                    "start": [
                        {"open": {"at": "calls[id]", "from": ""}},
                        {"set": {"at": "others[bad].x", "from": "id"}},
                    ],
                    "end": [{"close": {"at": "calls[id]"}}],
                    "done": ["finish"],
                },
            },
            "message": {},
            "calls": {
                "at": "calls[*]",
                "answered": {"where": {"has": "result"}, "later": True},
                "name": "name",
                "id": "id",
                "args": "args",
                "args_form": "object",
            },
            "text": {"at": "text"},
        }
    )
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    buf.add({"type": "start", "id": "c-0", "name": "real"})
    with pytest.raises(engine.ChunkError):  # opened and held, then a later rule raised
        buf.add({"type": "start", "id": "c-1", "name": "ghost", "bad": [1]})
    buf.add({"type": "done"})
    assert [c.name for c in buf.calls()] == ["real"] and buf.incomplete_calls() == []
