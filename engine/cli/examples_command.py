"""``mcs-formats examples [NAME] [--dir DIR] [--guide]``: what a format author learns from,
shipped with the package.

The toy wires (``tests/golden/<toy>/<toy>.yaml`` beside its streams in the repository: a wire
no provider has, each showing one concept of the descriptor language) and the author's guide
(``formats/README.md``) are package data of the wheel (pyproject maps them into the package as its
``examples`` and ``formats`` folders), so an author with only the wheel installed has them:

- ``examples``: one line a toy, its name and what it shows (its descriptor's ``title``);
- ``examples NAME [--dir DIR]``: the toy written out as a project folder, as ``new`` lays one
  out (``DIR/formats/NAME.yaml``, its streams under ``DIR/tests/golden/NAME/``, the schema
  its header names), so that ``mcs-formats test DIR --update`` runs on it at once;
- ``examples --guide``: the guide, printed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from ..language.builtin_files import data_dir
from .common import EXIT_OK, EXIT_USAGE, CLIError
from .project import FORMATS, GOLDEN, SCHEMA_REF, write_schema

_HEADER = re.compile(r"^# yaml-language-server: \$schema=\S*\n")


def examples_dir() -> Path:
    """The toys: inside the installed package, or where the repository keeps them."""
    engine_dir = Path(__file__).resolve().parent.parent
    for candidate in (engine_dir / "examples", engine_dir.parent / GOLDEN):
        if candidate.is_dir():
            return candidate
    raise CLIError(f"cannot find the toy wires near {engine_dir}")  # pragma: no cover


def toys() -> dict[str, Path]:
    """Each toy's descriptor by name: a folder holding ``NAME/NAME.yaml``."""
    folders = sorted(examples_dir().iterdir())
    return {f.name: f / f"{f.name}.yaml" for f in folders if (f / f"{f.name}.yaml").is_file()}


def _title(descriptor: Path) -> str:
    from ..language.yamlsource import load  # the title only: no compile

    data, _ = load(descriptor.read_text(encoding="utf-8"))
    return str(data.get("title", "")) if isinstance(data, dict) else ""


def write_example(name: str, root: Path) -> list[Path]:
    """The toy ``name`` as a project folder under ``root``: what was written."""
    known = toys()
    if name not in known:
        raise CLIError(f"no toy wire {name!r}; known: {', '.join(known)}", EXIT_USAGE)
    descriptor, golden = root / FORMATS / f"{name}.yaml", root / GOLDEN / name
    for existing in (descriptor, golden):
        if existing.exists():
            raise CLIError(f"{existing} already exists", EXIT_USAGE)
    text = known[name].read_text(encoding="utf-8")
    header = f"# yaml-language-server: $schema={SCHEMA_REF}\n"
    descriptor.parent.mkdir(parents=True, exist_ok=True)
    descriptor.write_text(header + _HEADER.sub("", text, count=1), encoding="utf-8")
    golden.mkdir(parents=True)
    streams = [p for p in sorted(known[name].parent.iterdir()) if p != known[name]]
    return [descriptor, *(Path(shutil.copy(p, golden / p.name)) for p in streams),
            write_schema(root)]


def cmd_examples(args: argparse.Namespace) -> int:
    if args.guide:
        sys.stdout.write((data_dir("formats") / "README.md").read_text(encoding="utf-8"))
    elif args.name is None:
        known = toys()
        width = max(map(len, known))
        for name, descriptor in known.items():
            print(f"{name:<{width}}  {_title(descriptor)}")
    else:
        for path in write_example(args.name, Path(args.dir)):
            print(f"created {path}")
        print(f"next: `mcs-formats test {args.dir} --update`, then read "
              f"{Path(args.dir) / FORMATS / args.name}.yaml beside its streams")
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``examples`` to the command's subparsers."""
    p = sub.add_parser("examples", help="the toy wires and the author's guide that ship with "
                       "the package: list them, write one out, print the guide")
    p.add_argument("name", metavar="NAME", nargs="?", help="a toy wire to write out")
    p.add_argument("--dir", default=".", metavar="DIR",
                   help="the project folder to write it into (default: the current one)")
    p.add_argument("--guide", action="store_true", help="print the author's guide")
    p.set_defaults(run=cmd_examples)
