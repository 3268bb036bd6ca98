"""Reasoning streams where each descriptor's ``reasoning`` section says, and nowhere else.

Over every golden stream: the reasoning fragments the assembly collected (``asm.reasoning``, in
stream order) join to exactly the reasoning text the assembled message carries, read here
independently of the descriptor, one small reader a wire, from the provider's documented
message shape; so they are non-empty exactly for the streams that have reasoning. Re-splitting
a stream's fragments never changes them. ``fmt.reasoning_text`` reads the same text from a
whole message. The language refuses a reasoning place that no rule streams.
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import golden_streams, read_stream, replay, stream_id

import engine
from engine.cli.resplit import every_character, resplit
from engine.compile.strategy import ExtractionStrategy
from engine.language.validate import validate_text

STREAMS = golden_streams()


def _texts(items, field: str, where=lambda item: True) -> str:
    return "".join(
        item[field]
        for item in items or []
        if isinstance(item, dict) and where(item) and isinstance(item.get(field), str)
    )


def _openai_chat(m: dict) -> str:
    """``reasoning_content`` (DeepSeek, xAI, Alibaba, Z.ai), ``reasoning`` (Groq, OpenRouter),
    Mistral's ``{type: thinking, thinking: [{type: text, text}]}`` content chunks."""
    out = [m[k] for k in ("reasoning_content", "reasoning") if isinstance(m.get(k), str)]
    content = m.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "thinking":
                out.append(_texts(part.get("thinking"), "text"))
    return "".join(out)


def _openai_responses(m: dict) -> str:
    """A reasoning item's summary texts and its reasoning_text content."""
    out = []
    for item in m.get("output") or []:
        if item.get("type") == "reasoning":
            out.append(_texts(item.get("summary"), "text"))
            out.append(_texts(item.get("content"), "text", lambda c: c["type"] == "reasoning_text"))
    return "".join(out)


def _bedrock(m: dict) -> str:
    """reasoningContent.reasoningText.text (not its signature, not redactedContent)."""
    return "".join(
        ((block.get("reasoningContent") or {}).get("reasoningText") or {}).get("text", "")
        for block in m.get("content") or []
    )


READERS = {
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "anthropic_messages": lambda m: _texts(
        m.get("content"), "thinking", lambda b: b.get("type") == "thinking"
    ),
    "bedrock_converse": _bedrock,
    "gemini": lambda m: _texts(m.get("parts"), "text", lambda p: p.get("thought") is True),
    "cohere_v2": lambda m: _texts(
        m.get("content"), "thinking", lambda b: b.get("type") == "thinking"
    ),
    "ollama": lambda m: m.get("thinking") or "",
}


def _reasoning_of(fmt: str):
    """The message's reasoning as this test reads it (a wire without a reader here: as its
    descriptor declares it, which still checks the streamed fragments against the message)."""
    return READERS.get(fmt) or engine.load_format(fmt).reasoning_text


def streamed_reasoning(buf: engine.LLMStreamBuffer) -> str:
    """The reasoning fragments the assembly collected, joined."""
    return "".join(buf._asm.reasoning)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_streamed_reasoning_is_the_messages_reasoning(path):
    fmt = path.parent.name
    buf = replay(read_stream(path), fmt)
    message = buf.as_dict()
    expected = _reasoning_of(fmt)(message)
    assert streamed_reasoning(buf) == expected
    assert engine.load_format(fmt).reasoning_text(message) == expected


def test_every_wire_has_a_golden_with_reasoning_and_one_without():
    """The equality above would pass with no reasoning at all: each wire's goldens show both."""
    for fmt in READERS:
        has = {bool(streamed_reasoning(replay(read_stream(p), fmt))) for p in golden_streams([fmt])}
        assert has == {True, False}, fmt


@pytest.mark.parametrize("path", [p for p in STREAMS if "think" in p.name or "reason" in p.name],
                         ids=stream_id)
def test_one_character_fragments_give_the_same_reasoning(path):
    events = read_stream(path)
    fmt = path.parent.name
    wire = engine.load_format(fmt)
    fields, done = wire.streamed_fields(), wire.done_fields()
    expected = streamed_reasoning(replay(copy.deepcopy(events), fmt))
    split = replay(resplit(copy.deepcopy(events), fields, every_character, done), fmt)
    assert streamed_reasoning(split) == expected


# -- the language ------------------------------------------------------------------------------


def _ollama_like(reasoning) -> dict:
    """A minimal delta-merge wire whose reasoning declaration varies."""
    descriptor = {
        "name": "toy_reasoning",
        "title": "toy",
        "docs": "https://example.invalid",
        "recognize": {"chunk": {"has": "message"}},
        "events": {"every": [{"fold": {"from": "message", "concat": ["content", "thinking"]}},
                             {"finish": {"when": "done"}}]},
        "calls": {"at": "tool_calls[*]", "name": "function.name", "args": "function.arguments",
                  "args_arrive": "whole"},
        "text": {"at": "content"},
    }
    if reasoning is not None:
        descriptor["reasoning"] = reasoning
    return descriptor


CHUNKS = [
    {"message": {"thinking": "Let me "}},
    {"message": {"content": "Hi"}},
    {"message": {"thinking": "think."}},
    {"message": {"content": "!"}, "done": True},
]


def _problems(descriptor: dict) -> list:
    return validate_text(json.dumps(descriptor), "toy_reasoning.yaml")[1]


def _run(descriptor: dict) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer(strategies=[ExtractionStrategy(descriptor)])
    for chunk in CHUNKS:
        buf.add(chunk)
    buf.close()
    return buf


@pytest.mark.parametrize("reasoning", [{"at": "thinking"}, [{"at": "thinking"}]])
def test_one_place_or_a_list_of_places(reasoning):
    descriptor = _ollama_like(reasoning)
    assert _problems(descriptor) == []
    buf = _run(descriptor)
    assert buf._asm.reasoning == ["Let me ", "think."]
    assert buf.get_content() == "Hi!"


def test_without_a_reasoning_section_nothing_is_reasoning():
    buf = _run(_ollama_like(None))
    assert buf._asm.reasoning == []
    assert buf.as_dict()["thinking"] == "Let me think."  # still in the message
    assert ExtractionStrategy(_ollama_like(None)).reasoning_text(buf.as_dict()) == ""


def test_a_where_that_fails_keeps_the_fragments_out():
    buf = _run(_ollama_like({"at": "thinking", "where": {"field": "role", "equals": "x"}}))
    assert buf._asm.reasoning == []


def test_a_place_no_rule_streams_is_refused_at_load():
    with pytest.raises(ValueError, match=r"reasoning\[1\]\.at reasoning_text: no event rule"):
        ExtractionStrategy(_ollama_like([{"at": "thinking"}, {"at": "reasoning_text"}]))
    problems = _problems(_ollama_like({"at": "reasoning_text"}))
    assert [p.rule for p in problems] == ["compile"]
    assert "no event rule streams text there" in problems[0].message


def test_the_schema_refuses_an_unknown_key_in_a_place():
    problems = _problems(_ollama_like({"at": "thinking", "field": "x"}))
    assert problems and all(p.pointer.startswith("/reasoning") for p in problems)


def test_a_display_fragment_is_never_reasoning():
    """A place that is also the display text's: its fragments stay display text only."""
    buf = _run(_ollama_like([{"at": "content"}, {"at": "thinking"}]))
    assert buf._asm.reasoning == ["Let me ", "think."]
    assert buf.get_content() == "Hi!"


def test_a_variant_can_remove_the_reasoning_places(tmp_path):
    variant = tmp_path / "no_thinking.yaml"
    variant.write_text("name: no_thinking\ntitle: t\nextends: ollama\nreasoning: null\n")
    fmt = engine.load_format(variant)
    assert fmt.spec.reasoning == ()
    assert engine.load_format("ollama").spec.reasoning != ()


def test_the_text_codec_has_no_reasoning_field():
    codec = engine.load_format("mcs_text")
    assert codec.reasoning_text("<think>hm</think> hello") == ""
