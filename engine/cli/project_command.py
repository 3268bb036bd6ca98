"""The commands for a format author's own project folder: ``test`` and ``schema``, and the
sample stream that ``new`` scaffolds. Part of the command line (``engine/cli/commands.py`` registers
them); the checks themselves are ``engine/cli/project.py``.

- ``test DIR... [--update] [--seed N]``: every descriptor in ``DIR/formats/`` validated, every
  stream in ``DIR/tests/golden/NAME/`` (``*.jsonl``, ``*.sse``, ``*.eventstream``) replayed,
  checked as the repository's suite checks a built-in's (no built-in claims its chunks, no
  call rebuilt), re-split and compared with its ``STREAM.expected.json`` (``--update`` writes
  them, and refreshes the project's copy of the schema). The first line gives the seed of the
  random re-splits; one located line a failure (``FILE:LINE: chunk N: /pointer: message``);
  a last line counts. Exit 0 when all pass, 1 otherwise.
- ``schema [--uri]``: the installed descriptor schema's path (or its ``file:`` URI). The
  scaffold's ``# yaml-language-server: $schema=...`` header names the project's own copy
  instead (``project.write_schema``), which works wherever the folder goes.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from . import project

EXIT_OK, EXIT_PROBLEM = 0, 1

SAMPLE_NAME = "first"

# What the skeleton's rules read, so that `new` is followed at once by a replay and a test
# that show text, a call and DONE; replace it with a recorded stream of the real wire.
SAMPLE = """\
{"type": "__NAME__.delta", "delta": "Let me check the weather. "}
{"type": "__NAME__.call_delta", "index": 0, "id": "call_1", "name": "get_weather", \
"arguments": "{\\"city\\": "}
{"type": "__NAME__.call_delta", "index": 0, "arguments": "\\"Oslo\\"}"}
{"type": "__NAME__.done", "stop_reason": "tool_use", "usage": {"input_tokens": 12, \
"output_tokens": 9}}
"""


def schema_uri() -> str:
    """The installed schema as a ``file:`` URI (``schema --uri``): a value editors take as it
    is, for a header that must name this one install."""
    from ..language.validate import schema_path

    return schema_path().resolve().as_uri()


def write_sample(golden: Path, name: str) -> Path:
    """``new``'s sample stream, ``GOLDEN/first.jsonl``, in the skeleton's event names."""
    path = golden / f"{SAMPLE_NAME}{project.STREAM_SUFFIX}"
    path.write_text(SAMPLE.replace("__NAME__", name), encoding="utf-8")
    return path


def cmd_test(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"seed {seed} (the random re-splits are drawn from it: --seed {seed} makes them again)")
    report = project.Report(seed)
    for folder in args.dirs:
        hint = f"`mcs-formats test {folder} --update`"
        project.check_project(folder, seed, update=args.update, report=report, hint=hint)
    for finding in report.findings:
        print(finding)
    for written in report.written:
        print(f"wrote {written} (review it)")
    print(_summary(report))
    return EXIT_OK if report.ok else EXIT_PROBLEM


def _summary(report: project.Report) -> str:
    checked = f"{_count(report.formats, 'format')}, {_count(report.streams, 'stream')}"
    if report.ok:
        return f"{checked}: all pass"
    failed = _count(len(report.findings), "failure")
    return f"{checked}: {failed} ({report.failed_streams} of the streams)"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def cmd_schema(args: argparse.Namespace) -> int:
    from ..language.validate import schema_path

    print(schema_uri() if args.uri else schema_path().resolve())
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``test`` and ``schema`` to the command's subparsers."""
    p = sub.add_parser(
        "test",
        help="test project folders as `new --dir` lays them out: validate, replay, re-split, "
        "compare with the snapshots",
    )
    p.add_argument(
        "dirs", metavar="DIR", nargs="+", help="project folders (formats/, tests/golden/)"
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="write each stream's STREAM.expected.json instead of comparing it",
    )
    p.add_argument(
        "--seed", type=int, metavar="N", help="the seed of the random re-splits (default: random)"
    )
    p.set_defaults(run=cmd_test)

    p = sub.add_parser("schema", help="the installed descriptor schema's path")
    p.add_argument("--uri", action="store_true", help="as a file: URI, for $schema headers")
    p.set_defaults(run=cmd_schema)
