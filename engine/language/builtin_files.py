"""Where the built-in descriptors are on disk, found without compiling any of them.

Apart from the registry so that ``extends: NAME`` (language/extends.py) can read a built-in
parent's YAML: the registry compiles through the validator, which resolves ``extends``, so
the look-up it shares sits below both (no import circle).
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..compile.schema import data_dir as data_dir  # the CLI reads it here


@functools.cache
def builtin_paths() -> dict[str, Path]:
    """The built-in descriptors by name (the file's stem), found once: what ``extends: NAME``
    reads (the parent's YAML, never its compiled strategy, which is shared and immutable)."""
    return {path.stem: path for path in data_dir("formats").glob("*.yaml")}


def builtin_names() -> list[str]:
    """The built-in format names, without compiling them (a cheap look-up for suggestions)."""
    return sorted(builtin_paths())
