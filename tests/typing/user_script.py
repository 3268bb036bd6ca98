"""A client of the public API, written as a user writes one: it must pass ``mypy --strict``.

tests/test_typing.py checks it with ``python -m mypy --strict`` (so a public name that loses
its annotations, or gains a wrong one, fails there) and runs :func:`main` on a recorded stream,
offline, so that what type-checks here also works.

Usage: ``python tests/typing/user_script.py STREAM.jsonl FORMAT SCRATCH.yaml``
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import engine
from engine import (
    BaseDriver,
    CallIncomplete,
    ChunkError,
    DescriptorError,
    DriverResponse,
    ExtractedCall,
    ExtractionStrategy,
    Forming,
    LLMStreamBuffer,
    Orchestrator,
    Problem,
    Skipped,
    Tool,
    ToolCallRecord,
    UnknownFormatError,
)


class Weather(BaseDriver):
    """One tool, answered from a table: what a user's driver looks like."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []

    def list_tools(self) -> list[Tool]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
        return [Tool(name="get_weather", description="The weather at a place", parameters=schema)]

    def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> str:
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
    stop: Any = buf.stop_reason
    usage: Any = buf.usage
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
    lines += check_errors(scratch)
    lines.append(f"ran {weather.ran}")
    return lines


if __name__ == "__main__":
    print("\n".join(main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))))
