"""Per-chunk cost of the buffer loop, this checkout against an older commit, in one run.

The machine is noisy, so neither figure alone means much: the two engines are measured in
turn (old, new, old, new, ...) by the same ``tools/bench.py`` (this checkout's), each run in
its own process, and each row reports the median of its runs and the median of the paired
ratios new/old. The old commit is checked out beside this one (a temporary ``git worktree``)
and imported through ``PYTHONPATH``, so the bench script and its streams are the same for
both.

    python tools/bench_compare.py OLD_COMMIT [--runs 5] [--sizes 1000,10000]
                                  [--flavours buffer] [--bar 1.15]

Exit 1 when a row's median ratio is over ``--bar`` (a regression to look at, not a test: wall
times are never asserted in tests).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_COPY = "_bench_of_the_newer_checkout.py"


def run_bench(engine_root: Path, sizes: str, flavours: str) -> dict[tuple[str, str], float]:
    """One run of this checkout's bench against the engine at ``engine_root``: us/chunk per
    (wire, stream) row. The bench imports the engine of the checkout it sits in, so the old
    checkout gets a copy of this one's bench script (see :func:`main`)."""
    script = (
        engine_root / "tools" / BENCH_COPY if engine_root != ROOT else ROOT / "tools" / "bench.py"
    )
    env = dict(os.environ, PYTHONPATH=str(engine_root))
    out = subprocess.run(
        [
            sys.executable,
            str(script),
            "--sizes",
            sizes,
            "--repeat",
            "1",
            "--flavours",
            flavours,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=engine_root,
    ).stdout
    rows = {}
    for line in out.splitlines():
        if line.startswith(("wire ", "worst", " ")) or not line.strip():
            continue
        rows_of = _us_per_chunk(line)
        if rows_of is not None:
            rows[rows_of[0]] = rows_of[1]
    return rows


def _us_per_chunk(line: str) -> tuple[tuple[str, str], float] | None:
    """A row of bench.py's table: wire, stream, a ratio per size (``1.10x``), growth,
    us/chunk, and on ``+events`` rows the ratio to the buffer row (``1.40x``)."""
    tokens = line.split()
    ratios = [i for i, t in enumerate(tokens[2:], 2) if t.endswith("x")]
    if len(tokens) < 5 or not ratios or ratios[0] != 2:
        return None
    last = 2
    while last + 1 < len(tokens) and tokens[last + 1].endswith("x"):
        last += 1
    try:
        return (tokens[0], tokens[1]), float(tokens[last + 2])
    except (IndexError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the commit to compare against")
    parser.add_argument("--runs", type=int, default=5, help="paired runs (default 5)")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--flavours", default="buffer")
    parser.add_argument("--bar", type=float, default=1.15, help="flag rows slower than this")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old_root = Path(tmp) / "old"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old_root), args.old],
            check=True,
        )
        shutil.copy(ROOT / "tools" / "bench.py", old_root / "tools" / BENCH_COPY)
        try:
            old_runs, new_runs = [], []
            for i in range(args.runs):
                print(f"run {i + 1}/{args.runs}", file=sys.stderr, flush=True)
                old_runs.append(run_bench(old_root, args.sizes, args.flavours))
                new_runs.append(run_bench(ROOT, args.sizes, args.flavours))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_root)],
                check=False,
            )
    worst = 0.0
    print(f"{'wire':20} {'stream':16} {'old us':>8} {'new us':>8} {'new/old':>8}")
    for key in sorted(set(old_runs[0]) & set(new_runs[0])):
        old = statistics.median(r[key] for r in old_runs)
        new = statistics.median(r[key] for r in new_runs)
        ratio = statistics.median(n[key] / o[key] for o, n in zip(old_runs, new_runs, strict=True))
        worst = max(worst, ratio)
        flag = "  over the bar" if ratio > args.bar else ""
        print(f"{key[0]:20} {key[1]:16} {old:8.2f} {new:8.2f} {ratio:7.2f}x{flag}")
    print(f"worst new/old: {worst:.2f}x (median of {args.runs} paired runs; bar {args.bar}x)")
    return 1 if worst > args.bar else 0


if __name__ == "__main__":
    sys.exit(main())
