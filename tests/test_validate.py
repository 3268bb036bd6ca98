"""Descriptor validation: the wording of every error is tested like any other output.

Each file in ``tests/broken/`` is a descriptor broken on purpose. Its first lines say, one
``# expect:`` comment per problem, exactly what ``validate_descriptor`` must report:
``# expect: LINE:COL: /json/pointer: message``. A new case needs no test code: drop a file there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from jsonschema import Draft202012Validator

import engine
from engine import DescriptorError, Problem, validate_descriptor
from engine.compile.schema import operation_names
from engine.language.validate import (
    descriptor_kind,
    schema,
    schema_path,
    section_order,
    validate_text,
)

ROOT = Path(__file__).resolve().parent.parent
BROKEN = sorted((ROOT / "tests" / "broken").glob("*.yaml"))
FORMATS = sorted((ROOT / "formats").glob("*.yaml"))
EXPECT = "# expect: "
SCHEMA_COMMENT = "# yaml-language-server: $schema=../schemas/format.schema.json"


def line_of(name: str, written: str) -> int:
    """The 1-based line of a built-in descriptor at which ``written`` first stands: the
    tests below locate a problem from it, not from a number that any edit above shifts."""
    text = (ROOT / "formats" / f"{name}.yaml").read_text(encoding="utf-8")
    return text[: text.index(written)].count("\n") + 1


def expected_lines(path: Path) -> list[str]:
    """The ``# expect:`` comments that open the file."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith(EXPECT):
            break
        out.append(line[len(EXPECT) :])
    return out


def shown(problem: Problem) -> str:
    """A problem as the command line prints it, without the file name."""
    return f"{problem.line}:{problem.col}: {problem.pointer or '/'}: {problem.message}"


# -- the broken descriptors ------------------------------------------------------------------


def test_there_are_broken_descriptors():
    assert len(BROKEN) >= 10


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_descriptor_reports_exactly_what_it_expects(path: Path):
    expected = expected_lines(path)
    assert expected, f"{path.name}: its first line must be '{EXPECT}LINE:COL: /pointer: message'"
    problems = validate_descriptor(path)
    assert [shown(p) for p in problems] == expected
    assert all(p.file == str(path) for p in problems)
    assert all(p.rule for p in problems), "every problem names the rule that failed"


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_loading_a_broken_descriptor_raises_with_its_problems(path: Path):
    with pytest.raises(DescriptorError) as caught:
        engine.load_format(path)
    assert [shown(p) for p in caught.value.problems] == expected_lines(path)
    assert str(caught.value.problems[0]) in str(caught.value)


RULES = {
    "unknown_key": ["unknown-key"],
    "wrong_type": ["type"],
    "broken_jmespath": ["jmespath"],
    "bad_target_path": ["target"],
    "bad_slot": ["slot"],
    "unknown_operation": ["operation"],
    "name_mismatch": ["name"],
    "missing_section": ["required"],
    "yaml_syntax": ["yaml"],
    "bad_enum": ["enum"],
    "open_without_slot": ["item-target"],
    "section_order": ["order"],
    "bad_template": ["template"],
    "codec_bad_regex": ["required", "regex"],
    "codec_bad_replacement": ["unknown-key", "compile"],
    "codec_marker_twice": ["compile"],
    "continuation_without_flag": ["required"],
    "three_problems": ["type", "jmespath", "unknown-key"],
    "args_not_a_chain": ["field-chain"],
    "is_null_needs_chain": ["field-chain"],
    "is_bare_null_needs_chain": ["field-chain"],
    "extends_cycle": ["extends"],
    "extends_unknown_parent": ["extends"],
    "extends_missing_file": ["extends"],
    "extends_bad_key": ["unknown-key"],
    "extends_inherited_problem": ["type"],
    "extends_own_name": ["required"],
    "args_never_written": ["args-field", "args-unwritten"],
    "args_whole_but_streamed": ["args-whole"],
    "args_at_another_field": ["args-field"],
    "slot_key_never_opened": ["slot-key"],
    "scope_not_opened": ["slot-key"],
}


@pytest.mark.parametrize("stem", sorted(RULES))
def test_each_check_names_its_rule(stem: str):
    problems = validate_descriptor(ROOT / "tests" / "broken" / f"{stem}.yaml")
    assert [p.rule for p in problems] == RULES[stem]


def test_the_command_line_prints_file_line_col_pointer_message():
    paths = [str(p.relative_to(ROOT)) for p in BROKEN]
    result = run_cli("validate", *paths)
    assert result.returncode == 1, result.stderr
    wanted = [f"{p}:{line}" for p in paths for line in expected_lines(ROOT / p)]
    assert result.stdout.splitlines() == wanted


# -- the built-in descriptors ----------------------------------------------------------------


@pytest.mark.parametrize("path", FORMATS, ids=lambda p: p.stem)
def test_builtin_descriptor_is_valid(path: Path):
    assert [str(p) for p in validate_descriptor(path)] == []


@pytest.mark.parametrize("path", FORMATS, ids=lambda p: p.stem)
def test_builtin_descriptor_names_its_schema_on_the_first_line(path: Path):
    assert path.read_text(encoding="utf-8").splitlines()[0] == SCHEMA_COMMENT


def test_missing_file_is_one_problem():
    problems = validate_descriptor(ROOT / "tests" / "broken" / "no_such_file.yaml")
    assert [(p.line, p.col, p.rule) for p in problems] == [(1, 1, "file")]


def test_text_without_a_file_name_skips_the_stem_check():
    text = (ROOT / "formats" / "anthropic_messages.yaml").read_text(encoding="utf-8")
    data, problems = validate_text(text, "<string>")
    assert problems == [] and data["name"] == "anthropic_messages"


def test_an_unknown_key_lists_the_keys_allowed_there(tmp_path: Path):
    text = (ROOT / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    text = text.replace("  args_form: string\n", "  args_form: string\n  argz: x\n")
    _, problems = validate_text(text, "openai_chat.yaml")
    (problem,) = problems
    assert problem.pointer == "/calls/argz"
    assert problem.message.startswith("unknown key 'argz', expected one of: also, answered, args, ")


# Wire field names live in the descriptors only: where the engine reads a field of the wire,
# the descriptor must name it, and validate says where one is missing (no default in engine/).
# Each: (format, text that names the field, what is cut from it, line, pointer, key).
WIRE_FIELD_NAMES = [
    (
        "openai_chat",
        "key: index, alias: choice}",
        "key: index, ",
        line_of("openai_chat", "key: index, alias: choice}"),
        "/events/choice",
        "key",
    ),
    (
        "openai_chat",
        "equals: text}, field: text}",
        ", field: text",
        line_of("openai_chat", "equals: text}, field: text}"),
        "/text/parts",
        "field",
    ),
    (
        "openai_chat",
        "string: {type: text, field: text}}",
        ", field: text",
        line_of("openai_chat", "string: {type: text, field: text}}"),
        "/events/every/0/fold/parts/content/string",
        "field",
    ),
    (
        "gemini",
        "text: [text], unless",
        "text: [text], ",
        line_of("gemini", "text: [text], unless"),
        "/events/every/0/extend/join",
        "text",
    ),
    (
        "gemini",
        "          text_value: stringValue\n",
        "          text_value: stringValue\n",
        line_of("gemini", "        continuation:\n"),
        "/events/every/0/extend/continuation",
        "text_value",
    ),
]


@pytest.mark.parametrize("name, written, cut, line, pointer, key", WIRE_FIELD_NAMES)
def test_a_wire_field_the_engine_reads_must_be_named(name, written, cut, line, pointer, key):
    text = (ROOT / "formats" / f"{name}.yaml").read_text(encoding="utf-8")
    assert text.count(written) == 1
    _, problems = validate_text(text.replace(written, written.replace(cut, "")), f"{name}.yaml")
    assert [(p.line, p.pointer, p.message, p.rule) for p in problems] == [
        (line, pointer, f"missing required key '{key}'", "required")
    ]


# The results section's rules are the schema's ($defs/results); validate says each at its line
# (from the line where openai_chat's results open; a value is shown at its own line: a
# template's first line is the one after its key).
AT = line_of("openai_chat", "\nresults:") + 1  # the results line
RESULTS_RULES = [
    ("  mode: per_call\n", "  mode: one_message\n", [
        (AT, "/results", "mode one_message needs message", "required"),
        (AT + 7, "/results/result", "not used in mode one_message (it takes message)", "not"),
    ]),
    ("  mode: per_call\n", "  mode: restate\n", [
        (AT + 3, "/results/assistant", "mode restate puts each result into its call's part: an "
         "$echo with calls and merge, and this template has none", "template"),
        (AT + 7, "/results/result",
         "not used in mode restate (each result goes into its call's part of `assistant`)", "not"),
    ]),
    ("  mode: per_call\n", "  mode: each\n", [
        (AT + 1, "/results/mode", "'each' is not one of: per_call, one_message, restate", "enum"),
    ]),
    ("  leak_role: user\n", "  leak_role: system\n", [
        (AT + 10, "/results/leak_role", "system is not a role that carries tool results", "not"),
    ]),
    ("  leak_role: user\n", '  leak_role: ""\n', [
        (AT + 10, "/results/leak_role", "must not be empty", "minLength"),
    ]),
    ("  leak_role: user\n", "  leak_role: user\n  leak: {assistant: {}, reply: {}}\n", [
        (AT + 11, "/results/leak/reply", "unknown key 'reply', expected one of: assistant, message",
         "unknown-key"),
    ]),
    ("  leak_role: user\n", "  leak_role: user\n  leek: {}\n", [
        (AT + 11, "/results/leek", "unknown key 'leek', expected one of: assistant, leak, "
         "leak_role, message, mode, result", "unknown-key"),
    ]),
]


@pytest.mark.parametrize("written, instead, expected", RESULTS_RULES)
def test_a_results_rule_is_reported_at_its_line(written, instead, expected):
    text = (ROOT / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    assert text.count(written) == 1
    _, problems = validate_text(text.replace(written, instead), "openai_chat.yaml")
    assert [(p.line, p.pointer, p.message, p.rule) for p in problems] == expected


def test_without_a_mode_the_template_given_chooses_it():
    """No ``mode``: one_message when ``message`` is given, else per_call (the schema's if)."""
    text = (ROOT / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    text = text.replace("  mode: per_call\n", "")
    assert validate_text(text, "openai_chat.yaml")[1] == []
    both = text.replace("  leak_role: user\n", "  leak_role: user\n  message: {role: tool}\n")
    assert [(p.line, p.pointer, p.message) for p in validate_text(both, "openai_chat.yaml")[1]] == [
        (AT + 6, "/results/result", "not used in mode one_message (it takes message)")
    ]
    neither = text.replace("  result:\n", "  reply:\n")
    assert ("/results", "mode per_call needs result") in [
        (p.pointer, p.message) for p in validate_text(neither, "openai_chat.yaml")[1]
    ]


# The serve section's rules are the schema's ($defs/serve and below); its compiler says only
# what a schema cannot (templates, a path's {name} twice); lines from where ollama's serve opens.
SERVE = line_of("ollama", "\nserve:") + 1
FRAMING = line_of("ollama", "  framing:")  # after the endpoints, which lookups may lengthen
SERVE_RULES = [
    ("content_type: application/x-ndjson}", "content_type: application/x-ndjson, done: '[DONE]'}", [
        (FRAMING, "/serve/framing/done", "not an option of framing ndjson", "not"),
    ]),
    ("{kind: ndjson,", "{kind: ndjson, line_end: x,", [
        (FRAMING, "/serve/framing/line_end", "'x' is not one of: \"\\n\", \"\\r\\n\"", "enum"),
        (FRAMING, "/serve/framing/line_end", "not an option of framing ndjson", "not"),
    ]),
    ("{path: /api/chat,", "{path: api/chat,", [
        (SERVE + 2, "/serve/endpoints/0/path", "a request path starting with /", "pattern"),
    ]),
    ("{field: stream,", "{field: a.b,", [
        (SERVE + 2, "/serve/endpoints/0/stream/field",
         "a body field name: a letter or _, then letters, digits or _", "pattern"),
    ]),
    ("{field: stream, default: true}", "{default: true}", [
        (SERVE + 2, "/serve/endpoints/0/stream", "missing required key 'field'", "required"),
    ]),
    ("{path: /api/chat,", "{path: '/{m}/chat/{m}',", [
        (SERVE + 2, "/serve/endpoints/0/path", "{m} twice: each name is one segment", "path"),
    ]),
]


@pytest.mark.parametrize("written, instead, expected", SERVE_RULES)
def test_a_serve_rule_is_reported_at_its_line(written, instead, expected):
    text = (ROOT / "formats" / "ollama.yaml").read_text(encoding="utf-8")
    assert text.count(written) == 1
    _, problems = validate_text(text.replace(written, instead), "ollama.yaml")
    assert [(p.line, p.pointer, p.message, p.rule) for p in problems] == expected


def test_every_problem_of_a_serve_section_is_reported_at_its_line(tmp_path: Path):
    """A schema problem in the section no longer hides the compiler's: the framing's option
    (the schema), a template's construct and a path's name twice (the compiler), each at its
    own line, through the CLI (``engine.cli.main``, what ``python -m engine`` runs)."""
    text = (ROOT / "formats" / "ollama.yaml").read_text(encoding="utf-8")
    for written, instead in [
        ("content_type: application/x-ndjson}", "content_type: application/x-ndjson, done: x}"),
        ("    model: {$path: last.model,", "    model: {$pth: last.model,"),
        ("    body: {error: {$path: error}}", "    body: {error: {$if: error}}"),
        ("{path: /api/chat,", "{path: '/{m}/{m}',"),
    ]:
        assert text.count(written) == 1
        text = text.replace(written, instead)
    path = tmp_path / "ollama.yaml"
    path.write_text(text, encoding="utf-8")
    assert [(p.line, p.pointer, p.message) for p in validate_descriptor(path)] == [
        (SERVE + 2, "/serve/endpoints/0/path", "{m} twice: each name is one segment"),
        (FRAMING, "/serve/framing/done", "not an option of framing ndjson"),
        (FRAMING + 2, "/serve/response/model/$pth", "unknown construct $pth"),
        (FRAMING + 15, "/serve/error/body/error", "$if needs then or else"),
    ]
    result = run_cli("validate", str(path))
    assert result.returncode != 0
    for where in (f":{n}:" for n in (SERVE + 2, FRAMING, FRAMING + 2, FRAMING + 15)):
        assert f"{path}{where}" in result.stdout + result.stderr


def test_an_unquoted_is_null_means_the_string_null(tmp_path: Path):
    """YAML reads a bare ``null`` as None; ``is: null`` must mean what its author wrote."""
    text = (ROOT / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    quoted = '{field: tool_calls, is: "null"}'
    assert quoted in text
    path = tmp_path / "openai_chat.yaml"
    path.write_text(text.replace(quoted, "{field: tool_calls, is: null}"), encoding="utf-8")
    assert validate_descriptor(path) == []
    fmt = engine.load_format(path)
    assert fmt.recognizes({"role": "assistant", "content": "hi", "tool_calls": None})
    assert not fmt.recognizes({"role": "assistant", "content": "hi"})


def test_a_wrong_kind_lists_null_once(tmp_path: Path):
    text = (ROOT / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    _, problems = validate_text(text.replace('is: "null"', "is: nul"), "openai_chat.yaml")
    assert [p.message for p in problems] == [
        "'nul' is not one of: object, list, string, number, boolean, null"
    ]


# -- the schema itself -----------------------------------------------------------------------


def test_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema_path().name == "format.schema.json"


def _object_schemas(node, where=""):
    if isinstance(node, dict):
        if "properties" in node:
            yield where, node
        for key, value in node.items():
            yield from _object_schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _object_schemas(value, f"{where}/{i}")


# Objects that are open on purpose: the header is a mixin closed by the descriptor that uses
# it; a join rule's `string` is a part template whose fields are the wire's own; a field test's
# if/then only narrows a key that the predicate (closed) declares.
OPEN_ON_PURPOSE = {
    "/$defs/header",
    "/$defs/join_rule/properties/string",
    "/$defs/field_test/if",
    "/$defs/field_test/then",
}


def test_every_property_says_what_it_is_for():
    missing = []
    for where, node in _object_schemas(schema()):
        for name, prop in node["properties"].items():
            target = prop
            if "$ref" in prop and "description" not in prop:
                target = schema()["$defs"][prop["$ref"].rsplit("/", 1)[1]]
            if not target.get("description"):
                missing.append(f"{where}/properties/{name}")
    assert missing == []


def test_every_object_rejects_unknown_keys():
    open_objects = [
        where
        for where, node in _object_schemas(schema())
        if node.get("additionalProperties") is not False
        and node.get("unevaluatedProperties") is not False
        and where not in OPEN_ON_PURPOSE
    ]
    assert open_objects == []


def test_schema_and_engine_know_the_same_operations():
    from engine.compile.strategy import OPERATIONS

    assert sorted(operation_names()) == sorted(OPERATIONS)


def test_every_operation_has_its_own_definition():
    defs = schema()["$defs"]
    for name, ref in defs["operation_mapping"]["properties"].items():
        assert ref == {"$ref": f"#/$defs/op_{name}"}
        assert defs[f"op_{name}"]["description"]


def test_builtin_descriptors_keep_the_section_order():
    for path in FORMATS:
        data, _ = validate_text(path.read_text(encoding="utf-8"), str(path))
        order = section_order(descriptor_kind(data))
        keys = [k for k in data if k in order]
        assert keys == sorted(keys, key=order.index), path.name


def test_schema_file_is_plain_json():
    json.loads(schema_path().read_text(encoding="utf-8"))


def test_a_problem_two_schema_rules_report_is_said_once():
    """A field test with a wrong ``is`` breaks two schema rules at the same place with the same
    words; the reader sees it once (and the wrong value on its own line)."""
    text = (
        "name: v\ntitle: a variant\nextends: openai_chat\n"
        "recognize:\n  chunk: {field: object, is: 7}\n"
    )
    _, problems = validate_text(text, "v.yaml")
    said = [(p.line, p.col, p.pointer, p.message) for p in problems]
    assert len(said) == len(set(said))
    assert [p.pointer for p in problems] == ["/recognize/chunk", "/recognize/chunk/is"]
