"""The descriptor language never loses data silently and never runs a tool twice (issue 9,
items 8-11).

- ``push`` onto a list whose items another rule opened by SLOT appends after them;
- an item opened twice at one SLOT (a start restated, a call sent whole after its start) is
  one item and one call, and a driver runs that tool once;
- what an operation cannot place is listed in ``buf.skipped()`` with its reason (and shown by
  ``replay``), and what can be known when a descriptor loads is reported by ``validate``;
- ids of different kinds in one list are scoped (``scope``), so they never collide.

Streams are recorded ones from ``tests/golden/`` with the one mutation each test names, or the
toy wires of ``tests/toy/``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import golden_streams, outcome, read_stream, stream_id

import engine
from engine import BaseDriver, LLMStreamBuffer, Skipped, Tool, cli

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SCOPED = ROOT / "tests" / "toy" / "scoped_ids"


def feed(events: list[dict], fmt: str | engine.ExtractionStrategy) -> LLMStreamBuffer:
    strategy = engine.load_format(fmt) if isinstance(fmt, str) else fmt
    buf = LLMStreamBuffer(strategies=[strategy])
    for event in events:
        buf.add(event)
    buf.close()
    return buf


class Counting(BaseDriver):
    """Owns ``names``; every run of a tool is counted."""

    def __init__(self, *names: str) -> None:
        super().__init__()
        self.names = names
        self.runs: list[tuple[str, dict]] = []

    def list_tools(self) -> list[Tool]:
        return [Tool(name, f"counts {name}") for name in self.names]

    def execute_tool(self, tool_name: str, arguments: dict):
        self.runs.append((tool_name, arguments))
        return {"ok": True}


def drive(events: list[dict], driver: Counting) -> LLMStreamBuffer:
    """The client loop of the README: one round per chunk, and one at close."""
    buf = driver.new_stream_buffer()
    for event in events:
        buf.add(event)
        driver.process_llm_response(buf)
    buf.close()
    driver.process_llm_response(buf)
    return buf


def _toy(rules: dict, message: dict | None = None, **sections) -> engine.ExtractionStrategy:
    return engine.ExtractionStrategy(
        {
            "name": "lang_toy",
            "recognize": {"chunk": {"has": "kind"}},
            "events": {"discriminator": "kind", "on": rules},
            "message": message or {},
            **sections,
        }
    )


# -- 8. push appends to a slotted list ----------------------------------------------------------


def test_push_onto_a_list_of_slotted_items_appends_after_them():
    strategy = _toy(
        {
            "note": [{"open": {"at": "notes[n]", "from": "note"}}],
            "extra": [{"push": {"at": "notes", "from": "note"}}],
        }
    )
    buf = feed(
        [
            {"kind": "note", "n": 0, "note": {"text": "first"}},
            {"kind": "note", "n": 1, "note": {"text": "second"}},
            {"kind": "extra", "note": {"text": "pushed"}},
            {"kind": "note", "n": 5, "note": {"text": "later"}},
        ],
        strategy,
    )
    assert buf.as_dict() == {
        "notes": [{"text": "first"}, {"text": "second"}, {"text": "pushed"}, {"text": "later"}]
    }
    assert buf.skipped() == []


def test_push_onto_a_plain_list_and_onto_nothing_still_appends():
    strategy = _toy({"cite": [{"push": {"at": "block.citations", "from": "c"}}]})
    buf = feed([{"kind": "cite", "c": {"n": 1}}, {"kind": "cite", "c": {"n": 2}}], strategy)
    assert buf.as_dict() == {"block": {"citations": [{"n": 1}, {"n": 2}]}}


def test_push_onto_a_field_that_is_not_a_list_keeps_it_and_says_so():
    strategy = _toy({"cite": [{"push": {"at": "block.citations", "from": "c"}}]},
                    message={"block": {"citations": "none"}})
    buf = feed([{"kind": "cite", "c": {"n": 1}}], strategy)
    assert buf.as_dict() == {"block": {"citations": "none"}}
    assert buf.skipped() == [
        Skipped(0, "cite", "push block.citations: it holds a string, not a list; the value is "
                "not added")
    ]


def test_a_recorded_annotation_is_pushed_after_those_the_part_carried():
    """Responses ``output_text.annotation.added`` pushes onto the part's ``annotations`` (here
    onto a part that, in this mutation of a recorded stream, arrived with one already)."""
    events = read_stream(GOLDEN / "openai_responses" / "llm_text.jsonl")
    added = next(i for i, e in enumerate(events) if e["type"] == "response.content_part.added")
    part = copy.deepcopy(events[added])
    part["part"]["annotations"] = [{"type": "url_citation", "n": 0}]
    extra = [
        {"type": "response.output_text.annotation.added", "output_index": part["output_index"],
         "content_index": part["content_index"], "annotation": {"type": "url_citation", "n": n}}
        for n in (1, 2)
    ]
    buf = LLMStreamBuffer(strategies=[engine.load_format("openai_responses")])
    for event in [*events[:added], part, *extra]:
        buf.add(event)
    item = buf.as_dict()["output"][part["output_index"]]
    annotations = item["content"][part["content_index"]]["annotations"]
    assert annotations == [{"type": "url_citation", "n": n} for n in (0, 1, 2)]


# -- 9. one item, one call ----------------------------------------------------------------------

ANTHROPIC_TOOL = GOLDEN / "anthropic_messages" / "vercel_tool_use.jsonl"


def _anthropic_with_start_restated(after: str) -> list[dict]:
    """The recorded tool_use stream with its ``content_block_start`` sent again: after the
    first argument fragment that carries text (``after="delta"``), or after the block's stop
    (``after="stop"``)."""
    events = read_stream(ANTHROPIC_TOOL)
    start = next(i for i, e in enumerate(events) if e["type"] == "content_block_start")
    if after == "delta":
        at = next(
            i
            for i, e in enumerate(events)
            if e["type"] == "content_block_delta" and e["delta"].get("partial_json")
        )
    else:
        at = next(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    return events[: at + 1] + [copy.deepcopy(events[start])] + events[at + 1 :]


@pytest.mark.parametrize("after", ["delta", "stop"])
def test_a_restated_start_is_one_item_and_one_call(after: str):
    plain = feed(read_stream(ANTHROPIC_TOOL), "anthropic_messages")
    buf = feed(_anthropic_with_start_restated(after), "anthropic_messages")
    assert buf.as_dict() == plain.as_dict()
    assert buf.calls() == plain.calls()
    assert len(buf.calls()) == 1


def test_restating_a_call_already_ready_is_listed_with_its_reason():
    events = _anthropic_with_start_restated("stop")
    restated = next(i for i, e in enumerate(events) if i > 1 and e["type"] == "content_block_start")
    buf = feed(events, "anthropic_messages")
    assert buf.skipped() == [
        Skipped(restated, "content_block_start",
                "open content[index]: content[0] is a call whose arguments are complete "
                "already; the restated item is not taken")
    ]


def test_a_restated_start_merges_what_it_adds_and_erases_nothing():
    strategy = engine.load_format("anthropic_messages")
    buf = LLMStreamBuffer(strategies=[strategy])
    for event in [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": "", "citations": None, "extra": 1}},
    ]:
        buf.add(event)
    assert buf.as_dict()["content"] == [
        {"type": "text", "text": "Hi", "citations": None, "extra": 1}
    ]
    assert buf.skipped() == []


def _responses_sent_whole_after_start() -> list[dict]:
    """The recorded function call with its argument deltas replaced by the item sent again,
    whole (arguments and all), after its ``output_item.added``."""
    events = read_stream(GOLDEN / "openai_responses" / "llm_tool_use.jsonl")
    done = next(e for e in events if e["type"] == "response.output_item.done")
    out = []
    for event in events:
        if event["type"] == "response.function_call_arguments.delta":
            continue
        out.append(event)
        if event["type"] == "response.output_item.added":
            again = copy.deepcopy(event)
            again["item"] = {**copy.deepcopy(done["item"]), "status": "in_progress"}
            out.append(again)
    return out


def test_a_call_sent_whole_after_its_start_is_one_call():
    plain = feed(read_stream(GOLDEN / "openai_responses" / "llm_tool_use.jsonl"),
                 "openai_responses")
    buf = feed(_responses_sent_whole_after_start(), "openai_responses")
    assert buf.calls() == plain.calls() and len(buf.calls()) == 1
    assert buf.as_dict()["output"] == plain.as_dict()["output"]
    assert buf.skipped() == []


def _groq_call_restated() -> list[dict]:
    """Groq sends the whole call in one chunk; here that chunk comes twice."""
    events = read_stream(GOLDEN / "openai_chat" / "compat_groq_vercel_tool_call.jsonl")
    at = next(i for i, e in enumerate(events) if e["choices"] and
              e["choices"][0]["delta"].get("tool_calls"))
    return events[: at + 1] + [copy.deepcopy(events[at])] + events[at + 1 :]


def test_a_delta_that_restates_a_complete_call_keeps_it_one_valid_call():
    plain = feed(read_stream(GOLDEN / "openai_chat" / "compat_groq_vercel_tool_call.jsonl"),
                 "openai_chat")
    buf = feed(_groq_call_restated(), "openai_chat")
    assert buf.calls() == plain.calls() and len(buf.calls()) == 1
    assert buf.as_dict() == plain.as_dict()
    (skip,) = buf.skipped()
    assert skip.event is None  # a delta-merge wire names no events
    assert skip.reason == (
        f"fold tool_calls[*]: the entry restates the arguments of the call "
        f"{plain.calls()[0].name!r}, which are complete already; the restatement is not taken"
    )


@pytest.mark.parametrize(
    "events, wire",
    [
        (_anthropic_with_start_restated("delta"), "anthropic_messages"),
        (_anthropic_with_start_restated("stop"), "anthropic_messages"),
        (_responses_sent_whole_after_start(), "openai_responses"),
        (_groq_call_restated(), "openai_chat"),
    ],
    ids=["anthropic-start-mid-call", "anthropic-start-after-stop", "responses-whole", "chat-twice"],
)
def test_a_driver_never_runs_a_restated_call_twice(events, wire):
    plain = feed(events, wire)
    (call,) = plain.calls()
    driver = Counting(call.name)
    drive(events, driver)
    assert driver.runs == [(call.name, call.arguments)]


# -- 10. nothing changes the message silently ---------------------------------------------------


def _anthropic_text() -> list[dict]:
    return read_stream(GOLDEN / "anthropic_messages" / "hand_text_before_after.jsonl")


def test_an_event_without_its_slot_key_is_listed_and_changes_nothing():
    events = _anthropic_text()
    delta = next(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
    strategy = engine.load_format("anthropic_messages")
    buf = LLMStreamBuffer(strategies=[strategy])
    for event in events[:delta]:
        buf.add(event)
    before = (buf.as_dict(), buf.get_content(), list(buf.calls()))
    keyless = copy.deepcopy(events[delta])
    del keyless["index"]
    buf.add(keyless)
    assert (buf.as_dict(), buf.get_content(), list(buf.calls())) == before
    assert buf.skipped() == [
        Skipped(delta, "content_block_delta",
                "append content[index].text: the event has no slot key 'index'; the event "
                "changed nothing")
    ]


def test_an_event_for_an_item_never_opened_is_listed():
    events = _anthropic_text()
    stop = next(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    events.insert(stop, {"type": "content_block_stop", "index": 7})
    buf = feed(events, "anthropic_messages")
    assert buf.skipped() == [
        Skipped(stop, "content_block_stop",
                "close content[index]: no item is open at content[7]; the event changed nothing")
    ]
    assert buf.as_dict() == feed(_anthropic_text(), "anthropic_messages").as_dict()


def test_a_value_of_the_wrong_kind_is_listed():
    events = _anthropic_text()
    delta = next(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
    events[delta] = {**events[delta], "delta": {"type": "text_delta", "text": 42}}
    buf = feed(events, "anthropic_messages")
    assert buf.skipped() == [
        Skipped(delta, "content_block_delta",
                "append content[index].text: expected a string at delta.text, got a number; "
                "the event changed nothing")
    ]


def test_what_the_chunks_before_the_wire_was_known_could_not_place_keeps_their_index():
    """Chunks the buffer holds until a later one resolves the wire are replayed: a skip among
    them is stamped with its own chunk's index."""
    strategy = _toy({"say": [{"append": {"at": "said[n].words", "from": "words"}}]},
                    text={"at": "said[*].words"})
    strategy._recognize_chunk = lambda chunk: chunk.get("n") == 1  # only the third says so
    buf = LLMStreamBuffer(strategies=[strategy])
    buf.add({"kind": "say", "words": "lost?"})
    buf.add({"kind": "say", "n": 0, "words": "a"})
    buf.add({"kind": "say", "n": 1, "words": "b"})
    assert buf.get_content() == "ab"
    assert [(s.index, s.event) for s in buf.skipped()] == [(0, "say")]


# Recorded streams whose events the descriptors cannot place, each with its reason. Every other
# golden stream places every event: the list stays quiet on real streams.
KNOWN_SKIPS = {
    "bedrock_converse/pydantic_ai_gpt_oss_reasoning": [
        # gpt-oss's first block is one empty text delta, then its stop. The empty delta opens
        # nothing, so the stop finds no block: right, as a text ContentBlock cannot be empty
        # (see test_an_empty_bedrock_text_block_is_no_block_of_the_message); listed, as the
        # stop of a block the message does not hold, and it changes nothing.
        (2, "contentBlockStop",
         "close content[contentBlockIndex]: no item is open at content[0]; the event changed "
         "nothing"),
    ],
}


def test_an_empty_bedrock_text_block_is_no_block_of_the_message():
    """pydantic_ai_gpt_oss_reasoning (recorded, gpt-oss on Bedrock): block 0 is a single
    ``{"text": ""}`` delta and its contentBlockStop. The message holds no block for it:

    - a Converse ContentBlock's ``text`` has a minimum length of 1 (AWS docs, "A block of
      content for a message that you pass to, or receive from, a model with the Converse or
      ConverseStream API operations ... Text ... Minimum: 1":
      https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-bedrock-prompt-contentblock.html),
      and Converse rejects an assistant turn that has one ("The text field in the
      ContentBlock object at messages.N.content.0 is blank", pydantic/pydantic-ai#1678);
      ``as_dict()`` goes back as the assistant turn of the history, so an empty block there
      would fail the next request;
    - the recording's own client keeps no empty text part either (pydantic-ai's
      test_bedrock_model_stream_empty_text_delta, the test that recorded this stream, and
      pydantic/pydantic-ai#3211: the same turn without streaming has a thinking part and a
      text part only).
    The blocks keep the wire's order (contentBlockIndex 1, then 2)."""
    events = read_stream(GOLDEN / "bedrock_converse" / "pydantic_ai_gpt_oss_reasoning.jsonl")
    buf = feed(events, "bedrock_converse")
    content = buf.as_dict()["content"]
    assert [next(iter(block)) for block in content] == ["reasoningContent", "text"]
    assert content[1] == {"text": "Hello! How can I help you today?"}
    assert buf.get_content() == "Hello! How can I help you today?"
    leak = engine.ToolCallRecord("f", {}, "ok", None, None)
    assistant = buf.strategy.result_messages(buf.as_dict(), [leak])[0]
    assert assistant == {"role": "assistant", "content": content}  # no blank text block


@pytest.mark.parametrize("path", golden_streams(), ids=stream_id)
def test_recorded_streams_place_every_event(path: Path):
    buf = feed(read_stream(path), path.parent.name)
    got = [(s.index, s.event, s.reason) for s in buf.skipped()]
    assert got == KNOWN_SKIPS.get(stream_id(path), [])


def test_skipped_is_a_fresh_list_and_reset_forgets_it():
    events = _anthropic_text()
    events.insert(2, {"type": "content_block_stop", "index": 9})
    buf = feed(events, "anthropic_messages")
    first = buf.skipped()
    first.clear()
    assert len(buf.skipped()) == 1
    buf.reset()
    assert buf.skipped() == []


def test_skipped_is_exported_and_json_ready():
    entry = engine.Skipped(3, "content_block_stop", "close content[index]: ...")
    assert entry.to_dict() == {
        "type": "Skipped", "index": 3, "event": "content_block_stop",
        "reason": "close content[index]: ...",
    }
    assert "Skipped" in engine.__all__


def _write_stream(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_replay_shows_what_was_skipped(tmp_path: Path, capsys):
    events = _anthropic_text()
    events.insert(2, {"type": "content_block_stop", "index": 9})
    path = _write_stream(tmp_path, events)
    reason = "close content[index]: no item is open at content[9]; the event changed nothing"
    assert cli.main(["replay", str(path), "--format", "anthropic_messages"]) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "skipped⟧" in line and "content[9]" in line]
    assert reason in line and "chunk 2 content_block_stop" in line
    assert cli.main(["replay", str(path), "--format", "anthropic_messages", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e for e in lines if e["event"] == "skipped"] == [
        {"event": "skipped", "chunk": 2, "name": "content_block_stop", "reason": reason}
    ]


def test_replay_of_a_stream_that_places_everything_shows_no_skipped_line(tmp_path, capsys):
    path = _write_stream(tmp_path, _anthropic_text())
    assert cli.main(["replay", str(path), "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(json.loads(line)["event"] != "skipped" for line in lines)


def test_every_built_in_descriptor_passes_the_load_time_flow_checks():
    for path in sorted((ROOT / "formats").glob("*.yaml")):
        assert engine.validate_descriptor(path) == [], path.name


# -- 11. ids scoped by kind ---------------------------------------------------------------------


def test_a_toy_wire_whose_text_part_and_call_share_id_0_keeps_both():
    fmt = engine.load_format(SCOPED / "scoped_ids.yaml")
    for stream in sorted(SCOPED.glob("*.jsonl")):
        buf = feed(read_stream(stream), fmt)
        expect = json.loads(stream.with_suffix(".expect.json").read_text(encoding="utf-8"))
        got = outcome(buf)
        assert got["message"] == expect["message"]
        assert got["text"] == expect["text"]
        assert got["calls"] == expect["calls"]
        assert got["stop_reason"] == expect["stop_reason"]
        assert buf.is_finished() and buf.skipped() == []


def test_without_scopes_the_same_ids_collide():
    """The control: the toy descriptor with its scopes removed merges the call into the text
    part opened at the same id, which is what the scope prevents."""
    descriptor = copy.deepcopy(engine.load_format(SCOPED / "scoped_ids.yaml").descriptor)
    for rules in descriptor["events"]["on"].values():
        for rule in rules:
            if isinstance(rule, dict):
                for args in rule.values():
                    if isinstance(args, dict):
                        args.pop("scope", None)
    unscoped = engine.ExtractionStrategy(descriptor)
    stream = read_stream(SCOPED / "text_and_call_both_0.jsonl")
    assert len(feed(stream, unscoped).as_dict()["content"]) == 2  # three items became two


def test_a_scoped_rule_does_not_find_an_item_of_another_scope():
    fmt = engine.load_format(SCOPED / "scoped_ids.yaml")
    buf = feed(
        [
            {"type": "start", "message": {"role": "assistant", "content": []}},
            {"type": "text-start", "id": "0", "part": {"type": "text"}},
            {"type": "tool-end", "id": "0"},  # no tool "0" was started
        ],
        fmt,
    )
    assert buf.skipped() == [
        Skipped(2, "tool-end",
                "close content[id]: no item is open at content[tool '0']; the event changed "
                "nothing")
    ]


def test_a_scope_on_a_path_without_a_slot_is_reported_where_it_is_written(tmp_path: Path):
    text = (SCOPED / "scoped_ids.yaml").read_text(encoding="utf-8").replace(
        'finish: [{stop_reason: reason}, finish]',
        'finish: [{set: {at: status, scope: text, from: reason}}, finish]',
    )
    path = tmp_path / "scoped_ids.yaml"
    path.write_text(text, encoding="utf-8")
    (problem,) = engine.validate_descriptor(path)
    assert (problem.pointer, problem.rule) == ("/events/on/finish/0/set/scope", "slot-key")
    assert problem.message == "a scope keys a SLOT, and 'status' has no slot step to scope"
