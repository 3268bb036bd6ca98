"""A chunk that raises changes nothing, and what a buffer keeps is its message (issue 17,
"Memory and the cost of a rejected chunk"); ``reset()`` forgets the stream's transport state.

- ``reset()`` clears a pending SSE ``event:`` name and the chunk count: the first chunk after
  a reset is chunk 0, and an ``event:`` line before the reset names no data line after it.
"""

from __future__ import annotations

import pytest

import engine

BEDROCK = "bedrock_converse"
START = {"_event": "messageStart", "role": "assistant"}
USAGE = 'data: {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}'


def _bedrock() -> engine.LLMStreamBuffer:
    return engine.LLMStreamBuffer(strategies=[engine.load_format(BEDROCK)])


def test_reset_forgets_a_pending_sse_event_name():
    fresh = _bedrock()
    fresh.add(dict(START))
    fresh.add(USAGE)  # unnamed: not the metadata event, counted as unknown
    buf = _bedrock()
    buf.add(dict(START))
    buf.add("event: metadata")  # names the next data line of the stream that is dropped
    buf.reset()
    buf.add(dict(START))
    buf.add(USAGE)
    assert (buf.usage, buf.unknown_events, buf.as_dict()) == (
        fresh.usage,
        fresh.unknown_events,
        fresh.as_dict(),
    )


@pytest.mark.parametrize("chunks", [0, 1, 5])
def test_the_first_chunk_after_reset_is_chunk_0(chunks):
    buf = _bedrock()
    for _ in range(chunks):
        buf.add(dict(START))
    buf.reset()
    with pytest.raises(engine.ChunkError) as raised:
        buf.add("data: {not json")
    assert raised.value.index == 0
