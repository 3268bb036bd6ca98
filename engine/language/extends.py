"""``extends``: a descriptor that gives only what differs from another.

An OpenAI-compatible server with one quirk, or a user's variant of a built-in, should be a few
lines of YAML, not a copy of a whole descriptor that silently drifts from the original. So a
descriptor may say ``extends: openai_chat`` (a built-in format name) or
``extends: base.yaml`` (a path ending in ``.yaml`` or ``.yml``, relative to the folder of the
file that says it), and the two are merged before anything else looks at them:

- where both sides hold a mapping, the mappings merge key by key, the child's value winning;
- anything else the child gives (a list, a scalar, a mapping where the parent has none)
  replaces the parent's value whole, exactly as written;
- a ``null`` at a key the parent has removes that key (where the parent has no such key,
  null is an ordinary value);
- ``name`` and ``title`` are never inherited: the child must give its own;
- the parent may itself extend another (a chain); a cycle is an error naming the files.

The merge carries the source positions along (:class:`~engine.language.yamlsource.SourceMap`): every
value keeps the file, line and column it was written at, so a problem in the resolved
descriptor is still reported where it was written. A parent is not checked on its own (an
incomplete base is allowed); only the resolved descriptor is.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from ..compile.schema import missing_key
from ..errors import Problem, escape
from .yamlsource import EXTENDS as KEY
from .yamlsource import SourceMap, YAMLSourceError, load

#: Keys a child must give itself: a variant is a different format, never its parent again.
OWN_KEYS = ("name", "title")

def _own_missing(key: str) -> str:
    return f"{missing_key(key)} (a descriptor that extends another gives its own {key})"


_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ExtendsError(ValueError):
    """``extends`` that cannot be resolved: an unknown parent, a cycle, an unreadable file."""


class _Cycle(ExtendsError):
    """A cycle: its message already names every file on the way."""


def is_path(ref: str) -> bool:
    """``extends`` names a file when it ends in .yaml or .yml, otherwise a built-in format."""
    return ref.endswith((".yaml", ".yml"))


def resolve(data: Any, source: SourceMap, file: str) -> tuple[Any, SourceMap, list[Problem]]:
    """The descriptor ``data`` (read from ``file``, positions in ``source``) with its
    ``extends`` chain merged in, the merged positions, and the problems that stopped the
    resolution (then the data is returned as it was: checking a partial descriptor against
    the full schema would only add noise)."""
    if not isinstance(data, dict) or KEY not in data:
        return data, source, []
    problems = [
        source.problem(file, "", _own_missing(key), "required", at_key=True)
        for key in OWN_KEYS
        if data.get(key) is None
    ]
    home = Path(file).parent
    try:
        way = {Path(file).resolve(): Path(file).name}
        parent, parent_source = _load_parent(data[KEY], home, home, way)
    except ExtendsError as exc:
        problems.append(source.problem(file, f"/{KEY}", str(exc), KEY))
    if problems:
        return data, source, problems
    return (*merge(parent, parent_source, data, source), [])


def merge(
    parent: dict[str, Any], parent_source: SourceMap, child: dict[str, Any], child_source: SourceMap
) -> tuple[dict[str, Any], SourceMap]:
    """The child merged over the parent (rules in the module's docstring), the child's own
    ``extends`` left out, with positions: whatever the child wrote is located in the child,
    the rest where the parent had it."""
    taken: set[str] = set()  # pointers where the child replaced or removed the parent's value
    own = {key: value for key, value in child.items() if key != KEY}
    merged = _merge(parent, own, "", taken)
    kept = {p: at for p, at in parent_source.places.items() if not _under(p, taken)}
    return merged, SourceMap({**kept, **child_source.places})


def _merge(
    parent: dict[str, Any], child: dict[str, Any], pointer: str, taken: set[str]
) -> dict[str, Any]:
    out = {}
    for key, value in parent.items():
        here = f"{pointer}/{escape(key)}"
        mine = child.get(key)
        if key not in child:
            out[key] = copy.deepcopy(value)
        elif isinstance(mine, dict) and isinstance(value, dict):
            out[key] = _merge(value, mine, here, taken)
        else:
            taken.add(here)
            if mine is not None:  # null removes the key
                out[key] = copy.deepcopy(mine)
    out.update((key, copy.deepcopy(mine)) for key, mine in child.items() if key not in parent)
    return out


def _under(pointer: str, prefixes: set[str]) -> bool:
    """``pointer`` is one of ``prefixes`` or inside one (the child replaced or removed it)."""
    return any(pointer == p or pointer.startswith(p + "/") for p in prefixes)


def _locate_parent(ref: Any, folder: Path, home: Path) -> tuple[Path, str]:
    """The parent's file, and how problems name it: formats/NAME.yaml, or relative to the
    checked file's folder (so that it reads the same whichever folder the check runs from)."""
    if not isinstance(ref, str) or not (is_path(ref) or _NAME.match(ref)):
        raise ExtendsError(
            f"extends takes a built-in format name (openai_chat) or a path to a .yaml file, "
            f"got {ref!r}"
        )
    if is_path(ref):
        path = folder / ref
        try:
            label = Path(os.path.relpath(path, home)).as_posix()
        except ValueError:  # another drive on Windows
            label = path.as_posix()
        if not path.is_file():
            raise ExtendsError(f"no such file {label}")
        return path, label
    from .builtin_files import builtin_paths, did_you_mean

    builtin = builtin_paths().get(ref)
    if builtin is None:
        hint = did_you_mean(ref)
        raise ExtendsError(f"no built-in format {ref!r}{hint} (a path must end in .yaml or .yml)")
    return builtin, f"formats/{builtin.name}"


def _load_parent(
    ref: Any, folder: Path, home: Path, way: dict[Path, str]
) -> tuple[dict[str, Any], SourceMap]:
    """The parent named by ``ref`` (relative to ``folder``), itself resolved, its positions
    labelled with its file. ``way`` holds the files already on the way (each resolved, with
    its label), to refuse a cycle and name it."""
    path, label = _locate_parent(ref, folder, home)
    if path.resolve() in way:
        raise _Cycle(f"a cycle: {' -> '.join((*way.values(), label))}")
    try:
        data, source = load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ExtendsError(f"cannot read {label}: {exc}") from None
    except YAMLSourceError as exc:
        raise ExtendsError(f"{label}:{exc.line}:{exc.col}: {exc}") from None
    if not isinstance(data, dict):
        raise ExtendsError(f"{label} is not a mapping of sections")
    source = source.inherited_from(label)
    if KEY not in data:
        return data, source
    try:
        grand = _load_parent(data[KEY], path.parent, home, {**way, path.resolve(): label})
    except _Cycle:
        raise
    except ExtendsError as exc:
        raise ExtendsError(f"in {label}: {exc}") from None
    return merge(*grand, data, source)
