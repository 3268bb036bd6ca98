"""Each path of a descriptor is parsed once per load (issue 17).

A path is asked for in several forms while a descriptor loads: the schema checks it, the
read or target compiles from it, its pattern is taken, the validator's flow checks walk it.
The steps of a path string are immutable, so the parser runs once per distinct string; the
others are served the same steps.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import engine
from engine.compile import paths
from engine.language.builtin_files import builtin_paths


def test_loading_every_built_in_parses_each_path_string_once(monkeypatch):
    parsed: Counter[str] = Counter()
    real_parse = paths.parse

    def counting_parse(path: Any) -> Any:
        parsed[path] += 1
        return real_parse(path)

    if hasattr(paths, "_parsed"):  # the parses of earlier tests: this load parses afresh
        paths._parsed.cache_clear()
    monkeypatch.setattr(paths, "parse", counting_parse)
    for name in engine.list_formats():
        engine.load_format(builtin_paths()[name])  # afresh: validated and compiled
    assert len(parsed) > 50  # the built-ins' paths went through the parser
    twice = {path: n for path, n in parsed.items() if n > 1}
    assert not twice, twice


def test_a_path_parsed_once_gives_the_same_steps_and_errors_each_time():
    assert paths.read_steps("content[0].text") == paths.read_steps("content[0].text")
    assert [s.kind for s in paths.read_steps("content[0].text")] == ["field", "index", "field"]
    for _ in range(2):  # a refused path is refused again, with its column
        try:
            paths.parse_target("a..b")
        except paths.PathError as exc:
            assert exc.column == 3
        else:
            raise AssertionError("a..b parsed")
