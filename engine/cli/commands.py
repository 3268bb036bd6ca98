"""The ``mcs-formats`` command: a thin layer over the library (the library never imports it).

Subcommands (README, "Command line"):

- ``list [--json]``: the built-in formats, one a line.
- ``show NAME``: a descriptor as YAML, ``extends`` resolved (the strategy's ``descriptor``).
- ``validate PATH... [--json]``: silent and 0 when valid; else 1 and one line a problem,
  ``FILE:LINE:COL: /json/pointer: message``.
- ``replay STREAM [--format NAME|PATH] [--tools NAME,...] [--json]``: a recorded stream
  played chunk by chunk through an :class:`~engine.LLMStreamBuffer`, as a client sees it.
  STREAM is JSON Lines or a raw SSE capture, ``-`` for stdin (:mod:`engine.transport.captures`).
  With ``--tools``, the client loop of a real application: after every chunk (and after
  ``close()``) a :class:`~engine.BaseDriver` owning those tools (each echoes its arguments)
  processes the buffer, then ``buf.text()`` is shown; so the output shows what is held while
  a call forms, what runs, and the history the driver returns.
  With ``--json`` one event a line: ``format``, ``text``, ``reasoning`` (reasoning as it
  streams, never display text), ``call`` (a native call complete), ``incomplete`` (a call
  that will never be runnable: name, id, reason, raw), ``done``, ``message``, and with
  ``--tools`` also ``held`` / ``released`` (a call of the driver's is forming, again once its
  name is known / no longer), ``ran`` (a call the driver ran, with its result), ``history``
  (the native messages to append) and ``retry`` (what to tell the model).
- ``new NAME [--dir DIR] [--from STREAM]``: a commented skeleton ``formats/NAME.yaml`` and
  ``tests/golden/NAME/`` with a sample stream that the skeleton reads; with ``--from``, a
  draft inferred from a recorded stream (:mod:`engine.cli.infer`), the stream copied in as the
  first golden.
- ``test DIR... [--update] [--seed N]``, ``schema [--uri]``: see ``engine/cli/project_command.py``.
- ``examples [NAME] [--dir DIR] [--guide]``: see ``engine/cli/examples_command.py``.
- ``--version``: ``mcs-formats VERSION`` (``engine.__version__``).

Exit codes: 0 success, 1 a problem in the input (an invalid descriptor, a folder holding no
descriptor, a malformed or empty stream) or output that cannot be written (one line on stderr),
2 a usage error (argparse's own, an unknown format name, a name ``new`` refuses).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

import yaml

from ..drivers.driver import BaseDriver, DriverResponse
from ..errors import ChunkError, DescriptorError, Problem, UnknownFormatError
from ..events import CallIncomplete, ExtractedCall, ReasoningDelta
from ..language import registry
from ..language.builtin_files import data_dir
from ..records import Skipped, Tool, ToolCallRecord
from ..stream.buffer import LLMStreamBuffer
from ..transport.captures import label
from ..version import version
from .common import EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, CLIError, _load_strategy, read_stream
from .examples_command import register as register_examples
from .project import SCHEMA_REF, write_schema
from .project_command import register as register_project_commands
from .project_command import write_sample

# -- output helpers ------------------------------------------------------------------------------


class Style:
    """Markers for the human replay: ``⟦call⟧`` where the terminal can show it, ANSI colour on
    a terminal unless ``NO_COLOR`` is set; plain ASCII ``[[call]]`` where it cannot."""

    _COLOURS = {
        "dim": "2",
        "bold": "1",
        "call": "1;32",
        "ran": "1;35",
        "warn": "1;31",
        "head": "1;36",
    }

    def __init__(self, out: TextIO) -> None:
        encoding = getattr(out, "encoding", None) or "ascii"
        try:
            "⟦⟧·—".encode(encoding)
            self.open, self.close, self.dot = "⟦", "⟧", "·"
        except (UnicodeEncodeError, LookupError):
            self.open, self.close, self.dot = "[[", "]]", "-"
        self.colour = out.isatty() and not os.environ.get("NO_COLOR")

    def paint(self, text: str, kind: str) -> str:
        if not self.colour or kind not in self._COLOURS:
            return text
        return f"\033[{self._COLOURS[kind]}m{text}\033[0m"

    def marker(self, name: str, kind: str = "head") -> str:
        return self.paint(f"{self.open}{name}{self.close}", kind)


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=repr)


def _counts(buf: LLMStreamBuffer) -> dict[str, int | None] | None:
    """The buffer's token usage as JSON data (None when the wire sent no usage)."""
    usage = buf.token_usage
    return dataclasses.asdict(usage) if usage is not None else None


# -- list, show ----------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    names = registry.list_formats()
    if args.json:
        rows = []
        for name in names:  # read from the files: listing compiles nothing
            data = registry.header(name)
            rows.append({"name": name, "title": data.get("title", name), "docs": data.get("docs")})
        print(_json(rows, indent=2))
    else:
        for name in names:
            print(name)
    return EXIT_OK


class _ShowDumper(yaml.SafeDumper):
    """Block style as the descriptor files write it: lists indented under their key, short
    lists and maps of scalars inline (``in: [a, b]``, ``{at: content, from: delta}``)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def _inline(values: Any, limit: int = 72) -> bool:
    scalar = all(not isinstance(v, (dict, list)) for v in values)
    return scalar and len(_json(values if isinstance(values, list) else list(values))) <= limit


class _Item(dict[str, Any]):
    """A map that is a list item: one key reads best as a block (``- usage: usage``)."""


def _represent_list(dumper: _ShowDumper, data: list[Any]) -> yaml.Node:
    items = [_Item(x) if type(x) is dict else x for x in data]
    return dumper.represent_sequence(
        "tag:yaml.org,2002:seq", items, flow_style=bool(data) and _inline(data)
    )


def _represent_dict(dumper: _ShowDumper, data: dict[str, Any]) -> yaml.Node:
    wanted = len(data) > 1 or not isinstance(data, _Item)
    flow = bool(data) and wanted and _inline(list(data.values()), 56)
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=flow)


_ShowDumper.add_representer(list, _represent_list)
_ShowDumper.add_representer(dict, _represent_dict)
_ShowDumper.add_representer(_Item, _represent_dict)


def to_yaml(descriptor: dict[str, Any]) -> str:
    """A descriptor as YAML that any safe loader reads back to the same data (keys such as
    ``on`` are quoted, because YAML 1.1 loaders would read them as booleans)."""
    text = yaml.dump(descriptor, Dumper=_ShowDumper, sort_keys=False, allow_unicode=True, width=100)
    # A blank line before each top-level section, as the files have.
    return "".join(
        "\n" + line if i and line[:1].isalnum() and line.rstrip().endswith(":") else line
        for i, line in enumerate(text.splitlines(keepends=True))
    )


def cmd_show(args: argparse.Namespace) -> int:
    strategy = _load_strategy(args.name)
    sys.stdout.write(to_yaml(strategy.descriptor))
    return EXIT_OK


# -- validate ------------------------------------------------------------------------------------


def _problems_of(arg: str) -> list[Problem]:
    """Every problem of one file, its FILE spelled as on the command line."""
    from ..language.validate import (
        validate_descriptor,  # the validator (and its schema) only when asked
    )

    path = Path(arg)
    if not path.exists():
        return [Problem(arg, 1, 1, "", "no such file", "file")]
    if not path.is_file():
        return [Problem(arg, 1, 1, "", "not a file", "file")]
    return validate_descriptor(arg)


DESCRIPTOR_SUFFIXES = (".yaml", ".yml")


def _expand(arg: str) -> list[str]:
    """A folder stands for the descriptors in it (none is a problem of its own)."""
    path = Path(arg)
    if not path.is_dir():
        return [arg]
    return [str(p) for p in sorted(path.iterdir()) if p.suffix in DESCRIPTOR_SUFFIXES]


def cmd_validate(args: argparse.Namespace) -> int:
    problems: list[Problem] = []
    for arg in args.paths:
        files = _expand(arg)
        if not files:  # checking nothing must not read as "all valid"
            message = "no descriptor (*.yaml, *.yml) in this folder"
            problems.append(Problem(arg, 1, 1, "", message, "file"))
        for file in files:
            problems.extend(_problems_of(file))
    if args.json:
        print(_json([dataclasses.asdict(p) for p in problems], indent=2))
    else:
        for problem in problems:
            print(problem)
    return EXIT_PROBLEM if problems else EXIT_OK


# -- replay --------------------------------------------------------------------------------------


class ReplayPrinter:
    """What a client would show: for humans, or as one JSON event a line."""

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self.out = out
        self.as_json = as_json
        self.style = Style(out)
        self.at_line_start = True
        self.reasoning_open = False  # a reasoning run is being written (its marker shown)

    def _emit(self, event: dict[str, Any]) -> None:
        self.out.write(_json(event) + "\n")

    def _line(self, text: str) -> None:
        if not self.at_line_start:
            self.out.write("\n")
        self.out.write(text + "\n")
        self.at_line_start = True
        self.reasoning_open = False

    def reasoning(self, text: str, chunk: int | None) -> None:
        """Reasoning as it streams: one marker a run, its text dim, never display text."""
        if self.as_json:
            self._emit({"event": "reasoning", "text": text, "chunk": chunk})
            return
        if not self.reasoning_open:
            self.out.write(
                ("" if self.at_line_start else "\n") + self.style.marker("reasoning", "dim") + " "
            )
            self.reasoning_open = True
        self.out.write(self.style.paint(text, "dim"))
        self.at_line_start = text.endswith("\n")

    def incomplete(self, event: CallIncomplete, chunk: int | None) -> None:
        """A call that will never be runnable, and why (``buf.incomplete_calls()``)."""
        if self.as_json:
            fields = {"name": event.name, "id": event.id, "reason": event.reason}
            self._emit({"event": "incomplete", **fields, "raw": event.raw, "chunk": chunk})
            return
        s = self.style
        detail = s.paint(f"{s.dot} raw {_json(event.raw)} {s.dot} {_where(chunk)}", "dim")
        name = s.paint(event.name or "a call without a name", "bold")
        self._line(
            f"{s.marker('incomplete', 'warn')} {name} will never run "
            f"({event.reason}) id={event.id} {detail}"
        )

    def header(self, strategy: Any, source: str) -> None:
        if self.as_json:
            self._emit({"event": "format", "format": strategy.name, "title": strategy.title})
            return
        s = self.style
        title = s.paint(f"{s.dot} {strategy.title}", "dim")
        self._line(
            f"{s.marker('format')} {s.paint(strategy.name, 'bold')} {title}"
            f" {s.paint(f'{s.dot} {source}', 'dim')}"
        )

    def text(self, text: str) -> None:
        if self.as_json:
            self._emit({"event": "text", "text": text})
            return
        if self.reasoning_open:  # the reply's text starts on a line of its own
            self._line("")
        self.out.write(text)
        self.at_line_start = text.endswith("\n")

    def call(self, call: ExtractedCall, chunk: int | None) -> None:
        if self.as_json:
            self._emit(
                {
                    "event": "call",
                    "name": call.name,
                    "arguments": call.arguments,
                    "id": call.id,
                    "chunk": chunk,
                }
            )
            return
        s = self.style
        self._line(
            f"{s.marker('call', 'call')} {s.paint(call.name, 'bold')} "
            f"{_json(call.arguments)} id={call.id} {s.paint(f'{s.dot} {_where(chunk)}', 'dim')}"
        )

    def held(self, tool: str | None, chunk: int | None) -> None:
        if self.as_json:
            self._emit({"event": "held", "tool": tool, "chunk": chunk})
            return
        s = self.style
        what = f"a call of {tool} is forming" if tool else "a call may be forming"
        detail = s.paint(f"{what}, text held {s.dot} {_where(chunk)}", "dim")
        self._line(f"{s.marker('held')} {detail}")

    def released(self, chunk: int | None) -> None:
        if self.as_json:
            self._emit({"event": "released", "chunk": chunk})
            return
        s = self.style
        self._line(f"{s.marker('released')} {s.paint(f'{s.dot} {_where(chunk)}', 'dim')}")

    def ran(self, record: ToolCallRecord, chunk: int | None) -> None:
        if self.as_json:
            self._emit(
                {
                    "event": "ran",
                    "name": record.name,
                    "arguments": record.arguments,
                    "id": record.tool_call_id,
                    "result": record.result,
                    "error": record.error,
                    "chunk": chunk,
                }
            )
            return
        s = self.style
        name = s.paint(record.name, "bold")
        where = s.paint(f"{s.dot} {_where(chunk)}", "dim")
        if record.error is not None:
            self._line(f"{s.marker('failed', 'warn')} {name} {record.error} {where}")
            return
        call_id = "" if record.tool_call_id is None else f" id={record.tool_call_id}"
        self._line(f"{s.marker('ran', 'ran')} {name} -> {_json(record.result)}{call_id} {where}")

    def history(self, messages: list[dict[str, Any]], chunk: int | None) -> None:
        if self.as_json:
            self._emit({"event": "history", "messages": messages, "chunk": chunk})
            return
        s = self.style
        self._line(f"{s.marker('history')} {s.paint(f'{s.dot} {_where(chunk)}', 'dim')}")
        self._line(_json(messages, indent=2))

    def retry(self, prompt: str, chunk: int | None) -> None:
        if self.as_json:
            self._emit({"event": "retry", "prompt": prompt, "chunk": chunk})
            return
        self._line(f"{self.style.marker('retry', 'warn')} {prompt}")

    def done(self, chunk: int) -> None:
        if self.as_json:
            self._emit({"event": "done", "chunk": chunk})
            return
        s = self.style
        self._line(f"{s.marker('done', 'dim')} {s.paint(f'chunk {chunk}', 'dim')}")

    def message(self, buf: LLMStreamBuffer, unknown: Counter[str]) -> None:
        if self.as_json:
            self._emit(
                {
                    "event": "message",
                    "message": buf.as_dict(),
                    "stop_reason": buf.stop_reason,
                    "usage": buf.usage,
                    "finish_reason": buf.finish_reason,
                    "token_usage": _counts(buf),
                    "error": buf.error,
                    "format": buf.format,
                    "unknown": dict(unknown),
                }
            )
            return
        s = self.style
        self._line(f"{s.marker('message')} {buf.format}")
        self._line(_json(buf.as_dict(), indent=2))
        self._line(f"{s.marker('stop_reason')} {_json(buf.stop_reason)}")
        self._line(f"{s.marker('usage')} {_json(buf.usage)}")
        self._line(f"{s.marker('finish_reason')} {_json(buf.finish_reason)}")
        self._line(f"{s.marker('token_usage')} {_json(_counts(buf))}")
        error = buf.error
        marker = s.marker("error", "warn") if error is not None else s.marker("error")
        self._line(f"{marker} {_json(error)}")
        total = sum(unknown.values())
        detail = ", ".join(
            f"{name}×{n}" if s.open == "⟦" else f"{name} x{n}"
            for name, n in sorted(unknown.items())
        )
        self._line(
            f"{s.marker('unknown')} {total} event(s) skipped" + (f" ({detail})" if detail else "")
        )

    def skipped(self, entry: Skipped) -> None:
        """What the buffer could not place (``buf.skipped()``), one line each."""
        if self.as_json:
            where = {"chunk": entry.index, "name": entry.event}
            self._emit({"event": "skipped", **where, "reason": entry.reason})
            return
        s = self.style
        event = "" if entry.event is None else f" {entry.event}"
        shown = s.paint(f"{s.dot} chunk {entry.index}{event}", "dim")
        self._line(f"{s.marker('skipped', 'warn')} {entry.reason} {shown}")


def _where(chunk: int | None) -> str:
    return "at close" if chunk is None else f"chunk {chunk}"


class CallTracker:
    """The calls not yet shown: ``buf.calls()`` is recomputed, so compare by value, counting
    duplicates (two identical calls without ids are two calls)."""

    def __init__(self) -> None:
        self.shown: Counter[tuple[Any, str, Any]] = Counter()

    def new(self, calls: list[ExtractedCall]) -> list[ExtractedCall]:
        seen: Counter[tuple[Any, str, Any]] = Counter()
        fresh = []
        for call in calls:
            key = (call.name, _json(call.arguments), call.id)
            seen[key] += 1
            if seen[key] > self.shown[key]:
                self.shown[key] += 1
                fresh.append(call)
        return fresh


class EchoDriver(BaseDriver):
    """The replay's driver: it owns the tools named with ``--tools``; each returns its
    arguments as its result."""

    def __init__(self, names: frozenset[str], strategies: list[Any] | None) -> None:
        super().__init__(strategies=strategies)
        self.tools = [Tool(name, f"Echoes its arguments ({name})") for name in sorted(names)]

    def list_tools(self) -> list[Tool]:
        return self.tools

    def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        return arguments


class Replay:
    """The client loop over one recorded stream: after each chunk (and after ``close()``) a
    round, in which the driver (with ``--tools``) processes the buffer, and then what the
    client would show is printed."""

    def __init__(
        self, buf: LLMStreamBuffer, driver: BaseDriver | None, printer: ReplayPrinter, source: str
    ) -> None:
        self.buf = buf
        self.driver = driver
        self.printer = printer
        self.source = source
        self.tracker = CallTracker()
        self.announced = self.finished = self.pending = False
        self.held_name: str | None = None

    def round(self, chunk: int | None) -> None:
        buf, printer = self.buf, self.printer
        if not self.announced and buf.strategy is not None:
            printer.header(buf.strategy, self.source)
            self.announced = True
        response = self.driver.process_llm_response(buf) if self.driver else None
        if response is not None:
            self._pending(response, chunk)
        events = buf.events()
        for event in events:
            if isinstance(event, ReasoningDelta):
                printer.reasoning(event.text, chunk)
        text = buf.text()
        if text:
            printer.text(text)
        for call in self.tracker.new(buf.calls()):
            printer.call(call, chunk)
        for event in events:
            if isinstance(event, CallIncomplete):
                printer.incomplete(event, chunk)
        if response is not None:
            self._ran(response, chunk)
        if not self.finished and chunk is not None and buf.is_finished():
            self.finished = True
            printer.done(chunk)
        sys.stdout.flush()

    def _pending(self, response: DriverResponse, chunk: int | None) -> None:
        """``held`` when a call of the driver's starts forming, and again once its name is
        known; ``released`` when it stops."""
        if response.call_pending:
            name = (self.buf.forming() or self.buf.text_forming()).tool_name
            if not self.pending or (name is not None and name != self.held_name):
                self.printer.held(name, chunk)
                self.held_name = name
        elif self.pending:
            self.printer.released(chunk)
            self.held_name = None
        self.pending = response.call_pending

    def _ran(self, response: DriverResponse, chunk: int | None) -> None:
        for record in response.executed_calls or []:
            self.printer.ran(record, chunk)
        if response.messages:
            self.printer.history(response.messages, chunk)
        if response.retry_prompt:
            self.printer.retry(response.retry_prompt, chunk)


def cmd_replay(args: argparse.Namespace) -> int:
    strategies = [_load_strategy(args.format)] if args.format else None
    tools = _tool_names(args.tools)
    events = read_stream(args.stream)
    source = label(args.stream)  # `-` is named <stdin>
    if not events:
        raise CLIError(f"{source}: no events (an empty stream)")
    driver = None if tools is None else EchoDriver(tools, strategies)
    buf = (
        driver.new_stream_buffer(events=True)
        if driver
        else LLMStreamBuffer(strategies=strategies, events=True)
    )
    replay = Replay(buf, driver, ReplayPrinter(sys.stdout, args.json), source)
    for index, (number, event) in enumerate(events):
        try:
            buf.add(event)
        except ChunkError as exc:
            raise CLIError(f"{source}:{number}: {exc.reason}") from None
        replay.round(index)
    try:
        buf.close()
    except UnknownFormatError as exc:
        raise CLIError(f"{source}: {exc}") from None
    replay.round(None)
    replay.printer.message(buf, Counter(getattr(buf, "unknown_events", None) or {}))
    for entry in buf.skipped():
        replay.printer.skipped(entry)
    return EXIT_OK


def _tool_names(spec: str | None) -> frozenset[str] | None:
    if spec is None:
        return None
    return frozenset(name.strip() for name in spec.split(",") if name.strip())


# -- new -----------------------------------------------------------------------------------------

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")

SKELETON = """\
# yaml-language-server: $schema=__SCHEMA__
#
# __NAME__: a streaming wire format, declared in YAML (no Python). Fill in the TODOs, drop
# recorded streams into tests/golden/__NAME__/ (first.jsonl is a sample this skeleton reads), then:
#   mcs-formats validate formats/__NAME__.yaml
#   mcs-formats replay tests/golden/__NAME__/first.jsonl --format formats/__NAME__.yaml
#   mcs-formats test . --update   # writes each stream's snapshot: review it; then `test .`
# Worked examples: formats/anthropic_messages.yaml (an event wire: start / delta / stop per
# slot) and formats/openai_chat.yaml (a delta-merge wire: the message is a fold of deltas).

# -- header: `name` equals the file's stem ------------------------------------------------------
name: __NAME__
title: TODO Provider API (streaming)
docs: https://example.com/TODO-the-provider-streaming-documentation
api_version: "TODO"
order: 99  # where `mcs-formats list` shows it, and when the buffer tries it

# -- recognize: does one chunk's envelope belong to this wire? ----------------------------------
# Predicates: {field: P, equals: V}, {field: P, in: [...]}, {field: P, prefix: S},
# {field: P, is: object|list|string|number|boolean|null}, {has: P}, {any: [...]}, {all: [...]},
# {not: {...}}. P is a read path: delta.text, calls[0].id, or {jmespath: EXPR}. Be specific: the
# buffer takes the first format that recognises a chunk.
recognize:
  chunk:
    field: type
    in: [__NAME__.delta, __NAME__.call_delta, __NAME__.done]  # TODO: only this wire's types
  # message: {all: [{field: object, equals: TODO}, {has: content}]}  # a whole stream=false reply

# -- finish_reasons, token_usage: how the turn ended and what it cost, in every wire's words ---
# The raw stop reasons (buf.stop_reason) under stop, length, tool_calls, content_filter, error,
# other; anything unlisted reads as "other". `length` also cuts what is still open at the DONE.
finish_reasons:
  stop: [end_turn]  # TODO: each value the provider documents, the page cited in a comment
  length: [max_tokens]
  tool_calls: [tool_use]
# The usage object (buf.usage) as engine.Usage: a read path per count, or {sum: [paths]} where
# the wire counts parts apart (the input includes cached tokens, the output reasoning tokens).
token_usage:
  input_tokens: input_tokens
  output_tokens: output_tokens

# -- events: what each event does to the message under assembly ---------------------------------
# __OPERATIONS__
# A target such as "content[index].text" addresses the item of a slotted list by the SLOT the
# event carries; `from` is a read path into the event.
events:
  discriminator: type
  on:
    __NAME__.delta:
      - append: {at: content, from: delta}  # display text: the event's `delta` string
    __NAME__.call_delta:  # TODO: the event that streams a call (or a fold, see openai_chat)
      - set_once: {at: "tool_calls[index].id", from: id}
      - set_once: {at: "tool_calls[index].function.name", from: name}
      - args: {at: "tool_calls[index].function.arguments", from: arguments}
    __NAME__.done:
      - stop_reason: stop_reason
      - usage: usage
      - finish  # the wire's DONE: buf.is_finished() becomes true
    # error:
    #   - error: {from: error}  # keeps the payload in buf.error and ends the stream
  ignore: [ping]  # known events that carry nothing (others are skipped and counted)
  # What may follow the DONE and is taken (a usage event: [usage_event]); anything else after
  # it is listed in buf.skipped() as after the stream's end. []: nothing may follow.
  after_done: []

# -- message: the assembled message before the first event --------------------------------------
message: {role: assistant}

# -- calls: where the tool calls sit in the assembled message -----------------------------------
calls:
  at: "tool_calls[*]"
  name: function.name
  id: id
  args: function.arguments
  args_form: string  # string: JSON text streamed in pieces; object: a whole object

# -- text: where the display text sits ----------------------------------------------------------
text:
  at: content

leaks_into_text: false  # does a text-only reply still carry the call envelope?

# -- results: the history a driver returns once it ran the calls --------------------------------
# The assistant turn as streamed ($echo), then one message per call with its result (mode
# one_message: all results in one). Constructs: $path, $result, $each, $if (formats/README.md).
results:
  mode: per_call
  assistant:
    $echo: message
    list: tool_calls
    calls: {id: id, name: function.name}
  result:
    role: tool  # TODO: the provider's tool-result message
    tool_call_id: {$path: record.tool_call_id}
    content: {$result: record}

# -- declarations: the request fragment declaring tools (`fmt.tool_declarations(tools)`) --------
declarations:
  tools:
    $each: tools
    as: tool
    $emit:  # TODO: the provider's shape of one tool declaration
      name: {$path: tool.name}
      description: {$if: tool.description, then: {$path: tool.description}}
      parameters: {$path: tool.parameters}
"""

GOLDEN_README = """\
# Golden streams for `__NAME__`

Drop recorded streams here, one scenario a file: `<source>_<scenario>.jsonl` (for example
`hand_parallel_tool_calls.jsonl`, `sdk_text.jsonl`).

- JSON Lines: one decoded event a line, exactly as the provider sent it. Where the event's name
  travels only outside the payload (an SSE `event:` line, an AWS event-stream header), put it in
  the object as `"_event"`.
- Cover at least: plain text, one tool call, parallel tool calls, a stream cut by a length
  limit, and the provider's error event.
- Say where each capture comes from (and its licence) beside it, in this folder.

Check a stream as a client would see it:

    mcs-formats replay tests/golden/__NAME__/SCENARIO.jsonl --format formats/__NAME__.yaml

Then, from the project folder, write each stream's snapshot (`SCENARIO.expected.json`), review
it, and test: validation, a replay of every stream, re-splits of its fragments, the snapshots:

    mcs-formats test . --update
    mcs-formats test .
"""


def _operations() -> str:
    """The operation names, from the one table, for the skeleton's comment."""
    from ..compile.operations import OPERATIONS

    return ", ".join(OPERATIONS)


def _skeleton(name: str) -> str:
    operations = textwrap.fill(
        f"Operations: {_operations()}.", width=96, initial_indent="# ", subsequent_indent="# "
    )
    text = SKELETON.replace("# __OPERATIONS__", operations).replace("__NAME__", name)
    return text.replace("__SCHEMA__", SCHEMA_REF)


def cmd_new(args: argparse.Namespace) -> int:
    name = args.name
    if not NAME_PATTERN.match(name):
        raise CLIError(
            f"invalid format name {name!r}: use lowercase letters, digits and underscores, "
            "starting with a letter (e.g. my_provider)",
            EXIT_USAGE,
        )
    root = Path(args.dir)
    descriptor = root / "formats" / f"{name}.yaml"
    golden = root / "tests" / "golden" / name
    if (data_dir("formats") / f"{name}.yaml").exists():
        raise CLIError(f"format {name!r} already exists (a built-in format)", EXIT_USAGE)
    for existing in (descriptor, golden):
        if existing.exists():
            raise CLIError(f"format {name!r} already exists: {existing}", EXIT_USAGE)
    inferred = None
    if args.source is not None:  # a draft inferred from a recorded stream (engine/cli/infer.py)
        from . import infer_command as cli_infer

        inferred = cli_infer.infer_from(name, args.source)
    descriptor.parent.mkdir(parents=True, exist_ok=True)
    golden.mkdir(parents=True)
    descriptor.write_text(
        _skeleton(name) if inferred is None else inferred.text,
        encoding="utf-8",
    )
    (golden / "README.md").write_text(GOLDEN_README.replace("__NAME__", name), encoding="utf-8")
    print(f"created {descriptor}")
    print(f"created {write_schema(root)} (the header's $schema)")
    print(f"created {golden / 'README.md'}")
    if inferred is not None:  # the recorded stream is the first golden, not a sample
        return cli_infer.finish(inferred, descriptor, golden)
    print(f"created {write_sample(golden, name)}")
    print(f"next: fill in the TODOs, then `mcs-formats validate {descriptor}`")
    return EXIT_OK


# -- entry point ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcs-formats",
        description="Streaming tool-call wire formats of LLM providers, from YAML descriptors.",
    )
    parser.add_argument("--version", action="version", version=f"mcs-formats {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="the built-in formats, one a line")
    p.add_argument("--json", action="store_true", help="a JSON list of {name, title, docs}")
    p.set_defaults(run=cmd_list)

    from .serve_command import add_serve_command  # the fake provider's command, in its own module

    add_serve_command(sub)

    p = sub.add_parser("show", help="a descriptor as YAML, `extends` resolved")
    p.add_argument("name", metavar="NAME", help="a built-in format name, or a descriptor path")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("validate", help="check descriptors; silent when all are valid")
    p.add_argument("paths", metavar="PATH", nargs="+", help="descriptor files (or folders)")
    p.add_argument("--json", action="store_true", help="a JSON list of problems")
    p.set_defaults(run=cmd_validate)

    p = sub.add_parser("replay", help="play a recorded stream as a client sees it")
    p.add_argument(
        "stream",
        metavar="STREAM",
        help="JSON Lines (one decoded event a line) or a raw SSE capture; - for stdin",
    )
    p.add_argument(
        "--format",
        metavar="NAME|PATH",
        help="only this format (default: resolve among all built-ins)",
    )
    p.add_argument(
        "--tools",
        metavar="NAME,...",
        help="run the stream through a driver owning these tools, each echoing its arguments "
        "(result = arguments): shows held text, the calls it runs and the history it returns",
    )
    p.add_argument("--json", action="store_true", help="one JSON event a line")
    p.set_defaults(run=cmd_replay)

    p = sub.add_parser("new", help="scaffold formats/NAME.yaml and tests/golden/NAME/")
    p.add_argument("name", metavar="NAME", help="lowercase letters, digits, underscores")
    p.add_argument(
        "--dir",
        default=".",
        metavar="DIR",
        help="the project folder to scaffold into (default: the current one)",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="STREAM",
        help="infer a draft descriptor from this recorded stream (JSON Lines), each guess "
        "marked `# REVIEW:`, and copy the stream in as the first golden",
    )
    p.set_defaults(run=cmd_new)
    register_project_commands(sub)
    register_examples(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a narrow terminal encoding never crashes a replay
            stream.reconfigure(errors="backslashreplace")
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # a full disk shows here, not as a traceback at exit
        return code
    except CLIError as exc:
        _flush_before_error()
        print(f"mcs-formats {args.command}: {exc}", file=sys.stderr)
        return exc.code
    except DescriptorError as exc:  # a built-in descriptor that does not load
        _flush_before_error()
        print(f"mcs-formats {args.command}: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    except BrokenPipeError:  # `mcs-formats replay ... | head`
        _discard_stdout()
        sys.stderr.close()
        return EXIT_PROBLEM
    except OSError as exc:  # the output cannot be written: `mcs-formats list > /dev/full`
        _discard_stdout()
        what = "cannot write the output" if exc.filename is None else exc.filename
        print(f"mcs-formats {args.command}: {what}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_PROBLEM


def _flush_before_error() -> None:
    """What was printed goes out before the error line; if it cannot, the error still does."""
    try:
        sys.stdout.flush()
    except OSError:
        _discard_stdout()


def _discard_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's flush at exit, which would
    meet the same failure, prints no second report."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file behind stdout (a test's capture)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
