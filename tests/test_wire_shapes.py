"""Issue 20: three wire shapes from real recordings, on every path a stream takes.

- OpenAI Chat's legacy ``function_call`` (before ``tool_calls``): the message keeps the
  provider's own ``function_call: {name, arguments}`` whole, the call is extracted (no id),
  forms and streams its events as any call, and is answered with the legacy
  ``{role: function, name, content}`` message.

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


def test_legacy_function_call_cut_is_incomplete():
    (path,) = LEGACY
    events = read_stream(path)[:4]  # the arguments stop inside a string
    buf = replay(events)
    assert buf.calls() == []
    (cut,) = buf.incomplete_calls()
    assert (cut.name, cut.id, cut.reason) == ("get_current_weather", None, "cut")


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
