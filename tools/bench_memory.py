"""What a finished buffer keeps in memory, beside the message it assembled, and what a rejected
chunk costs.

A chunk that raises is undone by the journal of what it wrote (engine.model.journal), so a
buffer keeps only its message and the state of its readers, and a rejected chunk costs what it
wrote, however long the stream. This script measures both on tools/bench.py's streams (text
only, and two calls whose arguments stream in ~8-byte fragments), fed to a fresh buffer as a
caller would (each chunk decoded from its JSON text and dropped by the caller):

- ``kept``: the memory still allocated (``tracemalloc``) once the stream is in and closed, on
  a plain buffer and on a buffer with events whose events were read after every chunk;
  ``kept/msg`` divides it by the size of the message's JSON (``as_dict()``, UTF-8);
- ``rejected``: the time one rejected chunk takes (the median of ``--rejects``), after 1,000
  and after 20,000 accepted chunks, and their ratio. The rejected chunk is the stream's next
  chunk, raising once all its rules wrote (the worst case: everything to take back).

    python tools/bench_memory.py [--sizes 1000,10000,100000] [--wires openai_chat]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402  (the stream builders of tools/bench.py)

import engine  # noqa: E402

KINDS = {"text": False, "args": True}


def kept(wire: str, lines: list[str], events: bool) -> tuple[int, int]:
    """Bytes still allocated once the stream is in and closed, and the message's JSON size."""
    strategy = engine.load_format(wire)
    engine.LLMStreamBuffer(strategies=[strategy], events=True).close()  # modules imported
    gc.collect()
    tracemalloc.start()
    try:
        buf = engine.LLMStreamBuffer(strategies=[strategy], events=events)
        for line in lines:
            buf.add(json.loads(line))
            if events:
                buf.events()
        buf.close()
        if events:
            buf.events()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    message = len(json.dumps(buf.as_dict(), ensure_ascii=False).encode())
    return held, message


class Rejected(Exception):
    """What an armed :class:`Rejecting` raises: the chunk's rules all wrote before it."""


class Rejecting:
    """A wire's compiled rules, counting the events they apply; once ``armed``, the next
    event raises after all its rules wrote (the worst case for an undo: everything to take
    back). tests/test_rollback_journal.py rejects its chunks with it too."""

    def __init__(self, program: Any) -> None:
        self.program = program
        self.applied = 0
        self.armed = False

    def apply(self, asm: Any, event: dict, choice: int) -> None:
        self.applied += 1
        self.program.apply(asm, event, choice)
        if self.armed:
            self.armed = False
            raise Rejected("after its rules wrote")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.program, name)


def rejecting(wire: str) -> engine.ExtractionStrategy:
    """A fresh compile of the built-in ``wire`` whose rules are a :class:`Rejecting`."""
    strategy = engine.ExtractionStrategy(engine.load_format(wire).descriptor)
    strategy.program = Rejecting(strategy.program)
    return strategy


def rejected(wire: str, chunks: list[dict], accepted: int, times: int) -> float:
    """Seconds one rejected chunk takes after ``accepted`` chunks (the median of ``times``)."""
    strategy = rejecting(wire)
    program = strategy.program
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    for chunk in chunks[:accepted]:
        buf.add(chunk)
    bad = chunks[accepted]
    spent = []
    for _ in range(times):
        program.armed = True
        start = time.perf_counter()
        with contextlib.suppress(engine.ChunkError):
            buf.add(bad)
        spent.append(time.perf_counter() - start)
    return statistics.median(spent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--wires", default="openai_chat")
    parser.add_argument("--rejects", type=int, default=21)
    args = parser.parse_args(argv)
    print(f"{'wire':<20} {'stream':<6} {'chunks':>7} {'buffer':<7} {'kept KB':>8} {'msg KB':>7}")
    for wire in args.wires.split(","):
        for kind, calls in KINDS.items():
            for n in (int(s) for s in args.sizes.split(",")):
                lines = [json.dumps(chunk) for chunk in bench.GENERATORS[wire](n, calls)]
                for events in (False, True):
                    held, message = kept(wire, lines, events)
                    print(
                        f"{wire:<20} {kind:<6} {n:>7} {'events' if events else 'plain':<7} "
                        f"{held / 1024:>8.0f} {message / 1024:>7.0f}  kept/msg "
                        f"{held / message:.2f}"
                    )
    print()
    print(f"{'wire':<20} {'stream':<6} {'rejected after 1k':>18} {'after 20k':>10} {'ratio':>6}")
    for wire in args.wires.split(","):
        for kind, calls in KINDS.items():
            chunks = [json.loads(json.dumps(c)) for c in bench.GENERATORS[wire](20_100, calls)]
            early = rejected(wire, chunks, 1000, args.rejects)
            late = rejected(wire, chunks, 20_000, args.rejects)
            print(
                f"{wire:<20} {kind:<6} {early * 1e6:>15.1f} us {late * 1e6:>7.1f} us "
                f"{late / early:>6.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
