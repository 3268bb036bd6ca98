"""Hardening, Gemini (issue 9, items 6 and 7): thought signatures and streamed arguments.

Item 6: a trailing ``{"text": "", "thoughtSignature": ...}`` part brings its signature onto the
text part before it, as the non-streaming response carries one part ``{text, thoughtSignature}``
(https://ai.google.dev/gemini-api/docs/thought-signatures); after a ``functionCall`` part it
stays its own part. Declared by ``join.attach`` in formats/gemini.yaml.

Item 7: Vertex AI streams a call's arguments as ``partialArgs`` pieces addressed by an RFC 9535
JSON path, over several parts joined by ``willContinue``
(https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Content#FunctionCall,
``PartialArg``: ``jsonPath``, ``stringValue``, ``numberValue``, ``boolValue``, ``nullValue``,
``willContinue``). Declared by ``extend.continuation``.

Recorded streams are the goldens in tests/golden/gemini/ (provenance in tests/golden/README.md);
the hand-made chunks below follow those recordings' shapes and the documented fields.
"""

from __future__ import annotations

import json
import random

import pytest
from conftest import GOLDEN, examples, read_stream, replay
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.model.jsonpath import normalized, singular_path

GEMINI = GOLDEN / "gemini"


def _buffer() -> engine.LLMStreamBuffer:
    return engine.LLMStreamBuffer(strategies=[engine.load_format("gemini")])


def _chunk(parts: list, finish: str | None = None) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-3-pro-preview"}


def _assemble(chunks: list[dict]) -> engine.LLMStreamBuffer:
    buf = _buffer()
    for chunk in chunks:
        buf.add(chunk)
    buf.close()
    return buf


# -- item 6: thought signatures --------------------------------------------------------------


def test_trailing_signature_part_joins_the_answer_text_before_it():
    events = read_stream(GEMINI / "vercel_text_thought_signature.jsonl")
    signature = events[-1]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    buf = replay(events, "gemini")
    text = 'There are **3** "r"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.'
    assert buf.as_dict()["parts"] == [{"text": text, "thoughtSignature": signature}]
    assert buf.get_content() == text


def test_joined_signature_goes_back_on_the_text_part_in_the_history():
    events = read_stream(GEMINI / "vercel_text_thought_signature.jsonl")
    buf = replay(events, "gemini")
    strategy = buf.strategy
    leak = engine.ToolCallRecord("f", {}, "ok", None, None)
    message = buf.as_dict()
    assistant = strategy.result_messages(message, [leak])[0]
    assert assistant["parts"][0].get("thoughtSignature") == message["parts"][0]["thoughtSignature"]


def test_signature_after_a_function_call_part_stays_its_own_part():
    # pydantic_ai_fc_thought_signature: the call part carries its signature; the empty text
    # part that follows has nothing to join (a call part has no text).
    buf = replay(read_stream(GEMINI / "pydantic_ai_fc_thought_signature.jsonl"), "gemini")
    parts = buf.as_dict()["parts"]
    assert len(parts) == 2
    assert parts[0]["functionCall"] == {"name": "get_country", "args": {}}
    assert parts[0]["thoughtSignature"].startswith("EpwICpkI")
    assert parts[1] == {"text": ""}
    # and a signature-only part after a call part is kept as sent, not merged anywhere
    call = {"functionCall": {"name": "get_country", "args": {}}}
    buf = _assemble([_chunk([call]), _chunk([{"text": "", "thoughtSignature": "S1"}], "STOP")])
    assert buf.as_dict()["parts"] == [call, {"text": "", "thoughtSignature": "S1"}]
    assert [c.name for c in buf.calls()] == ["get_country"]


def test_signature_part_with_text_of_its_own_stays_its_own_part():
    signed = {"text": " world", "thoughtSignature": "S1"}
    buf = _assemble([_chunk([{"text": "Hello"}]), _chunk([signed], "STOP")])
    assert buf.as_dict()["parts"] == [{"text": "Hello"}, signed]
    assert buf.get_content() == "Hello world"


def test_a_second_signature_never_replaces_the_first():
    buf = _assemble(
        [
            _chunk([{"text": "Hi"}]),
            _chunk([{"text": "", "thoughtSignature": "S1"}]),
            _chunk([{"text": "", "thoughtSignature": "S2"}], "STOP"),
        ]
    )
    assert buf.as_dict()["parts"] == [
        {"text": "Hi", "thoughtSignature": "S1"},
        {"text": "", "thoughtSignature": "S2"},
    ]


def test_signature_joins_only_a_run_of_its_own_kind():
    thought = {"text": "thinking", "thought": True}
    # an empty thought part with the signature closes the thought run (one part, signed) ...
    buf = _assemble(
        [
            _chunk([thought]),
            _chunk([{"text": "", "thought": True, "thoughtSignature": "S1"}]),
            _chunk([{"text": "Answer"}], "STOP"),
        ]
    )
    assert buf.as_dict()["parts"] == [
        {"text": "thinking", "thought": True, "thoughtSignature": "S1"},
        {"text": "Answer"},
    ]
    # ... and an answer's signature part does not join a thought part
    buf = _assemble([_chunk([thought]), _chunk([{"text": "", "thoughtSignature": "S1"}], "STOP")])
    assert buf.as_dict()["parts"] == [thought, {"text": "", "thoughtSignature": "S1"}]
    assert buf.get_content() == ""


def test_signature_join_does_not_depend_on_how_parts_are_chunked():
    events = read_stream(GEMINI / "vercel_text_thought_signature.jsonl")
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    one_chunk = _assemble([_chunk(parts, "STOP")])
    assert one_chunk.as_dict()["parts"] == replay(events, "gemini").as_dict()["parts"]


# -- item 7: streamed arguments (partialArgs) -------------------------------------------------

NESTED = GEMINI / "vercel_vertex_stream_fc_nested.jsonl"

INGREDIENTS = [
    ("16 oz", "Lasagna noodles"),
    ("1 lb", "Ground beef"),
    ("15 oz", "Ricotta cheese"),
    ("3 cups", "Mozzarella cheese"),
    ("1/2 cup", "Parmesan cheese"),
    ("24 oz", "Tomato sauce"),
    ("1", "Egg"),
    ("2 cloves", "Garlic"),
    ("1 tsp", "Salt"),
    ("1/2 tsp", "Pepper"),
]
STEPS = [
    "Preheat oven to 375°F (190°C).",
    "Cook lasagna noodles according to package directions, drain and set aside.",
    "Brown ground beef with minced garlic in a skillet. Drain fat and stir in tomato sauce. "
    "Simmer for 10 minutes.",
    "In a bowl, mix ricotta cheese, egg, salt, pepper, and Parmesan cheese.",
    "In a 9x13 baking dish, spread a thin layer of meat sauce.",
    "Layer noodles, ricotta mixture, mozzarella, and meat sauce. Repeat.",
    "Top with remaining mozzarella cheese.",
    "Cover with foil and bake for 25 minutes.",
    "Remove foil and bake for another 25 minutes until golden.",
    "Let stand for 15 minutes before serving.",
]
RECIPE = {
    "recipe": {
        "ingredients": [{"amount": a, "name": n} for a, n in INGREDIENTS],
        "name": "Lasagna",
        "steps": STEPS,
    }
}


def test_recorded_vertex_nested_stream_is_one_call_with_all_its_arguments():
    events = read_stream(NESTED)
    buf = replay(events, "gemini")
    parts = buf.as_dict()["parts"]
    assert len(parts) == 1
    assert parts[0]["functionCall"] == {"name": "cookRecipe", "args": RECIPE}
    signature = events[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert parts[0]["thoughtSignature"] == signature
    assert [(c.name, c.arguments) for c in buf.calls()] == [("cookRecipe", RECIPE)]
    assert buf.stop_reason == "STOP" and buf.is_finished()


def test_recorded_vertex_nested_call_is_forming_and_never_runnable_before_its_last_part():
    events = read_stream(NESTED)
    buf = _buffer()
    for event in events[:-1]:
        buf.add(event)
        assert buf.forming() == engine.Forming(True, "cookRecipe")
        assert buf.calls() == []
    buf.add(events[-1])
    assert [c.arguments for c in buf.calls()] == [RECIPE]


def test_recorded_vertex_nested_stream_does_not_depend_on_chunking():
    events = read_stream(NESTED)
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    expected = replay(events, "gemini").as_dict()
    assert _assemble([_chunk(parts, "STOP")]).as_dict() == expected
    rng = random.Random(9)
    cuts = sorted(rng.sample(range(1, len(parts)), 12))
    groups = [parts[a:b] for a, b in zip([0, *cuts], [*cuts, len(parts)], strict=True)]
    chunks = [_chunk(g) for g in groups[:-1]] + [_chunk(groups[-1], "STOP")]
    assert _assemble(chunks).as_dict() == expected


def _streamed_call(name: str, pieces: list[list[dict]]) -> list[dict]:
    """A call as Vertex AI streams it (the recorded shape): an opening part with the name and
    willContinue, a part per list of pieces, then the empty call part that ends it."""
    chunks = [_chunk([{"functionCall": {"name": name, "willContinue": True}}])]
    for group in pieces:
        chunks.append(_chunk([{"functionCall": {"partialArgs": group, "willContinue": True}}]))
    chunks.append(_chunk([{"functionCall": {}}], "STOP"))
    return chunks


def _args_of(chunks: list[dict]) -> dict:
    buf = _assemble(chunks)
    (call,) = buf.calls()
    return call.arguments


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$.名前.location", {"名前": {"location": "v"}}),  # member-name shorthand, any Unicode
        ("$.ça_1", {"ça_1": "v"}),
        ("$._x", {"_x": "v"}),
        ("$['a b']", {"a b": "v"}),  # bracketed names
        ('$["x"]', {"x": "v"}),
        ("$['it\\'s']", {"it's": "v"}),  # the delimiting quote, escaped
        ('$["say \\"hi\\""]', {'say "hi"': "v"}),
        ("$['say \"hi\"']", {'say "hi"': "v"}),  # the other quote needs no escape
        ("$['tab\\there']", {"tab\there": "v"}),
        ("$['back\\\\slash\\/']", {"back\\slash/": "v"}),
        ("$['\\u00e9t\\u00C9']", {"étÉ": "v"}),
        ("$['\\ud83d\\ude00']", {"\U0001f600": "v"}),  # a surrogate pair is one character
        ("$[ 'spaced' ]", {"spaced": "v"}),  # blank space inside the brackets
        ("$.list[0]", {"list": ["v"]}),  # index selectors
        ("$['list'][0][0]", {"list": [["v"]]}),
        ("$.a.b.c[0].d", {"a": {"b": {"c": [{"d": "v"}]}}}),
    ],
)
def test_rfc9535_singular_paths_place_the_value(path, expected):
    pieces = [[{"jsonPath": path, "stringValue": "v"}]]
    assert _args_of(_streamed_call("f", pieces)) == expected


def test_one_leaf_spelled_three_ways_continues_one_string():
    pieces = [
        [{"jsonPath": "$.city", "stringValue": "San", "willContinue": True}],
        [{"jsonPath": "$['city']", "stringValue": " Fran", "willContinue": True}],
        [{"jsonPath": '$["city"]', "stringValue": "cisco"}],
    ]
    assert _args_of(_streamed_call("f", pieces)) == {"city": "San Francisco"}


def test_every_documented_value_kind_is_placed():
    pieces = [
        [
            {"jsonPath": "$.n", "numberValue": 2.5},
            {"jsonPath": "$.flags[0]", "boolValue": False},
            {"jsonPath": "$.flags[1]", "boolValue": True},
            {"jsonPath": "$.none", "nullValue": "NULL_VALUE"},  # the REST enum form
            {"jsonPath": "$.also_none", "nullValue": None},  # the proto3 JSON form
        ]
    ]
    assert _args_of(_streamed_call("f", pieces)) == {
        "n": 2.5,
        "flags": [False, True],
        "none": None,
        "also_none": None,
    }


def test_a_piece_without_a_value_is_counted_not_lost_silently():
    pieces = [[{"jsonPath": "$.a", "stringValue": "x"}, {"jsonPath": "$.b"}]]
    buf = _assemble(_streamed_call("f", pieces))
    assert [c.arguments for c in buf.calls()] == [{"a": "x"}]
    assert buf.unknown_events == {"partialArgs piece without a value": 1}


def test_a_bare_will_continue_part_keeps_the_call_open():
    # as between two array items in the recorded Vertex stream: no pieces, still the same call
    chunks = [
        _chunk([{"functionCall": {"name": "f", "willContinue": True}}]),
        _chunk(
            [
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.xs[0].k", "numberValue": 1}],
                        "willContinue": True,
                    }
                }
            ]
        ),
        _chunk([{"functionCall": {"willContinue": True}}]),
        _chunk(
            [{"functionCall": {"partialArgs": [{"jsonPath": "$.xs[1].k", "numberValue": 2}]}}],
            "STOP",
        ),
    ]
    buf = _assemble(chunks)
    assert buf.as_dict()["parts"] == [
        {"functionCall": {"name": "f", "args": {"xs": [{"k": 1}, {"k": 2}]}}}
    ]


def _state(buf: engine.LLMStreamBuffer) -> tuple:
    return (
        json.dumps(buf.as_dict(), sort_keys=True),
        buf.get_content(),
        list(buf.calls()),
        buf.forming(),
        buf.is_finished(),
        dict(buf.unknown_events),
    )


OPEN = [
    _chunk([{"text": "Looking it up."}]),
    _chunk([{"functionCall": {"name": "f", "willContinue": True}}]),
    _chunk(
        [
            {
                "functionCall": {
                    "partialArgs": [
                        {"jsonPath": "$.s", "stringValue": "ab", "willContinue": True},
                        {"jsonPath": "$.xs[0]", "numberValue": 1},
                    ],
                    "willContinue": True,
                }
            }
        ]
    ),
]


@pytest.mark.parametrize(
    "path",
    [
        "s",  # no root
        "$",  # the arguments object itself
        "$.",
        "$.1abc",  # a shorthand name cannot start with a digit
        "$..s",
        "$.xs[*]",
        "$.xs[0,1]",
        "$.xs[0:1]",
        "$.xs[-1]",
        "$.xs[01]",
        "$[?@.s]",
        "$['open",
        "$['bad\\q']",
        "$['\\ud800']",  # a lone surrogate escape
        "$['\\u12']",
        "$['ctl\x01']",
        '$["\\\'"]',  # \' only inside single quotes
        "$[0]",  # the arguments are an object
        "$.xs[2]",  # a hole after the one item
        "$.s.k",  # s is a string
        "$.xs.k",  # xs is a list
        "$.xs[0][0]",  # xs[0] is a number
        "$.t[0].u[1]",  # a hole in a list the same piece creates
    ],
)
def test_an_invalid_path_is_a_chunk_error_and_the_buffer_is_unchanged(path):
    buf = _buffer()
    for chunk in OPEN:
        buf.add(chunk)
    before = _state(buf)
    bad = _chunk(
        [
            {
                "functionCall": {
                    "partialArgs": [
                        {"jsonPath": "$.ok", "stringValue": "fine"},  # a piece before the bad one
                        {"jsonPath": path, "stringValue": "x"},
                    ],
                    "willContinue": True,
                }
            },
            {"text": " Still looking."},
        ]
    )
    with pytest.raises(engine.ChunkError) as err:
        buf.add(bad)
    assert err.value.index == len(OPEN)
    assert repr(path) in str(err.value)
    assert _state(buf) == before
    # the stream goes on as if that chunk had never come
    buf.add(
        _chunk(
            [{"functionCall": {"partialArgs": [{"jsonPath": "$.s", "stringValue": "c"}]}}], "STOP"
        )
    )
    buf.close()
    assert [(c.name, c.arguments) for c in buf.calls()] == [("f", {"s": "abc", "xs": [1]})]
    assert buf.get_content() == "Looking it up."


def test_pieces_of_one_chunk_are_checked_against_each_other():
    # the first piece makes `a` a string; the second needs an object there
    buf = _buffer()
    chunks = _streamed_call(
        "f", [[{"jsonPath": "$.a", "stringValue": "x"}, {"jsonPath": "$.a.b", "numberValue": 1}]]
    )
    buf.add(chunks[0])
    with pytest.raises(engine.ChunkError, match=r"\$\['a'\] is a value"):
        buf.add(chunks[1])
    assert buf.as_dict()["parts"] == [{"functionCall": {"name": "f", "args": {}}}]


def test_a_bad_piece_keeps_out_the_parts_before_it_in_its_chunk():
    buf = _buffer()
    bad = _chunk(
        [
            {"text": "Let me check."},
            {"functionCall": {"name": "f", "willContinue": True}},
            {"functionCall": {"partialArgs": [{"jsonPath": "$.a b", "stringValue": "x"}]}},
        ]
    )
    with pytest.raises(engine.ChunkError, match=r"chunk 0: .*'\$\.a b' at offset 3"):
        buf.add(bad)
    assert buf.get_content() == "" and buf.text() == ""
    assert buf.calls() == [] and not buf.forming()


def test_malformed_pieces_are_chunk_errors_naming_what_is_missing():
    buf = _buffer()
    buf.add(_chunk([{"functionCall": {"name": "f", "willContinue": True}}]))
    for pieces, words in [
        ({"jsonPath": "$.a"}, "partialArgs must be a list"),
        (["$.a"], r"partialArgs\[0\] must be an object"),
        ([{"stringValue": "x"}], r"partialArgs\[0\] has no jsonPath"),
    ]:
        with pytest.raises(engine.ChunkError, match=words):
            buf.add(_chunk([{"functionCall": {"partialArgs": pieces, "willContinue": True}}]))
    assert buf.forming() == engine.Forming(True, "f")


_NAMES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_TOKENS = st.lists(st.one_of(_NAMES, st.integers(0, 2**53 - 1)), max_size=5).map(tuple)


@settings(max_examples=examples(300), deadline=None)
@given(_TOKENS)
def test_a_normalized_path_reads_back_as_its_tokens(tokens):
    # RFC 9535 2.7: every singular path has a normalized form; the reader takes all of them
    assert singular_path(normalized(tokens)) == tokens
