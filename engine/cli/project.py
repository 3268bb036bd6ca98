"""A format author's own project folder, and the check ``mcs-formats test`` runs on it.

``mcs-formats new NAME --dir DIR`` lays a folder out as this repository lays out its own
formats, so that a private format gets what the built-in ones get without being copied in::

    DIR/formats/NAME.yaml                       the descriptor
    DIR/tests/golden/NAME/SCENARIO.jsonl        recorded streams, one decoded event a line;
    DIR/tests/golden/NAME/SCENARIO.sse          or a raw SSE capture, and SCENARIO.eventstream
                                                a raw AWS event stream (engine.transport.captures)
    DIR/tests/golden/NAME/SCENARIO.expected.json   what each stream gives (written by --update)

:func:`check_project` validates every descriptor (located problems), replays every stream
through its format alone, replays it again re-split (one character a piece, then a few
random splits drawn from a seed that is reported, so a failure can be made again), and
compares what the stream gives with its snapshot. It also makes the checks the repository's
own suite makes of a built-in, through the same functions (``tests/test_properties.py`` calls
them): no built-in wire claims a chunk of the format's streams (:func:`check_claims`: with the
built-ins loaded too, the stream resolves to its own format; a variant's ``extends`` parents
are its own wire), and a call once returned is never rebuilt (:func:`check_never_rebuilt`).
Every failure is a :class:`Finding` that names the file, the stream's line and chunk, and
the JSON pointer of the first difference.

The library never prints: the command (``engine/cli/project_command.py``) does.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ChunkError, UnknownFormatError
from ..stream.buffer import LLMStreamBuffer
from ..transport.captures import CaptureError, read_capture
from .resplit import Cuts, every_character, random_cuts, resplit_groups

FORMATS = Path("formats")
GOLDEN = Path("tests", "golden")
SCHEMA_COPY = Path("schemas", "format.schema.json")  # the copy the descriptors' header names
SCHEMA_REF = "../schemas/format.schema.json"  # ...relative to DIR/formats/NAME.yaml
STREAM_SUFFIX = ".jsonl"
STREAM_SUFFIXES = (STREAM_SUFFIX, ".sse", ".eventstream")  # read by content: captures.py
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


Ready = dict[int, int | str]  # id() of a call -> the chunk after which it became ready


def observe(buf: LLMStreamBuffer, ready: Ready | None = None) -> dict[str, Any]:
    """Everything a client can observe of a replayed stream, as JSON data: what a snapshot
    holds; with ``ready`` (what :func:`replay` records), each call's ``ready_at``: the chunk
    (of the stream as recorded) after which it became runnable, ``"close"`` for close().
    ``skipped`` names chunk indexes, which a re-split changes; the re-split check compares
    the rest (:data:`RESPLIT_KEYS`)."""
    observed: dict[str, Any] = {
        "message": buf.as_dict(),
        "calls": [
            {"name": c.name, "arguments": c.arguments, "id": c.id}
            | ({} if ready is None else {"ready_at": ready.get(id(c))})
            for c in buf.calls()
        ],
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
    plain: dict[str, Any] = json.loads(json.dumps(observed, ensure_ascii=False, default=repr))
    return plain


SNAPSHOT_KEYS = (
    "message", "calls", "text", "stop_reason", "usage", "error", "finished", "incomplete",
    "unknown_events", "skipped",
)
RESPLIT_KEYS = tuple(k for k in SNAPSHOT_KEYS if k != "skipped")


def _without_type(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != "type"}


def snapshot_text(observed: dict[str, Any]) -> str:
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
    """A recorded stream (JSON Lines or a raw SSE capture, engine.transport.captures); one that
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


def _replaying(strategy: Any, stream: Stream, origin: Sequence[int] | None = None
               ) -> Iterator[tuple[int | str, LLMStreamBuffer, Ready]]:
    """(chunk, the buffer, the calls' ready chunks) after each chunk, then ("close", ...)
    after close(): the stream through its format alone. ``origin[i]`` is the recorded chunk
    that piece ``i`` of a re-split stream came from, so that ``ready_at`` names recorded
    chunks. The caller observes what it needs (:func:`observe` costs O(message))."""
    buf = LLMStreamBuffer(strategies=[strategy])
    ready: Ready = {}
    for chunk, event in enumerate(stream.events):
        _add(buf, stream, chunk, event)
        ready.update((id(c), chunk if origin is None else origin[chunk]) for c in buf.new_calls())
        yield chunk, buf, ready
    _close(buf, stream)
    ready.update((id(c), "close") for c in buf.new_calls())
    yield "close", buf, ready


def replay(strategy: Any, stream: Stream, origin: Sequence[int] | None = None) -> dict[str, Any]:
    """The stream through its format alone, closed: what it gives (:func:`observe`)."""
    ((_, buf, ready),) = deque(_replaying(strategy, stream, origin), maxlen=1)
    return observe(buf, ready)


def _values_at(strategy: Any, stream: Stream, pointer: str) -> Iterator[tuple[int | str, Any]]:
    """(chunk, value at ``pointer``) after each chunk, then after close()."""
    for chunk, buf, ready in _replaying(strategy, stream):
        yield chunk, resolve(observe(buf, ready), pointer)


def _differs(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is not b
    return first_difference(a, b) is not None


def last_change(strategy: Any, stream: Stream, pointer: str,
                wanted: Any = MISSING) -> int | str | None:
    """The chunk to blame for the value at ``pointer``: where a string stopped being the
    start of the ``wanted`` one (text streams in pieces: the piece that went another way),
    else the chunk after which the value last changed (where the stream gives it its final
    value); ``"close"`` if close() did; None if it never holds one."""
    last: int | str | None = None
    previous: Any = MISSING
    for chunk, value in _values_at(strategy, stream, pointer):
        if isinstance(wanted, str) and isinstance(value, str) and not wanted.startswith(value):
            return chunk
        if _differs(previous, value):
            last, previous = chunk, value
    return None if previous is MISSING else last


# -- the checks ----------------------------------------------------------------------------------


def check_snapshot(strategy: Any, stream: Stream, observed: dict[str, Any], snapshot: Path,
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
    chunk = last_change(strategy, stream, pointer, wanted)
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


def _resplit_keys(observed: dict[str, Any]) -> dict[str, Any]:
    return {key: observed[key] for key in RESPLIT_KEYS}


def check_resplit(strategy: Any, stream: Stream, observed: dict[str, Any],
                  tries: Iterable[tuple[str, Cuts]]) -> list[Finding]:
    """The stream re-split (each of ``tries``, as :func:`splits` makes them) gives what it
    gives as recorded; the first split that differs is reported at the first chunk after
    which the two replays differ."""
    fields, done = strategy.streamed_fields(), strategy.done_fields()
    want = _resplit_keys(observed)
    for how, cuts in tries:
        groups = resplit_groups(stream.events, fields, cuts, done)
        split = Stream(stream.file, [p for g in groups for p in g], [])
        origin = [i for i, group in enumerate(groups) for _ in group]
        try:
            got = _resplit_keys(replay(strategy, split, origin))
        except StreamError as exc:  # located at the recorded chunk that the piece came from
            piece = exc.finding.chunk
            chunk = origin[piece] if isinstance(piece, int) else piece
            message = f"{how} fails where the stream as recorded does not: {exc.finding.message}"
            return [stream.finding(message, chunk)]
        if got != want:
            return [_locate_split(strategy, stream, groups, how, (want, got))]
    return []


def _split_difference(
    recorded: LLMStreamBuffer, split: LLMStreamBuffer
) -> tuple[str, Any, Any] | None:
    return first_difference(_resplit_keys(observe(recorded)), _resplit_keys(observe(split)))


def _locate_split(strategy: Any, stream: Stream, groups: Sequence[list[Any]], how: str,
                  results: tuple[dict[str, Any], dict[str, Any]]) -> Finding:
    """Replay the stream as recorded and re-split side by side: the first chunk (and then the
    first pointer) where they differ; where only the chunks at which calls became ready
    differ (the replays side by side do not record them), the first of those."""
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
    pointer, wanted, got = first_difference(*results) or ("", None, None)
    return stream.finding(f"{how} gives {shown(got)}, the stream as recorded {shown(wanted)}",
                          None, pointer)


def check_claims(stream: Stream, owner: str, wires: Sequence[Any]) -> list[Finding]:
    """The stream resolves to ``owner`` among ``wires`` (the built-ins and ``owner`` itself):
    no other wire claims one of its chunks (nor, where no wire claims a chunk, its error
    predicate: a stream may open with a provider error), and ``owner`` claims one. The
    buffer takes the first wire that recognises a chunk, so a chunk two wires claim is read
    by whichever comes first. ``tests/test_properties.py`` makes this check of every built-in."""
    findings, claimed = [], False
    for chunk, event in enumerate(stream.events):
        if not isinstance(event, dict):  # an SSE line such as `data: [DONE]`
            continue
        names = [w.name for w in wires if w.recognizes_chunk(event)] or [
            w.name for w in wires if w.recognizes_error(event)
        ]
        claimed = claimed or owner in names
        for other in (n for n in names if n != owner):
            findings.append(stream.finding(
                f"the built-in {other} claims this chunk too: with the built-ins loaded the "
                f"stream resolves to {names[0]}, not {owner} (make `recognize` specific to "
                f"this wire, or `extends: {other}`)" if names[0] != owner else
                f"the built-in {other} claims this chunk too (make `recognize` specific to "
                "this wire)", chunk))
    if not claimed:
        findings.append(stream.finding(f"no chunk is recognised by {owner}"))
    return findings[:1]  # the first chunk: the rest is the same cause


def check_never_rebuilt(stream: Stream, strategies: Sequence[Any] | None) -> list[Finding]:
    """``calls()`` grows in place: a call it has returned stays the same object as later
    chunks arrive (rebuilding the list on every chunk made a stream of whole calls
    quadratic, and a client holding a call would hold a stale one). ``strategies`` None:
    resolved among the built-ins, as ``tests/test_properties.py`` checks them."""
    buf = LLMStreamBuffer(strategies=None if strategies is None else list(strategies))
    returned: list[Any] = []
    for chunk, event in enumerate(stream.events):
        _add(buf, stream, chunk, event)
        now = {id(call) for call in buf.calls()}
        lost = [call.name for call in returned if id(call) not in now]
        if lost:
            return [stream.finding(f"calls() rebuilt {', '.join(lost)}: a call once returned "
                                   "must stay the same object", chunk)]
        returned = list(buf.calls())
    return []


def lineage(descriptor: Path) -> set[str]:
    """The names of the formats a descriptor ``extends``, parents' parents too: a variant is
    its parent's wire, so the parent claiming its chunks is no failure."""
    from ..language.extends import is_path
    from ..language.yamlsource import load

    names: set[str] = set()
    path: Path | None = descriptor
    while path is not None and path.is_file() and len(names) < 32:  # 32: a cycle is invalid
        data, _ = load(path.read_text(encoding="utf-8"))
        ref = data.get("extends") if isinstance(data, dict) else None
        if not isinstance(ref, str):
            break
        names.add(Path(ref).stem if is_path(ref) else ref)
        path = path.parent / ref if is_path(ref) else None
    return names


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
    _check_schema_copy(root, report, update, hint)
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


def write_schema(root: Path) -> Path:
    """The installed schema copied into the project folder (``DIR/schemas/``), where the
    descriptors' ``$schema`` header points (:data:`SCHEMA_REF`): a path inside the folder
    works wherever the folder goes and on any machine, where an absolute path of the
    install would name one virtualenv of one machine. :func:`check_project` keeps it fresh."""
    from ..language.validate import schema_path

    copy = root / SCHEMA_COPY
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(schema_path().read_bytes())
    return copy


def _check_schema_copy(root: Path, report: Report, update: bool, hint: str) -> None:
    """The project's copy of the schema is the installed one (an upgrade changes it)."""
    from ..language.validate import schema_path

    copy = root / SCHEMA_COPY
    if not copy.is_file() or copy.read_bytes() == schema_path().read_bytes():
        return
    if update:
        report.written.append(str(write_schema(root)))
        return
    message = "not the installed schema (the descriptors' $schema header names this copy)"
    report.findings.append(Finding(str(copy), f"{message}: {hint} rewrites it"))


def _check_format(root: Path, descriptor: Path, report: Report, update: bool,
                  hint: str) -> None:
    from ..language import registry
    from ..language.validate import check_file  # the schema is read only when asked

    report.formats += 1
    folder = root / GOLDEN / descriptor.stem
    streams = sorted(p for p in folder.iterdir() if p.suffix in STREAM_SUFFIXES
                     and p.is_file()) if folder.is_dir() else []
    strategy, problems = check_file(descriptor)  # checked and compiled once
    report.findings.extend(_problem(p) for p in problems)
    if problems:
        if streams:
            message = f"{len(streams)} stream(s) not replayed: {descriptor} is invalid"
            report.findings.append(Finding(str(folder), message))
        return
    if not streams:
        kinds = ", ".join(f"*{s}" for s in STREAM_SUFFIXES)
        message = f"no stream ({kinds}) for {descriptor}: record one here"
        report.findings.append(Finding(str(folder), message))
        return
    assert strategy is not None  # no problems: it compiled
    parents = lineage(descriptor) | {strategy.name}
    wires = [w for w in registry.wire_strategies() if w.name not in parents] + [strategy]
    for path in streams:
        _check_stream(strategy, wires, path, report, update, hint)
    stems = {p.stem for p in streams}
    for orphan in sorted(folder.glob(f"*{SNAPSHOT_SUFFIX}")):
        stem = orphan.name[: -len(SNAPSHOT_SUFFIX)]
        if stem not in stems:
            message = f"a snapshot without its stream ({stem}{STREAM_SUFFIX})"
            report.findings.append(Finding(str(orphan), message))


def _problem(problem: Any) -> Finding:
    """A descriptor problem, printed as ``validate`` prints it (FILE:LINE:COL: /ptr: msg)."""
    return Finding(f"{problem.file}:{problem.line}:{problem.col}", problem.message,
                   pointer=problem.pointer)


def _check_stream(strategy: Any, wires: list[Any], path: Path, report: Report, update: bool,
                  hint: str) -> None:
    report.streams += 1
    before = len(report.findings)
    snapshot = path.with_name(path.stem + SNAPSHOT_SUFFIX)
    try:
        stream = read_stream(path)
        observed = replay(strategy, stream)
    except StreamError as exc:
        report.findings.append(exc.finding)
        report.failed_streams += 1
        return
    report.findings.extend(check_claims(stream, strategy.name, wires))
    report.findings.extend(check_never_rebuilt(stream, [strategy]))
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
