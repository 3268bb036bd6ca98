"""Issue 16, point 7: a retry prompt that says the cause, wording only.

The text codec (``formats/mcs_text.yaml``, ``retry`` section) words what the drivers tell the
model: a call that never ran says why (the output token limit inside the call, the
connection ended, the reply ended inside it, a provider error, not JSON, not an object, too
deep), a call whose arguments fail the tool's JSON Schema names each failing pointer and what
was expected, a tool that raised its error, a tool nobody owns the tools there are.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from conftest import GOLDEN, read_stream

import engine
from engine.events import INCOMPLETE_CAUSES
from engine.text.codec import TextCodec

DESCRIPTOR = Path(__file__).resolve().parent.parent / "formats" / "mcs_text.yaml"
CODEC = TextCodec(yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8")))

# What each cause's prompt must say (and no other prompt says).
SAYS = {
    "length limit": "output token limit was reached inside the call",
    "connection ended": "connection ended",
    "done inside call": "your reply ended",
    "provider error": "provider reported an error",
    "not json": "not valid JSON",
    "not an object": "JSON, but not an object",
    "too deep": "nest too deeply",
}
REASON_OF = {
    "length limit": "cut",
    "connection ended": "cut",
    "done inside call": "cut",
    "provider error": "cut",
    "not json": "invalid",
    "not an object": "invalid",
    "too deep": "too deep",
}


def event(cause: str | None, reason: str = "cut", name: str | None = "get_weather"):
    return engine.CallIncomplete(0, name, "call_1", '{"city": "Par', reason, cause)


def test_every_cause_has_its_words():
    assert set(SAYS) == set(INCOMPLETE_CAUSES)


@pytest.mark.parametrize("cause", INCOMPLETE_CAUSES)
def test_the_prompt_of_an_incomplete_call_says_its_cause(cause):
    prompt = CODEC.retry_call_incomplete(event(cause, REASON_OF[cause]))
    assert "'get_weather'" in prompt and "did not run" in prompt
    assert SAYS[cause] in prompt
    others = [said for other, said in SAYS.items() if other != cause]
    assert not [said for said in others if said in prompt]
    # The same through the old signature, the cause given beside it.
    assert CODEC.retry_call_incomplete("get_weather", REASON_OF[cause], cause) == prompt


def test_only_the_length_limit_asks_for_shorter_arguments():
    prompts = {c: CODEC.retry_call_incomplete(event(c, REASON_OF[c])) for c in SAYS}
    assert [c for c, p in prompts.items() if "shorter" in p] == ["length limit"]


def test_the_old_signature_words_the_reason():
    prompts = {r: CODEC.retry_call_incomplete("f", r) for r in ("cut", "invalid", "too deep")}
    assert all("'f'" in p for p in prompts.values()) and len(set(prompts.values())) == 3
    assert "cut off" in prompts["cut"] and "shorter" not in prompts["cut"]
    assert "(no name)" in CODEC.retry_call_incomplete(None, "cut")
    assert CODEC.retry_call_incomplete(event(None)) == prompts["cut"].replace(
        "'f'", "'get_weather'"
    )


def test_a_descriptor_without_the_cause_messages_words_the_reason():
    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    section = data["codec"]["prompt"]["retry"]["call_incomplete"]
    for cause in INCOMPLETE_CAUSES:
        if cause != "too deep":
            del section[cause]
    plain = TextCodec(data)
    for cause, reason in REASON_OF.items():
        assert plain.retry_call_incomplete(event(cause, reason)) == plain.retry_call_incomplete(
            "get_weather", reason
        )


def test_the_built_in_descriptor_with_its_new_messages_is_valid():
    assert engine.validate_descriptor(DESCRIPTOR) == []


# -- on recorded streams: the cause the buffer found, in the prompt ----------------------------

CUT = [
    ("openai_chat", "hand_length_cut_in_string", None, "length limit"),
    ("anthropic_messages", "hand_max_tokens_cut_in_string", None, "length limit"),
    ("bedrock_converse", "hand_max_tokens_cut_in_string", None, "length limit"),
    ("openai_responses", "hand_incomplete_cut_in_string", None, "length limit"),
    ("anthropic_messages", "hand_max_tokens_cut_in_string", 9, "connection ended"),
    ("openai_chat", "hand_length_cut_in_string", 6, "connection ended"),
]


@pytest.mark.parametrize("fmt, name, cut_at, cause", CUT)
def test_a_recorded_cut_gets_the_prompt_of_its_cause(fmt, name, cut_at, cause):
    events = read_stream(GOLDEN / fmt / f"{name}.jsonl")[:cut_at]
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format(fmt)])
    for e in events:
        buf.add(e)
    buf.close()
    (call,) = buf.incomplete_calls()
    assert call.cause == cause
    assert SAYS[cause] in CODEC.retry_call_incomplete(call)


# -- the tool's JSON Schema ------------------------------------------------------------------


def test_the_schema_prompt_names_each_pointer_and_what_was_expected():
    problems = [
        ("", "'city' is a required property"),
        ("/days", "42 is not of type 'string'"),
        ("/stops/1/name", "'' is too short"),
    ]
    prompt = CODEC.retry_schema_invalid("get_forecast", problems)
    assert "'get_forecast'" in prompt and "did not run" in prompt
    assert "do not match the tool's parameters" in prompt
    lines = prompt.splitlines()
    assert "- at the arguments object: 'city' is a required property" in lines
    assert "- at /days: 42 is not of type 'string'" in lines
    assert "- at /stops/1/name: '' is too short" in lines
    assert len(lines) == 2 + len(problems)


def test_a_problem_text_is_inserted_once_never_read_as_a_placeholder():
    prompt = CODEC.retry_schema_invalid("t", [("/a", "{tool_name} {problems}")])
    assert "- at /a: {tool_name} {problems}" in prompt


def test_a_descriptor_without_the_schema_message_sends_execution_failed():
    data = copy.deepcopy(yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8")))
    del data["codec"]["prompt"]["retry"]["schema_invalid"]
    plain = TextCodec(data)
    prompt = plain.retry_schema_invalid("t", [("/a", "expected a string")])
    assert prompt == plain.retry_execution_failed("t", "/a: expected a string")


def test_the_tool_raised_and_no_such_tool_prompts_say_what_happened():
    failed = CODEC.retry_execution_failed("get_weather", ValueError("city is required"))
    assert "'get_weather' failed: city is required" in failed
    unknown = CODEC.retry_unknown_tool("get_wether", ["get_weather", "ping"])
    assert "no tool named 'get_wether'" in unknown and "get_weather, ping" in unknown
