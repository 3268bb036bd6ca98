"""Every ```python block of README.md runs, as written, and does what the README says.

Each block follows an HTML comment marker (``<!-- readme-example: NAME -->``); a python block
without one fails ``test_every_python_block_is_marked``. The test takes the blocks out of
README.md itself, so the README cannot drift from what runs, and executes them in one namespace
with tracebacks pointing at README lines. What a block prints is compared with the README's
``<!-- readme-output: NAME -->`` text block where the README shows it, and the tools are
counted: the quick start's ``TOOLS`` are wrapped as soon as its ``tools`` block has run, so a
test knows which tool ran, how often, with which arguments. Each call of the stream must run
exactly once; the negative control (``test_harness_catches_a_call_run_twice``) feeds the
harness the README's own loop with ``calls()`` in place of ``new_calls()`` and proves that the
double run fails it.

The quick start reads ``stream``: its ``stream`` block loads a recorded golden stream (run from
the repository's root, as the README says); the same blocks then run on other recorded streams
by giving the namespace another ``stream`` (text around a call, parallel calls, a call cut by a
length limit).

The SDK examples (section "Streaming with your SDK") run against the loopback server. The SDK
is pointed at it only through what it reads from the environment (``monkeypatch.setenv``), the
way a user points it at a proxy or a compatible server, and the server replays a golden stream
of that wire. What each must produce, compared with the recorded stream replayed without any
SDK: the text it printed is the stream's display text; every call of the stream ran exactly
once, with its arguments; the history variable holds the prompt, then the assistant turn and
the tool results in the wire's native shape; and the SDK sent one request, to its provider's
endpoint, declaring the driver's tools.

No skip: CI installs ``.[test,sdk]``, and an example whose SDK is missing is a failure.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine
from engine import ToolCallRecord

try:  # pytest's default "prepend" import mode puts tests/ itself on sys.path
    from conftest import read_stream, replay
    from loopback.server import ServeProcess
    from test_loopback_sdks import loopback_only, module_streams  # noqa: F401
    from test_sdk_agreement import SDK_DROPS
except ImportError:  # tests/ made a package, or importlib mode from the repository root
    from tests.conftest import read_stream, replay
    from tests.loopback.server import ServeProcess
    from tests.test_loopback_sdks import loopback_only, module_streams  # noqa: F401
    from tests.test_sdk_agreement import SDK_DROPS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GOLDEN = ROOT / "tests" / "golden"
README_STREAMS = ROOT / "tests" / "readme"  # streams of the README's own (tests/readme/README.md)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One ``mcs-formats serve`` for the module: the goldens, the loopback module's own
    streams, and the README's (a golden whose argument keys match the README's tools)."""
    folder = tmp_path_factory.mktemp("streams")
    streams = [*module_streams(folder), *sorted(README_STREAMS.rglob("*.jsonl"))]
    with ServeProcess(streams) as srv:
        srv.own = folder  # type: ignore[attr-defined]
        yield srv

# litellm's import warns about its own TypedDicts; openai's models warn when serialising.
pytestmark = [
    # One worker runs this module (pyproject's --dist loadgroup), so its module fixture is built
    # once, and with the SDK modules (group "sdk"), so the SDKs (litellm's ~2 s) are imported once.
    pytest.mark.xdist_group("sdk"),
    pytest.mark.filterwarnings("ignore:.*using the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]


# -- the README's blocks ---------------------------------------------------------------------

_BLOCK = re.compile(
    r"^<!--\s*readme-example:\s*(?P<name>[\w-]+)\s*-->\n```python\n(?P<code>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Block:
    name: str
    code: str
    line: int  # README line of the block's first line of code


def readme_blocks(text: str | None = None) -> dict[str, Block]:
    """The README's marked python blocks by name; a name marked twice is an error."""
    text = README.read_text(encoding="utf-8") if text is None else text
    blocks: dict[str, Block] = {}
    for match in _BLOCK.finditer(text):
        name = match["name"]
        if name in blocks:
            raise ValueError(f"README.md marks two blocks readme-example: {name}")
        line = text.count("\n", 0, match.start("code")) + 1
        blocks[name] = Block(name, match["code"], line)
    return blocks


_OUTPUT = re.compile(
    r"^<!--\s*readme-output:\s*(?P<name>[\w-]+)\s*-->\n```text\n(?P<text>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
_PYTHON_FENCE = re.compile(r"^```\s*(?:python3?|py)\b.*$", re.MULTILINE)


def readme_outputs(text: str | None = None) -> dict[str, str]:
    """What the README says a block prints, by the block's name."""
    text = README.read_text(encoding="utf-8") if text is None else text
    outputs: dict[str, str] = {}
    for match in _OUTPUT.finditer(text):
        if match["name"] in outputs:
            raise ValueError(f"README.md shows two outputs readme-output: {match['name']}")
        outputs[match["name"]] = match["text"]
    return outputs


def unmarked_python_blocks(text: str | None = None) -> list[int]:
    """README lines of python fences that no ``readme-example`` marker names: never run."""
    text = README.read_text(encoding="utf-8") if text is None else text
    marked = {m.start("code") for m in _BLOCK.finditer(text)}
    return [
        text.count("\n", 0, fence.start()) + 1
        for fence in _PYTHON_FENCE.finditer(text)
        if fence.end() + 1 not in marked
    ]


def run_block(block: Block, namespace: dict) -> None:
    """Execute a README block in ``namespace``; a traceback names README.md and its line."""
    tree = ast.parse(block.code, filename=str(README))
    ast.increment_lineno(tree, block.line - 1)
    exec(compile(tree, str(README), "exec"), namespace)


# -- the quick start: its blocks, their tools counted, on recorded streams ----------------------

# The quick start's `stream` block loads this recorded stream (openai-python's own recording).
QUICK_STREAM = GOLDEN / "openai_chat" / "oai_py_non_strict_tool.jsonl"
PROMPT = {"role": "user", "content": "What's the weather in New York City?"}


@dataclass
class Ran:
    """What running README blocks did: their namespace, what they printed, the tools they ran
    (name and arguments, in order)."""

    namespace: dict
    printed: str
    runs: list[tuple[str, dict]]


def count_tool_runs(namespace: dict) -> list[tuple[str, dict]]:
    """Wrap every tool of the ``tools`` block's ``TOOLS`` (in the dict and under its own name),
    so that any block that runs one, directly or through a driver, is counted."""
    runs: list[tuple[str, dict]] = []
    tools = namespace["TOOLS"]
    for name, tool in list(tools.items()):
        counted = _counted(name, tool, runs)
        tools[name] = counted
        if namespace.get(name) is tool:
            namespace[name] = counted
    return runs


def _counted(name: str, tool, runs: list):
    """``tool``, noting each run in ``runs``; keyword arguments only, as the README passes
    them (``**arguments``), so that a positional call fails rather than counts wrongly."""

    def counted(**arguments):
        runs.append((name, arguments))
        return tool(**arguments)

    return counted


def run_quick_start(
    blocks: list[Block | str], monkeypatch, capsys, stream: list | None = None
) -> Ran:
    """Run the quick start's ``stream`` block (or give the namespace ``stream``), its ``tools``
    block, then ``blocks`` (names of README blocks, or blocks), from the repository's root."""
    readme = readme_blocks()
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "__readme__"}
    if stream is None:
        run_block(readme["stream"], namespace)
    else:
        namespace["stream"] = stream
        namespace["answer"] = read_stream(GOLDEN / "openai_chat" / "oai_py_text.jsonl")
    run_block(readme["tools"], namespace)
    runs = count_tool_runs(namespace)
    capsys.readouterr()
    for block in blocks:
        run_block(readme[block] if isinstance(block, str) else block, namespace)
    return Ran(namespace, capsys.readouterr().out, runs)


def assert_each_call_ran_once(runs: list[tuple[str, dict]], calls: list[engine.ExtractedCall]):
    """The tools ran exactly the stream's calls: each once, in order, with its arguments."""
    for name, arguments in runs:
        times = runs.count((name, arguments))
        assert times == 1, f"{name}({arguments}) ran {times} times, not once"
    assert runs == [(c.name, c.arguments) for c in calls], "the tools ran other calls"


def assert_prints_what_the_readme_shows(name: str, printed: str) -> None:
    """The block printed the README's output block for it (the trailing newlines of the last
    print aside: a text block cannot show them)."""
    assert printed.rstrip("\n") == readme_outputs()[name].rstrip("\n")


def quick_recorded(path: Path = QUICK_STREAM) -> engine.LLMStreamBuffer:
    return replay(read_stream(path), path.parent.name)


def native_history(path: Path, buf: engine.LLMStreamBuffer) -> list[dict]:
    """The assistant turn and the results of every call of ``buf`` (the recorded stream at
    ``path``, replayed without the README), as its wire shapes them."""
    namespace: dict = {}
    run_block(readme_blocks()["tools"], namespace)  # the tools alone, in a namespace of their own
    tools = namespace["TOOLS"]
    records = [
        ToolCallRecord(c.name, c.arguments, tools[c.name](**c.arguments), None, c.id)
        for c in buf.calls()
    ]
    return engine.load_format(path.parent.name).result_messages(buf.as_dict(), records)


def without_calls_and_deltas(printed: str) -> str:
    """What the events loop printed, less its bracketed call lines and ``so far`` lines: the
    display text it printed as it streamed."""
    printed = re.sub(r"^  so far .*\n", "", printed, flags=re.MULTILINE)
    return re.sub(r"\[[^\n]*?\]\n", "", printed)


# Recorded streams whose calls the quick start's tools take ({"city": ...}), beside its own:
# real recordings first, then hand-written ones that follow the providers' documentation.
OTHER_STREAMS = {
    "bedrock-nova-text-then-call": GOLDEN / "bedrock_converse" / "pydantic_ai_nova_tool_use.jsonl",
    "openai-text-around-a-call": GOLDEN / "openai_chat" / "hand_text_before_after.jsonl",
    "anthropic-parallel-calls": GOLDEN / "anthropic_messages" / "hand_parallel_tool_use.jsonl",
    "gemini-parallel-calls": GOLDEN / "gemini" / "hand_parallel_calls_ids.jsonl",
}
CUT_STREAM = GOLDEN / "openai_chat" / "hand_length_cut_in_string.jsonl"


def quick_stream_cut() -> list[dict]:
    """The quick start's recorded stream cut inside its call's arguments, as a length limit
    cuts it: its first six chunks (``{"city":"New York``), then its own finish chunk with
    ``finish_reason: "length"``."""
    chunks = read_stream(QUICK_STREAM)
    (finish,) = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    cut = json.loads(json.dumps(finish))
    cut["choices"][0]["finish_reason"] = "length"
    return [*chunks[:6], cut]


# -- each example: its golden stream and how its SDK finds the server ---------------------------


@dataclass(frozen=True)
class Example:
    wire: str  # the format the SDK streams, and the golden folder
    fixture: str  # a golden stream of that wire that calls the driver's tools
    history: str  # the example's history variable
    endpoint: str  # the provider path the SDK posts to (after the fixture's URL prefix)
    env: dict  # environment for the SDK; "{base}" is the fixture's loopback URL
    # litellm re-shapes the stream into its own chunk objects, whose deltas set function_call,
    # audio and provider_specific_fields to None: the assembled turn carries those nulls too.
    sdk_adds_nulls: bool = False
    folder: Path = GOLDEN  # where FOLDER/wire/fixture.jsonl is (tests/readme/README.md)


_OPENAI_ENV = {"OPENAI_API_KEY": "sk-loopback", "OPENAI_BASE_URL": "{base}/v1"}

EXAMPLES = {
    "openai-chat": Example(
        "openai_chat", "hand_text_before_after", "messages", "/v1/chat/completions", _OPENAI_ENV
    ),
    "openai-responses": Example(
        "openai_responses", "hand_text_then_calls", "history", "/v1/responses", _OPENAI_ENV
    ),
    "anthropic": Example(
        "anthropic_messages",
        "hand_parallel_tool_use",
        "messages",
        "/v1/messages",
        {"ANTHROPIC_API_KEY": "sk-ant-loopback", "ANTHROPIC_BASE_URL": "{base}"},
    ),
    "bedrock": Example(
        "bedrock_converse",
        "hand_parallel_tool_use_boto3",
        "messages",
        "/model/amazon.nova-pro-v1%3A0/converse-stream",
        {
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "{base}",
            "AWS_ACCESS_KEY_ID": "AKIDLOOPBACK",
            "AWS_SECRET_ACCESS_KEY": "loopback-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_MAX_ATTEMPTS": "1",
            "AWS_EC2_METADATA_DISABLED": "true",
        },
    ),
    "google-genai": Example(
        "gemini",
        "hand_parallel_calls_ids",
        "contents",
        "/v1/models/gemini-2.5-flash:streamGenerateContent",
        {"GEMINI_API_KEY": "loopback-key", "GOOGLE_GEMINI_BASE_URL": "{base}"},
    ),
    "cohere": Example(  # the golden's calls pass "location", the README's tool takes "city"
        "cohere_v2",
        "hand_tool_plan_two_calls_city",
        "messages",
        "/v2/chat",
        {"CO_API_KEY": "loopback-key", "CO_API_URL": "{base}"},
        folder=ROOT / "tests" / "readme",
    ),
    "ollama": Example(
        "ollama", "hand_calls_on_done_line", "messages", "/api/chat", {"OLLAMA_HOST": "{base}"}
    ),
    # Streaming raw HTTP: no SDK, httpx's byte pieces through engine.sse_chunks, pointed at
    # the server by the variables the OpenAI SDK reads (the block reads them itself).
    "raw-http": Example(
        "openai_chat", "hand_text_before_after", "messages", "/v1/chat/completions", _OPENAI_ENV
    ),
    "litellm": Example(
        "openai_chat",
        "hand_text_before_after",
        "messages",
        "/v1/chat/completions",
        {**_OPENAI_ENV, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        sdk_adds_nulls=True,
    ),
}

# Settings of the user's shell that would send an SDK elsewhere than the environment above.
_UNSET = (
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_AUTH_TOKEN",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_API_VERSION",
)


def point_sdk_at(example: Example, base: str, monkeypatch, tmp_path: Path) -> None:
    """Set what the example's SDK reads from the environment so that it streams from ``base``."""
    for var in _UNSET:
        monkeypatch.delenv(var, raising=False)
    # No stray ~/.aws files: boto3 takes the keys, region and endpoint above.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    # The module's guard points every proxy variable at a dead port: the SDKs' default HTTP
    # clients must go straight to 127.0.0.1, as they do for any host in NO_PROXY.
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")
    for var, value in example.env.items():
        monkeypatch.setenv(var, value.format(base=base))
    if example.wire == "bedrock_converse":
        import boto3

        # boto3.client() uses one module-wide session, which caches the credentials it found.
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


# -- what the recorded stream says the example must produce -----------------------------------


def fixture_path(example: Example) -> Path:
    return example.folder / example.wire / f"{example.fixture}.jsonl"


def recorded(example: Example) -> engine.LLMStreamBuffer:
    """The golden stream replayed from its recorded dicts, no SDK involved, less the fields the
    SDK's models drop (``SDK_DROPS``: ollama's call ids)."""
    events = read_stream(fixture_path(example))
    drop = SDK_DROPS.get(example.wire)
    return replay([drop(e) for e in events] if drop else events, example.wire)


def run_example(name: str, server, monkeypatch, tmp_path, capsys) -> tuple[dict, list]:
    """Run the driver block and the example's block; return the namespace and the tool runs."""
    example = EXAMPLES[name]
    blocks = readme_blocks()
    point_sdk_at(example, server.base_url(fixture_path(example)), monkeypatch, tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    run_block(blocks["tools"], namespace)
    run_block(blocks["driver"], namespace)

    runs: list[tuple[str, dict, object]] = []
    driver_class = type(namespace["driver"])
    execute = driver_class.execute_tool

    def counted(self, tool_name, arguments):
        result = execute(self, tool_name, arguments)
        runs.append((tool_name, arguments, result))
        return result

    monkeypatch.setattr(driver_class, "execute_tool", counted)
    capsys.readouterr()
    run_block(blocks[name], namespace)
    return namespace, runs


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_readme_example_runs_against_loopback(name, server, monkeypatch, tmp_path, capsys):
    example = EXAMPLES[name]
    before = len(server.requests)
    namespace, runs = run_example(name, server, monkeypatch, tmp_path, capsys)
    printed = capsys.readouterr().out
    expected = recorded(example)
    calls = expected.calls()
    assert calls, f"{example.fixture} must call the README driver's tools"

    # The text shown is the stream's display text, then the last print's newline.
    assert printed == expected.get_content() + "\n"

    # Every call ran exactly once, in order, with the arguments the stream carried.
    assert [(tool, args) for tool, args, _ in runs] == [(c.name, c.arguments) for c in calls]

    # The history: the prompt, then the assistant turn and the results in the wire's shape.
    history = namespace[example.history]
    records = [
        ToolCallRecord(c.name, c.arguments, result, None, c.id)
        for c, (_, _, result) in zip(calls, runs, strict=True)
    ]
    native = engine.load_format(example.wire).result_messages(expected.as_dict(), records)
    assert len(history) == 1 + len(native)
    assert history[0]["role"] == "user"  # the example's prompt, as it wrote it
    if example.sdk_adds_nulls:
        assert _without_nulls(history[1:]) == _without_nulls(native)
    else:
        assert history[1:] == native
    for call in calls:
        if call.id is not None:
            assert call.id in json.dumps(history[2:]), f"no result answers call {call.id}"

    # One request, to the provider's own endpoint, declaring the driver's tools.
    requests = server.requests[before:]
    assert len(requests) == 1
    key = server.register(fixture_path(example))
    assert (requests[0]["method"], requests[0]["path"]) == ("POST", f"/s/{key}{example.endpoint}")
    for tool in namespace["driver"].list_tools():
        assert tool.name.encode() in requests[0]["body"], f"{tool.name} was not declared"


def _without_nulls(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


# -- the quick start's blocks ----------------------------------------------------------------------


def test_quick_start_stream_is_the_recorded_golden(monkeypatch, capsys):
    ran = run_quick_start([], monkeypatch, capsys)
    assert ran.namespace["stream"] == read_stream(QUICK_STREAM)
    assert quick_recorded().calls(), "the quick start's stream must call a tool"


def test_events_example_prints_what_the_readme_shows(monkeypatch, capsys):
    ran = run_quick_start(["events"], monkeypatch, capsys)
    expected = quick_recorded()
    assert_each_call_ran_once(ran.runs, expected.calls())
    assert_prints_what_the_readme_shows("events", ran.printed)
    buf = ran.namespace["buf"]
    assert buf.closed and not buf.forming()  # consume() closed it: no spinner left
    assert ran.namespace["message"] == expected.as_dict()


@pytest.mark.parametrize("path", list(OTHER_STREAMS.values()), ids=list(OTHER_STREAMS))
def test_events_example_on_other_recorded_streams(path, monkeypatch, capsys):
    ran = run_quick_start(["events"], monkeypatch, capsys, stream=read_stream(path))
    expected = quick_recorded(path)
    assert_each_call_ran_once(ran.runs, expected.calls())
    assert without_calls_and_deltas(ran.printed) == expected.get_content()
    for call in expected.calls():
        assert f"[{call.name} is forming]\n" in ran.printed
    # one finish reason and one token count on every wire, whatever its raw stop reason
    total = expected.token_usage.total_tokens
    assert f"[finished: {expected.finish_reason}, {total} tokens]\n" in ran.printed
    assert expected.finish_reason == "tool_calls"


def test_events_example_says_a_cut_call_will_never_run(monkeypatch, capsys):
    ran = run_quick_start(["events"], monkeypatch, capsys, stream=read_stream(CUT_STREAM))
    assert ran.runs == []
    ends = "[search_docs will never run: cut]\n[finished: length, 86 tokens]\n"
    assert ran.printed.endswith(ends)
    assert "  so far {'query': 'how to configure the proxy for'}\n" in ran.printed


def test_per_chunk_loop_runs_each_call_once(monkeypatch, capsys):
    ran = run_quick_start(["per-chunk-loop"], monkeypatch, capsys)
    expected = quick_recorded()
    assert_each_call_ran_once(ran.runs, expected.calls())
    assert_prints_what_the_readme_shows("per-chunk-loop", ran.printed)
    assert ran.namespace["show_spinner"] is False
    assert ran.namespace["message"] == expected.as_dict()


@pytest.mark.parametrize("path", list(OTHER_STREAMS.values()), ids=list(OTHER_STREAMS))
def test_per_chunk_loop_on_other_recorded_streams(path, monkeypatch, capsys):
    ran = run_quick_start(["per-chunk-loop"], monkeypatch, capsys, stream=read_stream(path))
    expected = quick_recorded(path)
    assert_each_call_ran_once(ran.runs, expected.calls())
    assert without_calls_and_deltas(ran.printed) == expected.get_content()


def test_per_chunk_loop_lists_a_cut_call(monkeypatch, capsys):
    ran = run_quick_start(["per-chunk-loop"], monkeypatch, capsys, stream=quick_stream_cut())
    assert ran.runs == []
    assert ran.printed == "[get_weather will never run: cut]\n"


def test_harness_catches_a_call_run_twice(monkeypatch, capsys):
    """The negative control: the README's per-chunk loop with ``calls()`` (every call so far)
    in place of ``new_calls()`` runs the call again on each later chunk (the recorded stream
    sends two after it: the finish chunk and the usage chunk), and the harness says so."""
    block = readme_blocks()["per-chunk-loop"]
    assert block.code.count("buf.new_calls()") == 1
    double = Block(block.name, block.code.replace("buf.new_calls()", "buf.calls()"), block.line)
    ran = run_quick_start([double], monkeypatch, capsys)
    assert len(ran.runs) == 3
    twice = re.escape("get_weather({'city': 'New York City'}) ran 3 times, not once")
    with pytest.raises(AssertionError, match=twice):
        assert_each_call_ran_once(ran.runs, quick_recorded().calls())
    with pytest.raises(AssertionError):
        assert_prints_what_the_readme_shows("per-chunk-loop", ran.printed)


def test_harness_catches_a_call_that_did_not_run(monkeypatch, capsys):
    """The other way round: a loop that runs nothing fails the same check."""
    with pytest.raises(AssertionError, match="the tools ran other calls"):
        assert_each_call_ran_once([], quick_recorded().calls())


def test_driver_loop_runs_the_call_once_and_keeps_the_history(monkeypatch, capsys):
    ran = run_quick_start(["driver", "driver-loop"], monkeypatch, capsys)
    expected = quick_recorded()
    assert_each_call_ran_once(ran.runs, expected.calls())
    assert_prints_what_the_readme_shows("driver-loop", ran.printed)
    history = ran.namespace["messages"]
    assert history == [PROMPT, *native_history(QUICK_STREAM, expected)]


@pytest.mark.parametrize("path", list(OTHER_STREAMS.values()), ids=list(OTHER_STREAMS))
def test_driver_loop_on_other_recorded_streams(path, monkeypatch, capsys):
    ran = run_quick_start(["driver", "driver-loop"], monkeypatch, capsys, read_stream(path))
    expected = quick_recorded(path)
    assert_each_call_ran_once(ran.runs, expected.calls())
    shown = re.sub(r"\[ran [^\n]*\]\n", "", ran.printed)
    assert shown == expected.get_content() + "\n"
    assert ran.namespace["messages"] == [PROMPT, *native_history(path, expected)]


def test_driver_loop_tells_the_model_about_a_cut_call(monkeypatch, capsys):
    """A call cut by the length limit never runs; the history answers it with the wire's own
    error result (no separate user turn), its arguments as the API accepts them."""
    ran = run_quick_start(["driver", "driver-loop"], monkeypatch, capsys, quick_stream_cut())
    assert ran.runs == []
    assert ran.printed == "\n"
    prompt, assistant, result = ran.namespace["messages"]
    assert prompt == PROMPT
    (call,) = assistant["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": "{}"}
    assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
    assert "get_weather" in result["content"] and "output token limit" in result["content"]


def test_driver_loop_is_a_two_turn_conversation(monkeypatch, capsys):
    """The README's loop over a call turn, then over the model's text answer: the history
    holds each assistant turn once, the call answered, the text turn whole."""
    ran = run_quick_start(
        ["driver", "driver-loop", "driver-second-turn"], monkeypatch, capsys
    )
    assert_each_call_ran_once(ran.runs, quick_recorded().calls())
    printed = ran.printed.split("]\n", 1)[1]  # what the second turn's block printed
    assert_prints_what_the_readme_shows("driver-second-turn", printed.lstrip("\n"))
    prompt, call_turn, result, answer = ran.namespace["messages"]
    first = quick_recorded()
    assert prompt == PROMPT
    assert [call_turn, result] == native_history(QUICK_STREAM, first)
    text_path = GOLDEN / "openai_chat" / "oai_py_text.jsonl"
    assert answer == quick_recorded(text_path).as_dict()  # the text turn, exactly once


def test_async_driver_loop_is_the_same_two_turn_conversation(monkeypatch, capsys):
    """The async loop over the call turn, then the text turn: the tool awaited once, and the
    history the sync loop's over the same two turns (awaited, never a coroutine)."""
    ran = run_quick_start(["driver", "driver-loop", "driver-second-turn"], monkeypatch, capsys)
    sync_history = ran.namespace["messages"]
    ran.runs.clear()
    run_block(readme_blocks()["async-driver-loop"], ran.namespace)
    printed = capsys.readouterr().out
    assert_each_call_ran_once(ran.runs, quick_recorded().calls())
    assert_prints_what_the_readme_shows("async-driver-loop", printed)
    history = ran.namespace["messages"]
    assert history == sync_history
    assert "coroutine" not in json.dumps(history)


def test_async_driver_loop_on_parallel_calls(monkeypatch, capsys):
    path = OTHER_STREAMS["anthropic-parallel-calls"]
    ran = run_quick_start(["driver", "driver-loop"], monkeypatch, capsys, read_stream(path))
    sync_history = ran.namespace["messages"]
    ran.runs.clear()
    run_block(readme_blocks()["async-driver-loop"], ran.namespace)
    capsys.readouterr()
    assert_each_call_ran_once(ran.runs, quick_recorded(path).calls())
    history = ran.namespace["messages"]
    # the call turn as the sync loop keeps it, then the text answer once
    assert history[: len(sync_history)] == sync_history
    assert [m["role"] for m in history[len(sync_history) :]] == ["assistant"]


# -- the README itself ----------------------------------------------------------------------------


QUICK_START = (
    "stream",
    "tools",
    "events",
    "driver",
    "driver-loop",
    "driver-second-turn",
    "async-driver-loop",
)


def _own_blocks() -> dict[str, Block]:
    """The blocks this file runs; ``authoring-*`` are tests/test_readme_authoring.py's."""
    return {n: b for n, b in readme_blocks().items() if not n.startswith("authoring-")}


def test_every_readme_example_is_run():
    """A new marked block needs a test here (or in tests/test_readme_authoring.py, for the
    ``authoring-*`` blocks), and every name here a block."""
    assert set(_own_blocks()) == {*QUICK_START, "per-chunk-loop", *EXAMPLES}


def test_every_python_block_is_marked():
    """A python block without a marker would never run: every one is marked."""
    assert unmarked_python_blocks() == [], "README.md lines of python blocks that never run"
    assert len(_PYTHON_FENCE.findall(README.read_text(encoding="utf-8"))) == len(readme_blocks())


def test_every_readme_output_belongs_to_a_block():
    assert set(readme_outputs()) <= set(readme_blocks())
    assert set(readme_outputs()) == {
        "events",
        "driver-loop",
        "driver-second-turn",
        "async-driver-loop",
        "per-chunk-loop",
    }


def test_an_unmarked_python_block_is_found():
    text = "a\n<!-- readme-example: a -->\n```python\nx = 1\n```\nb\n```python\ny = 2\n```\n"
    assert unmarked_python_blocks(text) == [7]
    assert unmarked_python_blocks(text.replace("```python\ny", "```py\ny")) == [7]


def test_readme_examples_hold_no_test_scaffolding():
    """The blocks are what a user pastes: nothing about the loopback server or the tests."""
    for block in _own_blocks().values():
        for word in ("loopback", "127.0.0.1", "monkeypatch", "pytest", "golden"):
            if block.name == "stream" and word == "golden":
                continue  # it loads a recorded stream from tests/golden/, and says so
            assert word not in block.code, f"readme-example {block.name} mentions {word!r}"


def test_readme_blocks_are_found_with_their_lines():
    text = "intro\n<!-- readme-example: a -->\n```python\nx = 1\ny = 2\n```\n"
    (block,) = readme_blocks(text).values()
    assert (block.name, block.code, block.line) == ("a", "x = 1\ny = 2\n", 4)
    with pytest.raises(ValueError, match="two blocks"):
        readme_blocks(text + text)


def test_readme_opens_with_install_and_the_ci_test_command():
    """The README's first commands install and replay, then run exactly what CI runs."""
    text = README.read_text(encoding="utf-8")
    first = re.search(r"```sh\n(.*?)```", text, re.DOTALL)
    assert first and text.index(first[0]) < text.index("\n## ")
    install, test_command = first[1].strip().splitlines()
    assert "pip install" in install and "mcs-formats replay tests/golden/" in install
    replayed = re.search(r"mcs-formats replay (\S+)", install)[1]
    assert (ROOT / replayed).is_file()
    # The first command installs the engine alone: no extra, so only the runtime dependencies.
    assert install.startswith("pip install -e . && "), install
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = sorted(re.split(r"[<>=!~ \[]", dep)[0].lower() for dep in project["dependencies"])
    assert runtime == ["jmespath", "jsonschema", "pyyaml"]
    # ... and the test command installs what the tests need, at CI's pins, then runs them.
    assert "-c .ci/constraints.txt" in test_command and "'.[test,sdk]'" in test_command
    assert test_command.endswith("&& python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == test_command
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    order = ["Quick start", "What it does", "Streaming with your SDK", "Formats"]
    order.append("Authoring a new format")
    order.append("Command line")
    assert [h for h in headings if h in order] == order
