"""The fast paths change nothing but speed.

Compiled objects carry fast paths (a reader's one-field look-up, the
:class:`engine.compile.paths.Reader`'s ``field``; the dispatcher's first-entry choice), and
``engine.compile.paths.FAST_PATHS`` turns every one of them off when a descriptor compiles.
Every golden is replayed, whole and re-split into one-character fragments, by strategies
compiled both ways, and the outcomes must agree.

That the switch does something is shown, not assumed: one-field readers are compiled through a
counting wrapper, and with the fast paths on the hot path looks their field up instead of
calling them, so the calls drop by about one per chunk.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
from conftest import golden_streams, outcome, read_stream, stream_id

import engine
from engine.cli.resplit import every_character, resplit
from engine.compile import paths
from engine.language.builtin_files import builtin_path
from engine.model.fragments import Fragments, SlottedList

STREAMS = golden_streams()
_CALLS = {True: 0, False: 0}  # calls of one-field readers, by the FAST_PATHS they compiled under


@functools.cache
def _strategy(fmt: str, fast: bool) -> Any:
    """The built-in ``fmt`` compiled afresh with the fast paths ``fast``, its one-field
    readers counting their calls."""
    real_chain = paths._chain

    def counting_chain(fields: list[str], on_choice: bool = False) -> Any:
        read = real_chain(fields, on_choice)
        if on_choice or len(fields) != 1:
            return read

        def counted(ev: Any, ch: Any = None) -> Any:
            _CALLS[fast] += 1
            return read(ev, ch)

        return counted

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(paths, "FAST_PATHS", fast)
        patch.setattr(paths, "_chain", counting_chain)
        return engine.load_format(builtin_path(fmt))


def _replay(events: list, fmt: str, fast: bool) -> tuple[dict, int]:
    """The outcome of ``events`` and how many one-field reader calls it took."""
    before = _CALLS[fast]
    buf = engine.LLMStreamBuffer(strategies=[_strategy(fmt, fast)])
    for event in copy.deepcopy(events):
        buf.add(event)
    buf.close()
    return outcome(buf), _CALLS[fast] - before


def _one_char(events: list, fmt: str) -> list:
    wire = engine.load_format(fmt)
    fields, done = wire.streamed_fields(), wire.done_fields()
    return resplit(copy.deepcopy(events), fields, every_character, done)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
@pytest.mark.parametrize("split", ["whole", "one_char"])
def test_the_generic_paths_give_the_same_outcome(path, split):
    fmt = path.parent.name
    events = read_stream(path)
    if split == "one_char":
        events = _one_char(events, fmt)
    fast, fast_calls = _replay(events, fmt, True)
    generic, generic_calls = _replay(events, fmt, False)
    assert generic == fast
    assert generic_calls >= fast_calls


def test_the_switch_turns_the_one_field_look_ups_into_reader_calls():
    """Over every golden, the generic paths call a one-field reader at least once more per
    chunk: the look-ups the fast paths make in place of a call (the discriminator of a wire
    with event names, its choice list, the SLOT of a delta, a fold's source...). Readers with
    no fast path (an operation's ``from``) are called either way."""
    chunks = fast_calls = generic_calls = 0
    for path in STREAMS:
        events = read_stream(path)
        chunks += len(events)
        fast_calls += _replay(events, path.parent.name, True)[1]
        generic_calls += _replay(events, path.parent.name, False)[1]
    assert generic_calls - fast_calls >= chunks, (chunks, fast_calls, generic_calls)


def test_a_one_field_reader_names_its_field_and_no_other_does():
    assert paths.compile_read("index").field == "index"
    assert paths.compile_get("delta").field == "delta"
    assert paths.compile_read("choice", "choice").field is None  # the choice, not the event
    for path in ("", "delta.text", "content[0]", "choice.delta", {"jmespath": "a || b"}):
        assert paths.compile_read(path, "choice").field is None, path


def test_with_the_switch_off_no_reader_names_a_field(monkeypatch):
    monkeypatch.setattr(paths, "FAST_PATHS", False)
    read = paths.compile_read("index")
    assert read.field is None
    assert read({"index": 3}, None) == 3  # the generic path reads the same field


def test_fragments_append_and_join_without_their_pieces():
    text = Fragments("ab")
    assert text.joined() == "ab"
    text.append("c")
    text.append("de")
    text.append("")
    assert text.joined() == str(text) == "abcde"
    text.append("f")  # appending after a join still appends to the same string
    assert text.joined() == "abcdef"
    assert Fragments().joined() == ""


def test_a_slotted_list_finds_the_item_a_slot_holds_now():
    lst = SlottedList()
    first = lst.put(1, {"a": 1}, [])
    assert lst.get(1) is first and lst.get(0) is None
    second = lst.put(1, {"a": 2}, [])  # a restated item replaces the one at its SLOT
    assert lst.get(1) is second and len(lst) == 1
    with pytest.raises(TypeError):
        lst.get([1])  # no key can hold a list: the walk turns this into its error
