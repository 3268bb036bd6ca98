"""``extend``'s continued calls (Gemini ``partialArgs``): a piece that cannot be placed raises
where it is written, and the chunk's atomicity (the undo journal) takes back what the pieces
and parts before it wrote, on an events buffer too: its events and the ``partial`` dict a
client holds are as they were before the chunk."""

from __future__ import annotations

import copy
import re

import pytest
from test_hardening_gemini import OPEN, _chunk

import engine


@pytest.mark.parametrize(
    "path", ["s", "$", "$[0]", "$.xs[2]", "$.s.k", "$.xs.k", "$.xs[0][0]", "$.t[0].u[1]"]
)
def test_a_bad_piece_changes_nothing_on_an_events_buffer(path: str) -> None:
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("gemini")], events=True)
    for chunk in OPEN:
        buf.add(chunk)
    partial = [ev for ev in buf.events() if isinstance(ev, engine.ArgumentsDelta)][-1].partial
    before = copy.deepcopy(partial)
    pieces = [
        {"jsonPath": "$.ok", "stringValue": "fine"},
        {"jsonPath": "$.t[0].v", "numberValue": 3},  # containers made on the way
        {"jsonPath": path, "stringValue": "x"},
    ]
    bad = _chunk([{"functionCall": {"partialArgs": pieces, "willContinue": True}}, {"text": "!"}])
    with pytest.raises(engine.ChunkError, match=re.escape(repr(path))):
        buf.add(bad)
    assert buf.events() == [] and partial == before
    last = [{"functionCall": {"partialArgs": [{"jsonPath": "$.s", "stringValue": "c"}]}}]
    buf.add(_chunk(last, "STOP"))
    buf.close()
    assert [(c.name, c.arguments) for c in buf.calls()] == [("f", {"s": "abc", "xs": [1]})]
    assert partial == {"s": "abc", "xs": [1]}
