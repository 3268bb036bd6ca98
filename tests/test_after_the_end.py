"""Nothing after the end (issue 16, point 3) and the usage an events-only client gets (point 10).

After the wire's DONE only what its descriptor declares may follow (``events.after_done``:
OpenAI chat's usage chunk, Bedrock's ``metadata``, Responses' ``response.failed`` after an
``error``) is taken; any other event of the stream changes nothing and is listed in
``buf.skipped()`` ("after the stream's end"); a chunk of another choice is not this stream's
event at all. Tested on every wire by appending a second golden stream after a finished one:
the second response is listed, never merged.

``Finished`` carries the final usage (``buf.usage`` at the end) on every wire, exactly once,
at ``close()`` at the latest (a stream without DONE too, with no stop reason).
"""

from __future__ import annotations

import copy

import pytest
from conftest import GOLDEN, golden_streams, read_stream, replay, stream_id

import engine
from engine.cli.resplit import every_character, resplit

AFTER_END = "after the stream's end"

# Per wire, the stream appended after another one (the second response), and the one appended
# after it: both start the way every response of their wire starts.
SECOND = {
    "openai_chat": ("oai_py_parallel_tools_a", "oai_py_text"),
    "openai_responses": ("llm_tool_use", "llm_text"),
    "anthropic_messages": ("llm_anthropic_tool_use", "llm_anthropic_text"),
    "bedrock_converse": ("hand_parallel_tool_use_frames", "pydantic_ai_nova_tool_use"),
    "gemini": ("vercel_function_call", "vercel_text"),
    "cohere_v2": ("vercel_tool_call", "vercel_text"),
    "ollama": ("hand_tool_call_whole", "langchaingo_chat_text"),
}


def _finished(path) -> bool:
    return replay(read_stream(path), fmt=path.parent.name, close=False).is_finished()


FIRSTS = [p for p in golden_streams(list(SECOND)) if _finished(p)]


def _second(path):
    own, other = SECOND[path.parent.name]
    return GOLDEN / path.parent.name / f"{other if path.stem == own else own}.jsonl"


def _observed(buf: engine.LLMStreamBuffer) -> dict:
    return {
        "message": buf.as_dict(),
        "calls": buf.calls(),
        "incomplete": buf.incomplete_calls(),
        "text": buf.get_content(),
        "stop_reason": buf.stop_reason,
        "usage": buf.usage,
        "error": buf.error,
        "unknown": dict(buf.unknown_events),
    }


def test_every_wire_has_a_first_stream_that_finishes():
    assert {p.parent.name for p in FIRSTS} == set(SECOND)


@pytest.mark.parametrize("path", FIRSTS, ids=stream_id)
def test_a_second_response_after_the_done_is_listed_not_merged(path):
    first, second = read_stream(path), read_stream(_second(path))
    alone = replay(copy.deepcopy(first), fmt=path.parent.name)
    buf = engine.LLMStreamBuffer([engine.load_format(path.parent.name)])
    ran = []
    for chunk in copy.deepcopy(first):
        buf.add(chunk)
        ran += buf.new_calls()
    for chunk in copy.deepcopy(second):
        buf.add(chunk)
        assert buf.new_calls() == []
    buf.close()
    assert _observed(buf) == _observed(alone)
    ran += buf.new_calls()  # in the order they completed; calls() in message order
    assert sorted(map(repr, ran)) == sorted(map(repr, alone.calls()))
    listed = buf.skipped()[len(alone.skipped()) :]
    assert buf.skipped()[: len(alone.skipped())] == alone.skipped()
    program = buf.strategy.program
    assert listed == [
        engine.Skipped(len(first) + i, program.event_name(chunk), AFTER_END)
        for i, chunk in enumerate(second)
    ]


@pytest.mark.parametrize("path", FIRSTS, ids=stream_id)
def test_after_the_done_the_events_tell_nothing_more(path):
    first, second = read_stream(path), read_stream(_second(path))
    buf = engine.LLMStreamBuffer([engine.load_format(path.parent.name)], events=True)
    told = list(buf.consume(copy.deepcopy(first)))
    buf = engine.LLMStreamBuffer([engine.load_format(path.parent.name)], events=True)
    both = list(buf.consume(copy.deepcopy(first + second)))
    assert [e.to_dict() for e in both] == [e.to_dict() for e in told]


def test_chunks_of_another_choice_are_neither_taken_nor_listed():
    """n=3: after choice 0's DONE the other choices finish and the usage chunk follows; a
    second n=3 response appended is listed, its chunks of choice 0 only."""
    n3 = read_stream(GOLDEN / "openai_chat" / "oai_py_n3_choices.jsonl")
    usage = n3[-1]["usage"]
    for choice in range(3):
        alone = replay(copy.deepcopy(n3), fmt="openai_chat", choice=choice)
        assert alone.skipped() == [] and alone.usage == usage
        buf = replay(copy.deepcopy(n3 + n3), fmt="openai_chat", choice=choice)
        assert _observed(buf) == _observed(alone)
        mine = [
            len(n3) + i
            for i, chunk in enumerate(n3)
            if any(c.get("index") == choice for c in chunk["choices"]) or not chunk["choices"]
        ]
        assert [s.index for s in buf.skipped()] == mine
        assert {s.reason for s in buf.skipped()} == {AFTER_END}


def _chunk(choices, **extra):
    return {"id": "chatcmpl-9", "object": "chat.completion.chunk", "choices": choices, **extra}


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
FINISH = _chunk([{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}])


@pytest.mark.parametrize(
    "trailer",
    [
        _chunk([], usage=USAGE),
        {k: v for k, v in _chunk([], usage=USAGE).items() if k != "choices"},
        _chunk(None, usage=USAGE),
        _chunk(
            [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
            usage=USAGE,
        ),
    ],
    ids=["choices empty", "choices absent", "choices null", "one empty delta"],
)
def test_openai_chat_takes_its_usage_chunk_then_nothing(trailer):
    later = _chunk([{"index": 0, "delta": {"content": " more"}, "finish_reason": "length"}])
    more_usage = _chunk([], usage={**USAGE, "total_tokens": 99})
    buf = replay([FINISH, trailer, later, more_usage, trailer], fmt="openai_chat")
    assert (buf.get_content(), buf.stop_reason, buf.usage) == ("Hi", "stop", USAGE)
    assert [(s.index, s.reason) for s in buf.skipped()] == [(i, AFTER_END) for i in (2, 3, 4)]


def test_openai_chat_content_after_the_done_is_not_taken_even_beside_usage():
    late = _chunk(
        [{"index": 0, "delta": {"content": " late"}, "finish_reason": None}], usage=USAGE
    )
    buf = replay([FINISH, late], fmt="openai_chat")
    assert (buf.get_content(), buf.usage) == ("Hi", None)
    assert [(s.index, s.reason) for s in buf.skipped()] == [(1, AFTER_END)]


def test_nothing_follows_an_end_marker():
    buf = engine.LLMStreamBuffer([engine.load_format("openai_chat")])
    for chunk in (FINISH, "data: [DONE]", _chunk([], usage=USAGE)):
        buf.add(chunk)
    assert buf.usage is None
    assert [(s.index, s.reason) for s in buf.skipped()] == [(2, AFTER_END)]


def test_finished_waits_at_a_done_that_usage_may_follow_until_the_end_marker():
    """OpenAI chat without include_usage: the finish chunk, then ``data: [DONE]``, which
    says that no usage chunk will come."""
    buf = engine.LLMStreamBuffer([engine.load_format("openai_chat")], events=True)
    buf.add(FINISH)
    assert buf.is_finished()
    assert [type(e) for e in buf.events()] == [engine.TextDelta]
    buf.add("data: [DONE]")
    assert buf.events() == [engine.Finished("stop", None, "stop", None)]


def _responses_failed(error: dict) -> dict:
    """``response.failed`` as the Responses API documents it: the response, status failed,
    its error and usage (https://platform.openai.com/docs/api-reference/responses-streaming)."""
    return {
        "type": "response.failed",
        "sequence_number": 8,
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "failed",
            "error": error,
            "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8},
        },
    }


def test_responses_takes_response_failed_after_an_error_then_nothing():
    stream = read_stream(GOLDEN / "openai_responses" / "hand_error_event.jsonl")
    failed = _responses_failed({"code": "server_error", "message": "failed"})
    second = read_stream(GOLDEN / "openai_responses" / "llm_text.jsonl")
    buf = engine.LLMStreamBuffer([engine.load_format("openai_responses")], events=True)
    events = list(buf.consume(copy.deepcopy(stream + [failed] + second)))
    assert buf.stop_reason == "failed" and buf.usage == failed["response"]["usage"]
    assert [s.index for s in buf.skipped()] == [len(stream) + 1 + i for i in range(len(second))]
    finished = [e for e in events if isinstance(e, engine.Finished)]
    assert finished == [
        engine.Finished("failed", failed["response"]["usage"], "error", engine.Usage(5, 3, 8))
    ]


def test_bedrock_takes_metadata_then_nothing():
    stream = read_stream(GOLDEN / "bedrock_converse" / "pydantic_ai_nova_text.jsonl")
    metadata = stream[-1]
    assert metadata["_event"] == "metadata"
    buf = replay(copy.deepcopy(stream + [metadata]), fmt="bedrock_converse")
    assert buf.usage == metadata["usage"]
    assert buf.skipped() == [engine.Skipped(len(stream), "metadata", AFTER_END)]


# -- the re-split keeps a DONE on the last piece only ------------------------------------------


@pytest.mark.parametrize("path", golden_streams(), ids=stream_id)
def test_a_resplit_keeps_each_done_on_its_last_piece(path):
    fmt = engine.load_format(path.parent.name)
    events = read_stream(path)
    split = resplit(
        copy.deepcopy(events), fmt.streamed_fields(), every_character, fmt.done_fields()
    )
    assert sum(map(fmt.is_stream_complete, split)) == sum(map(fmt.is_stream_complete, events))


def test_mistral_call_whole_in_its_finish_chunk_survives_any_resplit():
    """The recorded Mistral stream sends its call whole in the chunk that finishes."""
    path = GOLDEN / "openai_chat" / "compat_mistral_vercel_tool_call.jsonl"
    events = read_stream(path)
    last = events[-1]["choices"][0]
    assert last["finish_reason"] == "tool_calls" and last["delta"]["tool_calls"]
    fmt = engine.load_format("openai_chat")
    whole = replay(copy.deepcopy(events), fmt="openai_chat")
    split = resplit(
        copy.deepcopy(events), fmt.streamed_fields(), every_character, fmt.done_fields()
    )
    assert len(split) > len(events)
    buf = replay(split, fmt="openai_chat")
    assert _observed(buf) == _observed(whole) and buf.skipped() == []
    assert [c.name for c in buf.calls()] == ["weather"]


# -- Finished: the final usage, once -----------------------------------------------------------


def _events_loop(path, close=True):
    buf = engine.LLMStreamBuffer([engine.load_format(path.parent.name)], events=True)
    told = []
    for chunk in read_stream(path):
        buf.add(chunk)
        told.append(buf.events())
    if close:
        buf.close()
        told.append(buf.events())
    return buf, told


@pytest.mark.parametrize("path", golden_streams(list(SECOND)), ids=stream_id)
def test_finished_carries_the_final_usage_once(path):
    buf, told = _events_loop(path)
    finished = [e for events in told for e in events if isinstance(e, engine.Finished)]
    assert len(finished) == 1
    assert finished[0].usage == buf.usage
    assert finished[0].stop_reason == (buf.stop_reason if buf.is_finished() else None)


WITH_USAGE_AFTER_DONE = [
    p
    for p in golden_streams(["openai_chat", "bedrock_converse"])
    if any(
        c.get("_event") == "metadata" or "metadata" in c or ("usage" in c and not c.get("choices"))
        for c in read_stream(p)[-1:]
    )
]


def test_usage_after_the_done_is_in_the_goldens():
    assert {p.parent.name for p in WITH_USAGE_AFTER_DONE} == {"openai_chat", "bedrock_converse"}


@pytest.mark.parametrize("path", WITH_USAGE_AFTER_DONE, ids=stream_id)
def test_finished_waits_for_the_usage_that_follows_the_done(path):
    """OpenAI chat's include_usage chunk and Bedrock's metadata: Finished is told with the
    chunk that brings the usage, without waiting for close()."""
    buf, told = _events_loop(path, close=False)
    assert buf.usage is not None
    finished = [e for e in told[-1] if isinstance(e, engine.Finished)]
    assert finished == [
        engine.Finished(buf.stop_reason, buf.usage, buf.finish_reason, buf.token_usage)
    ]


NOTHING_FOLLOWS = ["anthropic_messages", "gemini", "cohere_v2", "ollama"]


@pytest.mark.parametrize("path", golden_streams(NOTHING_FOLLOWS), ids=stream_id)
def test_finished_is_told_at_the_done_where_nothing_may_follow_it(path):
    buf, told = _events_loop(path, close=False)
    if buf.is_finished():
        assert [type(e) for e in told[-1]].count(engine.Finished) == 1


def test_a_stream_without_done_finishes_at_close_with_no_stop_reason():
    anthropic = read_stream(GOLDEN / "anthropic_messages" / "llm_anthropic_text.jsonl")
    for name, chunks in {
        "openai_chat": [_chunk([{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}])],
        "anthropic_messages": anthropic[:-1],  # without its message_stop
    }.items():
        buf = engine.LLMStreamBuffer([engine.load_format(name)], events=True)
        for chunk in chunks:
            buf.add(chunk)
        assert not any(isinstance(e, engine.Finished) for e in buf.events())
        buf.close()
        assert [e for e in buf.events() if isinstance(e, engine.Finished)] == [
            engine.Finished(None, buf.usage, None, buf.token_usage)
        ]
        buf.close()
        assert buf.events() == []


# -- the declaration: every built-in states it, validate checks it ------------------------------

WIRES = [n for n in engine.list_formats() if getattr(engine.load_format(n), "is_wire", False)]


@pytest.mark.parametrize("name", WIRES)
def test_every_built_in_wire_states_what_may_follow_its_done(name):
    events = engine.load_format(name).descriptor["events"]
    assert isinstance(events.get("after_done"), list)
    takes = {"openai_chat", "bedrock_converse", "openai_responses"}
    assert engine.load_format(name).nothing_follows == (name not in takes)


def _validate(name: str, written: str, instead: str) -> tuple[int, list[engine.Problem]]:
    """The problems of a built-in with ``written`` changed to ``instead``, and the line that
    ``instead`` starts at."""
    from engine.language.validate import validate_text

    text = (GOLDEN.parent.parent / "formats" / f"{name}.yaml").read_text(encoding="utf-8")
    assert text.count(written) == 1
    changed = text.replace(written, instead)
    line = changed[: changed.index(instead)].count("\n") + 1
    return line, validate_text(changed, f"{name}.yaml")[1]


@pytest.mark.parametrize(
    ("name", "written", "instead", "message"),
    [
        (
            "gemini",
            "  after_done: []\n",
            "  after_done: [usage]\n",
            "after_done names the event 'usage', but this wire has no event names (no "
            "events.discriminator): give a predicate on the event",
        ),
        (
            "bedrock_converse",
            "  after_done: [metadata]\n",
            "  after_done: [metadata, messageStopp]\n",
            "after_done names the event 'messageStopp', which no rule of events.on handles",
        ),
    ],
    ids=["a name without a discriminator", "a name no rule handles"],
)
def test_validate_says_what_is_wrong_with_an_after_done(name, written, instead, message):
    line, problems = _validate(name, written, instead)
    assert [(p.line, p.message) for p in problems] == [(line, f"does not compile: {message}")]
    assert problems[0].pointer.startswith("/events/after_done/")


def test_validate_refuses_an_after_done_that_is_not_a_list_of_names_and_predicates():
    _, problems = _validate("ollama", "  after_done: []\n", "  after_done: [3]\n")
    assert [p.pointer for p in problems] == ["/events/after_done/0"]
