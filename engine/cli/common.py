"""What every command shares: the exit codes, the one-line error, loading a format, reading a
recorded stream. Apart from commands.py so that the commands kept in their own modules
(infer_command, serve_command) import it while commands.py imports them (no import circle).
"""

from __future__ import annotations

from typing import Any

from ..compile.strategy import ExtractionStrategy
from ..errors import DescriptorError, UnknownFormatError
from ..language import registry
from ..transport.captures import CaptureError, read_capture

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2


class CLIError(Exception):
    """A failure reported as one message on stderr and an exit code, never a traceback."""

    def __init__(self, message: str, code: int = EXIT_PROBLEM) -> None:
        super().__init__(message)
        self.code = code


def _load_strategy(name_or_path: str) -> ExtractionStrategy:
    """A format by name or path; an unknown name is a usage error, an invalid file a problem."""
    try:
        return registry.load_format(name_or_path)
    except UnknownFormatError as exc:
        raise CLIError(str(exc), EXIT_USAGE) from None
    except DescriptorError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"{name_or_path}: {exc.strerror or exc}") from None


def read_stream(path: str) -> list[tuple[int, Any]]:
    """The decoded events of a recorded stream, each with its 1-based line number: JSON Lines
    or a raw SSE capture, ``-`` for stdin (:mod:`engine.transport.captures`).

    A stream that cannot be read is a :class:`CLIError` naming ``FILE:LINE`` and the reason."""
    try:
        return [(event.line, event.value) for event in read_capture(path)]
    except CaptureError as exc:
        raise CLIError(str(exc)) from None
