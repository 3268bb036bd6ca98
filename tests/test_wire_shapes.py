"""Issue 20: three wire shapes from real recordings, on every path a stream takes.

- OpenAI Chat's legacy ``function_call`` (before ``tool_calls``): the message keeps the
  provider's own ``function_call: {name, arguments}`` whole, the call is extracted (no id),
  forms and streams its events as any call, and is answered with the legacy
  ``{role: function, name, content}`` message.
- OpenAI Responses custom tools (``custom_tool_call``, free-form ``input`` text): a call once
  its item is done, never parsed, never invalid; its arguments ``{"input": TEXT}`` (the
  descriptor's ``args`` field as the one key), ``ExtractedCall.free_form`` true; events
  stream the text; the result goes back as ``custom_tool_call_output``; a ``Tool`` with a
  ``format`` is declared as a custom tool, and its regex format is checked before it runs.

- A Bedrock ConverseStream that opens with an exception frame (before any ``messageStart``),
  in both recorded shapes (boto3 dicts and ``_event``-typed frames): it resolves to
  ``bedrock_converse``, the exception is ``buf.error`` and the stream is finished.
"""

from __future__ import annotations

import json

import pytest
from conftest import GOLDEN, Recorder, drive, read_stream, replay

import engine

BEDROCK_FIRST = sorted((GOLDEN / "bedrock_converse").glob("hand_exception_first_*.jsonl"))
# Every exception member of ConverseStreamOutput:
# https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html
BEDROCK_EXCEPTIONS = [
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
]


def _after_message_start(frame: dict) -> engine.LLMStreamBuffer:
    """The same exception frame where it resolved before: after a messageStart of its shape."""
    start = (
        {"_event": "messageStart", "role": "assistant"}
        if "_event" in frame
        else {"messageStart": {"role": "assistant"}}
    )
    return replay([start, frame], close=False)


# -- 1. OpenAI's legacy function_call ---------------------------------------------------------

LEGACY = sorted((GOLDEN / "openai_chat").glob("hand_legacy_function_call*.jsonl"))


def _expect(path):
    return json.loads(path.with_name(path.stem + ".expect.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.stem)
def test_legacy_function_call_message_and_call(path):
    expect = _expect(path)
    buf = replay(read_stream(path), close=False)
    assert buf.format == "openai_chat" and buf.is_finished()
    assert buf.as_dict() == expect["message"]
    calls = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in buf.calls()]
    assert calls == expect["calls"] and expect["calls"]
    assert buf.stop_reason == "function_call"
    fmt = engine.load_format("openai_chat")
    assert fmt.extract(buf.as_dict()) == buf.calls()
    assert fmt.forming(buf.as_dict())


def test_legacy_function_call_forms_while_streaming():
    (path,) = LEGACY
    events = read_stream(path)
    buf = replay(events[:2], close=False)
    forming = buf.forming()
    assert forming and forming.tool_name == "get_current_weather"
    assert buf.calls() == []


def test_legacy_function_call_events():
    (path,) = LEGACY
    buf = engine.LLMStreamBuffer(events=True)
    evs = list(buf.consume(read_stream(path)))
    kinds = [type(e).__name__ for e in evs]
    assert kinds[0] == "CallStarted" and kinds[-2:] == ["CallReady", "Finished"]
    started = evs[0]
    assert (started.name, started.id) == ("get_current_weather", None)
    deltas = [e for e in evs if isinstance(e, engine.ArgumentsDelta)]
    assert {e.slot for e in evs if hasattr(e, "slot")} == {started.slot}
    assert "".join(e.text for e in deltas) == buf.as_dict()["function_call"]["arguments"]
    assert deltas[-1].partial == {"location": "Boston, MA"}
    assert evs[-2].call == buf.calls()[0]


def test_legacy_function_call_driver_runs_once_and_answers_in_the_legacy_shape():
    (path,) = LEGACY
    driver = Recorder("get_current_weather")
    rounds = drive(driver, read_stream(path))
    assert driver.ran == [("get_current_weather", {"location": "Boston, MA"})]
    history = [m for r in rounds for m in r.messages]
    assert history == [
        _expect(path)["message"],
        {"role": "function", "name": "get_current_weather", "content": "ok"},
    ]


def test_legacy_function_call_in_a_whole_message_runs():
    (path,) = LEGACY
    driver = Recorder("get_current_weather")
    response = driver.process_llm_response(_expect(path)["message"])
    assert driver.ran == [("get_current_weather", {"location": "Boston, MA"})]
    assert response.messages[-1]["role"] == "function"


def test_legacy_function_call_cut_is_incomplete():
    (path,) = LEGACY
    events = read_stream(path)[:4]  # the arguments stop inside a string
    buf = replay(events)
    assert buf.calls() == []
    (cut,) = buf.incomplete_calls()
    assert (cut.name, cut.id, cut.reason) == ("get_current_weather", None, "cut")


# -- 2. OpenAI Responses custom tools ----------------------------------------------------------

CUSTOM = sorted((GOLDEN / "openai_responses").glob("hand_custom_*.jsonl"))
CUSTOM_ONE = GOLDEN / "openai_responses" / "hand_custom_tool_call.jsonl"
CUSTOM_MIXED = GOLDEN / "openai_responses" / "hand_custom_and_function_call.jsonl"
TIMESTAMP = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]) ([01]\d|2[0-3]):[0-5]\d$"


def _index_of(events, kind):
    return next(i for i, e in enumerate(events) if e["type"] == kind)


@pytest.mark.parametrize("path", CUSTOM, ids=lambda p: p.stem)
def test_custom_tool_call_message_and_call(path):
    expect = _expect(path)
    buf = replay(read_stream(path))
    assert buf.as_dict() == expect["message"]
    calls = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in buf.calls()]
    assert calls == expect["calls"]
    fmt = engine.load_format("openai_responses")
    assert fmt.extract(buf.as_dict()) == buf.calls()
    free = [c.free_form for c in buf.calls()]
    assert free == [c.free_form for c in fmt.extract(buf.as_dict())]
    assert free[-1] is True and (len(free) == 1 or free[0] is False)


def test_custom_tool_call_is_runnable_when_its_item_is_done():
    events = read_stream(CUSTOM_ONE)
    done = _index_of(events, "response.output_item.done")
    buf = replay(events[:done], close=False)  # the input is whole, the item not yet done
    assert buf.calls() == [] and buf.forming().tool_name == "code_exec"
    buf.add(events[done])
    (call,) = buf.calls()
    assert call.arguments == {"input": 'print("hello, world")\nprint(sum(range(10)))'}


def test_custom_tool_call_text_is_never_parsed_nor_invalid():
    events = read_stream(CUSTOM_ONE)
    for e in events:  # a free-form input that is no JSON, and one that is
        if e["type"] == "response.custom_tool_call_input.delta":
            e["delta"] = "{"
        if e["type"] == "response.custom_tool_call_input.done":
            e["input"] = "{" * sum(1 for x in events if x.get("delta") == "{")
        if e["type"] == "response.output_item.done":
            e["item"]["input"] = "{" * 8
    buf = replay(events)
    (call,) = buf.calls()
    assert call.arguments == {"input": "{" * 8}
    assert buf.incomplete_calls() == []


def test_custom_tool_call_cut_is_incomplete():
    events = read_stream(CUSTOM_ONE)
    buf = replay(events[: _index_of(events, "response.custom_tool_call_input.done")])
    assert buf.calls() == []
    (cut,) = buf.incomplete_calls()
    raw = buf.as_dict()["output"][0]["input"]
    assert (cut.name, cut.reason, cut.raw) == ("code_exec", "cut", raw)


def test_custom_tool_call_events_stream_the_text():
    buf = engine.LLMStreamBuffer(events=True)
    evs = list(buf.consume(read_stream(CUSTOM_ONE)))
    started = next(e for e in evs if isinstance(e, engine.CallStarted))
    assert (started.name, started.id) == ("code_exec", "call_Qx7d2LkPz9RmVt3WcYbN8sHa")
    deltas = [e for e in evs if isinstance(e, engine.ArgumentsDelta)]
    text = buf.calls()[0].arguments["input"]
    assert "".join(d.text for d in deltas) == text
    assert deltas[-1].partial == {"input": text}  # one dict per call, grown in place
    (ready,) = [e for e in evs if isinstance(e, engine.CallReady)]
    assert ready.call == buf.calls()[0] and evs.index(ready) > evs.index(deltas[-1])


class _Tools(engine.BaseDriver):
    def __init__(self, tools):
        super().__init__()
        self.tools = tools
        self.ran = []

    def list_tools(self):
        return self.tools

    def execute_tool(self, tool_name, arguments):
        self.ran.append((tool_name, arguments))
        return "ok"


def _tools():
    return [
        engine.Tool("code_exec", "Executes arbitrary Python code.", format={"type": "text"}),
        engine.Tool(
            "timestamp",
            "Saves a timestamp.",
            format={"type": "grammar", "syntax": "regex", "definition": TIMESTAMP},
        ),
        engine.Tool(
            "get_weather",
            "Current weather for a city.",
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        ),
    ]


def test_custom_tool_call_driver_runs_once_and_answers_with_custom_tool_call_output():
    driver = _Tools(_tools())
    rounds = drive(driver, read_stream(CUSTOM_MIXED))
    assert driver.ran == [
        ("get_weather", {"city": "Paris"}),
        ("timestamp", {"input": "2025-09-14 09:30"}),
    ]
    history = [m for r in rounds for m in r.messages]
    output = _expect(CUSTOM_MIXED)["message"]["output"]
    assert history == [
        *output,
        {"type": "function_call_output", "call_id": output[0]["call_id"], "output": "ok"},
        {"type": "custom_tool_call_output", "call_id": output[1]["call_id"], "output": "ok"},
    ]


def test_custom_tool_call_checked_against_its_regex_never_a_json_schema():
    tools = _tools()
    tools[1] = engine.Tool(
        "timestamp",
        "Saves a timestamp.",
        {"type": "object", "required": ["never"]},  # a schema: never read for free form
        format={"type": "grammar", "syntax": "regex", "definition": r"^\d{4}$"},
    )
    driver = _Tools(tools)
    rounds = drive(driver, read_stream(CUSTOM_MIXED))
    assert driver.ran == [("get_weather", {"city": "Paris"})]
    prompt = " ".join(r.retry_prompt for r in rounds if r.retry_prompt)
    assert "timestamp" in prompt and "regex" in prompt
    answer = [m for r in rounds for m in r.messages][-1]
    assert answer["type"] == "custom_tool_call_output" and "regex" in answer["output"]


def test_custom_tool_call_lark_grammar_is_not_checked():
    tools = _tools()
    tools[1] = engine.Tool(
        "timestamp", "", format={"type": "grammar", "syntax": "lark", "definition": "start: x"}
    )
    driver = _Tools(tools)
    drive(driver, read_stream(CUSTOM_MIXED))
    assert ("timestamp", {"input": "2025-09-14 09:30"}) in driver.ran


def test_tool_declarations_declare_a_custom_tool_where_the_tool_has_a_format():
    fmt = engine.load_format("openai_responses")
    declared = fmt.tool_declarations(_tools())
    assert declared["tools"][:2] == [
        {
            "type": "custom",
            "name": "code_exec",
            "description": "Executes arbitrary Python code.",
            "format": {"type": "text"},
        },
        {
            "type": "custom",
            "name": "timestamp",
            "description": "Saves a timestamp.",
            "format": {"type": "grammar", "syntax": "regex", "definition": TIMESTAMP},
        },
    ]
    assert declared["tools"][2]["type"] == "function"
    assert engine.Tool("t").format is None  # backward compatible: a JSON-Schema tool


# -- 3. a Bedrock stream that opens with an exception ------------------------------------------


def test_bedrock_exception_first_goldens_exist_in_both_shapes():
    shapes = {"_event" in read_stream(p)[0] for p in BEDROCK_FIRST}
    assert shapes == {True, False}


@pytest.mark.parametrize("path", BEDROCK_FIRST, ids=lambda p: p.stem)
def test_bedrock_exception_first_is_the_error_of_a_finished_stream(path):
    (frame,) = read_stream(path)
    buf = replay([frame], close=False)
    assert buf.format == "bedrock_converse"
    assert buf.is_finished()
    assert buf.error is not None
    assert buf.error == _after_message_start(frame).error
    buf.close()
    assert buf.calls() == [] and buf.incomplete_calls() == []


@pytest.mark.parametrize("path", BEDROCK_FIRST, ids=lambda p: p.stem)
def test_bedrock_exception_first_events_and_driver(path):
    (frame,) = read_stream(path)
    buf = engine.LLMStreamBuffer(events=True)
    kinds = [type(ev).__name__ for ev in buf.consume([frame])]
    assert kinds == ["ProviderError", "Finished"]
    driver = Recorder("lookup_order")
    rounds = drive(driver, [frame])
    assert driver.ran == []
    assert not any(r.call_pending or r.call_executed for r in rounds)


@pytest.mark.parametrize("name", BEDROCK_EXCEPTIONS)
@pytest.mark.parametrize("shape", ["boto3", "_event"])
def test_every_bedrock_exception_member_first(name, shape):
    payload = {"message": "boom"}
    frame = {name: payload} if shape == "boto3" else {"_event": name, **payload}
    buf = replay([frame], close=False)
    assert (buf.format, buf.is_finished()) == ("bedrock_converse", True)
    assert buf.error is not None and buf.error == _after_message_start(frame).error


def test_legacy_place_whose_arguments_nothing_writes_is_reported():
    """validate knows that fold's ``objects`` write the legacy call's arguments, and says
    so where nothing writes a further place's arguments."""
    from engine.language.validate import validate_text

    text = (GOLDEN.parent.parent / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    assert validate_text(text, "openai_chat.yaml")[1] == []
    cut = text.replace("function_call: {args: arguments}\n", "function_call: {}\n")
    assert cut != text
    problems = validate_text(cut, "openai_chat.yaml")[1]
    assert [(p.pointer, p.rule) for p in problems] == [("/calls/also/0/args", "args-unwritten")]


def test_resplit_knows_the_legacy_arguments_stream():
    """The re-split property tests split what the descriptors declare streamed: the legacy
    call's argument fragments are among them."""
    fmt = engine.load_format("openai_chat")
    assert ("choices", "*", "delta", "function_call", "arguments") in fmt.streamed_fields()
