"""Shared test helpers: golden fixture discovery and replay."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import strategies as st

# Bytecode is written (to the git-ignored __pycache__/) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE, set on the project's machines): the ~120 child processes this
# suite starts (``python -m engine``, ``serve``, a pytest, mypy) each import the engine, and
# without it each compiles the engine's sources anew (~0.25 s CPU a child); with it the first
# import compiles them, here, and a later run's collection reads the test modules' rewritten
# bytecode instead of rewriting them again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import engine  # noqa: E402  (after the line above, so that its bytecode is written)

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
# A child ``python -m engine``: this checkout's engine, UTF-8 pipes, no colour in what it prints.
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8", NO_COLOR="1")


def run_engine(
    *args: str, cwd: Path = ROOT, stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """One invocation of the real entry point, ``python -m engine``, in a child process: text
    out, or bytes both ways when ``stdin`` is given (a binary capture goes in as it is)."""
    text = stdin is None
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        input=stdin,
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=text,
        encoding="utf-8" if text else None,
        timeout=timeout,
    )


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``engine.cli.main`` (what ``python -m engine`` runs) in this process, in ``cwd``: text
    out, as :func:`run_engine` gives it, written to UTF-8 streams as a child's pipes are
    (``PYTHONIOENCODING``: the replay's markers are ``⟦call⟧``, not ASCII). For tests of what
    a command does; the entry point itself (a child process, its exit code, its pipes) is
    tested through :func:`run_engine` (tests/test_cli.py). A child costs an interpreter's
    start and the engine's import each."""
    from engine.cli import main

    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: a usage error (2), or --help / --version (0)
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["mcs-formats", *args], code, _text(out), _text(err))


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")


def golden_streams(formats: list[str] | None = None) -> list[Path]:
    """Every golden stream of every built-in format (a new fixture needs no test code)."""
    names = formats or engine.list_formats()
    return sorted(p for name in names for p in (GOLDEN / name).glob("*.jsonl"))


def first_plain_stream(wire: str) -> Path:
    """The first golden of ``wire`` that is an ordinary stream (three events or more, not
    opened by a provider's error): what tests that splice into a stream start from, so that
    a new golden sorted first (a lone exception frame) does not change what they test."""
    for path in golden_streams([wire]):
        events = read_stream(path)
        if len(events) >= 3 and replay(events[:1], wire, close=False).error is None:
            return path
    raise LookupError(f"no ordinary golden stream of {wire}")


def toy_wires() -> list[Path]:
    """The toy wires of ``tests/golden/``: each a folder holding its own descriptor
    (``NAME/NAME.yaml``) beside its streams, tested as the built-ins are (a new toy needs no
    test code)."""
    return sorted(p for p in GOLDEN.iterdir() if (p / f"{p.name}.yaml").is_file())


def toy_streams() -> list[Path]:
    return sorted(p for folder in toy_wires() for p in folder.glob("*.jsonl"))


def format_of(path: Path) -> str:
    """What ``engine.load_format`` takes for a golden stream's wire: a built-in's name, or the
    path of a toy's own descriptor."""
    own = path.parent / f"{path.parent.name}.yaml"
    return str(own) if own.is_file() else path.parent.name


@functools.cache
def compiled(fmt: str) -> engine.ExtractionStrategy:
    """``engine.load_format(fmt)``, compiled once a session: the registry keeps a built-in's
    compile already, a descriptor's path is compiled (its schema checked, ~0.15 s) on every
    call. A strategy holds no stream's state (every buffer of a built-in shares one)."""
    return engine.load_format(fmt)


def stream_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def read_stream(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def replay(
    events: list, fmt: str | None = None, choice: int = 0, close: bool = True
) -> engine.LLMStreamBuffer:
    """A buffer fed ``events`` (read as ``fmt``, else the wire found), then closed unless
    ``close`` is false (what a stream's own end, without close(), leaves)."""
    strategies = [compiled(fmt)] if fmt else None
    buf = engine.LLMStreamBuffer(strategies=strategies, choice=choice)
    for event in events:
        buf.add(event)
    if close:
        buf.close()
    return buf


# How many examples each property draws. The default run (the README's command, CI) draws a
# quarter of what a property was written with: each run draws new examples (no fixed seed),
# so the runs of every change add up to far more than one full count; an example that once
# failed is replayed first whatever the count (hypothesis' database, .hypothesis/), and the
# one split-dependence a property found (commit 633e87c) has its own test. MCS_EXAMPLES=full
# draws the written count: before a release, or after changing what a property covers.
FULL_EXAMPLES = os.environ.get("MCS_EXAMPLES") == "full"


def examples(written: int) -> int:
    """The ``max_examples`` of a property written with ``written``: all of them in a full run,
    else a quarter (at least 25, or all when it was written with fewer)."""
    return written if FULL_EXAMPLES else min(written, max(25, written // 4))


@functools.cache
def _cuts_inside(n: int) -> st.SearchStrategy[list[int]]:
    """Up to four points inside a fragment of ``n`` characters: one strategy per length,
    built once (a strategy is immutable; building one per fragment cost most of a drawn
    re-split, far more than the draws it makes)."""
    return st.lists(st.integers(1, max(1, n - 1)), max_size=4)


def drawn_cuts(data: st.DataObject) -> Callable[[int], list[int]]:
    """Cuts for ``resplit``: up to four points inside a fragment of ``n`` characters, drawn
    by hypothesis (so a failing split shrinks and is printed)."""

    def cuts(n: int) -> list[int]:
        return data.draw(_cuts_inside(n))

    return cuts


def outcome(buf: engine.LLMStreamBuffer) -> dict:
    """Everything a stream produces that a user can observe, as plain data."""
    return {
        "format": buf.format,
        "finished": buf.is_finished(),
        "message": buf.as_dict(),
        "calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in buf.calls()],
        "text": buf.get_content(),
        "stop_reason": buf.stop_reason,
        "usage": buf.usage,
        "error": buf.error,
        "unknown_events": dict(sorted(buf.unknown_events.items())),
    }


def drive(driver: engine.BaseDriver, events: list[dict]) -> list[engine.DriverResponse]:
    """A client loop over ``driver.new_stream_buffer()``: one round per chunk and one after
    close(); every response."""
    buf = driver.new_stream_buffer()
    out = []
    for event in events:
        buf.add(event)
        out.append(driver.process_llm_response(buf))
    buf.close()
    out.append(driver.process_llm_response(buf))
    return out


class Recorder(engine.BaseDriver):
    """A driver owning ``names``; it records every call it runs."""

    def __init__(self, *names: str) -> None:
        super().__init__()
        self.names = names
        self.ran: list[tuple[str, dict]] = []

    def list_tools(self):
        return [
            engine.Tool(name=n, description=n, parameters={"type": "object"}) for n in self.names
        ]

    def execute_tool(self, tool_name, arguments):
        self.ran.append((tool_name, arguments))
        return "ok"


@pytest.fixture
def json_snapshot(snapshot):
    from syrupy.extensions.json import JSONSnapshotExtension

    return snapshot.use_extension(JSONSnapshotExtension)
