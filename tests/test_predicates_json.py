"""Predicates compare as JSON does, not as Python does (engine/compile/predicates.py).

In Python ``True == 1`` and ``bool`` is an ``int``; in JSON ``true`` is not the number 1, and
``1`` is ``1.0``. A descriptor's ``equals``, ``in``, ``is`` and ``prefix`` speak JSON.
"""

from __future__ import annotations

import copy

import pytest
from conftest import GOLDEN, read_stream, replay

import engine
from engine.compile.predicates import compile_predicate


def _holds(spec: dict, value: object) -> bool:
    return compile_predicate({"field": "v", **spec})({"v": value})


@pytest.mark.parametrize(
    "spec, value, expected",
    [
        ({"equals": True}, 1, False),
        ({"equals": True}, 1.0, False),
        ({"equals": True}, True, True),
        ({"equals": False}, 0, False),
        ({"equals": 1}, True, False),
        ({"equals": 0}, False, False),
        ({"equals": 1}, 1.0, True),
        ({"equals": [1, True]}, [True, 1], False),
        ({"equals": [1, True]}, [1.0, True], True),
        ({"equals": {"a": 1}}, {"a": True}, False),
        ({"equals": {"a": 1}}, {"a": 1, "b": 2}, False),
        ({"equals": {"a": [0]}}, {"a": [0.0]}, True),
        ({"equals": None}, None, True),
        ({"equals": "1"}, 1, False),
        ({"in": [None]}, [1], False),
        ({"in": [None]}, {"a": 1}, False),
        ({"in": [None]}, None, True),
        ({"in": [True]}, 1, False),
        ({"in": [1]}, True, False),
        ({"in": [1]}, 1.0, True),
        ({"in": [0, "x"]}, False, False),
        ({"in": [[1]]}, [True], False),
        ({"in": [[1]]}, [1], True),
        ({"in": ["", None]}, ["x"], False),
        ({"is": "number"}, False, False),
        ({"is": "number"}, True, False),
        ({"is": "number"}, 0, True),
        ({"is": "number"}, 2.5, True),
        ({"is": "boolean"}, 0, False),
        ({"is": "boolean"}, False, True),
        ({"prefix": "12"}, 123, False),
        ({"prefix": "12"}, 12.5, False),
        ({"prefix": "12"}, "123", True),
    ],
)
def test_a_predicate_compares_as_json(spec, value, expected):
    assert _holds(spec, value) is expected


@pytest.mark.parametrize("expected", [True, 1, None, "x", [1], {"a": True}])
def test_not_of_a_one_field_equals_is_the_negation(expected):
    """``{not: {field: F, equals: V}}`` has its own fast path: it is the negation of the other."""
    matches = compile_predicate({"field": "v", "equals": expected})
    differs = compile_predicate({"not": {"field": "v", "equals": expected}})
    for value in (True, False, 1, 0, 1.0, None, "x", [1], [True], {"a": True}, {"a": 1}):
        assert differs({"v": value}) is (not matches({"v": value}))


def test_a_gemini_part_whose_thought_is_1_is_not_a_thought():
    """A part ``{"text": ..., "thought": 1}`` is not a thought (``thought`` is a boolean on the
    wire): its text stays in the message's display text and out of its reasoning."""
    events = read_stream(GOLDEN / "gemini" / "hand_thought_parts_signature.jsonl")
    edited = copy.deepcopy(events)
    part = edited[3]["candidates"][0]["content"]["parts"][0]
    assert part == {"text": " is Canberra."}
    part["thought"] = 1
    fmt = engine.load_format("gemini")
    before, after = replay(events, "gemini"), replay(edited, "gemini")
    assert before.get_content() == "The capital of Australia is Canberra."
    assert after.get_content() == before.get_content()
    assert fmt.content_text(after.as_dict()) == "The capital of Australia is Canberra."
    assert fmt.reasoning_text(after.as_dict()) == fmt.reasoning_text(before.as_dict())
    assert " is Canberra." not in fmt.reasoning_text(after.as_dict())
