"""Hardening, Gemini (issue 9, items 6 and 7): thought signatures and streamed arguments.

Item 6: a trailing ``{"text": "", "thoughtSignature": ...}`` part brings its signature onto the
text part before it, as the non-streaming response carries one part ``{text, thoughtSignature}``
(https://ai.google.dev/gemini-api/docs/thought-signatures); after a ``functionCall`` part it
stays its own part. Declared by ``join.attach`` in formats/gemini.yaml.

Item 7: Vertex AI streams a call's arguments as ``partialArgs`` pieces addressed by an RFC 9535
JSON path, over several parts joined by ``willContinue``
(https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Content#FunctionCall,
``PartialArg``: ``jsonPath``, ``stringValue``, ``numberValue``, ``boolValue``, ``nullValue``,
``willContinue``). Declared by ``extend.continuation``.

Recorded streams are the goldens in tests/golden/gemini/ (provenance in tests/golden/README.md);
the hand-made chunks below follow those recordings' shapes and the documented fields.
"""

from __future__ import annotations

from conftest import GOLDEN, read_stream, replay

import engine

GEMINI = GOLDEN / "gemini"


def _buffer() -> engine.LLMStreamBuffer:
    return engine.LLMStreamBuffer(strategies=[engine.load_format("gemini")])


def _chunk(parts: list, finish: str | None = None) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-3-pro-preview"}


def _assemble(chunks: list[dict]) -> engine.LLMStreamBuffer:
    buf = _buffer()
    for chunk in chunks:
        buf.add(chunk)
    buf.close()
    return buf


# -- item 6: thought signatures --------------------------------------------------------------


def test_trailing_signature_part_joins_the_answer_text_before_it():
    events = read_stream(GEMINI / "vercel_text_thought_signature.jsonl")
    signature = events[-1]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    buf = replay(events, "gemini")
    text = 'There are **3** "r"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.'
    assert buf.as_dict()["parts"] == [{"text": text, "thoughtSignature": signature}]
    assert buf.get_content() == text


def test_joined_signature_goes_back_on_the_text_part_in_the_history():
    events = read_stream(GEMINI / "vercel_text_thought_signature.jsonl")
    buf = replay(events, "gemini")
    strategy = buf.strategy
    leak = engine.ToolCallRecord("f", {}, "ok", None, None)
    message = buf.as_dict()
    assistant = strategy.result_messages(message, [leak])[0]
    assert assistant["parts"][0].get("thoughtSignature") == message["parts"][0]["thoughtSignature"]


def test_signature_after_a_function_call_part_stays_its_own_part():
    # pydantic_ai_fc_thought_signature: the call part carries its signature; the empty text
    # part that follows has nothing to join (a call part has no text).
    buf = replay(read_stream(GEMINI / "pydantic_ai_fc_thought_signature.jsonl"), "gemini")
    parts = buf.as_dict()["parts"]
    assert len(parts) == 2
    assert parts[0]["functionCall"] == {"name": "get_country", "args": {}}
    assert parts[0]["thoughtSignature"].startswith("EpwICpkI")
    assert parts[1] == {"text": ""}
    # and a signature-only part after a call part is kept as sent, not merged anywhere
    call = {"functionCall": {"name": "get_country", "args": {}}}
    buf = _assemble([_chunk([call]), _chunk([{"text": "", "thoughtSignature": "S1"}], "STOP")])
    assert buf.as_dict()["parts"] == [call, {"text": "", "thoughtSignature": "S1"}]
    assert [c.name for c in buf.calls()] == ["get_country"]


def test_signature_part_with_text_of_its_own_stays_its_own_part():
    signed = {"text": " world", "thoughtSignature": "S1"}
    buf = _assemble([_chunk([{"text": "Hello"}]), _chunk([signed], "STOP")])
    assert buf.as_dict()["parts"] == [{"text": "Hello"}, signed]
    assert buf.get_content() == "Hello world"


def test_a_second_signature_never_replaces_the_first():
    buf = _assemble(
        [
            _chunk([{"text": "Hi"}]),
            _chunk([{"text": "", "thoughtSignature": "S1"}]),
            _chunk([{"text": "", "thoughtSignature": "S2"}], "STOP"),
        ]
    )
    assert buf.as_dict()["parts"] == [
        {"text": "Hi", "thoughtSignature": "S1"},
        {"text": "", "thoughtSignature": "S2"},
    ]


def test_signature_joins_only_a_run_of_its_own_kind():
    thought = {"text": "thinking", "thought": True}
    # an empty thought part with the signature closes the thought run (one part, signed) ...
    buf = _assemble(
        [
            _chunk([thought]),
            _chunk([{"text": "", "thought": True, "thoughtSignature": "S1"}]),
            _chunk([{"text": "Answer"}], "STOP"),
        ]
    )
    assert buf.as_dict()["parts"] == [
        {"text": "thinking", "thought": True, "thoughtSignature": "S1"},
        {"text": "Answer"},
    ]
    # ... and an answer's signature part does not join a thought part
    buf = _assemble([_chunk([thought]), _chunk([{"text": "", "thoughtSignature": "S1"}], "STOP")])
    assert buf.as_dict()["parts"] == [thought, {"text": "", "thoughtSignature": "S1"}]
    assert buf.get_content() == ""


def test_signature_join_does_not_depend_on_how_parts_are_chunked():
    events = read_stream(GEMINI / "vercel_text_thought_signature.jsonl")
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    one_chunk = _assemble([_chunk(parts, "STOP")])
    assert one_chunk.as_dict()["parts"] == replay(events, "gemini").as_dict()["parts"]
