"""The one path language (engine/paths.py): its grammar, its forms, its problems.

A path is a field chain with bracket steps: ``[n]`` an index, ``[slot]`` the item a slotted
list keeps at the SLOT the event carries, ``[*]`` every item. Each place of a descriptor
compiles it into one form (read, presence, target, chain); JMESPath only behind
``{jmespath: expr}``. The old dialects do not compile, and say what their new form is.
"""

from __future__ import annotations

import pytest

from engine.compile.paths import (
    PathError,
    Step,
    compile_get,
    compile_lookup,
    compile_presence,
    compile_read,
    old_form,
    parse,
    parse_chain,
    parse_target,
    read_steps,
)
from engine.compile.predicates import compile_predicate
from engine.compile.templates import TemplateError, compile_template

EVENT = {
    "index": 1,
    "delta": {"text": "hi", "calls": [{"name": "f"}, {"name": "g", "id": None}]},
    "choices": [{"index": 0, "delta": {"content": "x"}}],
}


# -- the grammar -----------------------------------------------------------------------------


def test_parse_gives_every_kind_of_step_with_its_column():
    assert parse("a.b[0][index][*].c") == (
        Step("field", "a", column=1),
        Step("field", "b", column=3),
        Step("index", "0", index=0, column=4),
        Step("slot", "index", column=7),
        Step("every", "*", column=14),
        Step("field", "c", column=18),
    )
    assert parse("") == ()
    assert parse("output[output_index].content[choice.index]")[-1] == Step(
        "slot", "choice.index", column=29
    )


@pytest.mark.parametrize(
    ("path", "column", "words"),
    [
        ("a..b", 3, "unexpected '.'"),
        ("a.", 2, "ends with '.'"),
        ("a[0", 2, "never closed"),
        ("a[]", 2, "empty []"),
        ("[0]", 1, "unexpected '['"),
        ("a b", 2, "unexpected ' '"),
        ("a[x y]", 4, "slot [x y]"),
        ("a[0]b", 5, "unexpected 'b'"),
    ],
)
def test_a_path_that_does_not_parse_names_its_column(path, column, words):
    with pytest.raises(PathError) as caught:
        parse(path)
    assert caught.value.column == column
    assert words in str(caught.value)


# -- the read form ---------------------------------------------------------------------------


def test_read_form_reads_fields_and_indexes_and_none_when_absent():
    assert compile_read("delta.text")(EVENT, None) == "hi"
    assert compile_read("delta.calls[1].name")(EVENT, None) == "g"
    assert compile_read("delta.calls[2].name")(EVENT, None) is None
    assert compile_read("delta.text[0]")(EVENT, None) is None  # an index of a non-list
    assert compile_read("index.x")(EVENT, None) is None
    assert compile_read("")(EVENT, None) is EVENT
    assert compile_get("delta.calls[0]")(EVENT["delta"] | {"calls": []}) is None


def test_read_form_reads_the_followed_choice_through_its_alias():
    choice = EVENT["choices"][0]
    assert compile_read("choice.delta.content", "choice")(EVENT, choice) == "x"
    assert compile_read("choice", "choice")(EVENT, choice) is choice
    assert compile_read("choice.delta[0]", "choice")({}, {"delta": ["y"]}) == "y"


def test_jmespath_only_behind_its_marker():
    read = compile_read({"jmespath": "delta.calls[*].name"})
    assert read(EVENT, None) == ["f", "g"]
    both = compile_read({"jmespath": "{t: delta.text, i: index}"})
    assert both(EVENT, None) == {"t": "hi", "i": 1}
    with_alias = compile_read({"jmespath": "choice.delta.content"}, "choice")
    assert with_alias(EVENT, EVENT["choices"][0]) == "x"
    with pytest.raises(PathError, match="JMESPath does not compile: incomplete expression"):
        compile_read({"jmespath": "a | ["})
    with pytest.raises(PathError, match="a read path is a string or"):
        compile_read({"jmespath": "a", "extra": 1})


@pytest.mark.parametrize("path", ["delta.calls[*].name", "content[index]"])
def test_a_read_refuses_slot_and_star_steps(path):
    with pytest.raises(PathError, match="a read gives one value") as caught:
        compile_read(path)
    assert caught.value.column == path.index("[") + 1


# -- the presence form -----------------------------------------------------------------------


def test_presence_form_tells_a_null_key_from_an_absent_one():
    present = compile_presence("delta.calls[1].id")
    assert present(EVENT) is True
    assert compile_presence("delta.calls[0].id")(EVENT) is False
    assert compile_presence("delta.calls[1]")(EVENT) is True
    assert compile_presence("delta.calls[2]")(EVENT) is False
    with pytest.raises(PathError):
        compile_presence("")


def test_is_null_compiles_through_the_presence_form_with_indexes():
    is_null = compile_predicate({"field": "calls[0].id", "is": "null"})
    assert is_null({"calls": [{"id": None}]})
    assert not is_null({"calls": [{}]})
    assert not is_null({"calls": []})


# -- the target form and patterns -------------------------------------------------------------


def test_target_form_compiles_slots_to_readers_of_the_event():
    segments = parse_target("output[output_index].content[choice.index].text", "choice")
    assert [s.field for s in segments] == ["output", None, "content", None, "text"]
    assert [s.slot_path for s in segments if s.field is None] == ["output_index", "choice.index"]
    outer, inner = segments[1].slot, segments[3].slot
    assert outer is not None and inner is not None
    assert outer({"output_index": 3}, None) == 3
    assert inner({}, {"index": 2}) == 2
    assert [s.any for s in parse_target("content[*].text")] == [False, True, False]
    assert parse_target("") == ()


def test_a_target_refuses_an_index():
    with pytest.raises(PathError, match=r"an index \[0\] at column 8 names no item") as caught:
        parse_target("content[0].text")
    assert caught.value.in_slot and caught.value.column == 8


# -- the chain form ----------------------------------------------------------------------------


def test_chain_form_takes_fields_only():
    assert parse_chain("function.arguments") == ("function", "arguments")
    with pytest.raises(PathError, match=r"no \[..\] here: '\[' at column 6") as caught:
        parse_chain("input[0]")
    assert caught.value.column == 6
    with pytest.raises(PathError, match="unexpected '.' at column 3"):
        parse_chain("a..b")
    with pytest.raises(PathError, match="got nothing"):
        parse_chain("")


# -- old dialects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "form", "new"),
    [
        ("a.0.b", "template", "a[0].b"),
        ("record.items.10", "template", "record.items[10]"),
        ("a || b", "read", '{jmespath: "a || b"}'),
        ("tool_calls[*].name", "read", '{jmespath: "tool_calls[*].name"}'),
        ('a."b c"', "read", '{jmespath: "a.\\"b c\\""}'),
        ("a || b", "template", None),  # a template has no JMESPath to offer
        ("a..b", "read", None),  # in no dialect at all
        ("delta.text", "read", None),  # already in the one language
    ],
)
def test_old_form_says_the_new_form(path, form, new):
    assert old_form(path, form) == new


def test_a_read_in_an_old_dialect_carries_its_new_form_as_a_hint():
    with pytest.raises(PathError) as caught:
        read_steps("choices[0].delta || delta")
    assert caught.value.hint == '{jmespath: "choices[0].delta || delta"}'
    assert str(caught.value).endswith('write {jmespath: "choices[0].delta || delta"}')
    with pytest.raises(PathError) as caught:
        compile_lookup("record.0.name")
    assert caught.value.hint == "record[0].name"


# -- templates through the read form -------------------------------------------------------------


def test_templates_read_indexes_in_the_one_language():
    template = compile_template({"first": {"$path": "records[0].name"}})
    assert template.render({"records": [{"name": "f"}]}) == {"first": "f"}
    assert template.render({"records": []}) == {}


def test_a_template_reports_every_problem_each_at_its_pointer():
    spec = {
        "a": {"$pth": 1},
        "b": {"$path": "x.0"},
        "c": [{"$result": "r", "as": "json"}, {"$if": "x"}],
    }
    with pytest.raises(TemplateError) as caught:
        compile_template(spec, "/results/result")
    assert [(pointer, rule) for pointer, _, rule in caught.value.problems] == [
        ("/results/result/a/$pth", "template"),
        ("/results/result/b/$path", "old-path"),
        ("/results/result/c/0/as", "template"),
        ("/results/result/c/1", "template"),
    ]
    assert str(caught.value) == "/results/result/a/$pth: unknown construct $pth"
