"""The version of the running ``engine``: ``engine.__version__``, the distribution's.

Where the package runs from a checkout (a ``pyproject.toml`` of this distribution beside it),
that file is the truth: an installed distribution's metadata may belong to another copy (an
editable install of another worktree, an older wheel) while ``PYTHONPATH`` points here. An
installed wheel has no such file, and its metadata is read instead.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "mcs-formats"
UNKNOWN = "0+unknown"


@functools.cache
def version() -> str:
    """The distribution's version: the checkout's pyproject.toml, else the installed metadata,
    else ``0+unknown`` (never an exception at import)."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        project = {}
    if project.get("name") == DISTRIBUTION and isinstance(project.get("version"), str):
        return str(project["version"])
    try:
        return metadata.version(DISTRIBUTION) or UNKNOWN
    except metadata.PackageNotFoundError:
        return UNKNOWN
