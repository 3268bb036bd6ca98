"""``mcs-formats new NAME --from STREAM``: the command side of :mod:`engine.cli.infer`.

Reads the recorded stream, writes the draft descriptor and copies the stream in as the first
golden, then checks the draft the way its author will: it validates, and it replays its own
stream (the calls it finds, and anything it could not place, are printed). Kept apart from
``commands.py`` so that the inference's command needs only a few lines there.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .infer import Draft, infer_draft
from .project import SCHEMA_REF, STREAM_SUFFIX, STREAM_SUFFIXES


@dataclass
class InferredNew:
    """A draft made from a stream, before anything is written."""

    source: Path
    draft: Draft
    text: str
    events: list[Any] = field(default_factory=list)  # as read: what stdin held, for ``-``

    @property
    def from_stdin(self) -> bool:
        return str(self.source) == "-"

    def golden_name(self) -> str:
        """The golden's file name: the capture's own (an SSE or AWS event-stream capture
        stays one, never raw SSE inside a ``.jsonl``: ``mcs-formats test`` reads all three)."""
        if self.from_stdin:
            return "stdin.jsonl"
        if self.source.suffix in STREAM_SUFFIXES:
            return self.source.name
        return f"{self.source.stem or 'stream'}{STREAM_SUFFIX}"

    def write_golden(self, stream: Path) -> None:
        """The stream as the first golden: the file copied byte for byte, or, read from
        stdin (which cannot be read twice), its events as JSON Lines."""
        if not self.from_stdin:
            shutil.copyfile(self.source, stream)
            return
        lines = (json.dumps(event, ensure_ascii=False) for event in self.events)
        stream.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def infer_from(name: str, source: str) -> InferredNew:
    """The draft for ``source`` (a CLIError when the stream cannot be read or is empty)."""
    from .common import CLIError, read_stream  # the CLI layer; imported here, never the reverse

    events = [event for _, event in read_stream(source)]
    if not any(isinstance(event, dict) for event in events):
        raise CLIError(f"{source}: no JSON object in the stream: nothing to infer from")
    draft = infer_draft(name, events, source=Path(source).name)
    sentinels = sorted({e.split(":", 1)[1].strip() for e in events if isinstance(e, str)
                        and e.startswith("data:")})
    if sentinels:  # `data: [DONE]`: an end marker the capture carries outside any event
        d = draft.descriptor  # placed after `recognize`, where the schema orders it
        at = list(d).index("recognize") + 1
        draft.descriptor = {**dict(list(d.items())[:at]), "done_sentinels": sentinels,
                            **dict(list(d.items())[at:])}
        draft.review(("done_sentinels",), "the capture's data lines that are not JSON")
    # The header names the project's copy of the schema, as the skeleton's does
    # (project.write_schema says why).
    return InferredNew(Path(source), draft, draft.to_yaml(SCHEMA_REF), events)


def finish(made: InferredNew, descriptor: Path, golden: Path) -> int:
    """Copy the stream in, then validate and replay the draft; print what was found."""
    from ..language.validate import check_file
    from ..stream.buffer import LLMStreamBuffer
    from .common import EXIT_OK, EXIT_PROBLEM, read_stream

    stream = golden / made.golden_name()
    made.write_golden(stream)
    print(f"created {stream}")
    reviews = sum(len(notes) for notes in made.draft.reviews.values())
    print(f"draft: {reviews} guesses marked `# REVIEW:` in {descriptor}")
    strategy, problems = check_file(descriptor)  # checked and compiled once
    if problems:
        for problem in problems:
            print(problem)
        print("the draft does not validate: fix the lines above (and report the stream)")
        return EXIT_PROBLEM
    buf = LLMStreamBuffer(strategies=[strategy])
    events = read_stream(str(stream))
    for _, event in events:
        buf.add(event)
    buf.close()
    calls = buf.calls()
    skipped = buf.skipped()
    names = ", ".join(call.name for call in calls) or "none"
    print(
        f"replayed {len(events)} events: {len(calls)} call(s) ({names}), "
        f"{len(buf.get_content())} characters of text, {len(skipped)} skipped"
    )
    for entry in skipped:
        print(f"skipped: event {entry.index} ({entry.event}): {entry.reason}")
    print(f"next: review each guess, then `mcs-formats replay {stream} --format {descriptor}`")
    return EXIT_OK
