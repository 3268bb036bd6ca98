"""Provider errors in every shape, and a trace for every event a resolved wire does not take
(issue 16, point 11).

- On ``openai_chat``, ``{"object": "error", ...}`` (vLLM's ErrorResponse as it is) and
  ``{"error": {...}}`` (OpenAI, vLLM's wrapped error, Groq, OpenRouter, DashScope), mid-stream
  and as the first chunk, are the provider's error: ``ProviderError``, ``buf.error``,
  ``is_finished()``, then ``Finished``. The shapes and their sources: tests/golden/README.md,
  "Errors"; the recorded and hand-written streams: tests/golden/openai_chat/.
- A first chunk that is only an error resolves by the wires' ``recognize.error``, asked only
  when no wire's ``recognize.chunk`` claims the chunk: each wire's own error goes to its wire
  (Anthropic's and the Responses API's ``type: error``, Gemini's ``error.status``, Ollama's
  string, Bedrock's exceptions), whatever the order of the strategies.
- Once the wire is resolved, an event no rule of it takes (another wire's event, an unknown
  type) is counted in ``unknown_events``; on the wires without a discriminator (openai_chat,
  gemini, ollama: every chunk goes through their ``every`` rules) ``events.accept`` says
  which chunks are theirs.
"""

from __future__ import annotations

import copy

import pytest
from conftest import first_plain_stream, golden_streams, outcome, read_stream, replay, stream_id

import engine

WIRES = [n for n in engine.list_formats() if engine.load_format(n).is_wire]

VLLM_ERROR = {
    "object": "error",
    "message": "The engine died unexpectedly.",
    "type": "InternalServerError",
    "param": None,
    "code": 500,
}
WRAPPED_ERROR = {"error": {"message": "The server had an error", "type": "server_error",
                           "param": None, "code": None}}
OPENROUTER_ERROR = {"error": {"code": 502, "message": "Provider returned error",
                              "metadata": {"provider_name": "x"}}}
DASHSCOPE_ERROR = {
    "error": {"code": "invalid_parameter_error", "param": None, "message": "<400> bad",
              "type": "invalid_request_error"},
    "id": "chatcmpl-c4b9b68f",
}

# Each wire's own provider error, as it may come first (before any chunk of the wire), and
# what ``buf.error`` keeps of it (what the wire's error rule reads).
_THROTTLED = {"_event": "throttlingException", "message": "Too many tokens"}
_MODEL_STREAM = {"message": "m", "originalStatusCode": 500}
_RESPONSES = {"type": "error", "code": "server_error", "message": "m", "param": None,
              "sequence_number": 0}
_ANTHROPIC = {"type": "overloaded_error", "message": "Overloaded"}
_GOOGLE = {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}
FIRST_ERRORS = {
    "openai_chat": [
        (VLLM_ERROR, VLLM_ERROR),
        (WRAPPED_ERROR, WRAPPED_ERROR["error"]),
        (OPENROUTER_ERROR, OPENROUTER_ERROR["error"]),
        (DASHSCOPE_ERROR, DASHSCOPE_ERROR["error"]),
    ],
    "openai_responses": [(_RESPONSES, _RESPONSES)],
    "anthropic_messages": [({"type": "error", "error": _ANTHROPIC}, _ANTHROPIC)],
    "gemini": [({"error": _GOOGLE}, _GOOGLE)],
    "ollama": [({"error": "model 'llama9' not found"}, "model 'llama9' not found")],
    "bedrock_converse": [
        (_THROTTLED, _THROTTLED),
        ({"modelStreamErrorException": _MODEL_STREAM}, _MODEL_STREAM),
    ],
}
FIRST_ERROR_CASES = [(wire, i) for wire, shapes in FIRST_ERRORS.items() for i in range(len(shapes))]


def _kinds(events: list) -> list[str]:
    return [type(e).__name__ for e in events]


@pytest.mark.parametrize("wire, i", FIRST_ERROR_CASES)
def test_a_provider_error_as_the_first_chunk_resolves_to_its_own_wire(wire, i):
    chunk, payload = FIRST_ERRORS[wire][i]
    for strategies in (None, [engine.load_format(n) for n in reversed(WIRES)]):
        buf = engine.LLMStreamBuffer(strategies=strategies, events=True)
        buf.add(copy.deepcopy(chunk))
        assert buf.format == wire
        assert buf.is_finished()
        assert buf.error == payload
        buf.close()
        assert _kinds(buf.events()) == ["ProviderError", "Finished"]


def test_each_first_error_is_claimed_by_exactly_one_wire_and_by_no_chunk_predicate():
    for wire, shapes in FIRST_ERRORS.items():
        for chunk, _ in shapes:
            assert [w for w in WIRES if engine.load_format(w).recognizes_chunk(chunk)] == []
            assert [w for w in WIRES if engine.load_format(w).recognizes_error(chunk)] == [wire]


def test_a_chunk_a_wire_recognises_wins_over_an_error_envelope_another_claims_first():
    """``recognize.error`` is asked only when no ``recognize.chunk`` claims the chunk: a
    wire listed first whose error envelope fits an OpenAI chunk carrying ``error`` does not
    take it from ``openai_chat``."""
    greedy = engine.ExtractionStrategy(
        {
            "name": "greedy_errors",
            "docs": "https://example.invalid",
            "recognize": {"chunk": {"has": "never"}, "error": {"has": "error"}},
            "events": {"every": [{"error": {"from": "error"}}]},
            "calls": {"at": "calls[*]", "name": "name", "args": "arguments"},
            "text": {"at": "text"},
        }
    )
    path = next(p for p in golden_streams(["openai_chat"])
                if p.name == "hand_compat_openrouter_error_finish.jsonl")
    buf = engine.LLMStreamBuffer(strategies=[greedy, engine.load_format("openai_chat")])
    for event in read_stream(path)[-1:]:  # the chunk carrying `error` and `choices`
        buf.add(event)
    assert buf.format == "openai_chat"
    buf = engine.LLMStreamBuffer(strategies=[greedy, engine.load_format("openai_chat")])
    buf.add(copy.deepcopy(WRAPPED_ERROR))  # no wire's chunk: the first error predicate
    assert buf.format == "greedy_errors"


OPENAI_STREAMS = [p for p in golden_streams(["openai_chat"]) if len(read_stream(p)) > 3]


@pytest.mark.parametrize("path", OPENAI_STREAMS, ids=stream_id)
@pytest.mark.parametrize("error", [VLLM_ERROR, WRAPPED_ERROR, OPENROUTER_ERROR],
                         ids=["object_error", "wrapped", "openrouter"])
def test_a_provider_error_mid_stream_finishes_an_openai_chat_stream(path, error):
    events = read_stream(path)[:2]
    cut = replay(copy.deepcopy(events), close=False)
    if cut.is_finished():
        pytest.skip("the stream's DONE came in its first chunks")
    buf = engine.LLMStreamBuffer(events=True)
    for event in events:
        buf.add(event)
    buf.events()
    buf.add(copy.deepcopy(error))
    assert buf.is_finished()
    assert buf.error == error.get("error", error)
    assert buf.unknown_events == cut.unknown_events  # the error was taken, not counted
    buf.close()  # the end is final (a usage chunk may follow an error): ProviderError, Finished
    kinds = _kinds(buf.events())  # a call cut by the error is told incomplete first
    assert kinds.count("ProviderError") == 1 and kinds[-1] == "Finished"
    assert set(kinds) <= {"CallIncomplete", "ProviderError", "Finished"}
    assert buf.get_content() == cut.get_content()


# -- a trace for what a resolved wire does not take ---------------------------------------------

# Another wire's event, one per wire: fed to a resolved buffer of every other wire.
FOREIGN = {
    "openai_chat": {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1,
                    "model": "m", "choices": [{"index": 0, "delta": {"content": "leak"}}]},
    "openai_responses": {"type": "response.output_text.delta", "item_id": "msg_1",
                         "output_index": 0, "content_index": 0, "delta": "leak"},
    "anthropic_messages": {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "model": "claude", "stop_reason": None, "usage": {"input_tokens": 1}}},
    "anthropic_messages/message_delta": {"type": "message_delta",
                                         "delta": {"stop_reason": "end_turn"},
                                         "usage": {"output_tokens": 99}},
    "bedrock_converse": {"contentBlockDelta": {"contentBlockIndex": 0,
                                               "delta": {"text": "leak"}}},
    "gemini": {"candidates": [{"index": 0, "content": {"role": "model",
                                                       "parts": [{"text": "leak"}]}}],
               "modelVersion": "gemini-2.5"},
    "cohere_v2": {"type": "content-delta", "index": 0,
                  "delta": {"message": {"content": {"text": "leak"}}}},
    "ollama": {"model": "llama3", "created_at": "2025-01-01T00:00:00Z",
               "message": {"role": "assistant", "content": "leak"}, "done": False},
    "stray": {"hello": "world"},
}


def _foreign_for(wire: str) -> list[tuple[str, dict]]:
    return [(name, ev) for name, ev in FOREIGN.items() if name.split("/")[0] != wire]


@pytest.mark.parametrize("wire", WIRES)
def test_another_wires_event_fed_to_a_resolved_buffer_leaves_a_trace(wire):
    path = first_plain_stream(wire)
    events = read_stream(path)
    head = events[:1]
    for name, foreign in _foreign_for(wire):
        expected = replay(copy.deepcopy(head), close=False)
        buf = engine.LLMStreamBuffer(events=True)
        for event in head:
            buf.add(event)
        buf.events()
        buf.add(copy.deepcopy(foreign))
        counted = sum(buf.unknown_events.values()) - sum(expected.unknown_events.values())
        assert counted == 1 or len(buf.skipped()) > len(expected.skipped()), name
        # and it changed nothing of the message
        assert outcome(buf)["message"] == outcome(expected)["message"], name
        assert buf.usage == expected.usage and buf.stop_reason == expected.stop_reason, name
        assert [e for e in buf.events() if not isinstance(e, engine.TextDelta)] == [], name


@pytest.mark.parametrize("path", golden_streams(["openai_chat", "gemini", "ollama"]),
                         ids=stream_id)
def test_the_chunks_of_every_recorded_stream_are_their_wires_own(path):
    """``events.accept`` rejects none of a wire's own recorded chunks: it counts nothing on
    any golden stream (their snapshots are unchanged)."""
    wire = engine.load_format(path.parent.name)
    assert all(wire.program.accept(event) for event in read_stream(path))
