"""Per-fragment cost of :class:`engine.model.partial.PartialJSON`, flat from 1k to 100k fragments.

The events loop reads ``partial`` after every arguments delta, so the reader runs once per
fragment. It must cost O(fragment): the openai SDK's way (re-parse the whole text so far on
every chunk) is quadratic, and so is keeping a growing string by ``s = s + piece``. For each
kind of argument text and size, the text is cut in fragments of about 8 characters and fed
to a fresh reader; the figure is CPU time per fragment (the best of ``--repeat`` runs, gc off
while timing), beside the buffer's own per-fragment scanner
(:class:`engine.model.jsonscan.ArgsStream`, which only tracks completeness) on the same fragments,
and the ratio of the largest size's per-fragment cost to the smallest's (flat: about 1.0).

Kinds: ``string`` (one long string value, as tools/bench.py streams), ``escaped`` (a long
string written with ``ensure_ascii``: every other character an escape), ``mixed`` (an array
of small objects: numbers, literals, short strings, nested arrays).

    python tools/bench_partial.py [--sizes 1000,10000,100000] [--repeat 3] [--frag 8]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.model.jsonscan import ArgsStream  # noqa: E402
from engine.model.partial import PartialJSON  # noqa: E402


def _string(chars: int) -> str:
    return json.dumps({"q": "x" * chars})


def _escaped(chars: int) -> str:
    return json.dumps({"q": "é\n" * (chars // 8 + 1)}, ensure_ascii=True)


def _mixed(chars: int) -> str:
    items, size, i = [], 2, 0
    while size < chars:
        item = {"id": i, "name": f"item {i}", "price": i * 0.25, "ok": i % 2 == 0, "tags": ["a"]}
        items.append(item)
        size += len(json.dumps(item)) + 2
        i += 1
    return json.dumps({"items": items})


KINDS: dict[str, Callable[[int], str]] = {"string": _string, "escaped": _escaped, "mixed": _mixed}


def _fragments(text: str, frag: int) -> list[str]:
    return [text[i : i + frag] for i in range(0, len(text), frag)]


def _cpu(fn: Callable[[], None]) -> float:
    gc.collect()
    gc.disable()
    start = time.process_time()
    fn()
    spent = time.process_time() - start
    gc.enable()
    return spent


def _best(fn: Callable[[], None], repeat: int) -> float:
    return min(_cpu(fn) for _ in range(repeat))


def measure(kind: str, n: int, frag: int, repeat: int) -> tuple[float, float]:
    """Seconds per fragment: (PartialJSON.feed, ArgsStream.feed), best of ``repeat``."""
    text = KINDS[kind](n * frag)
    pieces = _fragments(text, frag)

    def partial() -> None:
        reader = PartialJSON()
        feed = reader.feed
        for piece in pieces:
            feed(piece)
        assert reader.complete, reader.error

    def scanner() -> None:
        args = ArgsStream("string")
        feed = args.feed
        for piece in pieces:
            feed(piece)

    partial()  # warm up (and check the result once, outside the timing)
    reader = PartialJSON()
    for piece in pieces:
        reader.feed(piece)
    assert reader.value == json.loads(text)
    return _best(partial, repeat) / len(pieces), _best(scanner, repeat) / len(pieces)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--frag", type=int, default=8)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    head = ("kind", "fragments", "partial ns/frag", "scanner ns/frag", "x scan")
    print(f"{head[0]:8} {head[1]:>9} {head[2]:>15} {head[3]:>15} {head[4]:>6}")
    for kind in args.kinds.split(","):
        first = last = 0.0
        for n in sizes:
            partial, scanner = measure(kind, n, args.frag, args.repeat)
            first = first or partial
            last = partial
            print(
                f"{kind:8} {n:9} {partial * 1e9:15.0f} {scanner * 1e9:15.0f} "
                f"{partial / scanner:6.2f}"
            )
        print(f"{kind:8} {'flat':>9} {last / first:15.2f}  (per-fragment cost, largest / smallest)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
