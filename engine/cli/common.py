"""What every command shares: the exit codes, the one-line error, loading a format, reading a
recorded stream. Apart from commands.py so that the commands kept in their own modules
(infer_command, serve_command) import it while commands.py imports them (no import circle).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import DescriptorError, UnknownFormatError
from ..language import registry

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2


class CLIError(Exception):
    """A failure reported as one message on stderr and an exit code, never a traceback."""

    def __init__(self, message: str, code: int = EXIT_PROBLEM) -> None:
        super().__init__(message)
        self.code = code


def _load_strategy(name_or_path: str):
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
    """The decoded events of a JSON Lines file, each with its 1-based line number.

    Blank lines are skipped; a line that is not JSON is a :class:`CLIError` naming
    ``FILE:LINE`` and the reason."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        raise CLIError(f"{path}: cannot read: {exc.strerror or exc}") from None
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise CLIError(f"{path}:{number}: not JSON: {exc.msg} (column {exc.colno})") from None
    return events
