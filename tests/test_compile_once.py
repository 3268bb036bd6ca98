"""Compiling is validating: one pass checks a descriptor and compiles it, every problem found
located, and nothing the engine holds keeps a strategy alive that a user loaded."""

from __future__ import annotations

import functools
import gc
import weakref
from pathlib import Path

import pytest

import engine
from engine.compile.strategy import ExtractionStrategy
from engine.language.builtin_files import BUILTIN_PARSER, builtin_paths
from engine.language.validate import compile_text
from engine.language.yamlsource import DescriptorLoader, YAMLSourceError, load
from engine.text.strategy import TextStrategy

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "formats"


def _count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    wire_compile = ExtractionStrategy._compile
    text_init = TextStrategy.__init__

    def counted_wire(self, descriptor, *args, **kwargs):
        seen.append(descriptor["name"])
        return wire_compile(self, descriptor, *args, **kwargs)

    def counted_text(self, descriptor, *args, **kwargs):
        seen.append(descriptor["name"])
        return text_init(self, descriptor, *args, **kwargs)

    monkeypatch.setattr(ExtractionStrategy, "_compile", counted_wire)
    monkeypatch.setattr(TextStrategy, "__init__", counted_text)
    return seen


@pytest.mark.parametrize("name", ["openai_chat", "gemini", "mcs_text"])
def test_loading_a_descriptor_file_compiles_it_once(name, monkeypatch):
    seen = _count_compiles(monkeypatch)
    strategy = engine.load_format(FORMATS / f"{name}.yaml")
    assert seen == [name]
    assert strategy.name == name


def test_the_pass_returns_the_strategy_it_compiled(monkeypatch):
    seen = _count_compiles(monkeypatch)
    path = FORMATS / "anthropic_messages.yaml"
    data, problems, strategy = compile_text(path.read_text(encoding="utf-8"), str(path))
    assert problems == [] and seen == ["anthropic_messages"]
    assert strategy.descriptor is data


def test_an_invalid_descriptor_yields_problems_and_no_strategy():
    path = ROOT / "tests" / "broken" / "open_without_slot.yaml"
    _, problems, strategy = compile_text(path.read_text(encoding="utf-8"), str(path))
    assert problems and strategy is None


def test_a_compile_problem_is_located_at_the_value_at_fault():
    """What only the compiler sees (a reasoning place no rule streams) is reported at its
    line, with its pointer, not at the top of the file."""
    path = ROOT / "tests" / "toy" / "toy_wire.yaml"
    text = path.read_text(encoding="utf-8")
    assert "\nreasoning:" not in text and text.rstrip().endswith('said[*].words"')
    text += "\nreasoning:\n  at: nowhere_streamed\n"
    _, problems, strategy = compile_text(text, "toy_wire.yaml")
    assert strategy is None
    assert [(p.pointer, p.rule) for p in problems] == [("/reasoning/at", "compile")]
    assert problems[0].line == text.count("\n")  # the line of `at:`
    assert "no event rule streams text there" in problems[0].message


def _released(make) -> bool:
    """Is the strategy ``make()`` returns freed once the caller drops it?"""
    ref = weakref.ref(make())
    gc.collect()
    return ref() is None


def test_a_loaded_strategy_is_not_kept_alive_by_its_results():
    """Rendering results and declarations compiles nothing into a global cache: the
    strategy a user loaded dies with its last reference."""
    path = FORMATS / "openai_chat.yaml"

    def load_and_render():
        strategy = engine.load_format(path)
        message = {"role": "assistant", "content": "hi"}
        strategy.result_messages(message, [])
        strategy.tool_declarations([{"name": "f", "description": "", "parameters": {}}])
        return strategy

    assert _released(load_and_render)


def test_a_text_strategy_loaded_by_path_is_not_kept_alive():
    assert _released(lambda: engine.load_format(FORMATS / "mcs_text.yaml"))


def test_the_registry_keeps_its_built_ins():
    """The registry may keep the built-ins it compiled once: the same object every time."""
    assert engine.load_format("openai_chat") is engine.load_format("openai_chat")


def _count_builtin_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The built-ins the registry compiles from here on (its cache emptied, then counted)."""
    from engine.language import registry

    seen: list[str] = []
    compiled = registry._compiled.__wrapped__

    @functools.cache
    def counted(name: str):
        seen.append(name)
        return compiled(name)

    monkeypatch.setattr(registry, "_compiled", counted)
    return seen


def test_listing_the_built_ins_compiles_none(monkeypatch):
    """Their names and order are read from their files, as a lexer mapping is: listing them,
    or naming an unknown format, compiles nothing."""
    seen = _count_builtin_compiles(monkeypatch)
    names = engine.list_formats()
    assert names[0] == "openai_chat" and names[-1] == "mcs_text" and len(names) == 8
    with pytest.raises(engine.UnknownFormatError):
        engine.load_format("openai_chats")
    assert seen == []


def test_an_end_marker_on_a_users_strategy_compiles_no_built_in(monkeypatch):
    """The [DONE] of a buffer holding only a user's strategy is known from the built-ins'
    files (their done_sentinels), not by compiling them."""
    seen = _count_builtin_compiles(monkeypatch)
    toy = engine.load_format(ROOT / "tests" / "toy" / "toy_wire.yaml")
    buf = engine.LLMStreamBuffer(strategies=[toy])
    buf.add({"kind": "hello", "turn": {}})
    buf.add("[DONE]")
    assert buf.is_finished() and seen == []


def test_libyaml_reads_every_built_in_as_the_pure_parser_does():
    """The registry reads the built-ins with libyaml's parser (a command reads all eight; it
    is ~6x faster), a user's file with PyYAML's pure one: for each built-in both give the same
    data and source map. PyYAML's wheels carry libyaml (CI's and the project's machines)."""
    assert BUILTIN_PARSER is not DescriptorLoader
    for path in builtin_paths().values():
        text = path.read_text(encoding="utf-8")
        assert load(text, BUILTIN_PARSER) == load(text), path.name
    # The two do differ on some YAML: a tab between tokens is refused by the pure parser only
    # (which is why a user's file is read by the parser whose words the problems keep).
    assert load("a: [1,\t2]\n", BUILTIN_PARSER)[0] == {"a": [1, 2]}
    with pytest.raises(YAMLSourceError, match="found character '\\\\t' that cannot start"):
        load("a: [1,\t2]\n")


def test_every_problem_at_once():
    """A schema problem (a typo'd key) does not hide what only the compiler sees (a reasoning
    place no rule streams): one check reports both, each at its own pointer."""
    text = (ROOT / "tests" / "toy" / "toy_wire.yaml").read_text(encoding="utf-8")
    text = text.replace("  args_form: object\n", "  args_from: object\n")
    text += "\nreasoning:\n  at: nowhere_streamed\n"
    _, problems, strategy = compile_text(text, "toy_wire.yaml")
    assert strategy is None
    found = {(p.pointer, p.rule) for p in problems}
    assert ("/calls/args_from", "unknown-key") in found
    assert ("/reasoning/at", "compile") in found


def test_checking_a_file_hands_back_the_strategy_it_compiled(monkeypatch):
    """A caller that reports a file's problems and then streams with it (the CLI's project
    check, ``infer``) compiles it once: check_file returns the strategy with the problems."""
    from engine.language.validate import check_file

    seen = _count_compiles(monkeypatch)
    strategy, problems = check_file(FORMATS / "gemini.yaml")
    assert problems == [] and seen == ["gemini"] and strategy.name == "gemini"


def test_the_serve_section_is_compiled_once(monkeypatch):
    """The validating pass compiles the serve section, and the strategy keeps what it
    compiled: the fake provider asks the strategy, never compiles the section again."""
    from engine.compile import serve

    asked: list[str] = []
    check = serve.check_serve
    monkeypatch.setattr(serve, "check_serve", lambda d: asked.append(d["name"]) or check(d))
    strategy = engine.load_format(FORMATS / "openai_chat.yaml")
    spec = strategy.serve_spec()
    assert spec is strategy.serve_spec() and spec.endpoints
    assert asked == ["openai_chat"]


def test_a_strategy_of_a_dict_compiles_its_serve_section_when_asked():
    import yaml  # a plain YAML 1.1 loader: ``on:`` keys are quoted in this data

    data = engine.load_format("ollama").descriptor
    strategy = ExtractionStrategy(yaml.safe_load(yaml.safe_dump(data)))
    assert strategy.serve_spec().endpoints == engine.load_format("ollama").serve_spec().endpoints


def test_a_strategy_of_a_dict_is_checked_as_a_file_is():
    """``ExtractionStrategy(data)`` asks the schema as the validator does: a typo'd argument
    of an operation is refused at its pointer, never compiled silently."""
    data = engine.load_format("openai_chat").descriptor
    every = data["events"].get("every", [])
    rule = {"append": {"at": "content", "from": "x", "sope": "y"}}
    typo = {**data, "events": {**data["events"], "every": [*every, rule]}}
    with pytest.raises(engine.DescriptorError) as caught:
        ExtractionStrategy(typo)
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [
        (f"/events/every/{len(every)}/append/sope", "unknown-key")
    ]


@pytest.mark.parametrize(
    "name", ["openai_responses", "anthropic_messages", "bedrock_converse", "cohere_v2"]
)
def test_a_built_in_read_by_a_plain_yaml_loader_compiles(name):
    """A YAML 1.1 loader reads the files' unquoted ``on:`` keys as true; the strategy of that
    dict is the file's (same descriptor once read), not refused."""
    import yaml

    data = yaml.safe_load((FORMATS / f"{name}.yaml").read_text(encoding="utf-8"))
    assert True in data["events"]  # the loader's reading, which the strategy takes as "on"
    strategy = ExtractionStrategy(data)
    assert strategy.descriptor == engine.load_format(name).descriptor


@pytest.mark.parametrize("key", ["name", "recognize", "events"])
def test_a_dict_without_a_key_every_wire_compiles_from_is_refused_at_the_root(key):
    """A dict may leave out a file's header and sections it has no use for (``docs``,
    ``calls``), but not what a wire compiles from: a DescriptorError naming the key, not a
    bare KeyError out of the compile."""
    data = dict(engine.load_format("openai_chat").descriptor)
    del data[key]
    with pytest.raises(engine.DescriptorError, match=f"/: missing required key '{key}'"):
        ExtractionStrategy(data)


def test_a_dict_without_a_header_or_an_unused_section_still_compiles():
    """What a dict may leave out, a file may not: its header's ``docs`` and ``title``, and a
    section such as ``calls`` (a text-only wire)."""
    data = dict(engine.load_format("openai_chat").descriptor)
    del data["calls"], data["docs"], data["title"]
    data["name"] = "text_only"
    assert ExtractionStrategy(data).name == "text_only"
