"""How an event's rules are dispatched on the sources the event carries.

Rules that declare they do nothing without their source are run only for the sources an event
holds (engine/strategy.py, ``by_source_key``). That is a speed-up, so it must never change a
result: the declared order holds when an event carries several sources, a ``when`` guard on a
field that is present but false still skips, and a rule that acts without a source (``close``,
``finish``) keeps its list dispatched rule by rule.
"""

from __future__ import annotations

import engine


def _toy(rules: dict, every: list | None = None) -> engine.ExtractionStrategy:
    return engine.ExtractionStrategy(
        {
            "name": "dispatch_toy",
            "recognize": {"chunk": {"has": "kind"}},
            "events": {"discriminator": "kind", "on": rules, "every": every or []},
            "message": {"parts": []},
            "text": {"at": "log"},
        }
    )


def _replay(strategy: engine.ExtractionStrategy, events: list[dict]) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    for event in events:
        buf.add(event)
    buf.close()
    return buf


def test_rules_under_one_object_keep_their_declared_order():
    strategy = _toy(
        {
            "delta": [
                {"append": {"at": "log", "from": "delta.first"}},
                {"append": {"at": "log", "from": "delta.second"}},
                {"append": {"at": "log", "from": "delta.third"}},
            ]
        }
    )
    assert len(strategy.program.table["delta"]) == 1  # one dispatcher for the three rules
    # The event lists its keys in the reverse of the rules' order.
    reversed_keys = {"third": "3", "second": "2", "first": "1"}
    buf = _replay(strategy, [{"kind": "delta", "delta": reversed_keys}])
    assert buf.as_dict()["log"] == "123"
    buf = _replay(strategy, [{"kind": "delta", "delta": {"second": "only"}}])
    assert buf.as_dict()["log"] == "only"


def test_rules_without_a_shared_object_run_only_for_what_is_present():
    strategy = _toy(
        {"e": []},
        every=[
            {"append": {"at": "log", "from": "a"}},
            {"stop_reason": "why"},
            {"usage": {"from": "counts", "when": "done"}},
            {"finish": {"when": "done"}},
        ],
    )
    buf = _replay(strategy, [{"kind": "e", "a": "x", "done": False, "counts": {"n": 1}}])
    assert buf.as_dict()["log"] == "x"
    # The guard's field is present but false: usage and finish are skipped, as is the
    # stop reason the event does not carry.
    assert (buf.usage, buf.stop_reason, buf.is_finished()) == (None, None, False)
    buf = _replay(strategy, [{"kind": "e", "why": "stop", "done": True, "counts": {"n": 2}}])
    assert (buf.stop_reason, buf.usage) == ("stop", {"n": 2})


def test_a_rule_that_acts_without_a_source_keeps_rule_by_rule_dispatch():
    strategy = _toy(
        {
            "e": [
                {"append": {"at": "log", "from": "delta.first"}},
                {"append": {"at": "log", "from": "delta.second"}},
                "finish",
            ]
        }
    )
    rules = strategy.program.table["e"]
    assert len(rules) == 3  # not folded into one dispatcher: finish reads nothing
    buf = _replay(strategy, [{"kind": "e"}])
    assert buf.is_finished()


def test_the_event_name_is_read_once_per_event(monkeypatch):
    """The dispatcher reads an event's name once, and a skipped event is named from that
    read: the buffer never asks the discriminator again (``Program.event_name``)."""
    import json
    from pathlib import Path

    from engine.compile.strategy import Program

    path = Path(__file__).parent / "golden" / "anthropic_messages" / "hand_text_before_after.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    stray = {"type": "content_block_stop", "index": 99}
    asked: list[object] = []
    event_name = Program.event_name

    def counted(self: Program, chunk: object) -> str | None:
        asked.append(chunk)
        return event_name(self, chunk)

    monkeypatch.setattr(Program, "event_name", counted)
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("anthropic_messages")])
    for event in [events[0], stray, *events[1:]]:
        buf.add(event)
    assert [s.event for s in buf.skipped()] == ["content_block_stop"]
    assert asked == []
