"""``engine.partial.PartialJSON``: a call's arguments so far, as API.md ("Events") defines them.

The reference here is :func:`oracle`, a deliberately plain recursive-descent reading of a
prefix, re-parsed from scratch each time (quadratic over a stream; it is only the oracle). The
reader under test must agree with it after every fragment, however the text is cut, and with
``json.loads`` at the end.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import examples, read_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.model.jsonpath import singular_path
from engine.model.partial import PartialJSON

HERE = Path(__file__).parent
SUITE = HERE / "jsontestsuite"


# -- the oracle ---------------------------------------------------------------------------

_CUT = object()  # nothing of this value is visible yet
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ORACLE_LITERALS = {
    "true": True,
    "false": False,
    "null": None,
    "NaN": math.nan,
    "-Infinity": -math.inf,
    "Infinity": math.inf,
}


def oracle(prefix: str) -> dict:
    """API.md's reading of ``prefix``, a prefix of a valid JSON object text."""
    reader = _Oracle(prefix)
    reader.skip_ws()
    if reader.pos == len(prefix):
        return {}
    assert prefix[reader.pos] == "{"
    value, _ = reader.value()
    return value


class _Oracle:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_ws(self) -> None:
        while not self.at_end() and self.text[self.pos] in " \t\n\r":
            self.pos += 1

    def value(self):
        """(the visible value or _CUT, whether it is whole)."""
        c = self.text[self.pos]
        if c == "{":
            return self.container({}, "}")
        if c == "[":
            return self.container([], "]")
        if c == '"':
            return self.string()
        for literal, value in _ORACLE_LITERALS.items():
            if self.text.startswith(literal, self.pos):
                self.pos += len(literal)
                return value, True
        if c in "tfnNI" or self.text[self.pos : self.pos + 2] == "-I":
            return _CUT, False  # a literal not yet whole
        start = self.pos
        while not self.at_end() and self.text[self.pos] in "+-.eE0123456789":
            self.pos += 1
        if self.at_end():
            return _CUT, False  # nothing has ended the number yet
        return json.loads(self.text[start : self.pos]), True

    def container(self, out, closer):
        self.pos += 1
        while True:
            self.skip_ws()
            if self.at_end():
                return out, False
            if self.text[self.pos] == closer:
                self.pos += 1
                return out, True
            if self.text[self.pos] == ",":
                self.pos += 1
                self.skip_ws()
                if self.at_end():
                    return out, False
            if isinstance(out, dict):
                key, whole = self.string()
                if not whole:
                    return out, False
                self.skip_ws()
                if self.at_end():
                    return out, False
                assert self.text[self.pos] == ":"
                self.pos += 1
                self.skip_ws()
                if self.at_end():
                    return out, False
            item, whole = self.value()
            if item is _CUT:
                return out, False
            if isinstance(out, dict):
                out[key] = item
            else:
                out.append(item)
            if not whole:
                return out, False

    def string(self):
        text, out = self.text, []
        self.pos += 1
        while True:
            if self.at_end():
                return "".join(out), False
            c = text[self.pos]
            if c == '"':
                self.pos += 1
                return "".join(out), True
            if c != "\\":
                out.append(c)
                self.pos += 1
                continue
            escape = text[self.pos : self.pos + 6]
            if len(escape) < 2 or (escape[1] == "u" and len(escape) < 6):
                return "".join(out), False  # never cut inside an escape
            if escape[1] != "u":
                out.append(_SIMPLE[escape[1]])
                self.pos += 2
                continue
            code = int(escape[2:], 16)
            after = text[self.pos + 6 : self.pos + 12]
            if 0xD800 <= code <= 0xDBFF:
                if len(after) < 6 and "\\u".startswith(after[:2]):
                    return "".join(out), False  # a high surrogate waits for its low
                if after[:2] == "\\u" and 0xDC00 <= int(after[2:], 16) <= 0xDFFF:
                    low = int(after[2:], 16)
                    out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                    self.pos += 12
                    continue
            out.append(chr(code))
            self.pos += 6


def canon(value) -> str:
    """Exact comparison: key order, int vs float, NaN, lone surrogates."""
    return json.dumps(value)


def stream(text: str, cuts) -> PartialJSON:
    """Feed ``text`` cut at ``cuts``, checking ``value`` against the oracle after each piece."""
    reader = PartialJSON()
    same = reader.value
    bounds = [0, *sorted(set(cuts)), len(text)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        reader.feed(text[a:b])
        assert not reader.invalid, (text[:b], reader.error)
        assert canon(reader.value) == canon(oracle(text[:b])), text[:b]
        assert reader.value is same
    return reader


# -- unit cases from API.md's definition ---------------------------------------------------


@pytest.mark.parametrize(
    "prefix, expected",
    [
        ("", {}),
        ("  \n", {}),
        ("{", {}),
        ('{"a": "', {"a": ""}),  # an open string is cut where the text stops
        ('{"a": "xy', {"a": "xy"}),
        ('{"a": 12', {}),  # a number once the character after it ends it
        ('{"a": 12 ', {"a": 12}),
        ('{"a": 12,', {"a": 12}),
        ('{"a": -', {}),
        ('{"a": 1.5e', {}),
        ('{"a"', {}),  # a key still waiting for its value is absent
        ('{"a":', {}),
        ('{"a": ', {}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": tr', {}),  # true, false, null appear once whole
        ('{"a": true', {"a": True}),
        ('{"a": fals', {}),
        ('{"a": false', {"a": False}),
        ('{"a": null', {"a": None}),
        ('{"a": "x\\', {"a": "x"}),  # never inside an escape
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "x\\u00e9', {"a": "xé"}),
        ('{"a": "x\\n', {"a": "x\n"}),
        ('{"a": "\\ud83d', {"a": ""}),  # a high surrogate waits for its low
        ('{"a": "\\ud83d\\', {"a": ""}),
        ('{"a": "\\ud83d\\ude0', {"a": ""}),
        ('{"a": "\\ud83d\\ude00', {"a": "😀"}),
        ('{"a": "\\ud83dx', {"a": "\ud83dx"}),  # not followed by a low: alone, as json.loads
        ('{"a": "\\ud83d\\n', {"a": "\ud83d\n"}),
        ('{"a": "\\ud83d\\u0041', {"a": "\ud83dA"}),
        ('{"a": [', {"a": []}),  # an array its complete items and the item being streamed
        ('{"a": [1', {"a": []}),
        ('{"a": [1,', {"a": [1]}),
        ('{"a": [1, "b', {"a": [1, "b"]}),
        ('{"a": [1, {"b": [', {"a": [1, {"b": []}]}),
        ('{"a": {"b": {"c', {"a": {"b": {}}}),
        ('{"a": 1, "a": "', {"a": ""}),  # a duplicate: the member being streamed replaces
        ('{"a": 1, "b": 2, "a": 3}', {"a": 3, "b": 2}),  # last wins, first position
    ],
)
def test_reading_of_a_prefix(prefix, expected):
    reader = PartialJSON()
    reader.feed(prefix)
    assert canon(reader.value) == canon(expected)
    assert not reader.invalid
    assert canon(oracle(prefix)) == canon(expected)  # the oracle reads API.md the same way
    one_by_one = PartialJSON()
    for ch in prefix:
        one_by_one.feed(ch)
    assert canon(one_by_one.value) == canon(expected)


@pytest.mark.parametrize(
    "number, value",
    [
        ("0", 0),
        ("-0", 0),
        ("-0.0", -0.0),
        ("1E5", 100000.0),
        ("1e+2", 100.0),
        ("2.5E-3", 0.0025),
        ("1e400", math.inf),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("1.0", 1.0),
    ],
)
def test_numbers_as_json_loads_gives_them(number, value):
    text = '{"n": ' + number + "}"
    reader = stream(text, range(len(text)))
    assert reader.complete
    got = reader.value["n"]
    assert type(got) is type(json.loads(text)["n"]) is type(value)
    assert canon(got) == canon(value)


def test_literals_json_loads_accepts():
    text = '{"a": NaN, "b": Infinity, "c": -Infinity, "d": [-Infinity]}'
    reader = stream(text, range(len(text)))
    assert reader.complete
    assert canon(reader.value) == canon(json.loads(text))
    partial = PartialJSON()
    partial.feed('{"a": -Infinity')  # whole: shown before anything ends it
    assert partial.value["a"] == -math.inf


def test_an_int_beyond_json_loads_digit_limit_is_invalid_as_there():
    text = '{"n": %s}' % ("7" * 5000)
    with pytest.raises(ValueError):
        json.loads(text)
    reader = PartialJSON()
    for i in range(0, len(text), 7):
        reader.feed(text[i : i + 7])
    assert reader.invalid and not reader.complete
    assert "4300" in reader.error


def test_a_long_number_in_small_fragments_is_exact():
    digits = "9" * 3000
    text = f'{{"n": {digits}.5e-10, "m": -{digits}}}'
    reader = PartialJSON()
    for i in range(0, len(text), 3):
        reader.feed(text[i : i + 3])
    assert reader.complete
    assert canon(reader.value) == canon(json.loads(text))


@pytest.mark.parametrize(
    "text, where, what",
    [
        ("[1]", 0, "expected '{'"),
        ('  "a"', 2, "expected '{'"),
        ('{"a" 1}', 5, "expected ':'"),
        ('{"a": 1} x', 9, "nothing after the object"),
        ('{"a": 01}', 6, "not a JSON number"),
        ('{"a": 1.}', 6, "not a JSON number"),
        ('{"a": 1.e5}', 6, "not a JSON number"),
        ('{"a": "\\x"}', 7, "invalid escape"),
        ('{"a": "\\u12g4"}', 7, "invalid \\u escape"),
        ('{"a": "\x01"}', 7, "control character"),
        ('{"a": 1,}', 8, "member name"),
        ('{"a": [1,]}', 9, "a JSON value"),
        ('{"a": [1 2]}', 9, "expected ',' or ']'"),
        ('{"a": truex}', 10, "expected ',' or '}'"),  # true is whole before the x
        ('{"a": nul}', 6, "expected 'null'"),
        ('{"a": 1\u00a0}', 6, "not a JSON number"),  # no-break space is not JSON whitespace
        ("{'a': 1}", 1, "member name"),
    ],
)
def test_invalid_text_stops_and_says_where(text, where, what):
    assert not isinstance(_loads(text), dict)
    for cuts in ([], range(len(text))):
        reader = PartialJSON()
        bounds = [0, *cuts, len(text)]
        for a, b in zip(bounds, bounds[1:], strict=False):
            reader.feed(text[a:b])
        assert reader.invalid and reader.reason == "invalid" and not reader.complete
        assert reader.error.startswith(f"at offset {where}:"), reader.error
        assert what in reader.error


def test_invalid_text_keeps_what_was_read_and_stops_updating():
    reader = PartialJSON()
    reader.feed('{"a": [1, 2], "b": "x", "c": }')
    assert reader.invalid
    kept = canon(reader.value)
    assert kept == canon({"a": [1, 2], "b": "x"})
    reader.feed(', "d": 1}')
    reader.set_path("$.e", 1)
    assert canon(reader.value) == kept


def test_invalid_is_reported_as_soon_as_the_prefix_cannot_continue():
    for prefix in ('{"a": tx', '{"a": 0', '{"a": "\\q', '{"a": 1.e'):
        reader = PartialJSON()
        reader.feed(prefix)
        if prefix.endswith("0"):
            assert not reader.invalid  # 0 may still become 0.5
            reader.feed("1")
        assert reader.invalid, prefix


def test_a_fragment_that_is_not_text_is_reported_not_raised():
    reader = PartialJSON()
    reader.feed('{"a": "x')
    reader.feed(b'y"}')  # type: ignore[arg-type]
    assert reader.invalid and "bytes" in reader.error
    assert reader.error.startswith("at offset 8:")
    assert reader.value == {"a": "x"}


def test_deep_nesting_does_not_recurse():
    depth = 100_000
    text = '{"a":' * depth + "1" + "}" * depth
    reader = PartialJSON()
    for i in range(0, len(text), 4096):
        reader.feed(text[i : i + 4096])
    assert reader.complete
    node, seen = reader.value, 0
    while isinstance(node, dict):
        node, seen = node["a"], seen + 1
    assert (node, seen) == (1, depth)


def test_max_depth_stops_with_too_deep():
    reader = PartialJSON(max_depth=3)
    reader.feed('{"a": {"b": [')
    assert not reader.invalid
    assert reader.value == {"a": {"b": []}}
    reader.feed("[")
    assert reader.invalid and reader.reason == "too deep"
    assert reader.error == "at offset 13: nesting deeper than 3"
    assert reader.value == {"a": {"b": []}}


def test_a_held_string_is_never_changed_by_later_fragments():
    reader = PartialJSON()
    reader.feed('{"a": "abc')
    held = reader.value["a"]
    snapshot = dict(reader.value)
    reader.feed("def")
    reader.feed("ghi")
    assert held == "abc" and snapshot == {"a": "abc"}
    assert reader.value == {"a": "abcdefghi"}


def test_reset_starts_again_in_the_same_dict():
    reader = PartialJSON()
    same = reader.value
    reader.feed('{"a": 1, "b": "x')
    reader.reset()
    assert reader.value is same and reader.value == {}
    reader.feed('{"c": 2}')
    assert reader.complete and same == {"c": 2}


# -- values rather than text ----------------------------------------------------------------


def test_set_whole_replaces_in_place_and_copies():
    reader = PartialJSON()
    same = reader.value
    reader.feed('{"old": "x')
    args = {"a": [1, {"b": 2}], "c": "d"}
    reader.set_whole(args)
    assert reader.value is same and same == args and reader.complete
    assert same["a"] is not args["a"] and same["a"][1] is not args["a"][1]
    reader.set_whole(["not", "an", "object"])
    assert reader.invalid and "list" in reader.error
    assert same == {}


def test_set_whole_copies_deep_values_without_recursion():
    deep: dict = {}
    node = deep
    for _ in range(50_000):
        node["a"] = {}
        node = node["a"]
    reader = PartialJSON()
    reader.set_whole(deep)
    node, seen = reader.value, 0
    while node:
        node, seen = node["a"], seen + 1
    assert seen == 50_000


@pytest.mark.parametrize(
    "path, steps",
    [
        ("$", ()),
        ("$.a.b[0]", ("a", "b", 0)),
        ("$['x y']", ("x y",)),
        ('$["x y"]', ("x y",)),
        ("$[ 'a' ][ 2 ]", ("a", 2)),
        ("$.café.名前", ("café", "名前")),
        ("$._a1.b-c", ("_a1", "b-c")),
        ("$['it\\'s']", ("it's",)),
        ('$["say \\"hi\\""]', ('say "hi"',)),
        ("$['\\u00e9\\n\\\\']", ("é\n\\",)),
        ("$['\\ud83d\\ude00']", ("😀",)),
        ("$['a.b']['c[0]']", ("a.b", "c[0]")),
        ("$[-1]", (-1,)),
    ],
)
def test_json_paths(path, steps):
    assert singular_path(path, negative=True) == steps


@pytest.mark.parametrize(
    "path",
    ["a.b", "$.", "$.1a", "$[01]", "$['a]", "$[*]", "$..a", "$['\\x']", "$['\\\"']", "$[1:2]"],
)
def test_json_paths_that_cannot_be_read(path):
    with pytest.raises(ValueError, match="JSON path"):
        singular_path(path, negative=True)
    reader = PartialJSON()
    reader.set_path(path, 1)
    assert reader.invalid and "JSON path" in reader.error


def test_set_path_builds_containers_and_continues_strings():
    reader = PartialJSON()
    same = reader.value
    reader.set_path("$.recipe.steps[0]", "Preheat", will_continue=True)
    assert same == {"recipe": {"steps": ["Preheat"]}}
    reader.set_path("$.recipe.steps[0]", " oven", will_continue=True)
    reader.set_path("$.recipe.steps[0]", "")
    assert same == {"recipe": {"steps": ["Preheat oven"]}}
    reader.set_path("$.recipe.steps[0]", "again")  # the last piece did not continue: replaced
    assert same == {"recipe": {"steps": ["again"]}}
    reader.set_path("$.recipe.steps[2]", 3)  # padded, as the assembled args are
    reader.set_path("$['x y'].n", 2.5)
    reader.set_path("$.café", True)
    reader.set_path("$.list", [{"a": 1}])
    assert same == {
        "recipe": {"steps": ["again", None, 3]},
        "x y": {"n": 2.5},
        "café": True,
        "list": [{"a": 1}],
    }
    assert reader.value is same and not reader.invalid


def test_set_path_through_a_value_of_the_other_kind_is_reported():
    reader = PartialJSON()
    reader.set_path("$.a", [1])
    reader.set_path("$.a.b", 1)
    assert reader.invalid and "$.a.b" in reader.error
    assert reader.value == {"a": [1]}


def test_set_path_negative_indexes_count_from_the_end():
    reader = PartialJSON()
    reader.set_path("$.a", [1, 2])
    reader.set_path("$.a[-1]", 3)
    assert reader.value == {"a": [1, 3]}
    reader.set_path("$.a[-3]", 0)
    assert reader.invalid and "before the array's start" in reader.error
    assert reader.value == {"a": [1, 3]}


def test_set_path_on_a_recorded_gemini_stream():
    """The partialArgs of a real Gemini 3 stream (tests/golden/gemini), set piece by piece."""
    events = read_stream(HERE / "golden" / "gemini" / "vercel_vertex_stream_fc_nested.jsonl")
    reader = PartialJSON()
    seen = []
    for event in events:
        for part in event["candidates"][0]["content"]["parts"]:
            for piece in part.get("functionCall", {}).get("partialArgs", []):
                value = next(v for k, v in piece.items() if k.endswith("Value"))
                reader.set_path(piece["jsonPath"], value, piece.get("willContinue", False))
                seen.append(json.loads(canon(reader.value)))
    assert not reader.invalid
    recipe = reader.value["recipe"]
    assert recipe["name"] == "Lasagna"
    assert [i["name"] for i in recipe["ingredients"]][:3] == [
        "Lasagna noodles",
        "Ground beef",
        "Ricotta cheese",
    ]
    assert len(recipe["ingredients"]) == 10 and len(recipe["steps"]) == 10
    assert recipe["steps"][4] == "In a 9x13 baking dish, spread a thin layer of meat sauce."
    assert recipe["steps"][1].endswith("drain and set aside.")
    assert seen[0] == {"recipe": {"ingredients": [{"amount": "16 oz"}]}}


# -- properties -------------------------------------------------------------------------------

_ws = st.text(alphabet=" \t\n\r", max_size=2)
_number = st.from_regex(
    r"-?(0|[1-9][0-9]{0,22})(\.[0-9]{1,4})?([eE][-+]?[0-9]{1,3})?", fullmatch=True
)
_literal = st.sampled_from(["true", "false", "null", "NaN", "Infinity", "-Infinity"])
_any_char = st.characters(exclude_categories=())  # surrogates included: json.loads takes them
_piece = st.one_of(
    _any_char.filter(lambda c: c not in '"\\' and c >= " "),
    st.sampled_from(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]),
    st.integers(0, 0xFFFF).map(lambda c: f"\\u{c:04x}"),
    st.integers(0, 0xFFFF).map(lambda c: f"\\u{c:04X}"),
    st.integers(0x10000, 0x10FFFF).map(lambda c: json.dumps(chr(c))[1:-1]),  # a pair
)
_string = st.one_of(
    st.lists(_piece, max_size=6).map(lambda p: '"' + "".join(p) + '"'),
    st.tuples(st.text(_any_char, max_size=6), st.booleans()).map(
        lambda t: json.dumps(t[0], ensure_ascii=t[1])
    ),
)
_key = st.one_of(_string, st.sampled_from(['"a"', '"b"', '"\\u0061"']))  # duplicates happen


def _container(items):
    def array(draw_items):
        return "[" + ",".join(draw_items) + "]"

    spaced = st.tuples(_ws, items, _ws).map("".join)
    arrays = st.lists(spaced, max_size=4).map(array).map(lambda t: t if t != "[]" else "[ ]")
    members = st.tuples(_ws, _key, _ws, _ws, items, _ws).map(
        lambda m: m[0] + m[1] + m[2] + ":" + m[3] + m[4] + m[5]
    )
    objects = st.lists(members, max_size=4).map(lambda ms: "{" + ",".join(ms) + "}")
    return arrays | objects


_value = st.recursive(_number | _literal | _string, _container, max_leaves=12)
_member = st.tuples(_ws, _key, _ws, _ws, _value, _ws).map(
    lambda m: m[0] + m[1] + m[2] + ":" + m[3] + m[4] + m[5]
)
_object_text = st.tuples(_ws, st.lists(_member, max_size=5), _ws, _ws).map(
    lambda t: t[0] + "{" + ",".join(t[1]) + t[2] + "}" + t[3]
)


def _from_values(value, ensure_ascii, indent, item_sep, key_sep):
    separators = (item_sep, key_sep)
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators)


_json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**25), 10**25)
    | st.floats(allow_nan=False)
    | st.text(_any_char, max_size=5),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.text(_any_char, max_size=3), kids, max_size=4)
    ),
    max_leaves=12,
)
_dumped = st.builds(
    _from_values,
    st.dictionaries(st.text(_any_char, max_size=4), _json_value, max_size=5),
    st.booleans(),
    st.sampled_from([None, 0, 2, "\t"]),
    st.tuples(_ws, _ws).map(lambda w: w[0] + "," + w[1]),
    st.tuples(_ws, _ws).map(lambda w: w[0] + ":" + w[1]),
)

_SETTINGS = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(text=_object_text | _dumped)
def test_every_prefix_reads_as_api_md_defines(text):
    """Streamed one character at a time: after each, the oracle's reading of the prefix."""
    reader = stream(text, range(len(text)))
    assert reader.complete
    assert canon(reader.value) == canon(json.loads(text))


@_SETTINGS
@given(text=_object_text | _dumped, data=st.data())
def test_fragments_of_random_sizes(text, data):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    reader = stream(text, cuts)
    assert reader.complete
    assert canon(reader.value) == canon(json.loads(text))


@_SETTINGS
@given(text=_object_text, data=st.data())
def test_damaged_text_agrees_with_json_loads(text, data):
    """A character deleted, inserted or replaced: complete exactly when json.loads gives an
    object, and then the same object; never an exception."""
    at = data.draw(st.integers(0, len(text)))
    mutation = data.draw(st.sampled_from(["delete", "insert", "replace"]))
    char = data.draw(st.sampled_from(list('{}[]",:\\ 0-1.eEtnu') + ["\x00", "é"]))
    if mutation == "delete":
        text = text[:at] + text[at + 1 :]
    elif mutation == "insert":
        text = text[:at] + char + text[at:]
    else:
        text = text[:at] + char + text[at + 1 :]
    _agrees_with_json_loads(text, data.draw(st.lists(st.integers(0, len(text)), max_size=8)))


def _loads(text: str):
    """What json.loads gives, None where it refuses."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _agrees_with_json_loads(text: str, cuts) -> None:
    expected = _loads(text)
    reader = PartialJSON()
    bounds = [0, *sorted(set(cuts)), len(text)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        reader.feed(text[a:b])
    if isinstance(expected, dict):
        assert reader.complete, (text, reader.error)
        assert canon(reader.value) == canon(expected)
    else:
        assert not reader.complete, text


def _suite_cases():
    for path in sorted(SUITE.glob("[iny]_*.json")):
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue  # the reader takes text; these test a byte decoder
        yield pytest.param(text, id=path.stem)


@pytest.mark.parametrize("text", list(_suite_cases()))
def test_json_test_suite_agrees_with_json_loads(text):
    """JSONTestSuite (tests/jsontestsuite/README.md): whole, and one character at a time."""
    _agrees_with_json_loads(text, [])
    if len(text) < 5000:
        _agrees_with_json_loads(text, range(len(text)))


@pytest.mark.parametrize("after", ["\\", "\\u", "\\ud9", "\\ud93", "\\u00", "\\udc"])
def test_a_high_surrogate_waits_while_any_escape_after_it_is_cut(after):
    """A high surrogate's escape is held while the escape after it is cut, whatever its first
    digits: the reading never shows a character an escape still being written may change, as
    the oracle (json.loads of the closed prefix) never does."""
    prefix = '{"a": "x\\udbff' + after
    partial = PartialJSON()
    partial.feed(prefix)
    assert canon(partial.value) == canon(oracle(prefix)) == canon({"a": "x"})
