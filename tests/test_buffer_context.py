"""A buffer is a context manager (issue 19, point 4): ``with LLMStreamBuffer() as buf:``
closes it at the end of the block, also when the block raises, and ``async with`` the same.
A close that finds no wire (UnknownFormatError) while the block's own exception propagates
never masks it."""

from __future__ import annotations

import asyncio

import pytest
from conftest import GOLDEN, read_stream

import engine

TEXT = read_stream(GOLDEN / "anthropic_messages" / "llm_anthropic_text.jsonl")
CALL = read_stream(GOLDEN / "anthropic_messages" / "llm_anthropic_tool_use.jsonl")


class Boom(Exception):
    pass


def test_with_closes_the_buffer_at_the_end_of_the_block():
    with engine.LLMStreamBuffer(events=True) as buf:
        for chunk in TEXT:
            buf.add(chunk)
        assert not buf.closed
    assert buf.closed
    finished = [e for e in buf.events() if isinstance(e, engine.Finished)]
    assert [(e.stop_reason, e.finish_reason) for e in finished] == [("end_turn", "stop")]


def test_with_closes_a_stream_cut_inside_a_call_when_the_block_raises():
    cut = [c for c in CALL if c["type"] not in ("content_block_stop", "message_stop")]
    cut = cut[: next(i for i, c in enumerate(cut) if c["type"] == "message_delta")]
    with pytest.raises(Boom), engine.LLMStreamBuffer() as buf:
        for chunk in cut:
            buf.add(chunk)
        assert buf.forming()
        raise Boom
    assert buf.closed and not buf.forming()
    assert [c.reason for c in buf.incomplete_calls()] == ["cut"]


def test_an_unresolved_close_does_not_mask_the_blocks_exception():
    with pytest.raises(Boom) as raised, engine.LLMStreamBuffer() as buf:
        buf.add({"not": "any wire"})
        raise Boom("the block's own")
    assert str(raised.value) == "the block's own"
    assert buf.closed


def test_an_unresolved_close_raises_when_the_block_did_not():
    with pytest.raises(engine.UnknownFormatError), engine.LLMStreamBuffer() as buf:
        buf.add({"not": "any wire"})


class _CountsCloses(engine.LLMStreamBuffer):
    """A buffer that counts its ``close()`` calls."""

    closes = 0

    def close(self) -> None:
        self.closes += 1
        super().close()


def test_a_buffer_closed_in_the_block_is_not_closed_again():
    with _CountsCloses(events=True) as buf:
        told = list(buf.consume(TEXT))  # consume() closes it
        assert buf.closes == 1
    assert buf.closes == 1 and buf.events() == []
    assert sum(isinstance(e, engine.Finished) for e in told) == 1


def test_async_with_closes_the_buffer_too():
    async def source():
        for chunk in TEXT[:-1]:  # no message_stop: the end is close()'s
            yield chunk

    async def run() -> engine.LLMStreamBuffer:
        async with engine.LLMStreamBuffer() as buf:
            async for chunk in source():
                buf.add(chunk)
        return buf

    buf = asyncio.run(run())
    assert buf.closed and not buf.is_finished() and buf.finish_reason is None


def test_async_with_does_not_mask_the_blocks_exception():
    async def run() -> None:
        async with engine.LLMStreamBuffer() as buf:
            buf.add({"not": "any wire"})
            raise Boom

    with pytest.raises(Boom):
        asyncio.run(run())
