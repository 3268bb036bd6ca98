"""A client of the public API, written as a user writes one: it must pass ``mypy --strict``.

tests/test_typing.py checks it with ``python -m mypy --strict`` (so a public name that loses
its annotations, or gains a wrong one, fails there) and runs :func:`main` on a recorded stream,
offline, so that what type-checks here also works.

Usage: ``python tests/typing/user_script.py STREAM.jsonl FORMAT SCRATCH.yaml``
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import engine
from engine import (
    ArgumentsDelta,
    BaseDriver,
    CallIncomplete,
    CallReady,
    CallStarted,
    ChunkError,
    DescriptorError,
    DriverResponse,
    Event,
    ExtractedCall,
    ExtractionStrategy,
    Finished,
    FinishReason,
    Forming,
    LLMStreamBuffer,
    Orchestrator,
    Problem,
    ProviderError,
    ReasoningDelta,
    Skipped,
    TextDelta,
    Tool,
    ToolCallRecord,
    UnknownFormatError,
    Usage,
)

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


class Weather(BaseDriver):
    """One tool, answered from a table: what a user's driver looks like."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []

    def list_tools(self) -> list[Tool]:
        schema = WEATHER_SCHEMA
        return [Tool(name="get_weather", description="The weather at a place", parameters=schema)]

    def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> str:
        city = str(arguments.get("city", "?"))
        self.ran.append(city)
        return f"sunny in {city}"


class AsyncWeather(BaseDriver):
    """The same tool as an ``async def``: run by ``aprocess_llm_response``."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []

    def list_tools(self) -> list[Tool]:
        return [Tool("get_weather", "The weather at a place", WEATHER_SCHEMA)]

    async def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        city = str(arguments.get("city", "?"))
        self.ran.append(city)
        return f"sunny in {city}"


def read_stream(path: Path) -> Iterator[dict[str, Any]]:
    """A recorded stream: one JSON object a line."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                chunk: dict[str, Any] = json.loads(line)
                yield chunk


def describe(call: ExtractedCall) -> str:
    end: int | None = call.end
    where = "" if end is None else f" (text up to {end})"
    call_id: str | None = call.id
    arguments: dict[str, Any] = call.arguments
    return f"{call.name}({json.dumps(arguments, sort_keys=True)}) id={call_id}{where}"


def stream_plain(chunks: list[dict[str, Any]], fmt: ExtractionStrategy) -> list[str]:
    """A client without a driver: add chunks, show text, collect calls."""
    out: list[str] = []
    buf = LLMStreamBuffer(strategies=[fmt], choice=0)
    was_forming: str | None = None
    for chunk in chunks:
        buf.add(chunk)
        shown: str = buf.text()
        if shown:
            out.append(f"text {shown!r}")
        forming: Forming = buf.forming()
        name = forming.tool_name if forming else None
        if name is not None and name != was_forming:
            out.append(f"forming {name}")
        was_forming = name
    buf.close()
    calls: list[ExtractedCall] = buf.calls()
    out.extend(f"call {describe(c)}" for c in calls)
    content: str = buf.get_content()
    message: dict[str, Any] = buf.as_dict()
    out.append(f"content {content!r}; message keys {sorted(message)}")
    out.append(f"format {buf.format}; finished {buf.is_finished()}")
    stop: str | None = buf.stop_reason
    usage: dict[str, Any] | None = buf.usage
    error: Any = buf.error
    out.append(f"stop {stop!r}; usage {usage is not None}; error {error!r}")
    skipped: list[Skipped] = buf.skipped()
    out.extend(f"skipped chunk {s.index} {s.event}: {s.reason}" for s in skipped)
    incomplete: list[CallIncomplete] = buf.incomplete_calls()
    for ev in incomplete:
        out.append(f"incomplete {ev.name} ({ev.reason}): {ev.to_dict()['type']}")
    return out


def stream_driven(chunks: list[dict[str, Any]], driver: BaseDriver) -> list[str]:
    """A client with a driver: one round per chunk, the history it hands back."""
    out: list[str] = []
    buf: LLMStreamBuffer = driver.new_stream_buffer()
    history: list[dict[str, Any]] = []
    for chunk in chunks:
        buf.add(chunk)
        response: DriverResponse = driver.process_llm_response(buf)
        shown = buf.text()
        if shown:
            out.append(f"text {shown!r}")
        if response.call_pending:
            continue
        records: list[ToolCallRecord] = response.executed_calls or []
        for record in records:
            status = f"error {record.error}" if record.failed else f"-> {record.result!r}"
            out.append(f"ran {record.name} {record.arguments} {record.tool_call_id} {status}")
        if response.call_failed and response.retry_prompt is not None:
            out.append(f"retry: {response.retry_prompt}")
        if response.call_executed and response.messages is not None:
            history.extend(response.messages)
        for ev in response.incomplete_calls or []:
            out.append(f"incomplete {ev.slot!r} {ev.raw!r}")
    buf.close()
    out.append(f"history of {len(history)} message(s)")
    return out


def show_event(ev: Event) -> str:
    """One event as a line: a match on the event classes, each field with its type."""
    match ev:
        case TextDelta(text=text):
            shown: str = text
            return f"text {shown!r}"
        case ReasoningDelta(text=text):
            return f"reasoning {len(text)} chars"
        case CallStarted(slot=slot, name=name, id=call_id):
            started: str = name
            known: str | None = call_id
            return f"started {slot!r} {started} id={known}"
        case ArgumentsDelta(slot=slot, text=fragment, partial=partial):
            raw: str | None = fragment
            so_far: dict[str, Any] = dict(partial)  # a snapshot: partial keeps changing
            return f"arguments {slot!r} {raw is None} {sorted(so_far)}"
        case CallReady(slot=slot, call=call):
            return f"ready {slot!r} {describe(call)}"
        case CallIncomplete(slot=slot, name=name, raw=raw_text, reason=reason):
            why: str = reason
            return f"incomplete {slot!r} {name} ({why}) {len(raw_text)} chars"
        case Finished(stop_reason=stop, usage=usage, finish_reason=reason, token_usage=counts):
            told: str | None = stop
            word: FinishReason | None = reason
            final: Usage | None = counts
            total = final.total_tokens if final is not None else None
            return f"finished {told!r} usage {usage is not None} as {word} total {total}"
        case ProviderError(error=error):
            return f"provider error {error!r}"
    return f"other {ev.to_dict()['type']}"


def stream_events(chunks: list[dict[str, Any]], fmt: ExtractionStrategy) -> list[str]:
    """A client of the events: ``consume()`` with a match, to_dict() to send them on."""
    out: list[str] = []
    buf = LLMStreamBuffer(strategies=[fmt])
    sent: list[dict[str, Any]] = []
    for ev in buf.consume(chunks):
        out.append(show_event(ev))
        sent.append(ev.to_dict())
    out.append(f"sent {len(sent)} event(s), closed {buf.closed}")
    return out


def stream_cursors(chunks: list[dict[str, Any]], fmt: ExtractionStrategy) -> list[str]:
    """A per-chunk loop over the cursors: each completed call once, the events so far."""
    out: list[str] = []
    buf = LLMStreamBuffer(strategies=[fmt], events=True)
    kinds: list[str] = []
    for chunk in chunks:
        buf.add(chunk)
        for call in buf.new_calls():
            out.append(f"run {describe(call)}")
        events: list[Event] = buf.events()
        kinds.extend(type(ev).__name__ for ev in events)
    buf.close()
    later: list[ExtractedCall] = buf.new_calls()
    forming = buf.forming().forming
    out.append(f"{len(later)} call(s) at close; {len(kinds)} event(s); forming {forming}")
    return out


def stream_raw_body(chunks: list[dict[str, Any]], fmt: ExtractionStrategy) -> list[str]:
    """A client without an SDK: the SSE body as an HTTP client hands it over, cut anywhere."""
    body = "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks).encode()
    pieces: Iterator[bytes] = (body[i : i + 7] for i in range(0, len(body), 7))
    decoded = engine.sse_chunks(pieces)
    buf = LLMStreamBuffer(strategies=[fmt])
    ran: list[str] = []
    for chunk in decoded:
        buf.add(chunk)
        ran.extend(call.name for call in buf.new_calls())
    buf.close()
    ignored: dict[str, int] = decoded.ignored_fields
    return [f"raw body: ran {ran}, ignored {ignored}"]


async def stream_async(chunks: list[dict[str, Any]], driver: BaseDriver) -> list[str]:
    """A client with a driver on an event loop, the driver's events read after each round;
    then ``aconsume()`` over an async source."""
    out: list[str] = []
    buf = driver.new_stream_buffer(events=True)
    for chunk in chunks:
        buf.add(chunk)
        response: DriverResponse = await driver.aprocess_llm_response(buf)
        for ev in buf.events():
            if isinstance(ev, CallReady):
                out.append(f"async ready {ev.call.name}")
        for record in response.executed_calls or []:
            out.append(f"async ran {record.name} -> {record.result!r}")
    buf.close()
    await driver.aprocess_llm_response(buf)

    async def source() -> AsyncIterator[dict[str, Any]]:
        for chunk in chunks:
            await asyncio.sleep(0)
            yield chunk

    plain = LLMStreamBuffer(strategies=driver.extraction_strategies())
    count = 0
    async for ev in plain.aconsume(source()):
        count += isinstance(ev, ArgumentsDelta)
    out.append(f"aconsume: {count} argument delta(s)")
    return out


def check_errors(descriptor: Path) -> list[str]:
    """The errors a client catches, and the validator's problems."""
    out: list[str] = []
    try:
        engine.load_format("no_such_format")
    except UnknownFormatError as exc:
        out.append(f"unknown format: {str(exc).split(';')[0]}")
    buf = LLMStreamBuffer()
    try:
        buf.add("[1, 2]")
    except ChunkError as exc:
        index: int = exc.index
        out.append(f"chunk error at {index}: {exc.reason}")
    descriptor.write_text("name: mine\nrecognize: {chunk: 3}\n", encoding="utf-8")
    problems: list[Problem] = engine.validate_descriptor(descriptor)
    for problem in problems[:1]:
        line: int = problem.line
        out.append(f"problem at {problem.file}:{line}:{problem.col} {problem.pointer}")
    try:
        raise DescriptorError(problems)
    except DescriptorError as exc:
        out.append(f"descriptor error with {len(exc.problems)} problem(s)")
    return out


def what_to_do(reason: FinishReason | None) -> str:
    """A multi-provider client's one decision: a match on the one finish reason."""
    match reason:
        case "tool_calls":
            return "run the calls"
        case "length":
            return "ask for more room"
        case "content_filter" | "error":
            return "tell the user"
        case "stop" | "other":
            return "show the answer"
        case None:
            return "the stream never finished"


def spent(usage: Usage | None) -> str:
    """The counts, each None where the wire does not say."""
    if usage is None:
        return "no usage"
    given: int | None = usage.input_tokens
    made: int | None = usage.output_tokens
    cached = usage.cached_input_tokens or 0
    thought = usage.reasoning_tokens if usage.reasoning_tokens is not None else "?"
    return f"in {given} (cached {cached}) out {made} (reasoning {thought}) = {usage.total_tokens}"


def stream_multi_provider(chunks: list[dict[str, Any]]) -> list[str]:
    """Any wire, one finish reason and one usage; the buffer closed by its ``with``."""
    with LLMStreamBuffer() as buf:
        for chunk in chunks:
            buf.add(chunk)
    return [f"{buf.format}: {what_to_do(buf.finish_reason)}; {spent(buf.token_usage)}"]


async def stream_multi_provider_async(chunks: list[dict[str, Any]]) -> list[str]:
    async with LLMStreamBuffer() as buf:
        for chunk in chunks[:-1]:  # the last chunk never comes: no DONE, closed by the block
            buf.add(chunk)
    return [f"async with: {what_to_do(buf.finish_reason)}; closed {buf.closed}"]


def main(stream: Path, format_name: str, scratch: Path) -> list[str]:
    """Everything above on one recorded stream; ``scratch``: a descriptor file to write."""
    names: list[str] = engine.list_formats()
    version: str = engine.__version__
    fmt = engine.load_format(format_name)
    chunks = list(read_stream(stream))
    weather = Weather()
    both = Orchestrator(drivers=[weather])
    lines = [f"engine {version}: {len(names)} formats; {fmt.name}"]
    lines += stream_plain(chunks, fmt)
    lines += stream_driven(chunks, weather)
    lines += stream_driven(chunks, both)
    lines += stream_events(chunks, fmt)
    lines += stream_cursors(chunks, fmt)
    lines += stream_raw_body(chunks, fmt)
    awaited = AsyncWeather()
    lines += asyncio.run(stream_async(chunks, awaited))
    lines += asyncio.run(stream_async(chunks, Orchestrator(drivers=[AsyncWeather()])))
    lines += stream_multi_provider(chunks)
    lines += asyncio.run(stream_multi_provider_async(chunks))
    lines += check_errors(scratch)
    lines.append(f"awaited {awaited.ran}")
    lines.append(f"ran {weather.ran}")
    return lines


if __name__ == "__main__":
    print("\n".join(main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))))
