"""The README's SDK examples run, exactly as written, against the loopback server.

Each ```python block under "Streaming with your SDK" follows an HTML comment marker
(``<!-- readme-example: NAME -->``). The test takes the blocks out of README.md itself, so the
README cannot drift from what runs: the shared ``driver`` block, then one SDK's block, executed
in one namespace with tracebacks pointing at README lines. The SDK is pointed at the loopback
server only through what it reads from the environment (``monkeypatch.setenv``), the way a user
points it at a proxy or a compatible server, and the server replays a golden stream of that wire.

What each example must produce, compared with the recorded stream replayed without any SDK:
the text it printed is the stream's display text; every call of the stream ran exactly once,
with its arguments; the history variable holds the prompt, then the assistant turn and the tool
results in the wire's native shape; and the SDK sent one request, to its provider's endpoint,
declaring the driver's tools.

No skip: CI installs ``.[test,sdk]``, and an example whose SDK is missing is a failure.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine
from engine import ToolCallRecord

try:  # pytest's default "prepend" import mode puts tests/ itself on sys.path
    from conftest import read_stream, replay
    from test_loopback_sdks import loopback_only, server  # noqa: F401
    from test_sdk_agreement import SDK_DROPS
except ImportError:  # tests/ made a package, or importlib mode from the repository root
    from tests.conftest import read_stream, replay
    from tests.test_loopback_sdks import loopback_only, server  # noqa: F401
    from tests.test_sdk_agreement import SDK_DROPS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GOLDEN = ROOT / "tests" / "golden"

# litellm's import warns about its own TypedDicts; openai's models warn when serialising.
pytestmark = [
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


def run_block(block: Block, namespace: dict) -> None:
    """Execute a README block in ``namespace``; a traceback names README.md and its line."""
    tree = ast.parse(block.code, filename=str(README))
    ast.increment_lineno(tree, block.line - 1)
    exec(compile(tree, str(README), "exec"), namespace)


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
    "cohere": Example(
        "cohere_v2",
        "hand_tool_plan_two_calls",
        "messages",
        "/v2/chat",
        {"CO_API_KEY": "loopback-key", "CO_API_URL": "{base}"},
    ),
    "ollama": Example(
        "ollama", "hand_calls_on_done_line", "messages", "/api/chat", {"OLLAMA_HOST": "{base}"}
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
    return GOLDEN / example.wire / f"{example.fixture}.jsonl"


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


# -- the README itself ----------------------------------------------------------------------------


def _sdk_blocks() -> dict[str, Block]:
    """The blocks this file runs; ``authoring-*`` are tests/test_readme_authoring.py's."""
    return {n: b for n, b in readme_blocks().items() if not n.startswith("authoring-")}


def test_every_readme_example_is_run():
    """A new marked block needs an entry here, and every entry a block."""
    assert set(_sdk_blocks()) == {"driver", *EXAMPLES}


def test_readme_examples_hold_no_test_scaffolding():
    """The blocks are what a user pastes: nothing about the loopback server or the tests."""
    for block in _sdk_blocks().values():
        for word in ("loopback", "127.0.0.1", "monkeypatch", "pytest", "golden"):
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
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == test_command
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    order = ["What it does", "Streaming with your SDK", "Formats", "Authoring a new format"]
    order.append("Command line")
    assert [h for h in headings if h in order] == order
