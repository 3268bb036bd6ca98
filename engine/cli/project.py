"""A format author's own project folder, and the check ``mcs-formats test`` runs on it.

``mcs-formats new NAME --dir DIR`` lays a folder out as this repository lays out its own
formats, so that a private format gets what the built-in ones get without being copied in::

    DIR/formats/NAME.yaml                       the descriptor
    DIR/tests/golden/NAME/SCENARIO.jsonl        recorded streams, one decoded event a line
                                                (or a raw SSE capture: engine.compile.captures)
    DIR/tests/golden/NAME/SCENARIO.expected.json   what each stream gives (written by --update)

:func:`check_project` validates every descriptor (located problems), replays every stream
through its format alone, replays it again re-split (one character a piece, then a few
random splits drawn from a seed that is reported, so a failure can be made again), and
compares what the stream gives with its snapshot. Every failure is a :class:`Finding` that
names the file, the stream's line and chunk, and the JSON pointer of the first difference.

The library never prints: the command (``engine/cli/project_command.py``) does.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compile.captures import CaptureError, read_capture
from ..errors import ChunkError, UnknownFormatError
from ..stream.buffer import LLMStreamBuffer
from .resplit import Cuts, every_character, random_cuts, resplit_groups

FORMATS = Path("formats")
GOLDEN = Path("tests", "golden")
STREAM_SUFFIX = ".jsonl"
SNAPSHOT_SUFFIX = ".expected.json"
DESCRIPTOR_SUFFIXES = (".yaml", ".yml")
RANDOM_SPLITS = 3  # random re-splits of each stream, besides one character a piece
MISSING = object()  # a key or index that one side does not have


# -- findings ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One failure, located: ``FILE[:LINE]: [chunk N: ][/pointer: ]message``.

    ``line`` is the stream's line (1-based) that holds ``chunk`` (the event's index from 0);
    ``chunk`` is None where no one event is to blame, ``"close"`` for the end of input."""

    file: str
    message: str
    line: int | None = None
    chunk: int | str | None = None
    pointer: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.chunk == "close":
            where += ": at close()"
        elif self.chunk is not None:
            where += f": chunk {self.chunk}"
        if self.pointer is not None:
            where += f": {self.pointer or '/'}"
        return f"{where}: {self.message}"


@dataclass
class Report:
    """What one run found: the failures, the snapshots it wrote, what it checked."""

    seed: int
    findings: list[Finding] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    formats: int = 0
    streams: int = 0
    failed_streams: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings


# -- what a stream gives -------------------------------------------------------------------------


def observe(buf: LLMStreamBuffer) -> dict[str, Any]:
    """Everything a client can observe of a replayed stream, as JSON data: what a snapshot
    holds. ``skipped`` names chunk indexes, which a re-split changes; the re-split check
    compares the rest (:data:`RESPLIT_KEYS`)."""
    observed = {
        "message": buf.as_dict(),
        "calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in buf.calls()],
        "text": buf.get_content(),
        "stop_reason": buf.stop_reason,
        "usage": buf.usage,
        "error": buf.error,
        "finished": buf.is_finished(),
        "incomplete": [_without_type(e.to_dict()) for e in buf.incomplete_calls()],
        "unknown_events": dict(sorted(buf.unknown_events.items())),
        "skipped": [
            {"chunk": s.index, "event": s.event, "reason": s.reason} for s in buf.skipped()
        ],
    }
    # Through JSON once, so that it compares equal to a snapshot read back (tuples as lists).
    return json.loads(json.dumps(observed, ensure_ascii=False, default=repr))


SNAPSHOT_KEYS = (
    "message", "calls", "text", "stop_reason", "usage", "error", "finished", "incomplete",
    "unknown_events", "skipped",
)
RESPLIT_KEYS = tuple(k for k in SNAPSHOT_KEYS if k != "skipped")


def _without_type(event: dict) -> dict:
    return {k: v for k, v in event.items() if k != "type"}


def snapshot_text(observed: dict) -> str:
    """A snapshot as it is written: indented JSON, keys in :data:`SNAPSHOT_KEYS` order."""
    ordered = {key: observed[key] for key in SNAPSHOT_KEYS}
    return json.dumps(ordered, ensure_ascii=False, indent=2) + "\n"


# -- the first difference ------------------------------------------------------------------------


def escape_pointer(key: str) -> str:
    """A key as a JSON pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _same_kind(a: Any, b: Any) -> bool:
    """JSON kinds: ``true`` is not ``1`` (Python's ``True == 1`` would hide it)."""
    return isinstance(a, bool) == isinstance(b, bool) and (
        type(a) is type(b) or (_is_number(a) and _is_number(b))
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def first_difference(want: Any, got: Any, pointer: str = "") -> tuple[str, Any, Any] | None:
    """(pointer, wanted, got) of the first place two JSON values differ, in document order
    (``want``'s keys first, then keys only ``got`` has); MISSING where one side has nothing."""
    if not _same_kind(want, got):
        return pointer, want, got
    if isinstance(want, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            found = first_difference(want.get(key, MISSING), got.get(key, MISSING),
                                     f"{pointer}/{escape_pointer(key)}")
            if found:
                return found
        return None
    if isinstance(want, list):
        for index in range(max(len(want), len(got))):
            a = want[index] if index < len(want) else MISSING
            b = got[index] if index < len(got) else MISSING
            found = first_difference(a, b, f"{pointer}/{index}")
            if found:
                return found
        return None
    return None if want == got else (pointer, want, got)


def resolve(value: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or MISSING."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return MISSING
    return value


def shown(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to ``limit`` characters; "nothing" for a missing one."""
    if value is MISSING:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- reading and replaying -----------------------------------------------------------------------


class StreamError(Exception):
    """A stream that cannot be replayed: carries the Finding that says where and why."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


@dataclass(frozen=True)
class Stream:
    """A recorded stream: its file as named, its events and each event's 1-based line."""

    file: str
    events: list[Any]
    lines: list[int]

    def line_of(self, chunk: int | str | None) -> int | None:
        if isinstance(chunk, int) and chunk < len(self.lines):
            return self.lines[chunk]
        return None

    def finding(self, message: str, chunk: int | str | None = None,
                pointer: str | None = None) -> Finding:
        return Finding(self.file, message, self.line_of(chunk), chunk, pointer)


def read_stream(path: Path) -> Stream:
    """A recorded stream (JSON Lines or a raw SSE capture, :mod:`engine.compile.captures`); one that
    cannot be read is a StreamError naming its line."""
    try:
        captured = read_capture(path)
    except CaptureError as exc:
        raise StreamError(Finding(exc.file, exc.message, exc.line)) from None
    if not captured:
        raise StreamError(Finding(str(path), "no events (an empty stream)"))
    return Stream(str(path), [e.value for e in captured], [e.line for e in captured])


def _add(buf: LLMStreamBuffer, stream: Stream, chunk: int, event: Any) -> None:
    """One chunk into the buffer; an error becomes a StreamError at that chunk."""
    try:
        buf.add(event)
    except ChunkError as exc:
        raise StreamError(stream.finding(exc.reason, chunk)) from None


def _close(buf: LLMStreamBuffer, stream: Stream) -> None:
    try:
        buf.close()
    except UnknownFormatError as exc:
        raise StreamError(stream.finding(str(exc), "close")) from None


def replay(strategy: Any, stream: Stream) -> dict[str, Any]:
    """The stream through its format alone, closed: what it gives (:func:`observe`)."""
    buf = LLMStreamBuffer(strategies=[strategy])
    for chunk, event in enumerate(stream.events):
        _add(buf, stream, chunk, event)
    _close(buf, stream)
    return observe(buf)


def _values_at(strategy: Any, stream: Stream, pointer: str) -> Iterator[tuple[int | str, Any]]:
    """(chunk, value at ``pointer``) after each chunk, then after close()."""
    buf = LLMStreamBuffer(strategies=[strategy])
    for chunk, event in enumerate(stream.events):
        _add(buf, stream, chunk, event)
        yield chunk, resolve(observe(buf), pointer)
    _close(buf, stream)
    yield "close", resolve(observe(buf), pointer)


def _differs(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is not b
    return first_difference(a, b) is not None


def last_change(strategy: Any, stream: Stream, pointer: str) -> int | str | None:
    """The chunk after which the value at ``pointer`` last changed (where the stream gives
    it its final value), ``"close"`` if close() did; None if it never holds one."""
    last: int | str | None = None
    previous: Any = MISSING
    for chunk, value in _values_at(strategy, stream, pointer):
        if _differs(previous, value):
            last, previous = chunk, value
    return None if previous is MISSING else last


# -- the checks ----------------------------------------------------------------------------------


def check_snapshot(strategy: Any, stream: Stream, observed: dict, snapshot: Path,
                   hint: str) -> list[Finding]:
    """The stream's result against STREAM.expected.json; each failure says how to update."""
    if not snapshot.exists():
        return [stream.finding(f"no snapshot {snapshot.name}: {hint} writes it (then review it)")]
    try:
        want = json.loads(snapshot.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [Finding(str(snapshot), f"not a readable JSON snapshot: {exc}; {hint} rewrites it")]
    if not isinstance(want, dict) or sorted(want) != sorted(SNAPSHOT_KEYS):
        keys = ", ".join(SNAPSHOT_KEYS)
        message = f"a snapshot holds exactly the keys {keys}; {hint} rewrites it"
        return [Finding(str(snapshot), message)]
    found = first_difference(want, observed)
    if found is None:
        return []
    pointer, wanted, got = found
    chunk = last_change(strategy, stream, pointer)
    message = (
        f"the stream gives {shown(got)}, its snapshot {snapshot.name} says {shown(wanted)}; "
        f"if the change is meant, {hint} rewrites it"
    )
    return [stream.finding(message, chunk, pointer)]


def splits(seed: int, stream_key: str) -> Iterator[tuple[str, Cuts]]:
    """The re-splits of one stream: one character a piece, then RANDOM_SPLITS drawn from a
    generator seeded by the run's seed and the stream's file name (adding a stream changes no
    other stream's splits)."""
    yield "re-split one character a piece", every_character
    rng = random.Random(f"{seed}:{stream_key}")
    for n in range(1, RANDOM_SPLITS + 1):
        yield f"re-split {n} of {RANDOM_SPLITS} (seed {seed})", random_cuts(rng)


def _resplit_keys(observed: dict) -> dict:
    return {key: observed[key] for key in RESPLIT_KEYS}


def check_resplit(strategy: Any, stream: Stream, observed: dict,
                  tries: Iterable[tuple[str, Cuts]]) -> list[Finding]:
    """The stream re-split (each of ``tries``, as :func:`splits` makes them) gives what it
    gives as recorded; the first split that differs is reported at the first chunk after
    which the two replays differ."""
    fields, done = strategy.streamed_fields(), strategy.done_fields()
    want = _resplit_keys(observed)
    for how, cuts in tries:
        groups = resplit_groups(stream.events, fields, cuts, done)
        split = Stream(stream.file, [p for g in groups for p in g], [])
        try:
            got = _resplit_keys(replay(strategy, split))
        except StreamError as exc:  # located at the recorded chunk that the piece came from
            piece = exc.finding.chunk
            origin = [i for i, group in enumerate(groups) for _ in group]
            chunk = origin[piece] if isinstance(piece, int) else piece
            message = f"{how} fails where the stream as recorded does not: {exc.finding.message}"
            return [stream.finding(message, chunk)]
        if got != want:
            return [_locate_split(strategy, stream, groups, how)]
    return []


def _split_difference(recorded: LLMStreamBuffer, split: LLMStreamBuffer):
    return first_difference(_resplit_keys(observe(recorded)), _resplit_keys(observe(split)))


def _locate_split(strategy: Any, stream: Stream, groups: Sequence[list], how: str) -> Finding:
    """Replay the stream as recorded and re-split side by side: the first chunk (and then the
    first pointer) where they differ."""
    recorded = LLMStreamBuffer(strategies=[strategy])
    split = LLMStreamBuffer(strategies=[strategy])
    for chunk, (event, pieces) in enumerate(zip(stream.events, groups, strict=True)):
        recorded.add(event)
        for piece in pieces:
            split.add(piece)
        if found := _split_difference(recorded, split):
            return stream.finding(f"{how} gives {shown(found[2])}, the stream as recorded "
                                  f"{shown(found[1])}", chunk, found[0])
    recorded.close()
    split.close()
    if found := _split_difference(recorded, split):
        return stream.finding(f"{how} gives {shown(found[2])}, the stream as recorded "
                              f"{shown(found[1])}", "close", found[0])
    return stream.finding(f"{how} gives another result")  # pragma: no cover - found above


# -- the project ---------------------------------------------------------------------------------


def _descriptors(root: Path) -> list[Path]:
    folder = root / FORMATS
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in DESCRIPTOR_SUFFIXES and p.is_file())


def check_project(root: str | Path, seed: int, update: bool = False,
                  report: Report | None = None, hint: str = "--update") -> Report:
    """Check one project folder (see the module docstring); with ``update``, write each
    stream's snapshot instead of comparing it (validation and re-splits are still checked).
    ``hint`` is how the caller tells a user to update (the command line it would run)."""
    report = report or Report(seed)
    root = Path(root)
    if not root.is_dir():
        what = "no such folder" if not root.exists() else "not a folder"
        report.findings.append(Finding(str(root), what))
        return report
    descriptors = _descriptors(root)
    if not descriptors:
        message = (f"no descriptor (*.yaml, *.yml) in {root / FORMATS}: "
                   f"`mcs-formats new NAME --dir {root}` scaffolds one")
        report.findings.append(Finding(str(root), message))
    for descriptor in descriptors:
        _check_format(root, descriptor, report, update, hint)
    names = {d.stem for d in descriptors}
    golden = root / GOLDEN
    for folder in sorted(golden.iterdir()) if golden.is_dir() else []:
        if folder.is_dir() and folder.name not in names:
            message = f"no descriptor {FORMATS / folder.name}.yaml for these streams"
            report.findings.append(Finding(str(folder), message))
    return report


def _check_format(root: Path, descriptor: Path, report: Report, update: bool,
                  hint: str) -> None:
    from ..language.validate import check_file  # the schema is read only when asked

    report.formats += 1
    folder = root / GOLDEN / descriptor.stem
    streams = sorted(folder.glob(f"*{STREAM_SUFFIX}")) if folder.is_dir() else []
    strategy, problems = check_file(descriptor)  # checked and compiled once
    report.findings.extend(_problem(p) for p in problems)
    if problems:
        if streams:
            message = f"{len(streams)} stream(s) not replayed: {descriptor} is invalid"
            report.findings.append(Finding(str(folder), message))
        return
    if not streams:
        message = f"no stream (*{STREAM_SUFFIX}) for {descriptor}: record one here"
        report.findings.append(Finding(str(folder), message))
        return
    for path in streams:
        _check_stream(strategy, path, report, update, hint)
    for orphan in sorted(folder.glob(f"*{SNAPSHOT_SUFFIX}")):
        if not orphan.with_name(orphan.name[: -len(SNAPSHOT_SUFFIX)] + STREAM_SUFFIX).exists():
            message = f"a snapshot without its stream ({orphan.name[: -len(SNAPSHOT_SUFFIX)]}"
            report.findings.append(Finding(str(orphan), message + f"{STREAM_SUFFIX})"))


def _problem(problem: Any) -> Finding:
    """A descriptor problem, printed as ``validate`` prints it (FILE:LINE:COL: /ptr: msg)."""
    return Finding(f"{problem.file}:{problem.line}:{problem.col}", problem.message,
                   pointer=problem.pointer)


def _check_stream(strategy: Any, path: Path, report: Report, update: bool, hint: str) -> None:
    report.streams += 1
    before = len(report.findings)
    snapshot = path.with_name(path.name[: -len(STREAM_SUFFIX)] + SNAPSHOT_SUFFIX)
    try:
        stream = read_stream(path)
        observed = replay(strategy, stream)
    except StreamError as exc:
        report.findings.append(exc.finding)
        report.failed_streams += 1
        return
    report.findings.extend(
        check_resplit(strategy, stream, observed, splits(report.seed, path.name))
    )
    if update:
        text = snapshot_text(observed)
        if not snapshot.exists() or snapshot.read_text(encoding="utf-8") != text:
            snapshot.write_text(text, encoding="utf-8")
            report.written.append(str(snapshot))
    else:
        report.findings.extend(check_snapshot(strategy, stream, observed, snapshot, hint))
    if len(report.findings) > before:
        report.failed_streams += 1
