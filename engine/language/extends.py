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
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Problem, escape
from .yamlsource import SourceMap, YAMLSourceError, load

KEY = "extends"
OWN_KEYS = ("name", "title")
"""Keys a child must give itself: a variant is a different format, never its parent again."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PATH_SUFFIXES = (".yaml", ".yml")


class ExtendsError(ValueError):
    """``extends`` that cannot be resolved: an unknown parent, a cycle, an unreadable file."""


class _Cycle(ExtendsError):
    """A cycle: its message already names every file on the way."""


@dataclass(frozen=True)
class _Parent:
    path: Path
    label: str  # how problems name it: formats/NAME.yaml, or relative to the checked file


def is_path(ref: str) -> bool:
    """``extends`` names a file when it ends in .yaml or .yml, otherwise a built-in format."""
    return ref.endswith(_PATH_SUFFIXES)


def resolve(data: Any, source: SourceMap, file: str) -> tuple[Any, SourceMap, list[Problem]]:
    """The descriptor ``data`` (read from ``file``, positions in ``source``) with its
    ``extends`` chain merged in, the merged positions, and the problems that stopped the
    resolution (then the data is returned as it was: checking a partial descriptor against
    the full schema would only add noise)."""
    if not isinstance(data, dict) or KEY not in data:
        return data, source, []
    problems = _own_key_problems(data, source, file)
    home = Path(file).parent
    try:
        ref = _reference(data[KEY])
        parent_data, parent_source = _load_parent(ref, home, home, [Path(file).resolve()])
    except ExtendsError as exc:
        line, col = source.locate(f"/{KEY}")
        problems.append(Problem(file, line, col, f"/{KEY}", str(exc), KEY))
    if problems:
        return data, source, problems
    child = {k: v for k, v in data.items() if k != KEY}
    merged, merged_source = merge(parent_data, parent_source, child, source)
    return merged, merged_source, []


def merge(
    parent: dict[str, Any], parent_source: SourceMap, child: dict[str, Any], child_source: SourceMap
) -> tuple[dict[str, Any], SourceMap]:
    """The child merged over the parent (rules in the module's docstring), with positions:
    whatever the child wrote is located in the child, the rest where the parent had it."""
    taken: set[str] = set()  # pointers where the child replaced or removed the parent's value
    merged = _merge(parent, child, "", taken)
    out = SourceMap()
    for table, parent_table, child_table in (
        (out.values, parent_source.values, child_source.values),
        (out.keys, parent_source.keys, child_source.keys),
    ):
        for pointer, position in parent_table.items():
            if not _under(pointer, taken):
                table[pointer] = position
                _set_origin(out, pointer, parent_source.origins.get(pointer))
        for pointer, position in child_table.items():
            table[pointer] = position
            _set_origin(out, pointer, child_source.origins.get(pointer))
    return merged, out


def _set_origin(source: SourceMap, pointer: str, origin: str | None) -> None:
    if origin is None:
        source.origins.pop(pointer, None)
    else:
        source.origins[pointer] = origin


def _merge(
    parent: dict[str, Any], child: dict[str, Any], pointer: str, taken: set[str]
) -> dict[str, Any]:
    out = {}
    for key, value in parent.items():
        here = f"{pointer}/{escape(key)}"
        if key not in child:
            out[key] = copy.deepcopy(value)
            continue
        mine = child[key]
        if mine is None:
            taken.add(here)
        elif isinstance(mine, dict) and isinstance(value, dict):
            out[key] = _merge(value, mine, here, taken)
        else:
            taken.add(here)
            out[key] = copy.deepcopy(mine)
    for key, mine in child.items():
        if key not in parent:
            out[key] = copy.deepcopy(mine)
    return out


def _under(pointer: str, prefixes: set[str]) -> bool:
    if not prefixes:
        return False
    probe = pointer
    while probe:
        if probe in prefixes:
            return True
        probe = probe.rsplit("/", 1)[0]
    return False


def _own_key_problems(data: dict[str, Any], source: SourceMap, file: str) -> list[Problem]:
    out = []
    for key in OWN_KEYS:
        if data.get(key) is None:
            line, col = source.locate("", prefer_key=True)
            out.append(
                Problem(
                    file,
                    line,
                    col,
                    "",
                    f"missing required key {key!r} (a descriptor that extends another gives its "
                    f"own {key})",
                    "required",
                )
            )
    return out


def _reference(value: Any) -> str:
    if isinstance(value, str) and (is_path(value) or _NAME.match(value)):
        return value
    raise ExtendsError(
        f"extends takes a built-in format name (openai_chat) or a path to a .yaml file, "
        f"got {value!r}"
    )


def _locate_parent(ref: str, folder: Path, home: Path) -> _Parent:
    if is_path(ref):
        path = folder / ref
        if not path.is_file():
            raise ExtendsError(f"no such file {_relative(path, home)}")
        return _Parent(path, _relative(path, home))
    from .builtin_files import builtin_names, builtin_path

    builtin = builtin_path(ref)
    if builtin is None:
        close = difflib.get_close_matches(ref, builtin_names(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ExtendsError(f"no built-in format {ref!r}{hint} (a path must end in .yaml or .yml)")
    return _Parent(builtin, f"formats/{builtin.name}")


def _relative(path: Path, home: Path) -> str:
    """A parent's label: relative to the checked file's folder, so that it reads the same
    whichever folder the check runs from."""
    try:
        return Path(os.path.relpath(path, home)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def _load_parent(
    ref: str, folder: Path, home: Path, chain: list[Path], labels: tuple[str, ...] = ()
) -> tuple[dict[str, Any], SourceMap]:
    """The parent named by ``ref`` (relative to ``folder``), itself resolved, its positions
    labelled with its file. ``chain`` holds the files already on the way, to refuse a cycle."""
    parent = _locate_parent(ref, folder, home)
    labels = labels or (chain[0].name,)
    if parent.path.resolve() in chain:
        shown = " -> ".join((*labels, parent.label))
        raise _Cycle(f"a cycle: {shown}")
    try:
        text = parent.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExtendsError(f"cannot read {parent.label}: {exc}") from None
    try:
        data, source = load(text)
    except YAMLSourceError as exc:
        raise ExtendsError(f"{parent.label}:{exc.line}:{exc.col}: {exc}") from None
    if not isinstance(data, dict):
        raise ExtendsError(f"{parent.label} is not a mapping of sections")
    source = source.inherited_from(parent.label)
    if KEY not in data:
        return data, source
    try:
        grand_ref = _reference(data[KEY])
    except ExtendsError as exc:
        raise ExtendsError(f"in {parent.label}: {exc}") from None
    try:
        grand, grand_source = _load_parent(
            grand_ref,
            parent.path.parent,
            home,
            [*chain, parent.path.resolve()],
            (*labels, parent.label),
        )
    except _Cycle:
        raise
    except ExtendsError as exc:
        raise ExtendsError(f"in {parent.label}: {exc}") from None
    own = {k: v for k, v in data.items() if k != KEY}
    return merge(grand, grand_source, own, source)
