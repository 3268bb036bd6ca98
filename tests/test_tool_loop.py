"""The tool loop a production agent can trust (issue 16): each call runs at most once per
driver however the buffer is processed, the history holds each assistant turn once with every
call answered, arguments are checked against the tool's schema before a tool sees them, and a
programmer's error raises instead of reaching the model. On the recorded streams of every wire.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache

import jsonschema
import pytest
from conftest import GOLDEN, examples, golden_streams, read_stream, replay, stream_id
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import BaseDriver, LLMStreamBuffer, Orchestrator, Tool
from engine.drivers.arguments import fast_check

WIRES = [name for name in engine.list_formats() if name != "mcs_text"]


def _streams_with_calls() -> list:
    out = []
    for path in golden_streams(WIRES):
        buf = replay(read_stream(path), path.parent.name)
        if buf.calls():
            out.append(path)
    return out


CALL_STREAMS = _streams_with_calls()


@cache
def _text_stream(wire: str):
    """A recorded text-only turn of ``wire`` that ends normally (no error, no call): found
    once per wire (each of the wire's call streams pairs with it; the search replays the
    wire's streams in turn, at collection, on every worker)."""
    for path in golden_streams([wire]):
        buf = replay(read_stream(path), wire)
        if buf.get_content() and not buf.calls() and not buf.incomplete_calls() and not buf.error:
            return path
    return None


class Tools(BaseDriver):
    """Owns ``names`` (any arguments); counts every run; each tool returns its arguments."""

    def __init__(self, *names: str, schema: dict | None = None, **options) -> None:
        super().__init__(**options)
        self.names = names
        self.schema = schema if schema is not None else {"type": "object"}
        self.ran: list[tuple[str, dict]] = []

    def list_tools(self) -> list[Tool]:
        return [Tool(name, name, self.schema) for name in self.names]

    def execute_tool(self, tool_name: str, arguments: dict):
        self.ran.append((tool_name, arguments))
        return {"echo": arguments}


class AsyncTools(Tools):
    async def execute_tool(self, tool_name: str, arguments: dict):
        await asyncio.sleep(0)
        self.ran.append((tool_name, arguments))
        return {"echo": arguments}


def _expected(path) -> list[tuple[str, dict]]:
    buf = replay(read_stream(path), path.parent.name)
    return [(c.name, c.arguments) for c in buf.calls()]


def _names(path) -> list[str]:
    return sorted({name for name, _ in _expected(path)})


# -- 1. each call runs at most once per driver ---------------------------------------------------


@pytest.mark.parametrize("path", CALL_STREAMS, ids=stream_id)
def test_a_round_processed_twice_runs_each_call_once(path):
    driver = Tools(*_names(path))
    buf = LLMStreamBuffer()
    for event in read_stream(path):
        buf.add(event)
        driver.process_llm_response(buf)
        again = driver.process_llm_response(buf)  # nothing new since: nothing new
        assert not again.executed_calls and not again.messages
    buf.close()
    driver.process_llm_response(buf)
    for _ in range(2):  # rounds after close() find nothing either
        after = driver.process_llm_response(buf)
        assert not after.executed_calls and not after.messages and not after.incomplete_calls
    assert driver.ran == _expected(path)


@pytest.mark.parametrize("path", CALL_STREAMS, ids=stream_id)
def test_a_task_per_chunk_runs_each_call_once(path):
    """``asyncio.create_task(driver.aprocess_llm_response(buf))`` after every chunk: the tasks
    run once the loop is free, all on the finished stream."""
    driver = AsyncTools(*_names(path))

    async def main() -> list[engine.DriverResponse]:
        buf = LLMStreamBuffer()
        tasks = []
        for event in read_stream(path):
            buf.add(event)
            tasks.append(asyncio.create_task(driver.aprocess_llm_response(buf)))
        buf.close()
        tasks.append(asyncio.create_task(driver.aprocess_llm_response(buf)))
        return await asyncio.gather(*tasks)

    responses = asyncio.run(main())
    assert sorted(driver.ran, key=json.dumps) == sorted(_expected(path), key=json.dumps)
    assert sum(1 for r in responses if r.messages) == 1  # the turn went into one history


@pytest.mark.parametrize("path", CALL_STREAMS[:6], ids=stream_id)
def test_several_drivers_and_alternating_buffers_run_each_call_once(path):
    """Two drivers fed one buffer each run their own calls once; a driver fed two buffers in
    turn forgets neither."""
    names = _names(path)
    first, second = Tools(*names[:1]), Tools(*names[1:])
    a, b = LLMStreamBuffer(), LLMStreamBuffer()
    events = read_stream(path)
    for event in events:
        for buf in (a, b):
            buf.add(event)
            first.process_llm_response(buf)
            second.process_llm_response(buf)
    for buf in (a, b):
        buf.close()
        first.process_llm_response(buf)
        second.process_llm_response(buf)
        first.process_llm_response(buf)
    expected = _expected(path)
    assert first.ran == [c for c in expected if c[0] in names[:1]] * 2
    assert second.ran == [c for c in expected if c[0] in names[1:]] * 2


# -- 4. a whole, valid history -------------------------------------------------------------------


def _loop(driver: BaseDriver, events: list[dict]) -> list[dict]:
    """The README's client loop over one stream: the history it appends."""
    messages: list[dict] = []
    buf = LLMStreamBuffer()
    for event in events:
        buf.add(event)
        messages += driver.process_llm_response(buf).messages
        buf.text()
    buf.close()
    messages += driver.process_llm_response(buf).messages
    return messages


TWO_TURNS = [
    pytest.param(path, _text_stream(path.parent.name), id=stream_id(path))
    for path in CALL_STREAMS
    if _text_stream(path.parent.name) is not None
]


def test_every_wire_has_a_two_turn_conversation():
    assert {p.values[0].parent.name for p in TWO_TURNS} == set(WIRES)


@pytest.mark.parametrize(("calls", "text"), TWO_TURNS)
def test_a_two_turn_conversation_keeps_each_turn_once_and_answers_every_call(calls, text):
    wire = calls.parent.name
    fmt = engine.load_format(wire)
    driver = Tools(*_names(calls))
    first = _loop(driver, read_stream(calls))
    second = _loop(driver, read_stream(text))
    call_turn = replay(read_stream(calls), wire)
    records = [
        engine.ToolCallRecord(c.name, c.arguments, {"echo": c.arguments}, None, c.id)
        for c in call_turn.calls()
    ]
    # the call turn and a result for each call, exactly as the wire's results shape them
    assert first == fmt.result_messages(call_turn.as_dict(), records)
    assert driver.ran == _expected(calls)
    # the text turn once: its text in exactly one message of the history
    answer = replay(read_stream(text), wire).get_content()
    assert second == fmt.result_messages(replay(read_stream(text), wire).as_dict(), [])
    assert sum(answer in json.dumps(m, ensure_ascii=False) for m in second) == 1 or (
        len(second) == 1
    )
    dumped = json.dumps(first)
    for record in records:
        if record.tool_call_id:
            assert record.tool_call_id in dumped


def test_an_incomplete_call_is_answered_in_the_history_with_arguments_the_api_takes():
    """Anthropic: a call cut by max_tokens is answered with an is_error tool_result, and its
    ``input`` in the assistant turn is an object (the raw text would be refused)."""
    path = GOLDEN / "anthropic_messages" / "hand_max_tokens_cut_in_string.jsonl"
    events = read_stream(path)
    cut = replay(events, "anthropic_messages").incomplete_calls()
    (call,) = cut
    driver = Tools(call.name)
    history = _loop(driver, events)
    assert driver.ran == []
    assistant, results = history
    (block,) = [b for b in assistant["content"] if b.get("type") == "tool_use"]
    assert block["input"] == {} and block["id"] == call.id
    (result,) = results["content"]
    assert result["tool_use_id"] == call.id and result["is_error"] is True
    assert call.name in result["content"]


def test_an_orchestrator_answers_a_tool_nobody_owns():
    path = GOLDEN / "anthropic_messages" / "hand_parallel_tool_use.jsonl"
    events = read_stream(path)
    both = Orchestrator([Tools("get_time"), Tools("send_mail")])
    history = _loop(both, events)
    answered = [b["tool_use_id"] for m in history[1:] for b in m["content"]]
    calls = replay(events, "anthropic_messages").calls()
    assert answered == [c.id for c in calls]  # every call of the turn has its result
    errors = [b for m in history[1:] for b in m["content"] if b.get("is_error")]
    assert len(errors) == len(calls)
    for error in errors:
        assert "get_weather" in error["content"] and "get_time, send_mail" in error["content"]
    # a lone driver leaves them out: another driver may own them
    alone = _loop(Tools("get_time"), events)
    assert all(b.get("type") != "tool_use" for b in alone[0]["content"]) and len(alone) == 1


# -- 6. arguments validated against the tool's schema --------------------------------------------

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _chat_call(arguments: str) -> list[dict]:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return [
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": arguments},
                            }
                        ],
                    },
                    "finish_reason": None,
                }
            ],
        },
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [("{}", "the arguments object"), ('{"city": 42}', "/city")],
    ids=["missing", "type"],
)
def test_arguments_that_fail_the_schema_never_reach_the_tool(arguments, pointer):
    driver = Tools("get_weather", schema=CITY)
    buf = LLMStreamBuffer()
    responses = []
    for event in _chat_call(arguments):
        buf.add(event)
        responses.append(driver.process_llm_response(buf))
    buf.close()
    responses.append(driver.process_llm_response(buf))
    assert driver.ran == []
    (turn,) = [r for r in responses if r.messages]
    assert not turn.call_executed and not turn.call_failed
    (rejected,) = turn.rejected_calls
    assert f"at {pointer}:" in rejected.error and rejected.tool_call_id == "call_1"
    assert turn.retry_prompt == rejected.error
    assistant, result = turn.messages
    assert result == {"role": "tool", "tool_call_id": "call_1", "content": rejected.error}


def test_valid_arguments_run_and_validation_can_be_turned_off():
    ok = Tools("get_weather", schema=CITY)
    ok.process_llm_response(_whole('{"city": "Oslo"}'))
    assert ok.ran == [("get_weather", {"city": "Oslo"})]
    unchecked = Tools("get_weather", schema=CITY, validate_arguments=False)
    unchecked.process_llm_response(_whole("{}"))
    assert unchecked.ran == [("get_weather", {})]


def _whole(arguments: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": arguments},
            }
        ],
    }


@pytest.mark.parametrize("path", CALL_STREAMS, ids=stream_id)
def test_every_wire_checks_arguments_before_a_call_runs(path):
    """A schema that every recorded call fails (a required member none of them sends): no
    tool runs, and every call is answered with an error naming the missing member. A
    free-form call (a Responses custom tool's: text, not JSON) is never checked against a
    schema (tests/test_wire_shapes.py checks it against its tool's format)."""
    schema = {"type": "object", "required": ["zz_never_sent"]}
    driver = Tools(*_names(path), schema=schema)
    history = _loop(driver, read_stream(path))
    free = _free_calls(path)
    assert [name for name, _ in driver.ran if name not in {c.name for c in free}] == []
    if len(free) < len(replay(read_stream(path)).calls()):  # a call the schema applies to
        assert "zz_never_sent" in json.dumps(history)


def _free_calls(path):
    return [c for c in replay(read_stream(path)).calls() if c.free_form]


def test_text_calls_are_checked_too():
    driver = Tools("get_weather", schema=CITY)
    turn = driver.process_llm_response('{"tool": "get_weather", "arguments": {"city": 1}}')
    assert driver.ran == [] and "at /city:" in turn.retry_prompt


def test_the_draft_named_by_dollar_schema_is_used():
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
    }
    driver = Tools("get_weather", schema=draft4)
    turn = driver.process_llm_response(_whole('{"n": 5}'))  # 5 is not below an exclusive 5
    assert driver.ran == [] and "at /n:" in turn.retry_prompt
    driver.process_llm_response(_whole('{"n": 4}'))
    assert driver.ran == [("get_weather", {"n": 4})]


def test_a_schema_that_is_not_usable_is_a_value_error_naming_the_tool():
    broken = {"type": "object", "properties": {"city": {"type": "strng"}}}
    driver = Tools("get_weather", schema=broken)
    with pytest.raises(ValueError, match="get_weather"):
        driver.process_llm_response(_whole('{"city": "Oslo"}'))
    assert driver.ran == []
    with pytest.raises(ValueError, match="get_weather"):
        Tools("get_weather", schema=["not", "a", "schema"]).process_llm_response("hi")


# -- 7 and 8. the cause is told; a programmer's error raises -------------------------------------


def test_a_tool_that_raises_is_an_error_result_and_keeps_its_exception():
    class Fails(Tools):
        def execute_tool(self, tool_name, arguments):
            raise ConnectionError("weather service down")

    turn = Fails("get_weather").process_llm_response(_whole('{"city": "Oslo"}'))
    (record,) = turn.executed_calls
    assert turn.call_failed and isinstance(record.exception, ConnectionError)
    assert "weather service down" in record.error and "weather service down" in turn.retry_prompt


def test_an_async_tool_on_the_sync_path_raises_before_the_round_moves():
    path = GOLDEN / "openai_chat" / "oai_py_non_strict_tool.jsonl"
    driver = AsyncTools(*_names(path))
    buf = replay(read_stream(path), "openai_chat")
    with pytest.raises(TypeError, match="aprocess_llm_response"):
        driver.process_llm_response(buf)
    turn = asyncio.run(driver.aprocess_llm_response(buf))  # the same round, now awaited
    assert driver.ran == _expected(path) and turn.messages


# -- the fast path of the schema check agrees with jsonschema ------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=True, allow_infinity=False)
    | st.sampled_from(["", "a", "ab", "abc", "x" * 9]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=8,
)
_bounds = st.integers(0, 3) | st.floats(-2, 2, allow_nan=False)
_leaf_schema = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            ["object", "array", "string", "number", "integer", "boolean", "null"]
        )
        | st.lists(
            st.sampled_from(["string", "integer", "null", "number"]), min_size=1, max_size=2
        ),
        "enum": st.lists(st.sampled_from(["a", "ab", "x"]), min_size=1, max_size=2),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "minimum": _bounds,
        "maximum": _bounds,
        "exclusiveMinimum": _bounds,
        "exclusiveMaximum": _bounds,
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 2),
        "description": st.just("annotation only"),
        "format": st.just("email"),
    },
)
_schemas = st.recursive(
    _leaf_schema | st.booleans(),
    lambda inner: st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("object"),
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
            "additionalProperties": inner,
            "items": inner,
        },
    ),
    max_leaves=6,
)
_DRAFTS = [
    jsonschema.Draft6Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft202012Validator,
]


@settings(max_examples=examples(400), deadline=None)
@given(schema=_schemas, value=_json, draft=st.sampled_from(_DRAFTS))
def test_the_fast_schema_check_agrees_with_jsonschema(schema, value, draft):
    check = fast_check(schema, draft)
    assert check is not None  # every keyword drawn here has its fast path
    assert check(value) == draft(schema).is_valid(value)


def test_a_schema_beyond_the_fast_path_is_checked_by_jsonschema():
    for schema in (
        {"anyOf": [{"type": "string"}]},
        {"$ref": "#/$defs/a", "$defs": {"a": {}}},
        {"type": "string", "pattern": "^a"},
        {"enum": [1, True]},  # JSON equality of non-strings is jsonschema's
    ):
        assert fast_check(schema, jsonschema.Draft202012Validator) is None
    assert fast_check({"type": "string"}, jsonschema.Draft4Validator) is None
    pattern = {"type": "object", "properties": {"city": {"pattern": "^O"}}}
    driver = Tools("get_weather", schema=pattern)
    driver.process_llm_response(_whole('{"city": "Bergen"}'))
    assert driver.ran == []
