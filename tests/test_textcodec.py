"""The text codec: what is held, what is released, what is a call, and the prompt side.

The claim/release table is data (``given`` / ``cases``), so that a behaviour is a line, not a
test function. The properties say what no table can: for any text and any split into
fragments, every character reaches the screen exactly once unless it belongs to a call that
ran, and the outcome does not depend on the split.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.text.codec import TextCall, TextCodec

ROOT = Path(__file__).resolve().parent.parent
DESCRIPTOR = ROOT / "formats" / "mcs_text.yaml"


@pytest.fixture(scope="module")
def codec() -> TextCodec:
    return load_codec()


def load_codec() -> TextCodec:
    return TextCodec(yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8")))


def feed_all(codec: TextCodec, pieces: list[str]):
    scanner = codec.new_scanner()
    for piece in pieces:
        scanner.feed(piece)
    return scanner


def chars(text: str) -> list[str]:
    return list(text)


# -- the claim / release table -------------------------------------------------------------------

TABLE = yaml.safe_load(
    r"""
given:
  descriptor: formats/mcs_text.yaml
  fed: in one piece (and again one character at a time, which must agree)
cases:
  # A bare `{` holds only while its first key can still become "tool" or "name".
  - {text: '{', forming: true, name: null, released: ''}
  - {text: 'Sure. {', forming: true, name: null, released: 'Sure. '}
  - {text: '{ ', forming: true, name: null, released: ''}
  - {text: '{"', forming: true, name: null, released: ''}
  - {text: '{"to', forming: true, name: null, released: ''}
  - {text: '{"na', forming: true, name: null, released: ''}
  - {text: '{"tool"', forming: true, name: null, released: ''}
  - {text: '{"tool": ', forming: true, name: null, released: ''}
  - {text: '{"tool": "get_w', forming: true, name: null, released: ''}
  - {text: '{"tool": "get_weather"', forming: true, name: get_weather, released: ''}
  - {text: '{"tool": "get_weather",', forming: true, name: get_weather, released: ''}
  - {text: 'Let me check. {"name": "get_weather", "arguments": {"city": "Par',
     forming: true, name: get_weather, released: 'Let me check. '}
  - {text: '{"x', forming: false, name: null, released: '{"x'}
  - {text: '{123', forming: false, name: null, released: '{123'}
  - {text: '{ "x"', forming: false, name: null, released: '{ "x"'}
  - {text: '{"toolbox', forming: false, name: null, released: '{"toolbox'}
  - {text: '{"tool": 5', forming: false, name: null, released: '{"tool": 5'}
  - {text: '{}', forming: false, name: null, released: '{}'}
  - {text: 'a set {x | x > 0}', forming: false, name: null, released: 'a set {x | x > 0}'}
  # A bare array: held while its first item can still be a call; no name while forming.
  - {text: '[', forming: true, name: null, released: ''}
  - {text: '[{"tool": "a"', forming: true, name: null, released: ''}
  - {text: 'see [the docs](x)', forming: false, name: null, released: 'see [the docs](x)'}
  - {text: '[1, 2]', forming: false, name: null, released: '[1, 2]'}
  # Delimiters: only a suffix that can still become the start marker is held.
  - {text: 'Hi <', forming: true, name: null, released: 'Hi '}
  - {text: 'Hi <tool_c', forming: true, name: null, released: 'Hi '}
  - {text: 'Hi <tool_x', forming: false, name: null, released: 'Hi <tool_x'}
  - {text: 'a <b>bold</b>', forming: false, name: null, released: 'a <b>bold</b>'}
  - {text: '<tool_call>', forming: true, name: null, released: ''}
  - {text: '<tool_call>{"name": "w",', forming: true, name: w, released: ''}
  - {text: '<tool_call>hello', forming: false, name: null, released: '<tool_call>hello'}
  # Fences: json or no language is pending; any other language flows at once.
  - {text: 'x `', forming: true, name: null, released: 'x '}
  - {text: 'x `y` z', forming: false, name: null, released: 'x `y` z'}
  - {text: '```', forming: true, name: null, released: ''}
  - {text: '```j', forming: true, name: null, released: ''}
  - {text: '```json', forming: true, name: null, released: ''}
  - {text: "```json\n", forming: true, name: null, released: ''}
  - {text: "```\n{\"tool\": \"a\"", forming: true, name: a, released: ''}
  - {text: '```p', forming: false, name: null, released: '```p'}
  - {text: "```python\nprint({\"tool\": 1})", forming: false, name: null,
     released: "```python\nprint({\"tool\": 1})"}
  - {text: "```\nls -l", forming: false, name: null, released: "```\nls -l"}
  - {text: "```json\n{\"city\": \"Paris\"}", forming: false, name: null,
     released: "```json\n{\"city\": \"Paris\"}"}
  # A call that closed is no longer forming: it is a complete call, held until decided.
  - {text: 'A {"tool": "a", "arguments": {}} B', forming: false, name: null, released: 'A ',
     calls: [[a, {}]]}
  - {text: "```json\n{\"tool\": \"a\"}\n", forming: true, name: a, released: ''}
  # Reasoning flows and is never scanned, closed or not.
  - {text: '<think>{"tool": "a", "arguments": {}}</think>', forming: false, name: null,
     released: '<think>{"tool": "a", "arguments": {}}</think>'}
  - {text: '<think>{"tool": "a"', forming: false, name: null, released: '<think>{"tool": "a"'}
  - {text: 'a <thi', forming: false, name: null, released: 'a <thi'}
  # A structural break releases everything held.
  - {text: '{"tool": "a", "arguments": {"x": 1]', forming: false, name: null,
     released: '{"tool": "a", "arguments": {"x": 1]'}
  - {text: '{"tool": "a" "arguments"', forming: false, name: null,
     released: '{"tool": "a" "arguments"'}
  - {text: '{"tool": "a", then I thought', forming: false, name: null,
     released: '{"tool": "a", then I thought'}
  - {text: "```json\n{\"tool\": \"a\"}}\n```", forming: false, name: null,
     released: "```json\n{\"tool\": \"a\"}}\n```"}
  - {text: "<tool_call>{\"name\": \"a\"} oops</tool_call>", forming: false, name: null,
     released: "<tool_call>{\"name\": \"a\"} oops</tool_call>"}
"""
)


def case_id(case: dict) -> str:
    return case["text"].replace("\n", "\\n")[:40]


@pytest.mark.parametrize("case", TABLE["cases"], ids=case_id)
def test_claim_release_table(codec: TextCodec, case: dict) -> None:
    for pieces in ([case["text"]], chars(case["text"])):
        scanner = feed_all(codec, pieces)
        assert scanner.forming() == (case["forming"], case["name"])
        assert scanner.releasable() == case["released"]
        calls = [[c.name, c.arguments] for c in scanner.complete_calls()]
        assert calls == case.get("calls", [])


def test_table_covers_the_descriptor_it_names() -> None:
    assert (ROOT / TABLE["given"]["descriptor"]).resolve() == DESCRIPTOR


# -- parse_calls: the whole-text parse ------------------------------------------------------------


def calls_of(codec: TextCodec, text: str) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in codec.parse_calls(text)]


def test_several_calls_in_one_text(codec: TextCodec) -> None:
    text = (
        'First {"tool": "a", "arguments": {"s": "} not the end {"}} then '
        '{"tool": "b", "arguments": {"n": [1, {"k": 2}]}} and done.'
    )
    calls = codec.parse_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [
        ("a", {"s": "} not the end {"}),
        ("b", {"n": [1, {"k": 2}]}),
    ]
    first, second = calls
    assert text[first.start : first.end] == '{"tool": "a", "arguments": {"s": "} not the end {"}}'
    assert text[second.start : second.end] == '{"tool": "b", "arguments": {"n": [1, {"k": 2}]}}'


def test_an_array_is_several_calls_sharing_its_span(codec: TextCodec) -> None:
    text = 'Go: [{"tool": "a", "arguments": {"x": 1}}, {"name": "b"}]!'
    calls = codec.parse_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", {})]
    assert {(c.start, c.end) for c in calls} == {(4, len(text) - 1)}


def test_an_array_with_a_non_call_is_no_call(codec: TextCodec) -> None:
    assert calls_of(codec, '[{"tool": "a"}, 5]') == []
    assert calls_of(codec, '[{"tool": "a"}, {"city": "x"}]') == []
    assert calls_of(codec, "[]") == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"tool": "a", "arguments": {"x": 1}}', ("a", {"x": 1})),
        ('{"name": "a", "arguments": {"x": 1}}', ("a", {"x": 1})),
        ('{"tool": "a", "parameters": {"x": 1}}', ("a", {"x": 1})),
        ('{"name": "a", "parameters": {"x": 1}}', ("a", {"x": 1})),
        ('{"tool": "a"}', ("a", {})),
        ('{"tool": "a", "arguments": null}', ("a", {})),
        ('{"name": "a", "arguments": "{\\"x\\": 1}"}', ("a", {"x": 1})),
        ('{"tool": "a", "arguments": {"x": 1}, "parameters": {"y": 2}}', ("a", {"x": 1})),
    ],
)
def test_aliases_and_missing_arguments(codec: TextCodec, text: str, expected: tuple) -> None:
    assert calls_of(codec, text) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "", "arguments": {}}',
        '{"tool": 3, "arguments": {}}',
        '{"tool": "a", "arguments": [1]}',
        '{"tool": "a", "arguments": "not json"}',
        '{"arguments": {}, "tool": "a"}',
        '{"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}',
        '{"tool": "a", "arguments": {}',
    ],
    ids=[
        "empty-name",
        "number-name",
        "list-args",
        "text-args",
        "name-not-first",
        "definition",
        "cut",
    ],
)
def test_not_a_call(codec: TextCodec, text: str) -> None:
    assert codec.parse_calls(text) == []


@pytest.mark.parametrize(
    "opening",
    ["```json\n", "```JSON\n", "```\n", "``` json \n", "```json", "``´json\n"],
)
def test_fences_with_and_without_language(codec: TextCodec, opening: str) -> None:
    closing = "``´" if opening.startswith("``´") else "```"
    call = '{"tool": "a", "arguments": {"q": "x"}}'
    text = f"Checking.\n{opening}{call}\n{closing}\nDone."
    (found,) = codec.parse_calls(text)
    assert (found.name, found.arguments) == ("a", {"q": "x"})
    assert text[found.start : found.end] == f"{opening}{call}\n{closing}"


def test_a_fenced_call_completes_at_its_closing_fence(codec: TextCodec) -> None:
    scanner = feed_all(codec, ['```json\n{"tool": "a", "arguments": {}}\n'])
    assert scanner.complete_calls() == []
    assert scanner.forming() == (True, "a")
    scanner.feed("``")
    assert scanner.complete_calls() == []
    scanner.feed("`")
    assert [c.name for c in scanner.complete_calls()] == ["a"]
    assert scanner.forming() == (False, None)


def test_a_fence_of_another_language_flows_and_is_not_scanned(codec: TextCodec) -> None:
    text = '```python\nd = {"tool": "a", "arguments": {}}\n```\nafter {"tool": "b"}'
    assert calls_of(codec, text) == [("b", {})]
    scanner = feed_all(codec, chars(text))
    assert scanner.releasable() == text[: text.index('{"tool": "b"')]


def test_a_fence_that_never_closes_is_no_call(codec: TextCodec) -> None:
    text = '```json\n{"tool": "a", "arguments": {}}\n'
    assert codec.parse_calls(text) == []
    scanner = feed_all(codec, [text])
    scanner.close()
    assert scanner.releasable() == text
    assert scanner.complete_calls() == []


def test_delimiters(codec: TextCodec) -> None:
    text = (
        "I'll look.<tool_call>\n"
        '{"name": "w", "arguments": {"c": "Oslo"}}\n'
        '</tool_call><tool_call>[{"name": "x"}]</tool_call>'
    )
    calls = codec.parse_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("w", {"c": "Oslo"}), ("x", {})]
    assert text[calls[0].start : calls[0].end].startswith("<tool_call>")
    assert text[calls[0].start : calls[0].end].endswith("</tool_call>")
    assert calls[1].end == len(text)


def test_a_delimiter_inside_a_string_does_not_close_the_call(codec: TextCodec) -> None:
    text = '<tool_call>{"name": "say", "arguments": {"t": "</tool_call>"}}</tool_call>'
    assert calls_of(codec, text) == [("say", {"t": "</tool_call>"})]


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"tool": "a", "arguments": {"x": 1,},}', ("a", {"x": 1})),
        ('[{"tool": "a"},]', ("a", {})),
        ('{"tool": "a", "arguments": {"p": "C:\\Users\\me"}}', ("a", {"p": "C:\\Users\\me"})),
        ('{"tool": "a", "arguments": {"p": "tab\\there"}}', ("a", {"p": "tab\there"})),
        ('{"tool": "a", "arguments": {"t": "two\nlines"}}', ("a", {"t": "two\nlines"})),
    ],
    ids=["trailing-comma", "array-trailing-comma", "lone-backslash", "valid-escape", "raw-newline"],
)
def test_healing(codec: TextCodec, text: str, expected: tuple) -> None:
    assert calls_of(codec, text) == [expected]


def test_healing_is_data(codec: TextCodec) -> None:
    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    data["codec"]["healing"] = []
    plain = TextCodec(data)
    assert plain.parse_calls('{"tool": "a", "arguments": {"x": 1,}}') == []
    assert calls_of(codec, '{"tool": "a", "arguments": {"x": 1,}}') == [("a", {"x": 1})]


THINK = (
    '<think>Maybe {"tool": "a", "arguments": {}} or <tool_call>{"name": "b"}</tool_call></think>'
)


@pytest.mark.parametrize("cut", range(len(THINK) + 1))
def test_think_blocks_with_split_tags_never_yield_calls(codec: TextCodec, cut: int) -> None:
    text = THINK + ' Now: {"tool": "c"}'
    scanner = feed_all(codec, [text[:cut], text[cut:]])
    assert [c.name for c in scanner.complete_calls()] == ["c"]
    assert scanner.releasable() == THINK + " Now: "


def test_think_split_one_character_at_a_time(codec: TextCodec) -> None:
    scanner = feed_all(codec, chars(THINK))
    assert scanner.complete_calls() == []
    assert scanner.forming() == (False, None)
    assert scanner.releasable() == THINK


def test_an_unclosed_think_runs_to_the_end(codec: TextCodec) -> None:
    assert codec.parse_calls('<think>{"tool": "a"} and on') == []


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "a", "arguments": {"x": [1}}',
        '{"tool": "a", "arguments": {"x": tru}}',
        '{"tool": "a", "arguments": {"x": 1} "y": 2}',
        '<tool_call>{"name": "a"}}</tool_call>',
        '```json\n{"tool": "a", "arguments": {"a": 1}}}\n```',
    ],
)
def test_a_broken_held_call_is_released_whole(codec: TextCodec, text: str) -> None:
    for pieces in ([text], chars(text)):
        scanner = feed_all(codec, pieces)
        assert scanner.complete_calls() == []
        assert scanner.forming() == (False, None)
        assert scanner.releasable() == text


def test_a_stray_brace_after_a_bare_call_is_text(codec: TextCodec) -> None:
    # The bare call completed (and may have run) at its own closing brace; a brace after it
    # cannot undo that, whatever the split.
    text = '{"tool": "x", "arguments": {"a": 1}}}'
    scanner = feed_all(codec, chars(text))
    (call,) = scanner.complete_calls()
    scanner.consume_call(call)
    scanner.close()
    assert scanner.releasable() == "}"


def test_a_nested_object_of_a_released_record_is_not_a_call(codec: TextCodec) -> None:
    text = '{"result": {"tool": "a", "arguments": {}}} and {"tool": "b"}'
    assert calls_of(codec, text) == [("b", {})]


def test_bare_detection_can_be_switched_off() -> None:
    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    data["codec"]["bare"] = False
    fenced_only = TextCodec(data)
    assert fenced_only.parse_calls('{"tool": "a"}') == []
    assert [c.name for c in fenced_only.parse_calls('```json\n{"tool": "a"}\n```')] == ["a"]
    scanner = feed_all(fenced_only, ["{"])
    assert scanner.forming() == (False, None)
    assert scanner.releasable() == "{"


def test_other_delimiters_and_keys_are_data() -> None:
    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    data["codec"]["delimiters"] = [{"start": "[CALL]", "end": "[/CALL]"}]
    data["codec"]["name_keys"] = ["function"]
    data["codec"]["args_keys"] = ["args"]
    custom = TextCodec(data)
    text = 'x [CALL]{"function": "f", "args": {"k": 1}}[/CALL] y {"tool": "t"}'
    assert calls_of(custom, text) == [("f", {"k": 1})]
    assert feed_all(custom, ["x [CA"]).releasable() == "x "


# -- the scanner's decisions -----------------------------------------------------------------------


def test_consume_drops_the_span_with_its_fences(codec: TextCodec) -> None:
    text = 'Before.\n```json\n{"tool": "a", "arguments": {}}\n```\nAfter.'
    scanner = feed_all(codec, chars(text))
    (call,) = scanner.complete_calls()
    assert scanner.releasable() == "Before.\n"
    scanner.consume_call(call)
    assert scanner.complete_calls() == []
    scanner.close()
    assert scanner.releasable() == "\nAfter."


def test_text_after_an_undecided_call_waits_for_it(codec: TextCodec) -> None:
    scanner = feed_all(codec, ['{"tool": "a"} after'])
    assert scanner.releasable() == ""
    (call,) = scanner.complete_calls()
    scanner.release_call(call)
    assert scanner.releasable() == '{"tool": "a"} after'


def test_release_held_lets_the_rest_of_the_call_flow_unscanned(codec: TextCodec) -> None:
    scanner = feed_all(codec, ['Hi {"tool": "other", '])
    assert scanner.forming() == (True, "other")
    assert scanner.releasable() == "Hi "
    scanner.release_held()
    assert scanner.forming() == (False, None)
    assert scanner.releasable() == '{"tool": "other", '
    scanner.feed('"arguments": {"q": {"tool": "x"}}}')
    assert scanner.releasable() == '"arguments": {"q": {"tool": "x"}}}'
    scanner.feed(' then {"tool": "mine"}')
    assert [c.name for c in scanner.complete_calls()] == ["mine"]


def test_release_held_of_a_fence_shows_the_fence_to_its_end(codec: TextCodec) -> None:
    scanner = feed_all(codec, ['```json\n{"tool": "other"'])
    scanner.release_held()
    scanner.feed(', "arguments": {}}\n```\n{"tool": "mine"}')
    assert scanner.releasable() == '```json\n{"tool": "other", "arguments": {}}\n```\n'
    assert [c.name for c in scanner.complete_calls()] == ["mine"]


def test_an_array_span_goes_once_every_call_is_decided(codec: TextCodec) -> None:
    scanner = feed_all(codec, ['[{"tool": "a"}, {"tool": "b"}] end'])
    first, second = scanner.complete_calls()
    scanner.consume_call(first)
    assert scanner.releasable() == ""
    assert scanner.complete_calls() == [second]
    scanner.release_call(second)
    assert scanner.releasable() == " end"


def test_close_releases_everything_held(codec: TextCodec) -> None:
    for text in ['x {"tool": "a", "argu', "x <tool_c", "x ```json\n", 'x {"tool": "a"}']:
        scanner = feed_all(codec, [text])
        scanner.close()
        assert scanner.releasable() == text
        assert scanner.complete_calls() == []
        assert scanner.forming() == (False, None)
        with pytest.raises(ValueError):
            scanner.feed("more")


def test_offsets_count_the_whole_text_fed(codec: TextCodec) -> None:
    scanner = codec.new_scanner()
    scanner.feed("0123456789")
    assert scanner.releasable() == "0123456789"
    scanner.feed('{"tool": "a"}')
    (call,) = scanner.complete_calls()
    assert (call.start, call.end) == (10, 23)


def test_a_scanner_that_starts_into_a_text_counts_offsets_in_the_whole_text(codec) -> None:
    """A codec that comes mid-stream scans only what follows the text shown; its offsets
    still count from the start of all the text, so they slice get_content() right."""
    scanner = codec.new_scanner(10)  # the first ten characters were shown before it came
    scanner.feed('{"tool": "a"}')
    (call,) = scanner.complete_calls()
    assert (call.start, call.end) == (10, 23)
    assert scanner.forming() == (False, None)  # nothing forms after the call


def test_an_extracted_call_can_be_consumed(codec: TextCodec) -> None:
    @dataclass
    class Extracted:  # the shape of engine.ExtractedCall: no start
        name: str
        arguments: dict
        end: int

    scanner = feed_all(codec, ['{"tool": "a", "arguments": {"x": 1}} ok'])
    (call,) = scanner.complete_calls()
    scanner.consume_call(Extracted(call.name, call.arguments, call.end))
    assert scanner.releasable() == " ok"


# -- properties ------------------------------------------------------------------------------------

OWNED = {"mine", "get_weather"}

TOKENS = [
    "Hello ",
    "the answer is 42. ",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    ",",
    ": ",
    '"',
    "\\",
    "`",
    "<",
    ">",
    '"tool"',
    '"name"',
    '"arguments"',
    '"parameters"',
    '"mine"',
    '"other"',
    '"x"',
    "1",
    "true",
    "```",
    "```json\n",
    "```python\n",
    "``´",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    '{"tool": "mine", "arguments": {"a": 1}}',
    '{"name": "other", "arguments": {}}',
    '{"tool": "get_weather"}',
    '[{"tool": "mine"}, {"tool": "other"}]',
    '{"tool": "mine", "arguments": {"s": "} {\\"tool\\": \\"x\\"}"}}',
    '{"x": {"tool": "mine"}}',
    '{"tool": "mine", "arguments": {"a": 1,}}',
]


@st.composite
def text_and_split(draw) -> tuple[str, list[str]]:
    parts = draw(
        st.lists(
            st.one_of(st.sampled_from(TOKENS), st.text(alphabet='{}[]":, abc`<>\\\n', max_size=4)),
            max_size=14,
        )
    )
    text = "".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def drive(codec: TextCodec, pieces: list[str]) -> tuple[str, list[TextCall]]:
    """A driver owning OWNED: runs its calls, releases the rest, shows what it may."""
    scanner = codec.new_scanner()
    shown: list[str] = []
    ran: list[TextCall] = []

    def decide() -> None:
        for call in scanner.complete_calls():
            if call.name in OWNED:
                scanner.consume_call(call)
                ran.append(call)
            else:
                scanner.release_call(call)
        forming, name = scanner.forming()
        if forming and name is not None and name not in OWNED:
            scanner.release_held()
        shown.append(scanner.releasable())

    for piece in pieces:
        scanner.feed(piece)
        decide()
    scanner.close()
    shown.append(scanner.releasable())
    return "".join(shown), ran


def without_spans(text: str, calls: list[TextCall]) -> str:
    spans = sorted({(c.start, c.end) for c in calls})
    out, at = [], 0
    for start, end in spans:
        assert start >= at, "consumed spans overlap"
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return "".join(out)


PROPERTY = settings(
    max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(text_and_split())
def test_released_text_is_the_text_minus_the_calls_that_ran(sample) -> None:
    codec = load_codec()
    text, pieces = sample
    shown, ran = drive(codec, pieces)
    assert shown == without_spans(text, ran)
    for call in ran:
        assert call.name in OWNED


@PROPERTY
@given(text_and_split())
def test_results_do_not_depend_on_the_split(sample) -> None:
    codec = load_codec()
    text, pieces = sample
    assert drive(codec, pieces) == drive(codec, [text])
    assert drive(codec, chars(text)) == drive(codec, [text])


@PROPERTY
@given(text_and_split())
def test_nothing_is_lost_when_no_call_runs(sample) -> None:
    codec = load_codec()
    text, pieces = sample
    scanner = feed_all(codec, pieces)
    found = scanner.complete_calls()
    assert found == codec.parse_calls(text)
    scanner.close()
    assert scanner.releasable() == text


@PROPERTY
@given(st.lists(st.sampled_from(TOKENS), max_size=10), st.integers(1, 5))
def test_parse_calls_agrees_with_streaming(parts: list[str], size: int) -> None:
    codec = load_codec()
    text = "".join(parts)
    pieces = [text[k : k + size] for k in range(0, len(text), size)]
    assert feed_all(codec, pieces).complete_calls() == codec.parse_calls(text)
    for call in codec.parse_calls(text):
        span = text[call.start : call.end]
        assert span[:1] in ("{", "[", "`", "<")


# -- the prompt side -------------------------------------------------------------------------------


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict


TOOLS = [
    Tool(
        "get_weather",
        "Current weather for a city",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"description": "How many"}},
            "required": ["city"],
        },
    ),
    Tool("ping", "Check the service", None),  # type: ignore[arg-type]
]


def test_function_description_is_json_with_the_tools(codec: TextCodec) -> None:
    described = json.loads(codec.function_description(TOOLS))
    weather, ping = described["tools"]
    assert weather["name"] == "get_weather"
    assert weather["description"] == "Current weather for a city"
    assert weather["parameters"]["properties"]["city"] == {"type": "string"}
    assert weather["parameters"]["properties"]["days"] == {
        "type": "string",
        "description": "How many",
    }
    assert weather["parameters"]["required"] == ["city"]
    assert ping["parameters"] == {"type": "object", "properties": {}}


def test_a_section_that_leaves_keys_out_reads_as_the_schema_defaults_say() -> None:
    """The schema's ``default`` annotations (what an editor shows) are the one source of what
    a key left out means: the codec applies them."""
    from engine.compile.schema import schema

    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    prompt = {k: v for k, v in data["codec"]["prompt"].items() if k != "tool_format"}
    bare = TextCodec({"codec": {"prompt": prompt}})
    props = schema()["$defs"]["codec"]["properties"]
    fences = props["fences"]["properties"]
    assert (bare.name_keys, bare.args_keys, bare.reject_keys, bare.bare) == (
        tuple(props["name_keys"]["default"]),
        tuple(props["args_keys"]["default"]),
        tuple(props["reject_keys"]["default"]),
        props["bare"]["default"],
    )
    assert bare.fence_markers == tuple(fences["markers"]["default"])
    assert bare.fence_languages == frozenset(fences["languages"]["default"])
    assert bare.healing == ()
    delimiter = props["delimiters"]["default"][0]
    text = f'{delimiter["start"]}{{"tool": "a"}}{delimiter["end"]}'
    assert calls_of(bare, text) == [("a", {})]
    tool_format = schema()["$defs"]["codec_prompt"]["properties"]["tool_format"]["properties"]
    assert bare.prompt.tool_format == {k: p["default"] for k, p in tool_format.items()}


def test_a_prompt_without_tool_format_describes_tools_as_the_defaults_say(codec) -> None:
    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    del data["codec"]["prompt"]["tool_format"]
    bare = TextCodec(data)
    assert bare.function_description(TOOLS) == codec.function_description(TOOLS)
    data["codec"]["prompt"]["tool_format"] = {"untyped_parameter": {}, "indent": None}
    plain = json.loads(TextCodec(data).function_description(TOOLS))
    assert plain["tools"][0]["parameters"]["properties"]["days"] == {"description": "How many"}


def test_system_message_fills_its_placeholders(codec: TextCodec) -> None:
    message = codec.system_message(TOOLS)
    assert "{tools}" not in message and "{call_example}" not in message
    assert codec.function_description(TOOLS) in message
    assert codec.prompt.call_example in message
    # The example the model is shown is itself a call the codec reads.
    assert [c.name for c in codec.parse_calls(codec.prompt.call_example)] == ["tool_name"]


def test_retry_prompts(codec: TextCodec) -> None:
    failed = codec.retry_execution_failed("get_weather", ValueError("city is required"))
    assert "get_weather" in failed and "city is required" in failed
    unknown = codec.retry_unknown_tool("get_wether", TOOLS)
    assert "get_wether" in unknown and "get_weather, ping" in unknown
    assert "get_weather, ping" in codec.retry_unknown_tool("x", ["get_weather", "ping"])
    assert codec.prompt.call_example in codec.retry_no_tool_field()
    # A value is inserted once, never read as a placeholder itself.
    assert "{tools}" in codec.retry_execution_failed("t", "{tools}")


def test_the_descriptor_header() -> None:
    lines = DESCRIPTOR.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# yaml-language-server: $schema=../schemas/format.schema.json"
    data = yaml.safe_load("\n".join(lines))
    assert data["name"] == DESCRIPTOR.stem == "mcs_text"
    assert data["order"] == 8
    assert "events" not in data
    assert {"title", "docs", "codec"} <= data.keys()


def test_the_codec_is_immutable(codec: TextCodec) -> None:
    with pytest.raises(AttributeError):
        codec.name_keys = ("x",)  # type: ignore[misc]


def test_a_healing_rule_without_a_replacement_deletes_what_it_matches() -> None:
    """As the schema's default for ``replacement`` (``""``) says."""
    from engine.compile.schema import schema

    assert schema()["$defs"]["healing_rule"]["properties"]["replacement"]["default"] == ""
    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    data["codec"]["healing"] = [{"pattern": r",(?=\s*\})"}]
    assert calls_of(TextCodec(data), '{"tool": "a", "arguments": {"x": 1,}}') == [("a", {"x": 1})]


# -- a driver's turn: the rules "end" and "anywhere" (issue 16, point 5) -----------------------

TURN_CALL = '{"tool": "a", "arguments": {"x": 1}}'
# (text, calls that may run under "end", under "anywhere"): names in text order.
TURN_RULES = [
    (TURN_CALL, ["a"], ["a"]),
    (f" \n{TURN_CALL}\n", ["a"], ["a"]),
    (f"<think>{TURN_CALL}</think>\n{TURN_CALL}", ["a"], ["a"]),  # the think one is reasoning
    (f"Quoted: {TURN_CALL} - no.", [], []),
    (f"Quoted: {TURN_CALL}", [], []),  # bare JSON only as the whole text
    (f"{TURN_CALL} and more", [], []),
    (f"[{TURN_CALL}, {TURN_CALL}]", ["a", "a"], ["a", "a"]),
    (f"x <tool_call>{TURN_CALL}</tool_call>", ["a"], ["a"]),
    (f"x <tool_call>{TURN_CALL}</tool_call> y", [], ["a"]),
    (f"x ```json\n{TURN_CALL}\n``` y", [], ["a"]),
    (f"<tool_call>{TURN_CALL}</tool_call>\n```\n{TURN_CALL}\n```\n", ["a", "a"], ["a", "a"]),
    (f"<tool_call>{TURN_CALL}</tool_call> y <tool_call>{TURN_CALL}</tool_call>", ["a"], ["a", "a"]),
    (f"{TURN_CALL}\n<tool_call>{TURN_CALL}</tool_call>", ["a"], ["a"]),  # the bare one: text
]


def _turn(codec: TextCodec, pieces: list[str], rule: str) -> tuple[list[str], str]:
    """Fed ``pieces`` under ``rule``, finished; every call that may run consumed: the names
    and what is shown."""
    scanner = codec.new_scanner(rule=rule)
    shown = []
    for piece in pieces:
        scanner.feed(piece)
        shown.append(scanner.releasable())
    scanner.finish()
    calls = scanner.complete_calls()
    for call in calls:
        scanner.consume_call(call)
    scanner.close()
    shown.append(scanner.releasable())
    return [c.name for c in calls], "".join(shown)


@pytest.mark.parametrize("text, at_end, anywhere", TURN_RULES)
def test_a_turn_s_calls_under_each_rule(codec: TextCodec, text, at_end, anywhere) -> None:
    for rule, expected in (("end", at_end), ("anywhere", anywhere)):
        whole = _turn(codec, [text], rule)
        assert whole[0] == expected, rule
        assert _turn(codec, chars(text), rule) == whole  # however split
        assert [c.name for c in codec.scan_turn(text, rule).complete_calls()] == expected
    assert [c.name for c in codec.parse_calls(text)]  # without a rule: every call counts


def test_calls_that_wait_for_the_end_hold_what_follows_and_other_text_releases_them(codec) -> None:
    scanner = codec.new_scanner(rule="end")
    scanner.feed(f"Sure. <tool_call>{TURN_CALL}</tool_call>")
    assert scanner.releasable() == "Sure. " and scanner.complete_calls() == []
    assert [c.name for c in scanner.waiting_calls()] == ["a"]
    scanner.feed("\n  ")
    assert scanner.releasable() == ""  # whitespace after it waits with it
    scanner.feed("ok")
    assert scanner.waiting_calls() == [] and scanner.quiet()
    assert scanner.releasable() == f"<tool_call>{TURN_CALL}</tool_call>\n  ok"  # in order, once


def test_a_bare_brace_opens_nothing_after_the_turn_s_first_character(codec) -> None:
    for rule in ("end", "anywhere"):
        scanner = codec.new_scanner(rule=rule)
        scanner.feed("x {")
        assert scanner.releasable() == "x {" and not scanner.forming()[0]
        late = codec.new_scanner(5, rule=rule, lead=False)  # text came before it
        late.feed(TURN_CALL)
        assert late.releasable() == TURN_CALL
    plain = codec.new_scanner()
    plain.feed("x {")
    assert plain.releasable() == "x " and plain.forming()[0]  # the codec's plain reading


@pytest.mark.parametrize(
    "text, reason, raw",
    [
        (
            'ok <tool_call>{"tool": "a", "arguments": {"x": "ab',
            "cut",
            '{"tool": "a", "arguments": {"x": "ab',
        ),
        ('{"name": "a", "arg', "cut", '{"name": "a", "arg'),
        (
            'ok ```json\n{"tool": "a", "arguments": [1]}\n```',
            "invalid",
            '{"tool": "a", "arguments": [1]}',
        ),
        ('{"tool": "a", "arguments": "no"}', "invalid", '{"tool": "a", "arguments": "no"}'),
        (
            '<tool_call>{"tool": "a", "arguments": {"q": "say "hi""}}</tool_call>',  # not JSON
            "invalid",
            '{"tool": "a", "arguments": {"q": "say "hi""}}',
        ),
    ],
)
def test_a_would_be_call_that_ends_the_turn_is_incomplete(codec, text, reason, raw) -> None:
    for rule in ("end", "anywhere"):
        scanner = codec.scan_turn(text, rule)
        (never,) = scanner.incomplete_calls()
        assert (never.name, never.reason, never.raw) == ("a", reason, raw)
        if reason == "cut" and "ab" in raw:
            assert never.arguments == {"x": "ab"}  # what of its arguments had streamed
        scanner.consume_call(never)
        scanner.close()
        assert "a" not in scanner.releasable()  # its span goes with it
        assert codec.parse_calls(text) == []


@pytest.mark.parametrize(
    "text",
    [
        'ok <tool_call>{"tool": "a", "arguments": [1]}</tool_call> and prose',  # not at the end
        'ok <tool_call>{"to',  # its name never came
        "ok <tool_c",  # a marker prefix
        'x {"tool": "a", "arg',  # bare, not the whole text
        '<tool_call>{"tool": "a", "arguments": {"q": tru}} no end delimiter',  # broken, open
        '```json\n{"tool": "a", "arguments": {"q": tru}}\n```',  # broken in a fence: text
    ],
)
def test_what_is_not_an_incomplete_call_is_text(codec, text) -> None:
    scanner = codec.scan_turn(text, "end")
    assert scanner.incomplete_calls() == [] and scanner.complete_calls() == []
    scanner.close()
    assert scanner.releasable() == text


def test_a_codec_dict_with_a_replacement_its_pattern_cannot_fill_is_refused_at_load() -> None:
    """A problem no schema sees is refused when the codec compiles, at its JSON pointer (the
    validator locates it in the file: tests/broken/codec_bad_replacement.yaml), never at the
    first text it heals, mid-stream."""
    from engine import DescriptorError
    from engine.text.strategy import TextStrategy

    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    data["codec"]["healing"][0]["replacement"] = r"\9"
    with pytest.raises(DescriptorError) as caught:
        TextStrategy(data, source="mine.yaml")
    [problem] = caught.value.problems
    assert (problem.file, problem.pointer, problem.rule) == (
        "mine.yaml",
        "/codec/healing/0/replacement",
        "compile",
    )
    assert "invalid group reference 9" in problem.message


def test_a_codec_dict_given_to_extraction_strategy_is_refused_at_its_codec_section() -> None:
    """A codec is no wire: ``engine.ExtractionStrategy`` refuses one with a located problem
    (the section that makes it a codec, and the class that compiles it), not a KeyError of
    the wire sections it lacks."""
    import engine

    data = yaml.safe_load(DESCRIPTOR.read_text(encoding="utf-8"))
    with pytest.raises(engine.DescriptorError) as caught:
        engine.ExtractionStrategy(data, source="mine.yaml")
    [problem] = caught.value.problems
    assert (problem.file, problem.pointer, problem.rule) == ("mine.yaml", "/codec", "compile")
    assert "TextStrategy" in problem.message


@pytest.mark.parametrize("cut", range(1, 30))
def test_an_escaped_tool_name_is_decoded_whatever_the_split(codec: TextCodec, cut: int) -> None:
    """The name string is collected as written, escapes included, and decoded once it
    closes: a split at (or just after) a backslash names the same tool."""
    text = '<tool_call>{"tool": "a\\u0062\\"c", "arguments": {}'
    scanner = codec.new_scanner()
    scanner.feed(text[:cut])
    scanner.feed(text[cut:])
    assert scanner.forming() == (True, 'ab"c')
