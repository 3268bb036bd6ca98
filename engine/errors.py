"""The errors the engine raises, each saying where and what was expected."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One fault in a descriptor, located in its YAML source.

    ``pointer`` is the JSON pointer of the offending key or value; ``line`` and ``col`` are
    1-based, or 0 for a descriptor that has no source text (a dict compiled as it is);
    ``rule`` names the check that failed (a schema keyword, ``jmespath``, ``slot``...).
    """

    file: str
    line: int
    col: int
    pointer: str
    message: str
    rule: str = ""

    def __str__(self) -> str:
        at = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        return f"{at}: {self.pointer or '/'}: {self.message}"


class DescriptorError(ValueError):
    """A descriptor that does not validate; carries every Problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(str(p) for p in self.problems)
        super().__init__(f"invalid descriptor ({len(self.problems)} problem(s)):\n{lines}")


class UnknownFormatError(LookupError):
    """An unknown format name, or a stream that no strategy recognised."""


class ChunkError(ValueError):
    """A chunk that is not a JSON object. Names its position; the buffer is left as it was."""

    def __init__(self, index: int, reason: str) -> None:
        self.index, self.reason = index, reason
        super().__init__(f"chunk {index}: {reason}")


class TransportError(ValueError):
    """A streamed body that does not decode into events (an SSE body, an AWS event stream),
    or one that ended inside a line or a message. Names where: ``line`` (1-based, an SSE
    stream's line) or ``offset`` (the byte where the message or character starts), and what
    was expected (``reason``). Every event completed before it was handed on already."""

    def __init__(self, reason: str, *, line: int | None = None, offset: int | None = None):
        self.reason, self.line, self.offset = reason, line, offset
        where = f"line {line}" if line is not None else None
        if offset is not None:
            where = f"byte {offset}" if where is None else f"{where} (byte {offset})"
        super().__init__(reason if where is None else f"{where}: {reason}")


def escape(token: str) -> str:
    """One JSON pointer token (RFC 6901): ``~`` and ``/`` escaped."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer_of(path: Iterable[object]) -> str:
    """The RFC 6901 pointer of a path of keys and indexes (``['a', 0]`` -> ``/a/0``)."""
    return "".join("/" + escape(str(step)) for step in path)
