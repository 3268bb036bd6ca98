"""The package is typed for its users: a client script of the public API passes
``mypy --strict`` and runs; and what the checker found in engine/ stays fixed.

The script, tests/typing/user_script.py, is checked as a user's code is: engine's own modules
are followed silently (as an installed package with ``py.typed`` is), so only the public
surface as the script meets it counts. A negative control proves the check can fail.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import engine

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "typing" / "user_script.py"
GOLDEN = ROOT / "tests" / "golden" / "anthropic_messages" / "hand_parallel_tool_use.jsonl"

# A user's project: strict, engine as a dependency (its own errors are not the user's).
_USER_CONFIG = "[mypy]\nstrict = True\n[mypy-engine.*]\nfollow_imports = silent\n"

# One worker runs this module (pyproject's --dist loadgroup), so mypy runs once.
pytestmark = pytest.mark.xdist_group("typing")


# A client the checker must refuse: each marked line assigns a value of the wrong type.
BAD_CLIENT = (
    "import engine\n"
    "buf = engine.LLMStreamBuffer()\n"
    "count: int = buf.get_content()\n"  # a str
    "calls: list[str] = buf.calls()\n"  # ExtractedCall
    "for ev in buf.consume([]):\n"
    "    match ev:\n"
    "        case engine.CallReady(call=call):\n"
    "            name: int = call.name\n"  # a str
    "        case engine.ArgumentsDelta(partial=partial):\n"
    "            so_far: str = partial\n"  # a dict
    "        case engine.CallIncomplete(reason=reason):\n"
    "            why: int = reason\n"  # a str
    "ready: list[int] = buf.new_calls()\n"  # ExtractedCall
    "events: list[str] = buf.events()\n"  # Event
    "why_it_ended: int = buf.finish_reason\n"  # a FinishReason or None
    "spent: int = buf.token_usage\n"  # a Usage or None
    "word: engine.FinishReason = 'stopped'\n"  # not one of the six
    "raw: str = buf.stop_reason\n"  # str | None
    "counts: list[int] = buf.usage\n"  # dict[str, Any] | None
    "with engine.LLMStreamBuffer() as mine:\n"
    "    held: str = mine\n"  # the buffer itself
)


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, list[str], list[str]]:
    """``mypy --strict`` once, as a user runs it, over the script and the bad client together
    (each a module of its own, so one run analyses engine once): (exit code, the lines about
    the bad client, every other line). mypy names each file as the command line gave it."""
    folder = tmp_path_factory.mktemp("mypy")
    config = folder / "mypy.ini"
    config.write_text(_USER_CONFIG, encoding="utf-8")
    bad = folder / "bad_client.py"
    bad.write_text(BAD_CLIENT, encoding="utf-8")
    command = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(config)]
    command += ["--cache-dir", str(folder / "cache"), "--no-error-summary", str(SCRIPT), str(bad)]
    # Run from the checkout, so that `import engine` is this tree's engine.
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = (done.stdout + done.stderr).splitlines()
    about_bad = [line for line in lines if line.startswith(f"{bad}:")]
    return done.returncode, about_bad, [line for line in lines if line not in about_bad]


def test_user_script_passes_mypy_strict(mypy_run):
    # Nothing said but of the bad client (whose errors make the exit code 1, not 0).
    _, _, others = mypy_run
    assert others == [], f"mypy --strict on {SCRIPT.name}:\n" + "\n".join(others)


def test_mypy_strict_catches_a_wrong_type_on_the_public_surface(mypy_run):
    code, about_bad, _ = mypy_run
    assert code == 1, about_bad
    output = "\n".join(about_bad)
    for line in (3, 4, 8, 10, 12, 13, 14, 15, 16, 17, 18, 19, 21):
        assert f"bad_client.py:{line}: error: Incompatible types in assignment" in output


def _load_script():
    spec = importlib.util.spec_from_file_location("user_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_user_script_runs_on_a_recorded_stream(tmp_path):
    lines = _load_script().main(GOLDEN, "anthropic_messages", tmp_path / "mine.yaml")
    text = "\n".join(lines)
    assert lines[0] == f"engine {engine.__version__}: {len(engine.list_formats())} formats; " + (
        "anthropic_messages"
    )
    assert 'call get_weather({"city": "Lyon"}) id=toolu_01l0pyMgMJxsFaHSlL4rkfkz' in lines
    assert 'call get_weather({"city": "Marseille"}) id=toolu_01AaMm6M1vHasGdJqwQx5BIE' in lines
    assert "content \"I'll check the weather in both cities.\"" in text
    assert "stop 'tool_use'; usage True; error None" in lines
    # The driver, then the orchestrator over it: each runs the batch once.
    assert lines[-1] == "ran ['Lyon', 'Marseille', 'Lyon', 'Marseille']"
    assert "raw body: ran ['get_weather', 'get_weather'], ignored {}" in lines
    assert text.count("history of 2 message(s)") == 2
    assert "chunk error at 0: expected a JSON object, got a list" in lines
    assert any(line.startswith("problem at ") and "mine.yaml:" in line for line in lines)
    # The events: consume() with a match, the cursors, the async driver and aconsume().
    assert "started 1 get_weather id=toolu_01l0pyMgMJxsFaHSlL4rkfkz" in lines
    assert 'ready 2 get_weather({"city": "Marseille"}) id=toolu_01AaMm6M1vHasGdJqwQx5BIE' in lines
    assert "finished 'tool_use' usage True as tool_calls total 508" in lines
    # One finish reason and one usage, closed by `with` (and by `async with` without DONE).
    assert "anthropic_messages: run the calls; in 412 (cached 0) out 96 (reasoning ?) = 508" in (
        lines
    )
    assert "async with: the stream never finished; closed True" in lines
    assert "arguments 2 False ['city']" in lines
    assert text.count("run get_weather(") == 2 and "0 call(s) at close" in text
    assert "13 event(s); forming False" in text
    assert lines.count("async ready get_weather") == 4  # the driver, then the orchestrator
    assert lines.count("async ran get_weather -> 'sunny in Lyon'") == 2
    assert text.count("aconsume: ") == 2
    assert "awaited ['Lyon', 'Marseille']" in lines


def test_version_is_a_str():
    assert isinstance(engine.__version__, str) and engine.__version__


def test_a_list_restating_streamed_text_replaces_it_and_raises_nothing():
    """Found by mypy: the close of an item compared len() of a restated list with a field
    streamed as text (which has no length) and raised, so the chunk was refused."""
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("openai_responses")])
    item = {"type": "message", "id": "m", "role": "assistant", "content": []}
    buf.add({"type": "response.output_item.added", "output_index": 0, "item": item})
    part = {"type": "output_text", "text": ""}
    at = {"output_index": 0, "content_index": 0}
    buf.add({"type": "response.content_part.added", **at, "part": part})
    buf.add({"type": "response.output_text.delta", **at, "delta": "hi"})
    done = {"type": "output_text", "text": ["x"]}
    buf.add({"type": "response.content_part.done", **at, "part": done})
    assert buf.as_dict()["output"][0]["content"] == [done]
    assert buf.get_content() == "hi"  # what was shown stays shown


def test_engine_is_checked_strict_everywhere_with_nothing_turned_off():
    """CI's ``python -m mypy`` (.ci/run) is ``mypy --strict`` over engine/: the config says
    strict, turns no check off for any module, and no line of engine/ silences the checker."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config.get("strict") is True and config["files"] == ["engine"]
    assert "overrides" not in config
    assert not [k for k, v in config.items() if k.startswith("disallow_") and v is False]
    silenced = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "engine").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "type: ignore" in line
    ]
    # None left: load_format types "mcs_text" as the TextStrategy it returns, and any other
    # name or path as an ExtractionStrategy, which a TextStrategy is too: the overloads agree.
    assert silenced == []


def test_the_text_strategy_is_a_strategy_whatever_name_loads_it():
    """``load_format(name)`` with ``name`` a str is an ExtractionStrategy to the checker: so
    it is at run time, "mcs_text" included, and it answers the questions a driver asks any
    strategy of a whole message (no wire's call items in plain text)."""
    text = engine.load_format("mcs_text")
    assert isinstance(text, engine.ExtractionStrategy) and not text.is_wire
    message = {"role": "assistant", "content": '<tool_call>{"name": "f", "arguments": {}}'}
    assert text.incomplete_calls(message) == [] and text.answerable(message) is message
    wires = engine.language.registry.wire_strategies()
    assert text not in wires and all(s.is_wire for s in wires)
