"""How well ``mcs-formats new --from`` infers a descriptor: drafts scored against the real ones.

For every built-in wire (and every toy wire of tests/golden/, whose streams are event protocols
with string ids), each recorded stream of tests/golden/<wire>/ that carries a tool call
(the real descriptor finds at least one call in it, and every call in the descriptor's first
place, ``calls``: a draft infers one place, so a stream that shows a second shape of call
from ``calls.also``, a legacy ``function_call`` or a custom tool's, is left out) is given to
the inference as a stranger's stream would be; the draft is then compared with the built-in
descriptor on what one stream can show:

- events: the real descriptor's event names (``events.on``, nested tables, ``ignore``) that
  occur in the stream, and of those the share the draft names (in its ``on`` or ``ignore``);
- discriminator: the field that names the events (none on a delta-merge wire) is the same;
- slots: the real descriptor's SLOT keys (the ``[key]`` steps of its targets, its fold lists'
  ``slot``) that occur in the stream, and of those the share the draft uses;
- calls: the draft's ``calls.name``, ``calls.id`` and ``calls.args`` equal the real ones.

``valid`` counts the drafts that validate and replay their stream without an error; beyond
the names, what the draft *does* is compared too: ``same calls`` counts the streams whose
draft finds exactly the real descriptor's calls (name, arguments, id, in order), ``same text``
those whose display text is the same.

    PYTHONPATH=$PWD python tools/infer_score.py [--json] [WIRE...]

The figures are pinned (minus a margin) by tests/test_infer.py.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine import LLMStreamBuffer  # noqa: E402
from engine.cli.infer import infer_draft  # noqa: E402
from engine.language import registry  # noqa: E402
from engine.language.validate import validate_descriptor  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
CATEGORIES = ("events", "discriminator", "slots", "calls")
SLOT_STEP = re.compile(r"\[([^\]*]+)\]")


@dataclass
class Tally:
    right: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    streams: int = 0
    valid: int = 0
    same_calls: int = 0
    same_text: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, category: str, right: int, total: int) -> None:
        self.right[category] += right
        self.total[category] += total

    def share(self, category: str | None = None) -> float | None:
        cats = CATEGORIES if category is None else (category,)
        total = sum(self.total[c] for c in cats)
        return None if total == 0 else sum(self.right[c] for c in cats) / total

    def merge(self, other: Tally) -> None:
        for c in CATEGORIES:
            self.add(c, other.right[c], other.total[c])
        self.streams += other.streams
        self.valid += other.valid
        self.same_calls += other.same_calls
        self.same_text += other.same_text


def read_events(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _discriminator(desc: dict) -> str | None:
    disc = (desc.get("events") or {}).get("discriminator")
    return disc.get("field") if isinstance(disc, dict) else disc


def _get(obj: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def event_names_seen(desc: dict, events: list[Any]) -> set[str]:
    """The names the descriptor gives the stream's events (and sub-kinds), as it reads them."""
    section = desc.get("events") or {}
    disc = section.get("discriminator")
    if disc is None:
        return set()
    path = disc.get("field") if isinstance(disc, dict) else disc
    wrapped = isinstance(disc, dict) and disc.get("or_wrapped")
    on = section.get("on") or {}
    seen: set[str] = set()
    for event in events:
        if not isinstance(event, dict):
            continue
        name, payload = _get(event, path), event
        if not isinstance(name, str) and wrapped and len(event) == 1:
            ((name, payload),) = event.items()
        if not isinstance(name, str):
            continue
        seen.add(name)
        table = on.get(name)
        if isinstance(table, dict):
            sub = _get(payload, table["discriminator"])
            if isinstance(sub, str):
                seen.add(sub)
    return seen


def named(desc: dict) -> set[str]:
    """Every event name a descriptor's rules (or its ignore list) name."""
    section = desc.get("events") or {}
    names = set(section.get("ignore") or [])
    for name, rules in (section.get("on") or {}).items():
        names.add(name)
        if isinstance(rules, dict):
            names.update(rules.get("on") or {})
    return names


def slot_keys(desc: dict) -> set[str]:
    """SLOT keys: the ``[key]`` steps of every target, and the fold lists' ``slot``."""
    keys: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("at",) and isinstance(inner, str):
                    keys.update(SLOT_STEP.findall(inner))
                elif key == "lists" and isinstance(inner, dict):
                    for spec in inner.values():
                        if isinstance(spec, dict) and isinstance(spec.get("slot"), str):
                            keys.add(spec["slot"])
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(desc.get("events") or {})
    return keys


def _keys_in(value: Any, out: set[str], prefix: str = "") -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            out.add(key)
            if prefix:
                out.add(f"{prefix}.{key}")
            _keys_in(inner, out, key)
    elif isinstance(value, list):
        for inner in value:
            _keys_in(inner, out, "")


def played(strategy, events: list[Any]) -> tuple[list, str]:
    """The calls and the display text a buffer with this strategy makes of the stream."""
    buf = LLMStreamBuffer(strategies=[strategy])
    for event in events:
        buf.add(event)
    buf.close()
    return [(c.name, c.arguments, c.id) for c in buf.calls()], buf.get_content()


def _in_further_places(strategy, events: list[Any]) -> bool:
    """Does the stream hold a call in a further place of the descriptor (``calls.also``)?"""
    buf = LLMStreamBuffer(strategies=[strategy])
    for event in events:
        buf.add(event)
    buf.close()
    message = buf.as_dict()
    return any(place.items_at(message) for place in strategy.spec.places[1:])


def replays(path: str, events: list[Any]) -> tuple[list, str] | None:
    """What the draft makes of its stream, or None when it does not validate or replay."""
    if validate_descriptor(path):
        return None
    try:
        return played(registry.load_format(path), events)
    except Exception:  # noqa: BLE001 - any failure is what this column counts
        return None


def score_stream(
    real: dict, events: list[Any], workdir: Path, label: str, want: tuple[list, str]
) -> Tally:
    """One stream's draft against the real descriptor (``want``: what the real one plays)."""
    tally = Tally(streams=1)
    draft = infer_draft("draft", events, source=label)
    got = draft.descriptor
    path = workdir / "draft.yaml"
    path.write_text(draft.to_yaml(), encoding="utf-8")
    got_play = replays(str(path), events)
    tally.valid = int(got_play is not None)
    tally.same_calls = int(got_play is not None and got_play[0] == want[0])
    tally.same_text = int(got_play is not None and got_play[1] == want[1])
    if not tally.same_calls:
        tally.misses.append(f"{label}: calls differ")
    if not tally.same_text:
        tally.misses.append(f"{label}: text differs")

    expected = named(real) & event_names_seen(real, events)
    found = expected & named(got)
    tally.add("events", len(found), len(expected))
    tally.misses += [f"{label}: event {n}" for n in sorted(expected - found)]

    right = _discriminator(real) == _discriminator(got)
    tally.add("discriminator", int(right), 1)
    if not right:
        tally.misses.append(f"{label}: discriminator {_discriminator(got)!r}")

    present: set[str] = set()
    _keys_in(events, present)
    expected = {k for k in slot_keys(real) if k in present}
    found = expected & slot_keys(got)
    tally.add("slots", len(found), len(expected))
    tally.misses += [f"{label}: slot {k}" for k in sorted(expected - found)]

    for key in ("name", "id", "args"):
        want, have = real["calls"].get(key), got["calls"].get(key)
        tally.add("calls", int(want == have), 1)
        if want != have:
            tally.misses.append(f"{label}: calls.{key} {have!r} (real {want!r})")
    return tally


def _descriptor(wire: str) -> str:
    """A built-in's name, or a toy wire's own descriptor (``tests/golden/<toy>/<toy>.yaml``:
    an event protocol with string ids, as the AI SDK's and AG-UI's are)."""
    own = GOLDEN / wire / f"{wire}.yaml"
    return str(own) if own.is_file() else wire


def toys() -> list[str]:
    return sorted(p.name for p in GOLDEN.iterdir() if (p / f"{p.name}.yaml").is_file())


def score_wire(wire: str, workdir: Path) -> Tally:
    strategy = registry.load_format(_descriptor(wire))
    real = strategy.descriptor
    tally = Tally()
    for stream in sorted((GOLDEN / wire).glob("*.jsonl")):
        events = read_events(stream)
        want = played(strategy, events)
        if not want[0] or _in_further_places(strategy, events):
            continue
        tally.merge(one := score_stream(real, events, workdir, stream.name, want))
        tally.misses += one.misses
    return tally


def score(wires: list[str] | None = None) -> dict[str, Tally]:
    """Every wire's tally (only wires with recorded tool calls): the built-ins, then the toys."""
    names = wires or [n for n in registry.list_formats() if (GOLDEN / n).is_dir()] + toys()
    out: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for wire in names:
            tally = score_wire(wire, Path(tmp))
            if tally.streams:
                out[wire] = tally
    return out


def _pct(value: float | None) -> str:
    return "   n/a" if value is None else f"{100 * value:5.1f}%"


def table(results: dict[str, Tally]) -> str:
    head = f"{'wire':<19}{'streams':>8}{'valid':>6}{'calls=':>7}{'text=':>6}" + "".join(
        f"{c:>15}" for c in CATEGORIES
    )
    lines = [head + f"{'all':>9}", "-" * (len(head) + 9)]
    overall = Tally()
    for wire, tally in results.items():
        overall.merge(tally)
        lines.append(_row(wire, tally))
    lines.append("-" * (len(head) + 9))
    lines.append(_row("overall", overall))
    return "\n".join(lines)


def _row(label: str, tally: Tally) -> str:
    cells = "".join(
        f"{_pct(tally.share(c)):>9} {tally.right[c]:>2}/{tally.total[c]:<3}" for c in CATEGORIES
    )
    counts = f"{tally.streams:>8}{tally.valid:>6}{tally.same_calls:>7}{tally.same_text:>6}"
    return f"{label:<19}{counts}{cells}{_pct(tally.share()):>9}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wires", nargs="*", help="built-in or toy wires (default: all)")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.add_argument("--misses", action="store_true", help="list what each draft got wrong")
    args = parser.parse_args(argv)
    results = score(args.wires or None)
    if args.json:
        rows = {
            wire: {
                "streams": t.streams,
                "valid": t.valid,
                "same_calls": t.same_calls,
                "same_text": t.same_text,
                **{c: t.share(c) for c in CATEGORIES},
                "all": t.share(),
            }
            for wire, t in results.items()
        }
        print(json.dumps(rows, indent=2))
    else:
        print(table(results))
    if args.misses:
        for tally in results.values():
            for miss in tally.misses:
                print(miss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
