"""From an HTTP body's pieces to the chunks ``buf.add`` takes: streaming without an SDK.

A client on raw HTTP gets the body as the transport cuts it (``httpx``'s ``iter_bytes()`` /
``aiter_bytes()``, ``requests``' ``iter_content()``, aiohttp's ``content.iter_any()``): a
piece may hold several events, half a line or half a UTF-8 character, so a piece is not a
chunk. These wrap the pieces and yield each chunk as the piece that completes it arrives::

    for ev in buf.consume(engine.sse_chunks(resp.iter_bytes())): ...
    async for ev in buf.aconsume(engine.asse_chunks(resp.aiter_bytes())): ...
    for ev in buf.consume(engine.eventstream_chunks(resp.iter_bytes())): ...   # AWS binary

A chunk is what the whole-capture reader (``mcs-formats replay``) hands the buffer for the
same bytes, because both are the same decoders (:mod:`engine.transport.sse`,
:mod:`engine.transport.eventstream`): the JSON payload as a dict (an SSE ``event:`` name or an
AWS ``:event-type`` as ``"_event"``, as the golden files record them), or, for SSE data that
is not JSON (``data: [DONE]``), the SSE line, so the buffer decides whether it ends the wire.

A body that does not decode, or that ends inside a line, an event or a message, raises
:class:`engine.TransportError` naming the line or byte and what was left or expected, after
every chunk before it was yielded (so ``consume`` has added them). What the SSE rules say to
ignore is counted on the wrapper (``ignored_fields``), beside ``last_event_id`` and ``retry``.
Each wrapper reads its pieces once: iterate it once.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from ..transport.eventstream import Message, MessageDecoder, message_chunk
from ..transport.sse import SSEDecoder, SSEEvent, decode_event

Piece = bytes | bytearray | memoryview | str
BytesPiece = bytes | bytearray | memoryview


class _Body:
    """A body's chunks, from its pieces, as its decoder completes them (its ``feed`` of a
    piece, then its ``end``), each made what ``buf.add`` takes by ``_chunk``: iterated once,
    sync or async as its pieces are (a second pass would end a stream that is already ended,
    or silently yield nothing). A chunk that does not decode raises after those before it
    were yielded."""

    _started = False

    def __init__(self, pieces: Iterable[Any] | AsyncIterable[Any], decoder: Any) -> None:
        self._pieces: Any = pieces  # iterated as it is: one kind of loop takes it
        self._decoder = decoder

    def _chunk(self, decoded: Any) -> Any:
        raise NotImplementedError

    def _start(self) -> None:
        if self._started:
            raise RuntimeError("these chunks were already iterated: wrap the pieces again")
        self._started = True

    def __iter__(self) -> Iterator[Any]:
        self._start()
        for piece in self._pieces:
            yield from map(self._chunk, self._decoder.feed(piece))
        yield from map(self._chunk, self._decoder.end())

    async def __aiter__(self) -> AsyncIterator[Any]:
        self._start()
        async for piece in self._pieces:
            for decoded in self._decoder.feed(piece):
                yield self._chunk(decoded)
        for decoded in self._decoder.end():
            yield self._chunk(decoded)


class SSEChunks(_Body):
    """The chunks of an SSE body, from its pieces (bytes or str, split anywhere), and what it
    said beside its events."""

    _decoder: SSEDecoder

    def __init__(self, pieces: Iterable[Piece] | AsyncIterable[Piece]) -> None:
        super().__init__(pieces, SSEDecoder())

    def _chunk(self, event: SSEEvent) -> Any:
        return decode_event(event)[0]

    @property
    def ignored_fields(self) -> dict[str, int]:
        """The lines the SSE rules say to ignore, counted by field name: unknown fields, a
        ``retry`` that is not digits, an ``id`` holding a NUL."""
        return self._decoder.ignored_fields

    @property
    def last_event_id(self) -> str:
        """The last ``id:`` the body sent (``""`` if none): what a reconnect sends as
        ``Last-Event-ID``."""
        return self._decoder.last_event_id

    @property
    def retry(self) -> int | None:
        """The last ``retry:`` the body sent, in milliseconds, or None."""
        return self._decoder.retry


class EventStreamChunks(_Body):
    """The chunks of an AWS event stream body (``application/vnd.amazon.eventstream``), from
    its byte pieces split anywhere; both CRCs of every message checked."""

    def __init__(self, pieces: Iterable[BytesPiece] | AsyncIterable[BytesPiece]) -> None:
        super().__init__(pieces, MessageDecoder())

    def _chunk(self, message: Message) -> Any:
        return message_chunk(message)[2]


def sse_chunks(pieces: Iterable[Piece]) -> SSEChunks:
    """The chunks of an SSE (``text/event-stream``) body, from the pieces the transport gives
    (``resp.iter_bytes()``, ``resp.iter_text()``, ``iter_content()``): feed them to
    ``buf.consume``. Each chunk is yielded as the piece completing its event arrives."""
    return SSEChunks(pieces)


def asse_chunks(pieces: AsyncIterable[Piece]) -> SSEChunks:
    """:func:`sse_chunks` over an async iterable (``resp.aiter_bytes()``), for
    ``buf.aconsume``."""
    return SSEChunks(pieces)


def eventstream_chunks(pieces: Iterable[BytesPiece]) -> EventStreamChunks:
    """The chunks of an AWS event stream body (Bedrock's ConverseStream over raw HTTP), from
    its byte pieces: feed them to ``buf.consume``."""
    return EventStreamChunks(pieces)


def aeventstream_chunks(pieces: AsyncIterable[BytesPiece]) -> EventStreamChunks:
    """:func:`eventstream_chunks` over an async iterable, for ``buf.aconsume``."""
    return EventStreamChunks(pieces)
