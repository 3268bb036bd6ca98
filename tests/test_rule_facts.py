"""A compiled rule carries its facts (issue 17): what it reads, streams, ends, writes and
opens, and the slot key it addresses an item by, read once from its arguments when it
compiles. The strategy keeps them (``rule_facts``) and ``streamed_fields``, ``done_fields``
and the validator's flow checks read them, not the descriptor's rules."""

from __future__ import annotations

from typing import Any

import engine
from engine.compile.operations import Source
from engine.compile.strategy import Problems


def _facts(name: str) -> dict[str, Any]:
    return {facts.pointer: facts for facts in engine.load_format(name).rule_facts}


def test_each_rule_carries_its_facts_at_its_pointer() -> None:
    facts = _facts("anthropic_messages")
    start = facts["/events/on/content_block_start/0/open"]
    assert (start.name, start.opens) == ("open", "content[*]")
    assert start.slot_key == ("content[*]", "index")
    assert start.source is None  # an open acts without an event value
    stop = facts["/events/on/content_block_stop/0/close"]
    assert (stop.opens, stop.slot_key) == (None, ("content[*]", "index"))


def test_a_guarded_rule_reads_its_guard_and_ends_the_stream_there() -> None:
    finish = next(f for f in engine.load_format("openai_chat").rule_facts if f.name == "finish")
    assert finish.source == Source("choice.finish_reason", True)
    assert finish.ends == ("choice.finish_reason",)


def test_streamed_and_done_fields_are_the_rules_facts() -> None:
    fmt = engine.load_format("openai_chat")
    strategy_fields = set(fmt.streamed_fields())
    fold = next(f for f in fmt.rule_facts if f.name == "fold")
    assert {("choices", "*", "delta", *tail) for _, tail in fold.streamed} == strategy_fields
    assert ("choices", "*", "finish_reason") in fmt.done_fields()


def test_a_rule_that_does_not_compile_still_has_facts_for_the_flow_checks() -> None:
    data = engine.load_format("openai_responses").descriptor
    on = dict(data["events"]["on"])
    on["response.completed"] = [{"set": {"at": "status", "scope": "text", "from": "x"}}]
    problems = Problems()
    changed = {**data, "events": {**data["events"], "on": on}}
    fmt = engine.ExtractionStrategy(changed, problems=problems)
    (bad,) = [f for f in fmt.rule_facts if f.pointer == "/events/on/response.completed/0/set"]
    assert (bad.at, bad.scope, bad.slot_key) == ("status", "text", None)
    assert [pointer for pointer, _ in problems.found] == ["/events/on/response.completed/0/set"]
