"""A join inside a chunk is undone with the chunk (engine.model.journal).

The journal's record of one append to a text's or an argument stream's pieces is the list
itself (undone by ``pop``); a read that joins those pieces gives them a new list. So a chunk
that appends, is read (joined), appends again and then raises must get the old list back
before its appends are taken back: the text is then what it was before the chunk, and the
next append continues it.
"""

from __future__ import annotations

from engine.model.fragments import Fragments, grow
from engine.model.journal import undo
from engine.model.jsonscan import COMPLETE, ArgsStream


def test_a_text_joined_inside_a_chunk_is_what_it_was_once_the_chunk_is_undone():
    journal: list = []
    text = Fragments("ab", journal)
    text.append("c")  # an earlier chunk's piece, its record dropped with that chunk
    grow(journal, text, "d")
    assert text.joined() == "abcd"  # read inside the chunk: the pieces become one
    grow(journal, text, "e")
    undo(journal)
    assert (text.joined(), journal) == ("abc", [])
    text.append("x")
    assert text.joined() == "abcx"


def test_a_text_joined_between_chunks_journals_nothing():
    journal: list = []
    text = Fragments("ab", journal)
    text.append("c")
    assert (text.joined(), journal) == ("abc", [])


def test_arguments_joined_inside_a_chunk_are_what_they_were_once_the_chunk_is_undone():
    journal: list = []
    args = ArgsStream("object")
    args.journal = journal
    for piece in ('{"city": "Pa', "r"):
        args.feed(piece)
    journal.clear()  # those chunks went in
    args.feed("is")
    assert args.text == '{"city": "Paris'  # read inside the chunk: joined
    args.feed(" Nord")
    undo(journal)
    assert args.text == '{"city": "Par'
    args.feed('is"}')
    args.close()
    assert (args.state, args.value) == (COMPLETE, {"city": "Paris"})
