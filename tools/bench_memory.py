"""What a buffer keeps in memory after a stream, and how much of it is its rollback log.

A chunk that raises is undone by replaying the accepted chunks into a fresh assembly
(engine/stream/buffer.py says why), so the buffer keeps them until ``reset()``. This script
feeds tools/bench.py's text streams to a fresh buffer as the caller would (each chunk built
and dropped by the caller: a dict, or an SSE line ``data: {...}``) and reports, with
``tracemalloc``, the memory still allocated once the stream is in, then the same with the
log emptied: the difference is what the log costs, beside the size of the display text.

    python tools/bench_memory.py [--sizes 1000,10000] [--wires openai_chat,anthropic_messages]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402  (the stream builders of tools/bench.py)

import engine  # noqa: E402


def retained(wire: str, lines: list[str], as_text: bool) -> tuple[int, int]:
    """Bytes allocated after the stream, then after emptying the rollback log."""
    gc.collect()
    tracemalloc.start()
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format(wire)])
    for line in lines:
        buf.add("data: " + line if as_text else json.loads(line))
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0]
    buf._log = []  # what the rollback would replay: the only thing this script takes away
    gc.collect()
    without_log = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return kept, without_log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--wires", default=",".join(bench.GENERATORS))
    args = parser.parse_args(argv)
    print(f"{'wire':<20} {'chunks':>7} {'input':>5} {'kept KB':>8} {'log KB':>7} {'text KB':>7}")
    for wire in args.wires.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            lines = [json.dumps(chunk) for chunk in bench.GENERATORS[wire](n, False)]
            text = engine.LLMStreamBuffer(strategies=[engine.load_format(wire)])
            for line in lines:
                text.add(line)
            chars = len(text.get_content().encode())
            for as_text in (False, True):
                kept, without_log = retained(wire, lines, as_text)
                print(
                    f"{wire:<20} {n:>7} {'text' if as_text else 'dict':>5} {kept / 1024:>8.0f} "
                    f"{(kept - without_log) / 1024:>7.0f} {chars / 1024:>7.0f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
