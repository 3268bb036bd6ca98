"""Hostile YAML: an alias bomb or a deep nest is refused at once, with a located problem.

Aliases share one node, so a few lines stand for billions of values (the "billion laughs"),
and a deep nest exhausts the recursion of any walk over the tree. The loader counts aliases,
nodes (aliases expanded) and depth while it composes, before anything is built
(``engine.yamlsource``). The broken descriptors ``tests/broken/alias_*.yaml`` and
``yaml_too_deep.yaml`` pin the exact wording; this file pins the time and the bounds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import ROOT, run_engine

import engine
from engine.language import yamlsource
from engine.language.yamlsource import MAX_ALIASES, MAX_DEPTH, MAX_NODES, YAMLSourceError

BROKEN = ROOT / "tests" / "broken"
BOMBS = [BROKEN / "alias_bomb.yaml", BROKEN / "alias_bomb_name.yaml"]
SECONDS = 5.0  # generous: each answers in milliseconds; unbounded they ran for minutes


def _deep(tmp_path: Path, levels: int = 100_000) -> Path:
    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\nmessage: " + "[" * levels + "]" * levels + "\n")
    return path


def _timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


@pytest.mark.parametrize("path", BOMBS, ids=lambda p: p.stem)
def test_an_alias_bomb_is_one_located_problem_at_once(path: Path):
    problems, elapsed = _timed(lambda: engine.validate_descriptor(path))
    assert elapsed < SECONDS
    (problem,) = problems
    assert (problem.rule, problem.file) == ("yaml", str(path))
    assert f"more than {MAX_NODES} nodes" in problem.message
    assert problem.line > 1 and problem.col > 1 and problem.pointer.count("/") >= 2
    if path.stem == "alias_bomb_name":
        assert problem.pointer.startswith("/name/")

    def load():
        with pytest.raises(engine.DescriptorError) as caught:
            engine.load_format(path)
        return caught.value

    error, elapsed = _timed(load)
    assert elapsed < SECONDS
    assert error.problems == problems and str(problem) in str(error)


def test_a_nest_deeper_than_the_bound_is_a_problem_not_a_recursion_error(tmp_path):
    path = _deep(tmp_path)
    problems, elapsed = _timed(lambda: engine.validate_descriptor(path))
    assert elapsed < SECONDS
    (problem,) = problems
    assert (problem.line, problem.col) == (2, 10 + MAX_DEPTH - 1)
    assert problem.pointer == "/message" + "/0" * (MAX_DEPTH - 1)
    assert problem.message == f"YAML nests deeper than {MAX_DEPTH} levels"
    with pytest.raises(engine.DescriptorError):
        engine.load_format(path)


def test_the_command_line_answers_a_bomb_and_a_deep_nest_at_once(tmp_path):
    paths = [*map(str, BOMBS), str(_deep(tmp_path))]
    start = time.perf_counter()
    result = run_engine("validate", *paths, timeout=60)
    assert time.perf_counter() - start < SECONDS + 2  # the interpreter's own start
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == paths
    assert f"more than {MAX_NODES} nodes" in lines[0] and f"{MAX_DEPTH} levels" in lines[2]


# -- the bounds are exactly what the messages say, and ordinary aliases still work --------------


def _aliases(count: int) -> str:
    return "one: &one 1\nmany: [" + ", ".join(["*one"] * count) + "]\n"


def _nest(levels: int) -> str:
    return "[" * levels + "]" * levels  # the root list is level 1


def _nodes(count: int) -> str:
    return "[" + ", ".join(["x"] * (count - 1)) + "]"  # the list and its items


def _refused(text: str) -> YAMLSourceError:
    with pytest.raises(YAMLSourceError) as caught:
        yamlsource.load(text)
    return caught.value


def test_aliases_up_to_the_bound_load():
    data, _ = yamlsource.load(_aliases(MAX_ALIASES))
    assert data["many"] == [1] * MAX_ALIASES
    error = _refused(_aliases(MAX_ALIASES + 1))
    assert str(error) == f"YAML holds more than {MAX_ALIASES} aliases"
    assert error.pointer == f"/many/{MAX_ALIASES}"


def test_depth_up_to_the_bound_loads():
    yamlsource.load(_nest(MAX_DEPTH))
    assert str(_refused(_nest(MAX_DEPTH + 1))) == f"YAML nests deeper than {MAX_DEPTH} levels"


def test_nodes_up_to_the_bound_load():
    data, _ = yamlsource.load(_nodes(MAX_NODES))
    assert len(data) == MAX_NODES - 1
    error = _refused(_nodes(MAX_NODES + 1))
    assert str(error).startswith(f"YAML expands to more than {MAX_NODES} nodes")
    assert error.pointer == f"/{MAX_NODES - 1}"


def test_an_alias_counts_as_the_nodes_and_depth_it_stands_for():
    # 100 nodes shared 40 times: 4 001 nodes from 40 aliases; five more uses cross the bound.
    text = "a: &a [" + ", ".join(["x"] * 99) + "]\nb: &b [" + ", ".join(["*a"] * 40) + "]\n"
    data, _ = yamlsource.load(text)
    assert len(data["b"]) == 40 and data["b"][0] == ["x"] * 99
    error = _refused(text + "c: [*b, *b, *b, *b, *b]\n")
    assert error.pointer.startswith("/c/") and "(alias *b)" in str(error)
    deep = f"a: &a {_nest(MAX_DEPTH - 1)}\nb: [*a]\n"  # b's list is level 2
    error = _refused(deep)
    assert str(error) == f"YAML alias *a nests deeper than {MAX_DEPTH} levels expanded"
    assert (error.line, error.col, error.pointer) == (2, 5, "/b/0")
    yamlsource.load(f"a: &a {_nest(MAX_DEPTH - 2)}\nb: [*a]\n")


def test_a_descriptor_that_shares_a_value_by_alias_still_validates(tmp_path):
    original = ROOT / "formats" / "ollama.yaml"
    text = original.read_text(encoding="utf-8")
    shared = text.replace("equals: assistant}", "equals: &who assistant}", 1).replace(
        "message: {role: assistant}", "message: {role: *who}", 1
    )
    assert shared.count("*who") == 1 and shared.count("&who") == 1
    path = tmp_path / "ollama.yaml"
    path.write_text(shared, encoding="utf-8")
    assert engine.validate_descriptor(path) == []
    assert engine.load_format(path).descriptor == engine.load_format(original).descriptor
