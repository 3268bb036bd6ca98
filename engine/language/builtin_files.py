"""Where the built-in descriptors are on disk, found without compiling any of them, and the
parser that reads them.

Apart from the registry so that ``extends: NAME`` (language/extends.py) can read a built-in
parent's YAML: the registry compiles through the validator, which resolves ``extends``, so
the look-up it shares sits below both (no import circle).
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

import yaml

from ..compile.schema import data_dir as data_dir  # the CLI reads it here
from .yamlsource import DescriptorLoader


@functools.cache
def builtin_paths() -> dict[str, Path]:
    """The built-in descriptors by name (the file's stem), found once: what ``extends: NAME``
    reads (the parent's YAML, never its compiled strategy, which is shared and immutable)."""
    return {path.stem: path for path in data_dir("formats").glob("*.yaml")}


def builtin_names() -> list[str]:
    """The built-in format names, without compiling them (a cheap look-up)."""
    return sorted(builtin_paths())


def did_you_mean(name: str) -> str:
    """``; did you mean 'NAME'?`` for the built-in name closest to a mistyped ``name``
    (``""`` when none is close): one wording for an unknown format and an unknown parent."""
    close = difflib.get_close_matches(name, builtin_names(), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class _LibYAMLLoader(DescriptorLoader):
    """:class:`DescriptorLoader` on the events of libyaml's parser (PyYAML's C extension, ~6x
    faster): the same composer, so the same nodes, marks, bounds and source map.

    For the built-ins only, whose every command reads several: libyaml and PyYAML's pure
    parser disagree on some YAML (a tab between tokens, ``?`` in a flow mapping, a BOM inside
    a document), so a user's file is read by the pure parser, which says what is wrong in the
    words the problems keep; tests/test_compile_once.py checks both read each built-in alike.
    """

    def __init__(self, stream: str) -> None:
        from yaml._yaml import CParser  # there when yaml.__with_libyaml__ (BUILTIN_PARSER)

        super().__init__("")
        self._events = CParser(stream)

    def check_event(self, *choices: Any) -> bool:
        self.current_event = self._events.peek_event()  # what compose_node reads
        return self._events.check_event(*choices)

    def peek_event(self) -> yaml.Event | None:
        return self._events.peek_event()

    def get_event(self) -> yaml.Event | None:
        return self._events.get_event()


# What reads a built-in's YAML: libyaml's parser where PyYAML was built with it.
BUILTIN_PARSER = _LibYAMLLoader if yaml.__with_libyaml__ else DescriptorLoader
