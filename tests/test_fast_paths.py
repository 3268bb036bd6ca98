"""The fast paths change nothing but speed.

The fast paths live inside the compiled readers, with no switch: a plain field chain compiles
to direct look-ups (``ev.get(key)`` for one field, :func:`engine.compile.paths._chain`), and
a caller calls the reader, but where a caller looks a one-field path up itself (the
dispatcher's event name and choice list). Every golden is replayed, whole and re-split into
one-character fragments, by strategies compiled as they are and by strategies whose chains
compile to a plain loop over their fields, and the outcomes must agree.
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
from engine.compile.strategy import Program
from engine.language.builtin_files import builtin_paths
from engine.model.fragments import Fragments, SlottedList, dig

STREAMS = golden_streams()


def _looped_chain(fields: list[str], on_choice: bool = False) -> Any:
    """A chain read by the model's one loop over a field chain (``dig``): what the
    specialised look-ups must equal."""
    chain = tuple(fields)
    return lambda ev, ch=None: dig(ch if on_choice else ev, chain)


@functools.cache
def _strategy(fmt: str, specialised: bool) -> Any:
    """The built-in ``fmt`` compiled afresh, its chains specialised or looped."""
    with pytest.MonkeyPatch.context() as patch:
        if not specialised:
            patch.setattr(paths, "_chain", _looped_chain)
        return engine.load_format(builtin_paths()[fmt])


def _replay(events: list, strategy: Any) -> dict:
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    for event in copy.deepcopy(events):
        buf.add(event)
    buf.close()
    return outcome(buf)


def _one_char(events: list, fmt: str) -> list:
    wire = engine.load_format(fmt)
    fields, done = wire.streamed_fields(), wire.done_fields()
    return resplit(copy.deepcopy(events), fields, every_character, done)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
@pytest.mark.parametrize("split", ["whole", "one_char"])
def test_the_specialised_look_ups_give_the_looped_outcome(path, split):
    fmt = path.parent.name
    events = read_stream(path)
    if split == "one_char":
        events = _one_char(events, fmt)
    assert _replay(events, _strategy(fmt, False)) == _replay(events, _strategy(fmt, True))


@pytest.mark.parametrize("in_place", [True, False])
def test_the_dispatcher_looks_one_field_up_in_place_else_reads_through_its_reader(
    monkeypatch, in_place
):
    """The event name and the choice list of every chunk a wire applies: a one-field path
    (``type``, ``choices``: ``name_key``, ``list_key``) is looked up in the event itself,
    no reader's frame; any other path (its key None) is one call of the compiled reader
    (any callable that reads them serves); the outcome is the same. There is no global
    switch of fast paths."""
    assert not hasattr(paths, "FAST_PATHS")
    real_apply, counted = Program.apply, []
    calls: dict[str, int] = {}
    applying = [False]

    def counted_apply(self: Program, asm: Any, chunk: Any, choice: int) -> None:
        calls["apply"] += self in counted
        applying[0] = True
        try:
            real_apply(self, asm, chunk, choice)
        finally:
            applying[0] = False

    def counting(kind: str, read: Any) -> Any:
        def reader(ev: Any, ch: Any = None) -> Any:
            calls[kind] += applying[0]
            return read(ev, ch)

        return reader

    monkeypatch.setattr(Program, "apply", counted_apply)
    for fmt, kind, key in (
        ("anthropic_messages", "discriminator", "name_key"),
        ("openai_chat", "choice_list", "list_key"),
    ):
        strategy = engine.load_format(builtin_paths()[fmt])
        counted.append(strategy.program)
        assert getattr(strategy.program, key) is not None
        if not in_place:
            setattr(strategy.program, key, None)
        setattr(strategy.program, kind, counting(kind, getattr(strategy.program, kind)))
        calls.update(apply=0, **{kind: 0})
        for path in golden_streams([fmt]):
            events = read_stream(path)
            assert _replay(events, strategy) == _replay(events, engine.load_format(fmt))
        assert calls["apply"] > 0, (fmt, calls)
        if in_place:
            assert calls[kind] == 0, (fmt, calls)
        else:
            assert calls["apply"] <= calls[kind], (fmt, calls)


def test_a_one_field_path_is_named_and_no_other_is():
    assert paths.one_field("index") == "index"
    for path in ("", "delta.text", "content[0]", {"jmespath": "a || b"}, 3):
        assert paths.one_field(path) is None, path
    read = paths.compile_read("index")
    assert read({"index": 3}) == 3 and read([3]) is None and read({}) is None


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
