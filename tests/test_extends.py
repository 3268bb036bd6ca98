"""``extends``: a variant of a format in a few lines of YAML.

``tests/extends/`` holds a user's variant of a built-in (``call_id_compat.yaml`` extends
``openai_chat`` and changes where the call id sits) and its streams, each with its documented
``*.expect.json``: from its folder alone the variant passes what a built-in's goldens pass.
The merge rules, chains and the positions of inherited problems are pinned on small
descriptors; the wording of every ``extends`` error is pinned in ``tests/broken/``.
"""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, outcome, read_stream, replay, stream_id
from jsonschema import Draft202012Validator
from test_properties import WIRES

import engine
from engine.cli import commands as cli
from engine.cli.resplit import every_character, resplit
from engine.language.extends import merge
from engine.language.validate import schema, validate_text
from engine.language.yamlsource import SourceMap, load

FOLDER = ROOT / "tests" / "extends"
(VARIANT,) = sorted(FOLDER.glob("*.yaml"))
STREAMS = sorted(FOLDER.glob("*.jsonl"))


def variant() -> engine.ExtractionStrategy:
    return engine.load_format(VARIANT)


# -- the variant, from its folder ----------------------------------------------------------------


def test_the_variant_is_a_few_lines_and_valid():
    assert len(VARIANT.read_text(encoding="utf-8").splitlines()) < 20
    assert engine.validate_descriptor(VARIANT) == []
    assert variant().name == VARIANT.stem


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_variant_stream_meets_its_documented_expectation(path: Path):
    expect = json.loads(path.with_suffix(".expect.json").read_text(encoding="utf-8"))
    result = outcome(replay(read_stream(path), str(VARIANT)))
    assert result["format"] == VARIANT.stem
    assert result["finished"]
    assert result["text"] == expect["text"]
    assert result["calls"] == expect["calls"]
    assert result["stop_reason"] == expect["stop_reason"]
    assert result["message"] == expect["message"]


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_variant_streamed_calls_agree_with_extract(path: Path):
    buf = replay(read_stream(path), str(VARIANT))
    message = buf.as_dict()
    assert buf.calls() == buf.strategy.extract(message)
    assert buf.get_content() == buf.strategy.content_text(message)
    # API.md (issue 10): closed, the buffer forms nothing; the strategy's forming() on the
    # whole message keeps its meaning: the message holds a call, ready or never runnable.
    assert not buf.forming()
    assert bool(buf.strategy.forming(message)) == bool(buf.calls() or buf.incomplete_calls())


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_variant_one_character_fragments_give_the_same_result(path: Path):
    events = read_stream(path)
    fields, done = variant().streamed_fields(), variant().done_fields()
    expected = outcome(replay(copy.deepcopy(events), str(VARIANT)))
    split = resplit(copy.deepcopy(events), fields, every_character, done)
    assert outcome(replay(split, str(VARIANT))) == expected


def test_variant_answers_with_its_own_call_ids():
    """The override reaches the inherited results template: the assistant turn keeps the
    calls that have a result, matched by ``call_id``."""
    fmt = variant()
    message = replay(read_stream(FOLDER / "parallel_calls.jsonl"), str(VARIANT)).as_dict()
    calls = fmt.extract(message)
    records = [engine.ToolCallRecord(c.name, c.arguments, "sunny", None, c.id) for c in calls]
    assistant, *results = fmt.result_messages(message, records)
    assert [c["call_id"] for c in assistant["tool_calls"]] == ["cq_1", "cq_2"]
    assert [r["tool_call_id"] for r in results] == ["cq_1", "cq_2"]


# -- the registry and the parent are untouched ---------------------------------------------------


def test_a_variant_changes_nothing_in_the_registry_or_its_parent():
    before = engine.list_formats()
    parent = engine.load_format("openai_chat")
    parent_descriptor = copy.deepcopy(parent.descriptor)
    variant()
    assert engine.list_formats() == before and VARIANT.stem not in before
    assert engine.load_format("openai_chat") is parent
    assert parent.descriptor == parent_descriptor and parent.descriptor["calls"]["id"] == "id"


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_built_ins_still_resolve_the_variants_chunks_alone(path: Path):
    """The variant overlaps its parent (that is its point), but only when given explicitly:
    without it, the built-ins resolve the stream, and exactly one of them claims each chunk."""
    variant()
    for event in read_stream(path):
        assert [w.name for w in WIRES if w.recognizes_chunk(event)] in ([], ["openai_chat"])
    assert replay(read_stream(path)).format == "openai_chat"


# -- show, validate, the schema ------------------------------------------------------------------


def test_show_prints_the_resolved_descriptor(capsys, tmp_path: Path):
    assert cli.main(["show", str(VARIANT)]) == 0
    text = capsys.readouterr().out
    shown, _ = load(text)
    assert shown == variant().descriptor
    assert "extends" not in shown and shown["calls"]["id"] == "call_id"
    assert shown["events"] == engine.load_format("openai_chat").descriptor["events"]
    # Resolved, it stands alone: a full descriptor that validates without its parent.
    (tmp_path / VARIANT.name).write_text(text, encoding="utf-8")
    assert engine.validate_descriptor(tmp_path / VARIANT.name) == []


def test_validate_command_checks_the_variant(capsys):
    assert cli.main(["validate", str(VARIANT)]) == 0
    assert capsys.readouterr().out == ""


def test_the_schema_accepts_the_variant_as_written():
    """What an editor sees: the child alone, against the schema's ``extends`` branch."""
    written, _ = load(VARIANT.read_text(encoding="utf-8"))
    assert list(Draft202012Validator(schema()).iter_errors(written)) == []
    del written["extends"]
    assert list(Draft202012Validator(schema()).iter_errors(written)) != []


# -- the merge rules -----------------------------------------------------------------------------


def _merged(parent: dict, child: dict) -> dict:
    return merge(parent, SourceMap(), child, SourceMap())[0]


def test_mappings_merge_key_by_key_and_the_child_wins():
    parent = {"calls": {"at": "x[*]", "name": "n", "id": "id"}, "text": {"at": "t"}}
    child = {"calls": {"id": "call_id", "where": {"has": "n"}}}
    assert _merged(parent, child) == {
        "calls": {"at": "x[*]", "name": "n", "id": "call_id", "where": {"has": "n"}},
        "text": {"at": "t"},
    }


def test_lists_and_scalars_replace_whole():
    parent = {"done_sentinels": ["[DONE]", "[END]"], "leaks_into_text": True, "m": {"a": 1}}
    child = {"done_sentinels": ["[STOP]"], "leaks_into_text": False, "m": [1]}
    assert _merged(parent, child) == {"done_sentinels": ["[STOP]"], "leaks_into_text": False,
                                      "m": [1]}


def test_null_removes_an_inherited_key_and_is_a_value_elsewhere():
    parent = {"calls": {"id": "id", "name": "n"}, "recognize": {"chunk": {"has": "x"}}}
    child = {"calls": {"id": None, "where": {"field": "f", "is": None}}, "results": None}
    assert _merged(parent, child) == {
        "calls": {"name": "n", "where": {"field": "f", "is": None}},
        "recognize": {"chunk": {"has": "x"}},
        "results": None,
    }


def test_merge_copies_and_never_changes_its_inputs():
    parent = {"calls": {"id": "id", "list": [1, 2]}}
    child = {"calls": {"list": [3]}, "more": {"a": [4]}}
    frozen = copy.deepcopy((parent, child))
    merged = _merged(parent, child)
    merged["calls"]["id"] = "changed"
    merged["more"]["a"].append(5)
    assert (parent, child) == frozen


# -- chains, paths, positions --------------------------------------------------------------------


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    """toy (the toy wire) <- bases/mid.yaml (a path relative to itself) <- child.yaml."""
    toy = (ROOT / "tests" / "toy" / "toy_wire.yaml").read_text(encoding="utf-8")
    _write(tmp_path, "bases/toy/toy_wire.yaml", toy)
    _write(
        tmp_path,
        "bases/mid.yaml",
        """\
        title: not inherited
        extends: toy/toy_wire.yaml
        calls:
          id: call_ref
        """,
    )
    return _write(
        tmp_path,
        "child.yaml",
        """\
        name: child
        title: The last of a chain
        extends: bases/mid.yaml
        text:
          at: "said[*].words"
        """,
    )


def test_a_chain_resolves_each_parent_relative_to_its_own_file(chain: Path):
    fmt = engine.load_format(chain)
    toy = engine.load_format(ROOT / "tests" / "toy" / "toy_wire.yaml")
    assert (fmt.name, fmt.title) == ("child", "The last of a chain")
    assert fmt.descriptor["calls"] == {**toy.descriptor["calls"], "id": "call_ref"}
    assert fmt.descriptor["events"] == toy.descriptor["events"]
    assert list(fmt.descriptor)[:3] == ["name", "title", "docs"]  # the file's order of sections


def test_a_problem_is_reported_where_it_was_written(chain: Path):
    text = chain.read_text(encoding="utf-8").replace('"said[*].words"', '"said[*].words."')
    _, problems = validate_text(text, str(chain))
    assert [(p.line, p.col, p.pointer, p.rule) for p in problems] == [
        (5, 7, "/text/at", "target")
    ]


def test_an_inherited_problem_is_reported_at_extends_naming_where_it_is_written(chain: Path):
    mid = chain.parent / "bases" / "mid.yaml"
    mid.write_text(mid.read_text(encoding="utf-8").replace("call_ref", "[1, 2]"), "utf-8")
    (problem,) = engine.validate_descriptor(chain)
    assert problem.file == str(chain)
    assert (problem.line, problem.col, problem.pointer) == (3, 10, "/calls/id")
    assert problem.message == "expected string, got array (inherited from bases/mid.yaml:4:7)"


def test_a_grandparent_that_cannot_be_found_names_the_file_that_asks_for_it(chain: Path):
    mid = chain.parent / "bases" / "mid.yaml"
    mid.write_text(mid.read_text(encoding="utf-8").replace("toy/toy_", "toy/no_"), "utf-8")
    (problem,) = engine.validate_descriptor(chain)
    assert (problem.line, problem.col, problem.pointer, problem.rule) == (3, 10, "/extends",
                                                                          "extends")
    assert problem.message == "in bases/mid.yaml: no such file bases/toy/no_wire.yaml"


def test_a_variant_of_the_text_codec(tmp_path: Path):
    path = _write(
        tmp_path,
        "terse_text.yaml",
        """\
        name: terse_text
        title: The text codec, with its own docs link
        extends: mcs_text
        docs: https://example.com/terse
        """,
    )
    fmt = engine.load_format(path)
    assert fmt.name == "terse_text" and not fmt.is_wire
    assert fmt.descriptor["codec"] == engine.load_format("mcs_text").descriptor["codec"]
