"""Clear errors: values of the wrong kind found by the fuzz run (issue 9, acceptance).

The standard (preamble, DESIGN.md "Never lose, never crash"): a chunk that cannot be placed
raises a ChunkError that names the chunk's index and the place in the message, says what was
expected and what came, and leaves the buffer as it was; where the value can be placed without
loss, it is placed. Before, the reasons were raw Python messages ("unhashable type: 'list'",
"can only concatenate list (not "str") to list", "'str' object has no attribute 'get'").

Each stream is a recorded golden (tests/golden, provenance in tests/golden/README.md) with one
value changed here on purpose; each test says which.
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import GOLDEN, read_stream, replay

import engine


def golden(fmt: str, name: str) -> list[dict]:
    return read_stream(GOLDEN / fmt / f"{name}.jsonl")


def state(buf: engine.LLMStreamBuffer) -> tuple:
    return (json.dumps(buf.as_dict(), sort_keys=True), buf.get_content(), list(buf.calls()))


def fails_at(fmt: str, events: list[dict], bad: int) -> tuple[engine.ChunkError, tuple, tuple]:
    """Feed ``events`` up to the bad one: its error, the state before it and after it."""
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format(fmt)])
    for event in events[:bad]:
        buf.add(event)
    before = state(buf)
    with pytest.raises(engine.ChunkError) as caught:
        buf.add(events[bad])
    return caught.value, before, state(buf)


# -- a SLOT that is a list or an object ------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_slot", "shown"), [([], "a list: []"), ({"i": 0}, "an object: {'i': 0}")]
)
def test_a_slot_that_no_key_can_hold_names_the_slot_path(bad_slot, shown):
    # llm_anthropic_tool_use (recorded): content_block_start's "index" replaced
    events = golden("anthropic_messages", "llm_anthropic_tool_use")
    bad = next(i for i, e in enumerate(events) if e["type"] == "content_block_start")
    events[bad]["index"] = bad_slot
    error, before, after = fails_at("anthropic_messages", events, bad)
    assert error.index == bad
    assert str(error) == (
        f"chunk {bad}: event does not fit anthropic_messages: ValueError: content[index]: "
        f"the SLOT 'index' must be a string or an integer, got {shown}"
    )
    assert after == before


def test_a_slot_of_a_delta_on_an_open_block_is_located_too():
    # llm_anthropic_tool_use (recorded): the first content_block_delta's "index" replaced
    events = golden("anthropic_messages", "llm_anthropic_tool_use")
    bad = next(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
    events[bad]["index"] = [0]
    error, before, after = fails_at("anthropic_messages", events, bad)
    assert "content[index]: the SLOT 'index' must be a string or an integer, got a list: [0]" in (
        str(error)
    )
    assert after == before


def test_a_folded_list_entry_slot_names_its_list():
    # compat_alibaba_vercel_tool_call (recorded): the first tool_calls entry's "index" replaced
    events = golden("openai_chat", "compat_alibaba_vercel_tool_call")
    events[0]["choices"][0]["delta"]["tool_calls"][0]["index"] = []
    error, before, after = fails_at("openai_chat", events, 0)
    assert str(error) == (
        "chunk 0: event does not fit openai_chat: ValueError: tool_calls[index]: "
        "the SLOT 'index' must be a string or an integer, got a list: []"
    )
    assert after == before


def test_the_stream_goes_on_after_a_bad_slot_as_if_it_never_came():
    events = golden("anthropic_messages", "llm_anthropic_tool_use")
    expected = state(replay(events, "anthropic_messages"))
    bad = copy.deepcopy(events[1])
    bad["index"] = []
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("anthropic_messages")])
    buf.add(events[0])
    with pytest.raises(engine.ChunkError):
        buf.add(bad)
    for event in events[1:]:
        buf.add(event)
    buf.close()
    assert state(buf) == expected


# -- typed parts whose text field changes kind (Mistral content chunks, Gemini parts) ---------

MISTRAL = "compat_mistral_pydantic_ai_thinking"


def thinking_chunks(events: list[dict]) -> list[int]:
    return [
        i
        for i, e in enumerate(events)
        if isinstance(e["choices"][0]["delta"].get("content"), list)
        and e["choices"][0]["delta"]["content"][0].get("type") == "thinking"
    ]


def as_string(event: dict) -> None:
    """The chunk's thinking ``[{"type": "text", "text": T}]`` sent as the string ``T``."""
    part = event["choices"][0]["delta"]["content"][0]
    ((inner,),) = [part["thinking"]]
    part["thinking"] = inner["text"]


def streamed_reasoning(buf: engine.LLMStreamBuffer) -> str:
    return "".join(buf._asm.reasoning)


def test_mistral_thinking_as_a_string_after_lists_is_placed_as_a_text_part():
    """compat_mistral_pydantic_ai_thinking (recorded): the 4th thinking chunk's list of text
    parts sent as a bare string instead, after earlier lists. The descriptor's ``string`` rule
    (a bare string is a ``{type: text}`` part) places it without loss: the message is the
    recorded one, and the streamed reasoning still agrees with it."""
    events = golden("openai_chat", MISTRAL)
    recorded = replay(events, "openai_chat")
    as_string(events[thinking_chunks(events)[3]])
    buf = replay(events, "openai_chat")
    assert state(buf) == state(recorded)
    assert streamed_reasoning(buf) == streamed_reasoning(recorded)
    assert streamed_reasoning(buf) == buf.strategy.reasoning_text(buf.as_dict())


def test_mistral_thinking_as_a_list_after_a_string_is_a_located_error():
    """The same stream, its first thinking chunk sent as a bare string: a string part, whose
    thinking the following lists cannot continue (it would have to become a text part after
    it was streamed as text). Before, each later list was dropped silently."""
    events = golden("openai_chat", MISTRAL)
    chunks = thinking_chunks(events)
    as_string(events[chunks[0]])
    error, before, after = fails_at("openai_chat", events, chunks[1])
    assert str(error).endswith(
        "content[0].thinking: holds a string so far, so expected a string; got a list: "
        "[{'type': 'text', 'text': ', the'}]"
    )
    assert after == before


def test_mistral_thinking_that_is_no_text_is_a_located_error():
    events = golden("openai_chat", MISTRAL)
    bad = thinking_chunks(events)[3]
    events[bad]["choices"][0]["delta"]["content"][0]["thinking"] = 5
    error, before, after = fails_at("openai_chat", events, bad)
    assert str(error) == (
        f"chunk {bad}: event does not fit openai_chat: ValueError: content[0].thinking: holds "
        "a list so far, so expected a list of parts or a string; got a number: 5"
    )
    assert after == before


def test_a_nested_part_names_its_nested_place():
    events = golden("openai_chat", MISTRAL)
    bad = thinking_chunks(events)[3]
    events[bad]["choices"][0]["delta"]["content"][0]["thinking"][0]["text"] = ["x"]
    error, before, after = fails_at("openai_chat", events, bad)
    assert str(error).endswith(
        "content[0].thinking[0].text: holds a string so far, so expected a string; got a "
        "list: ['x']"
    )
    assert after == before


@pytest.mark.parametrize(
    ("first", "then", "reason"),
    [
        (["x"], "more", "holds a list so far, so expected a list of parts; got a string: 'more'"),
        ("x", ["more"], "holds a string so far, so expected a string; got a list: ['more']"),
        (
            1,
            "more",
            "holds a number so far, so expected nothing more (only text and lists of parts "
            "continue); got a string: 'more'",
        ),
    ],
)
def test_gemini_text_that_cannot_continue_is_a_located_error(first, then, reason):
    """pydantic_ai_text (recorded): the first two text parts' values replaced. Gemini's join
    rule has no ``string`` rule, so text and a list never meet without an error."""
    events = golden("gemini", "pydantic_ai_text")
    texts = [i for i, e in enumerate(events) if "text" in e["candidates"][0]["content"]["parts"][0]]
    events[texts[0]]["candidates"][0]["content"]["parts"][0]["text"] = first
    events[texts[1]]["candidates"][0]["content"]["parts"][0]["text"] = then
    error, before, after = fails_at("gemini", events, texts[1])
    assert str(error) == (
        f"chunk {texts[1]}: event does not fit gemini: ValueError: parts[0].text: {reason}"
    )
    assert after == before


# -- a Gemini call part that is not an object --------------------------------------------------


def test_a_gemini_function_call_that_is_a_string_is_kept_as_sent_and_is_no_call():
    """vercel_function_call (recorded): the functionCall object replaced by ``"x"``. Before,
    "'str' object has no attribute 'get'"; now the part is kept as sent (nothing is lost) and,
    having no name, it is not a call."""
    events = golden("gemini", "vercel_function_call")
    part = events[0]["candidates"][0]["content"]["parts"][0]
    part["functionCall"] = "x"
    buf = replay(events, "gemini")
    assert buf.as_dict()["parts"][0] == part
    assert buf.calls() == [] and buf.incomplete_calls() == []
    assert buf.strategy.extract(buf.as_dict()) == []


def test_a_string_function_call_part_during_a_streamed_call_ends_it_as_any_other_part_does():
    """vercel_stream_fc_partial_args (recorded): the part after the first call's last piece
    (its ``functionCall: {}`` end) replaced by ``{"functionCall": "x"}``: another part, which
    closes the open call normally (as a text part would), and is kept as sent."""
    events = golden("gemini", "vercel_stream_fc_partial_args")
    end = next(
        i
        for i, e in enumerate(events)
        if e["candidates"][0]["content"]["parts"][0] == {"functionCall": {}}
    )
    events[end]["candidates"][0]["content"]["parts"][0] = {"functionCall": "x"}
    buf = replay(events, "gemini")
    assert [c.arguments for c in buf.calls()] == [
        {"location": "Boston"},
        {"location": "San Francisco"},
    ]
    assert {"functionCall": "x"} in buf.as_dict()["parts"]


def test_a_content_part_that_is_not_an_object_is_kept_as_sent():
    """compat_mistral_pydantic_ai_thinking (recorded): a string added to one chunk's list of
    content parts. Before, it was dropped silently; it is kept as sent and joins nothing."""
    events = golden("openai_chat", MISTRAL)
    expected = replay(events, "openai_chat").as_dict()["content"]
    events[thinking_chunks(events)[-1]]["choices"][0]["delta"]["content"].append("stray")
    content = replay(events, "openai_chat").as_dict()["content"]
    assert "stray" in content
    assert [p for p in content if p != "stray"] == expected
