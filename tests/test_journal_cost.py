"""What the undo journal costs a chunk that goes in (issue 17, per-chunk cost): the common
chunk pays one tuple for its undo, and no Python frame of ours beyond the write itself.

Counted with ``sys.setprofile`` on the recorded streams of every wire (frames are what a
chunk's cost grew by when the journal came: ``_apply``, ``put_attr``, the argument stream's
record of its parts):

- after the wire is resolved, ``add`` runs the event's rules itself, without a frame between;
- an argument fragment that continues a JSON string (the fragment of most chunks of a call)
  enters no function of the journal and no function of the argument stream but ``feed``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import compiled, format_of, golden_streams, read_stream, stream_id

import engine

STREAMS = golden_streams()
JOURNAL = str(Path(engine.__file__).parent / "model" / "journal.py")
JSONSCAN = str(Path(engine.__file__).parent / "model" / "jsonscan.py")


def _frames(add: Callable[[Any], None], chunk: Any) -> tuple[list[tuple[str, str]], list[bool]]:
    """The (file, function) of every Python frame entered while ``add(chunk)`` runs, and for
    each argument fragment fed, whether it continues a JSON string (its stream inside one,
    the fragment holding no quote nor backslash that could end it)."""
    seen: list[tuple[str, str]] = []
    in_string: list[bool] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        seen.append((code.co_filename, code.co_name))
        if code.co_filename == JSONSCAN and code.co_name == "feed":
            stream, fragment = frame.f_locals["self"], frame.f_locals["fragment"]
            in_string.append(
                fragment.__class__ is str
                and stream._in_string
                and not (stream._escape or stream._ended or stream.closed)
                and '"' not in fragment
                and "\\" not in fragment
            )

    sys.setprofile(profile)
    try:
        add(chunk)
    except engine.ChunkError:
        pass
    finally:
        sys.setprofile(None)
    return seen, in_string


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_add_runs_the_rules_without_a_frame_between(path):
    buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
    between = []
    for chunk in read_stream(path):
        resolved = buf._asm is not None
        frames, _ = _frames(buf.add, chunk)
        if resolved:
            between += [name for _, name in frames if name == "_apply"]
    assert between == []


TEXT_ARGUMENT_WIRES = {
    "anthropic_messages",
    "bedrock_converse",
    "cohere_v2",
    "openai_chat",
    "openai_responses",
}


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_a_fragment_inside_a_string_enters_no_journal_function(path):
    buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
    extra: list[str] = []
    for chunk in read_stream(path):
        frames, in_string = _frames(buf.add, chunk)
        if in_string and all(in_string):
            extra += [
                name
                for file, name in frames
                if file == JOURNAL or (file == JSONSCAN and name != "feed")
            ]
    assert extra == []


def test_the_recorded_streams_of_every_text_argument_wire_have_fragments_inside_strings():
    """(So that the test above tests something on each wire that streams argument text.)"""
    found = set()
    for path in golden_streams(sorted(TEXT_ARGUMENT_WIRES)):
        buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
        for chunk in read_stream(path):
            _, in_string = _frames(buf.add, chunk)
            if in_string and all(in_string):
                found.add(format_of(path))
    assert found == TEXT_ARGUMENT_WIRES
