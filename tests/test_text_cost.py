"""What a chunk that goes in costs beyond its writes (issue 17, per-chunk cost), counted with
``sys.setprofile`` on the recorded streams of every wire:

- ``add`` itself calls nothing per chunk (no ``len`` of the display and reasoning text
  before the rules run, no ``clear`` of the journal after): what a chunk adds to that text
  is in its journal like every other write;
- a text delta that grows a text already there is appended in the rule (fold, append):
  ``append_text`` is entered only to start a text;
- a fold's delta at one field of the event, and the first SLOT of a target when it is one
  field, are looked up in place, not through a reader's frame.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import compiled, format_of, golden_streams, read_stream, stream_id

import engine
from engine.model.fragments import Fragments

STREAMS = golden_streams()
ENGINE = str(Path(engine.__file__).parent)
BUFFER = f"{ENGINE}/stream/buffer.py"
PATHS = f"{ENGINE}/compile/paths.py"
WALKS = {
    (f"{ENGINE}/compile/fold.py", "run"),
    (f"{ENGINE}/compile/ops.py", "_one_slot"),
    (f"{ENGINE}/compile/ops.py", "_two_slots"),
}


def _replay(path: Path) -> tuple[list[str], int, list[str]]:
    """Over a recorded stream once resolved: the C functions ``add``'s own frame called, how
    many times ``append_text`` was entered with a text already there, and the callers of
    the one-field reader that are a fold's run or a target's walk of its first slots."""
    buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
    called: list[str] = []
    grown = [0]
    readers: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "c_call" and code.co_filename == BUFFER and code.co_name == "add":
            called.append(arg.__name__)
        elif event == "call" and code.co_name == "append_text":
            local = frame.f_locals
            grown[0] += local["parent"].get(local["field"]).__class__ is Fragments
        elif event == "call" and code.co_filename == PATHS and code.co_name == "get1":
            caller = frame.f_back.f_code  # (a one-field reader: a frame for one look-up)
            on_event = not frame.f_locals["on_choice"]  # (a choice's field is no event key)
            if on_event and (caller.co_filename, caller.co_name) in WALKS:
                readers.append(caller.co_name)

    for chunk in read_stream(path):
        resolved = buf._asm is not None
        if resolved:
            sys.setprofile(profile)
        try:
            buf.add(chunk)
        except engine.ChunkError:
            pass
        finally:
            sys.setprofile(None)
    return called, grown[0], readers


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_a_chunk_costs_its_rules_and_their_writes_alone(path):
    called, grown, readers = _replay(path)
    assert called == [] or set(called) <= {"isinstance"}, called  # (a chunk that raises)
    assert grown == 0
    assert readers == []


def test_the_recorded_streams_grow_texts():
    """(So that the test above tests something: each wire has streams that show text in
    several chunks.)"""
    showing = set()
    for path in STREAMS:
        buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
        grew = 0
        for chunk in read_stream(path):
            shown = len(buf._asm.display) if buf._asm is not None else 0
            try:
                buf.add(chunk)
            except engine.ChunkError:
                continue
            grew += buf._asm is not None and len(buf._asm.display) > shown
        if grew > 1:
            showing.add(path.parent.name)
    # (mcs_text: none of its recorded streams shows text in more than one chunk)
    assert showing >= set(engine.list_formats()) - {"mcs_text"}
