"""The layout of engine/ is the one its README records (engine/README.md, "Layout").

Every module of ``engine/`` is parsed (never imported) and each of its imports of an engine
module, at any depth (function-level imports included), is an edge of the import graph. Two
rules hold: a module imports only its own floor or a floor its row allows, and the graph has
no circle at all, inside a floor included. An import under ``if TYPE_CHECKING:`` never runs
and is not an edge (the README says so and names the one that points up).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"


# -- the table -----------------------------------------------------------------------------------


def floor_table() -> list[tuple[int, list[str], set[int]]]:
    """The rows of engine/README.md's "Layout" table: (floor, places, floors it may import).

    A place is a folder (``model/``) or a module file of the package root (``errors.py``)."""
    text = (ENGINE / "README.md").read_text(encoding="utf-8")
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].isdigit():
            continue
        floor, places, _, may = cells
        allowed = set() if may == "nothing" else {int(n) for n in re.findall(r"\d+", may)}
        rows.append((int(floor), re.findall(r"`([^`]+)`", places), allowed))
    return rows


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


def floor_of(module: str, rows) -> int | None:
    """The floor whose row names the module's folder, or the module's own file at the root."""
    rel = MODULES[module].relative_to(ENGINE).as_posix()
    for floor, places, _ in rows:
        for place in places:
            if (place.endswith("/") and rel.startswith(place)) or rel == place:
                return floor
    return None


# -- the graph -----------------------------------------------------------------------------------


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                imports = (n for n in ast.walk(inner) if isinstance(n, ast.Import | ast.ImportFrom))
                found |= {id(n) for n in imports}
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The engine modules one import statement names (``from .x import y``: module ``x.y`` when
    ``y`` is a module, else ``x``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    found = []
    for name in names:
        while name not in MODULES and "." in name:
            name = name.rpartition(".")[0]
        if name in MODULES and name != module:
            found.append(name)
    return found


def import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges that run, edges under TYPE_CHECKING), module -> the engine modules it imports."""
    runs: dict[str, set[str]] = {m: set() for m in MODULES}
    typed: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        type_only = _type_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                (typed if id(node) in type_only else runs)[module].update(_targets(module, node))
    return runs, typed


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# -- the checks ----------------------------------------------------------------------------------


def test_the_table_starts_from_design_and_names_every_floor_once():
    rows = floor_table()
    floors = [floor for floor, _, _ in rows]
    assert floors == list(range(1, len(rows) + 1)), floors
    places = [p for _, ps, _ in rows for p in ps]
    for folder in ("model/", "compile/", "language/", "stream/", "text/", "drivers/", "cli/"):
        assert folder in places, f"DESIGN.md's folder {folder} has no row"
    for floor, _, allowed in rows:
        assert all(n < floor for n in allowed), f"floor {floor} may import a floor above it"


def test_every_module_sits_on_a_floor_and_every_place_exists():
    rows = floor_table()
    unplaced = [m for m in MODULES if floor_of(m, rows) is None]
    assert not unplaced, f"modules on no floor of engine/README.md: {unplaced}"
    for _, places, _ in rows:
        for place in places:
            assert (ENGINE / place).exists(), f"engine/README.md names {place}, which is not there"


def test_each_module_imports_only_its_floor_or_the_floors_its_row_allows():
    rows = floor_table()
    allowed = {floor: may for floor, _, may in rows}
    runs, _ = import_graph()
    wrong = []
    for module, targets in sorted(runs.items()):
        own = floor_of(module, rows)
        for target in sorted(targets):
            theirs = floor_of(target, rows)
            if theirs != own and theirs not in allowed[own]:
                wrong.append(f"{module} (floor {own}) imports {target} (floor {theirs})")
    assert not wrong, "\n".join(wrong)


def test_no_import_circle_in_engine():
    runs, _ = import_graph()
    assert circles(runs) == []


def test_the_library_never_imports_the_cli():
    runs, _ = import_graph()
    wrong = [
        f"{m} imports {t}"
        for m, targets in runs.items()
        if not (m.startswith("engine.cli") or m == "engine.__main__")
        for t in targets
        if t.startswith("engine.cli")
    ]
    assert not wrong, wrong


def test_type_only_imports_are_named_in_the_readme_when_they_point_up():
    """A TYPE_CHECKING import is not an edge; one that points up a floor must be the one the
    README names, so that a new one is a decision, not an accident."""
    rows = floor_table()
    _, typed = import_graph()
    upward = sorted(
        (m, t)
        for m, targets in typed.items()
        for t in targets
        if floor_of(t, rows) > floor_of(m, rows)
    )
    assert upward == [("engine.model.assembly", "engine.compile.strategy")]


# -- the checker itself ----------------------------------------------------------------------------


def test_circles_finds_a_circle_and_passes_a_chain():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ..errors import escape", ["engine.errors"]),
        ("from ..language import registry", ["engine.language.registry"]),
        ("from .ops import Run", ["engine.compile.ops"]),
        ("def f():\n    from ..stream.buffer import LLMStreamBuffer", ["engine.stream.buffer"]),
    ],
)
def test_imports_resolve_relative_and_function_level(source, expected):
    tree = ast.parse(source)
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [t for n in nodes for t in _targets("engine.compile.strategy", n)] == expected


def test_a_function_level_import_up_a_floor_is_caught():
    """The floor check sees an import inside a function: an edge from model/ to stream/."""
    rows = floor_table()
    tree = ast.parse("def f():\n    from ..stream.buffer import LLMStreamBuffer\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    (target,) = _targets("engine.model.fragments", node)
    own, theirs = floor_of("engine.model.fragments", rows), floor_of(target, rows)
    allowed = {floor: may for floor, _, may in rows}
    assert theirs not in allowed[own] and theirs != own
