"""A driver's round asks the buffer once for what changed since its mark (issue 17).

The drivers' round state (what the round holds, the text calls decided and reported, the
call held on) is one object, ``engine.stream.rounds.RoundState``; each driver keeps its own
marks (what it handled) and reads the buffer through ``changes(marks)``: one call per round
while nothing else needs deciding, on every wire's recorded streams with and without calls.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Recorder, golden_streams, read_stream, stream_id

import engine
from engine.stream.rounds import TEXT_CALL_HELD, RoundState


class Counting(engine.LLMStreamBuffer):
    """A buffer that notes the public methods called on it from outside while ``counting``
    (not those its own methods call)."""

    def __init__(self, **options: Any) -> None:
        self.counting = False
        self.read: list[str] = []
        super().__init__(**options)

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if name.startswith("_") or not callable(value) or not super().__getattribute__("counting"):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counting = False
            try:
                return value(*args, **kwargs)
            finally:
                self.counting = True

        self.read.append(name)
        return counted


def _first_streams() -> list:
    return [golden_streams([wire])[0] for wire in engine.list_formats() if wire != "mcs_text"]


def _names(path) -> list[str]:
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format(path.parent.name)])
    for event in read_stream(path):
        buf.add(event)
    buf.close()
    return sorted({c.name for c in buf.calls()} | {c.name or "" for c in buf.incomplete_calls()})


@pytest.mark.parametrize(
    "path",
    [*_first_streams(), *golden_streams(["openai_chat"])[::9]],
    ids=stream_id,
)
def test_a_driver_round_asks_the_buffer_once_what_changed(path):
    driver = Recorder(*_names(path))
    buf = Counting(strategies=[engine.load_format(path.parent.name)])
    rounds: list[list[str]] = []
    for event in [*read_stream(path), None]:
        if event is None:
            buf.close()
        else:
            buf.add(event)
        buf.counting = True
        response = driver.process_llm_response(buf)
        buf.counting = False
        # (``codec`` an attribute; the first round attaches the driver's codec to the buffer)
        read = [name for name in buf.read if name not in ("codec", "attach_codec")]
        rounds.append(read)
        buf.read = []
        if not (buf.is_finished() or buf.closed or buf.text_forming() or buf.text_waiting()):
            # A round with nothing to decide (no text call forming or waiting, the stream not
            # over) reads what changed since its mark, and only it.
            assert read == ["changes"], response
    assert all(r.count("changes") == 1 for r in rounds)


def test_the_round_state_holds_what_a_round_holds():
    state = RoundState()
    state.hold_text_call()
    assert state.held == TEXT_CALL_HELD
    state.hold()
    state.hold_text_call()  # all display is held: a text call's hold does not lessen it
    assert state.held is True
    assert [state.text_slot(), state.text_slot()] == [("text", 0), ("text", 1)]
