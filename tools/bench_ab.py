"""Per-chunk cost of the buffer loop, this checkout against an older commit, in one process.

``bench_compare.py`` runs each engine in its own process, in turn; on a machine whose speed
drifts between processes (a shared host: the same old engine measured 1.8 and 2.5 us a chunk
minutes apart) its ratios drift with it. Here both engines are imported into one process (the
old one as the package ``engine_old``, from ``git archive`` of its ``engine/``, ``formats/``
and ``schemas/``), and every row is timed old, new, old, new, ... on the same chunks: each
ratio is a run of the new loop over the mean of the old runs beside it, and a row reports
the median of its ratios (and their spread, so that a noisy row shows itself).

    python tools/bench_ab.py OLD_COMMIT [--pairs 9] [--size 1000] [--only calls] [--bar 1.15]

Works for an old engine whose modules import each other relatively (every commit since the
package layout of engine/ subpackages). Exit 1 when a row's median is over ``--bar`` (a
regression to look at, not a test: wall times are never asserted in tests).
"""

from __future__ import annotations

import argparse
import importlib
import io
import math
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

import bench  # noqa: E402  (this checkout's streams, and its engine, after the path above)

import engine  # noqa: E402

TIMES = 10
"""Passes of a 1000-chunk stream in one timed run (a run of a few ms is a scheduler tick)."""


def old_engine(commit: str, into: Path) -> ModuleType:
    """The engine at ``commit``, imported as ``engine_old`` from a copy under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "engine", "formats", "schemas"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "engine").rename(into / "engine_old")
    sys.path.insert(0, str(into))
    return importlib.import_module("engine_old")


def buffer_loop(mod: ModuleType, wire: str, chunks: list[dict]) -> Callable[[], None]:
    """tools/bench.py's buffer loop on ``mod``'s engine."""
    return bench.buffer_loop(mod.load_format(wire), chunks, mod.LLMStreamBuffer)


def ratios(old: Callable[[], None], new: Callable[[], None], pairs: int) -> list[float]:
    old(), new()  # warm up: what loads once is not per chunk
    out = []
    for _ in range(pairs):
        before, spent, after = (bench._cpu(run, TIMES) for run in (old, new, old))
        out.append(spent / ((before + after) / 2))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the commit to compare against")
    parser.add_argument("--pairs", type=int, default=9, help="old/new pairs a row (default 9)")
    parser.add_argument("--size", type=int, default=1000, help="chunks a stream (default 1000)")
    parser.add_argument("--only", default="", help="rows whose stream kind holds this word")
    parser.add_argument("--bar", type=float, default=1.15, help="flag rows slower than this")
    args = parser.parse_args(argv)
    medians = []
    with tempfile.TemporaryDirectory() as tmp:
        old = old_engine(args.old, Path(tmp))
        print(f"{'wire':20} {'stream':7} {'new/old':>8}  spread")
        for wire, make in bench.GENERATORS.items():
            kinds = [("calls", partial(make, calls=True)), ("text", partial(make, calls=False))]
            kinds += [("whole", bench.STRESS[wire])] if wire in bench.STRESS else []
            for kind, stream in kinds:
                if args.only not in kind:
                    continue
                chunks = bench.shared(stream(args.size))
                got = ratios(
                    buffer_loop(old, wire, chunks), buffer_loop(engine, wire, chunks), args.pairs
                )
                medians.append(statistics.median(got))
                flag = "  over the bar" if medians[-1] > args.bar else ""
                print(
                    f"{wire:20} {kind:7} {medians[-1]:7.2f}x  "
                    f"{min(got):.2f}-{max(got):.2f}{flag}",
                    flush=True,
                )
    geomean = math.exp(statistics.fmean(map(math.log, medians)))
    print(f"geomean {geomean:.3f}x, worst {max(medians):.2f}x (median of {args.pairs} pairs a row)")
    return 1 if max(medians) > args.bar else 0


if __name__ == "__main__":
    sys.exit(main())
