"""Issue 20: three wire shapes from real recordings, on every path a stream takes.

- A Bedrock ConverseStream that opens with an exception frame (before any ``messageStart``),
  in both recorded shapes (boto3 dicts and ``_event``-typed frames): it resolves to
  ``bedrock_converse``, the exception is ``buf.error`` and the stream is finished.
"""

from __future__ import annotations

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
