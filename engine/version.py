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
    return _checkout_version() or _installed_version() or UNKNOWN


def _checkout_version() -> str | None:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    version = project.get("version")
    if project.get("name") != DISTRIBUTION or not isinstance(version, str):
        return None
    return version


def _installed_version() -> str | None:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
