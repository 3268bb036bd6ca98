"""The command line: its real entry points (``python -m engine`` and ``mcs-formats``, in a
child process: exit codes, usage errors, pipes, the console script, what a start imports), and
what each command does, through ``engine.cli.main`` (what the entry point runs) in this process
(conftest.run_cli: UTF-8 text out, as a child's pipes give it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ENV, run_cli

import engine
from engine.cli import commands as cli
from engine.language.validate import schema_path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
OAI_PARALLEL = GOLDEN / "openai_chat" / "oai_py_parallel_tools_a.jsonl"
ANTHROPIC_TOOL = GOLDEN / "anthropic_messages" / "llm_anthropic_tool_use.jsonl"


def _console_script() -> str:
    """The installed ``mcs-formats``: beside this interpreter (a venv used without activating
    it), else on PATH. The test extra installs the project, so it is always there."""
    beside = Path(sys.executable).parent / "mcs-formats"
    found = str(beside) if beside.exists() else shutil.which("mcs-formats")
    assert found, "the console script mcs-formats is not installed (pip install -e '.[test]')"
    return found


def _command(args: tuple[str, ...], script: bool) -> list[str]:
    head = [_console_script()] if script else [sys.executable, "-m", "engine"]
    return [*head, *args]


def run(*args: str, cwd: Path | None = None, script: bool = False) -> subprocess.CompletedProcess:
    """One invocation of the real command."""
    return subprocess.run(
        _command(args, script),
        cwd=cwd or ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )


def in_process(*argvs: tuple[str, ...], cwd: Path = ROOT) -> list[tuple[int, str, str]]:
    """Several commands through ``engine.cli.main``, in this process: (rc, stdout, stderr)."""
    return [(r.returncode, r.stdout, r.stderr) for r in (run_cli(*argv, cwd=cwd) for argv in argvs)]


def run_many(*argvs: tuple[str, ...], cwd: Path | None = None) -> list[tuple[int, str, str]]:
    """Several invocations at once (each pays the interpreter's start): (rc, stdout, stderr)."""
    procs = [
        subprocess.Popen(
            _command(argv, False),
            cwd=cwd or ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        for argv in argvs
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]


# -- list, show ------------------------------------------------------------------------------------


def test_list_prints_the_builtin_names_in_order():
    result = run("list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == engine.list_formats()


def test_list_json_gives_name_title_docs():
    result = run_cli("list", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == engine.list_formats()
    for row in rows:
        strategy = engine.load_format(row["name"])
        assert row == {
            "name": strategy.name,
            "title": strategy.title,
            "docs": strategy.descriptor.get("docs"),
        }


def test_console_script_is_the_same_command():
    result = run("list", script=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == engine.list_formats()


def test_show_prints_yaml_that_loads_back_to_the_descriptor():
    result = run_cli("show", "anthropic_messages")
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == engine.load_format("anthropic_messages").descriptor
    assert result.stdout.startswith("name: anthropic_messages\ntitle: ")  # the header first


@pytest.mark.parametrize("name", engine.list_formats())
def test_show_yaml_round_trips_every_builtin(name):
    descriptor = engine.load_format(name).descriptor
    text = cli.to_yaml(descriptor)
    assert yaml.safe_load(text) == descriptor
    assert list(yaml.safe_load(text)) == list(descriptor)  # the file's order of sections


def test_show_unknown_name_is_a_usage_error_naming_the_closest():
    result = run("show", "openai_chatt")
    assert result.returncode == 2
    assert "openai_chat" in result.stderr and "Traceback" not in result.stderr


# -- validate --------------------------------------------------------------------------------------


def test_validate_builtin_descriptors_is_silent():
    paths = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "formats").glob("*.yaml"))
    result = run_cli("validate", *paths)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


BROKEN = """\
name: broken
title: 42
docs: https://example.com/docs
recognize:
  chunk: {field: type, equals: broken.delta}
events:
  discriminator: type
  on:
    broken.delta:
      - append: {at: content, from: delta}
calls:
  at: "tool_calls[*]"
  name: function.name
  id: "id[?"
  pth: id
  args: function.arguments
text:
  at: content
"""


def test_validate_reports_each_problem_as_file_line_col_pointer_message(tmp_path):
    (tmp_path / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    result = run_cli("validate", "broken.yaml", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(re.match(r"^broken\.yaml:\d+:\d+: /\S*: .+", line) for line in lines)

    def line_of(pointer: str) -> int:
        found = [ln for ln in lines if ln.split(": ")[1] == pointer]
        assert found, f"no problem at {pointer}: {lines}"
        return int(found[0].split(":")[1])

    assert line_of("/title") == 2  # wrong type
    assert line_of("/calls/id") == 14  # JMESPath that does not compile
    assert line_of("/calls/pth") == 15  # unknown key

    as_json = run_cli("validate", "--json", "broken.yaml", cwd=tmp_path)
    assert as_json.returncode == 1
    problems = json.loads(as_json.stdout)
    assert {p["pointer"] for p in problems} >= {"/title", "/calls/id", "/calls/pth"}
    assert all(p["file"] == "broken.yaml" for p in problems)


def test_validate_missing_file_and_yaml_syntax_error_are_problems(tmp_path):
    (tmp_path / "bad.yaml").write_text("name: bad\ntitle: [unclosed\n", encoding="utf-8")
    result = run_cli("validate", "nope.yaml", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 1
    missing, syntax = result.stdout.splitlines()
    assert missing.startswith("nope.yaml:1:1: ")
    assert re.match(r"^bad\.yaml:\d+:\d+: ", syntax), syntax
    assert "Traceback" not in result.stderr


# -- replay ----------------------------------------------------------------------------------------


def test_replay_openai_parallel_tools_shows_calls_and_the_message():
    result = run_cli("replay", str(OAI_PARALLEL))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    first = out.splitlines()[0]
    assert "openai_chat" in first and "format" in first
    call_lines = [ln for ln in out.splitlines() if "call⟧" in ln]
    assert len(call_lines) == 2
    weather, stock = call_lines
    assert "GetWeatherArgs" in weather and "id=call_JMW1whyEaYG438VE1OIflxA2" in weather
    assert '"city": "Edinburgh"' in weather
    assert "get_stock_price" in stock and "id=call_DNYTawLBoN8fj3KN6qU9N1Ou" in stock
    assert '"tool_calls"' in out and "stop_reason⟧" in out and "usage⟧" in out
    assert "unknown⟧ 0" in out


def test_replay_anthropic_tool_use_json_events():
    result = run_cli("replay", str(ANTHROPIC_TOOL), "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [e for e in events if e["event"] == "call"]
    assert calls == [
        {
            "event": "call",
            "name": "pelican_name_generator",
            "arguments": {},
            "id": "toolu_01CzN6riCPqw4pVSuTd9Dwn7",
            "chunk": calls[0]["chunk"],
        }
    ]
    assert isinstance(calls[0]["chunk"], int)
    final = events[-1]
    assert final["event"] == "message" and final["format"] == "anthropic_messages"
    assert final["stop_reason"] == "tool_use"
    assert final["message"]["content"][0]["name"] == "pelican_name_generator"
    assert final["error"] is None and "usage" in final


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def _client_loop(path: Path, tools: tuple[str, ...]) -> dict:
    """What the library's client loop gives for a stream: a driver owning ``tools`` (echoes),
    per chunk ``add``, ``process_llm_response``, ``text()``; then ``close()`` and a round."""

    class Echo(engine.BaseDriver):
        def list_tools(self):
            return [engine.Tool(name) for name in tools]

        def execute_tool(self, tool_name, arguments):
            return arguments

    driver = Echo()
    buf = driver.new_stream_buffer()
    text, ran, history = [], [], []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for event in [*lines, None]:
        if event is None:
            buf.close()
        else:
            buf.add(event)
        response = driver.process_llm_response(buf)
        text.append(buf.text())
        ran += [
            (r.name, r.arguments, r.tool_call_id, r.result) for r in response.executed_calls or []
        ]
        history += response.messages or []
    return {"text": "".join(text), "ran": ran, "history": history}


def _replayed(events: list[dict]) -> dict:
    return {
        "text": "".join(e["text"] for e in events if e["event"] == "text"),
        "ran": [
            (e["name"], e["arguments"], e["id"], e["result"]) for e in events if e["event"] == "ran"
        ],
        "history": [m for e in events if e["event"] == "history" for m in e["messages"]],
    }


def test_replay_with_a_named_format_and_tools_runs_a_driver():
    tools = ("--format", "openai_chat", "--tools", "get_stock_price")
    (rc, out, err), (_, human, _) = in_process(
        ("replay", str(OAI_PARALLEL), *tools, "--json"), ("replay", str(OAI_PARALLEL), *tools)
    )
    assert rc == 0, err
    events = _events(out)
    calls = [e["name"] for e in events if e["event"] == "call"]
    assert calls == ["GetWeatherArgs", "get_stock_price"]
    assert _replayed(events) == _client_loop(OAI_PARALLEL, ("get_stock_price",))
    ran = [e for e in events if e["event"] == "ran"]
    assert [(e["name"], e["result"], e["error"]) for e in ran] == [
        ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}, None)
    ]
    (done,) = [e["chunk"] for e in events if e["event"] == "done"]
    assert ran[0]["chunk"] == done  # the batch runs at the wire's DONE, not when it completes
    kinds = [e["event"] for e in events]
    assert kinds.index("held") < kinds.index("released") <= kinds.index("ran")
    (held,) = [e for e in events if e["event"] == "held"]
    assert held["tool"] == "get_stock_price"
    (history,) = [e["messages"] for e in events if e["event"] == "history"]
    assert history[0]["role"] == "assistant"
    assert history[-1] == {
        "role": "tool",
        "tool_call_id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
        "content": json.dumps({"ticker": "AAPL", "exchange": "NASDAQ"}),
    }
    assert "ran⟧ get_stock_price -> {" in human and "id=call_DNYTawLBoN8fj3KN6qU9N1Ou" in human
    assert "held⟧ a call of get_stock_price is forming" in human and "history⟧" in human


def _chat_stream(tmp_path: Path, text: str, size: int = 7, finish: str | None = "stop") -> Path:
    def chunk(delta: dict, finish_reason: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return {"id": "c1", "object": "chat.completion.chunk", "choices": [choice]}

    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    events = [chunk({"role": "assistant", "content": ""}), *(chunk({"content": p}) for p in pieces)]
    if finish:
        events.append(chunk({}, finish))
    path = tmp_path / "leak.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


# A call that ends the turn (a driver runs a text call only then, by default).
LEAK = (
    'Let me check. <tool_call>{"tool": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    "\n"
)


def test_replay_tools_hold_a_call_leaked_into_text_and_run_it(tmp_path):
    stream = _chat_stream(tmp_path, LEAK)
    (rc, out, err), (_, human, _), (_, bare, _) = in_process(
        ("replay", str(stream), "--tools", "get_weather", "--json"),
        ("replay", str(stream), "--tools", "get_weather"),
        ("replay", str(stream), "--json"),
    )
    assert rc == 0, err
    events = _events(out)
    seen = _replayed(events)
    assert seen == _client_loop(stream, ("get_weather",))
    assert seen["text"] == "Let me check. \n"  # the call's text is never shown
    assert seen["ran"] == [("get_weather", {"city": "Oslo"}, None, {"city": "Oslo"})]
    assert [m["role"] for m in seen["history"]] == ["assistant", "user"]
    kinds = [e["event"] for e in events]
    assert kinds.index("held") < kinds.index("released") <= kinds.index("ran")
    last_text = max(i for i, k in enumerate(kinds) if k == "text")
    assert kinds.index("ran") > last_text  # at the turn's end, after all its text
    assert "ran⟧ get_weather -> {" in human and "held⟧ a call may be forming" in human
    # Without --tools nothing is held or run: the text flows as sent.
    plain = _events(bare)
    assert "".join(e["text"] for e in plain if e["event"] == "text") == LEAK
    assert not {"held", "released", "ran", "history"} & {e["event"] for e in plain}


def test_replay_tools_a_stream_without_done_runs_its_batch_at_close():
    stream = GOLDEN / "openai_chat" / "compat_openrouter_llm_kimi_k2_tool_call_a.jsonl"
    result = run_cli("replay", str(stream), "--tools", "llm_version", "--json")
    assert result.returncode == 0, result.stderr
    events = _events(result.stdout)
    assert "done" not in {e["event"] for e in events}  # the stream never sends its DONE
    (ran,) = [e for e in events if e["event"] == "ran"]
    assert (ran["name"], ran["arguments"], ran["id"], ran["chunk"]) == (
        "llm_version",
        {},
        "0",
        None,
    )
    (history,) = [e["messages"] for e in events if e["event"] == "history"]
    assert history[-1] == {"role": "tool", "tool_call_id": "0", "content": "{}"}
    assert _replayed(events) == _client_loop(stream, ("llm_version",))


def test_replay_counts_unknown_events(tmp_path, capsys):
    lines = ANTHROPIC_TOOL.read_text(encoding="utf-8").splitlines()
    lines[2:2] = ['{"type": "mystery"}'] * 2
    stream = tmp_path / "u.jsonl"
    stream.write_text("\n".join(lines) + "\n", encoding="utf-8")
    final = json.loads(run_cli("replay", "u.jsonl", "--json", cwd=tmp_path).stdout.splitlines()[-1])
    assert final["unknown"] == {"mystery": 2}
    assert cli.main(["replay", str(stream)]) == 0
    human = capsys.readouterr().out
    assert "unknown" in human and "2 event(s) skipped (mystery" in human


def test_replay_malformed_line_names_file_and_line(tmp_path):
    lines = ANTHROPIC_TOOL.read_text(encoding="utf-8").splitlines()
    lines.insert(2, '{"type": "content_block_delta", oops')
    stream = tmp_path / "cut.jsonl"
    stream.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("replay", "cut.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert "cut.jsonl:3:" in result.stderr and "not JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_replay_errors_exit_cleanly(tmp_path):
    (tmp_path / "list.jsonl").write_text('{"type": "message_start", "message": {}}\n[1]\n')
    result = run("replay", "list.jsonl", cwd=tmp_path)
    assert result.returncode == 1 and "list.jsonl:2:" in result.stderr
    missing, unknown = run_many(
        ("replay", "missing.jsonl"),
        ("replay", str(ANTHROPIC_TOOL), "--format", "no_such_format"),
        cwd=tmp_path,
    )
    assert missing[0] == 1 and "missing.jsonl" in missing[2]
    assert unknown[0] == 2 and "Known formats" in unknown[2]
    for err in (result.stderr, missing[2], unknown[2]):
        assert "Traceback" not in err


# -- new -------------------------------------------------------------------------------------------


def test_new_scaffolds_a_valid_loadable_format_and_refuses_twice(tmp_path):
    result = run_cli("new", "acme_chat", "--dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    descriptor = tmp_path / "formats" / "acme_chat.yaml"
    text = descriptor.read_text(encoding="utf-8")
    # The schema header is a path inside the project folder, where `new` put a copy of the
    # installed schema: it works wherever the folder goes, on any machine.
    assert text.startswith("# yaml-language-server: $schema=../schemas/format.schema.json\n")
    copy = descriptor.parent / "../schemas/format.schema.json"
    assert copy.read_bytes() == Path(schema_path()).read_bytes()
    assert (tmp_path / "tests" / "golden" / "acme_chat" / "README.md").is_file()

    strategy = engine.load_format(descriptor)
    assert strategy.name == "acme_chat"

    # It validates, and it runs: its example rule streams text, its DONE finishes.
    stream = tmp_path / "s.jsonl"
    stream.write_text(
        '{"type": "acme_chat.delta", "delta": "Hi"}\n{"type": "acme_chat.done"}\n',
        encoding="utf-8",
    )
    checked, replay = in_process(
        ("validate", "formats/acme_chat.yaml"),
        ("replay", "s.jsonl", "--format", str(descriptor), "--json"),
        cwd=tmp_path,
    )
    assert checked[:2] == (0, ""), checked
    assert replay[0] == 0, replay[2]
    events = [json.loads(line) for line in replay[1].splitlines()]
    assert {"event": "text", "text": "Hi"} in events
    assert events[-1]["message"]["content"] == "Hi"
    # The skeleton declares the finish reasons and the counts, as a wire's author fills them.
    described = strategy.descriptor
    assert described["finish_reasons"]["tool_calls"] and described["token_usage"]

    again = run_cli("new", "acme_chat", "--dir", str(tmp_path))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert descriptor.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", ["Acme", "acme-chat", "9lives", "openai_chat"])
def test_new_refuses_bad_or_builtin_names(tmp_path, capsys, name):
    assert cli.main(["new", name, "--dir", str(tmp_path)]) == 2
    assert name in capsys.readouterr().err
    assert not (tmp_path / "formats").exists()


def test_usage_errors_exit_2():
    assert run().returncode == 2
    for argv in (["replay"], ["frobnicate"], ["list", "--bogus"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2


# -- nothing to do is not success; output that cannot be written is one line --------------------


def test_version_prints_the_distributions_version():
    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"mcs-formats {engine.__version__}\n"
    assert engine.__version__ == _pyproject_version()


def test_a_command_other_than_serve_does_not_import_the_server():
    """Every child of this suite, and every command a user types, pays what the CLI imports at
    its start: the fake provider's HTTP server (engine.cli.serve_http, http.server) is
    imported by ``serve`` alone."""
    probe = (
        "import sys\n"
        "from engine.cli import main\n"
        "code = main(['list'])\n"
        "print(code, sorted(m for m in sys.modules if m.endswith(('serve_http', 'http.server'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=ENV, capture_output=True, text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "0 []"


def _pyproject_version() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]


def test_validate_a_folder_without_descriptors_fails_saying_so(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("not a descriptor\n")
    (empty, notes, with_json) = in_process(
        ("validate", "empty"),
        ("validate", "notes", str(ROOT / "formats")),
        ("validate", "--json", "empty"),
        cwd=tmp_path,
    )
    message = "no descriptor (*.yaml, *.yml) in this folder"
    assert empty[:2] == (1, f"empty:1:1: /: {message}\n"), empty
    assert notes[:2] == (1, f"notes:1:1: /: {message}\n"), notes  # the valid folder says nothing
    assert json.loads(with_json[1]) == [
        {"file": "empty", "line": 1, "col": 1, "pointer": "", "message": message, "rule": "file"}
    ]
    assert with_json[0] == 1
    assert not any("Traceback" in err for _, _, err in (empty, notes, with_json))


def test_replay_of_a_stream_without_events_fails(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "blank.jsonl").write_text("\n  \n\n")
    runs = run_many(("replay", "empty.jsonl"), ("replay", "blank.jsonl"), cwd=tmp_path)
    for rc, out, err in runs:
        assert rc == 1 and out == "", (rc, out, err)
        assert err.endswith(".jsonl: no events (an empty stream)\n") and len(err.splitlines()) == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "argv",
    [
        ("replay", str(OAI_PARALLEL)),
        ("replay", str(ANTHROPIC_TOOL), "--json", "--tools", "get_weather"),
        ("list",),
        ("list", "--json"),
        ("show", "gemini"),
    ],
    ids=lambda argv: " ".join(a for a in argv if "/" not in a),
)
def test_output_to_a_full_disk_is_one_line_and_exit_1(argv):
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            _command(argv, False),
            cwd=ROOT,
            env=ENV,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            timeout=60,
        )
    assert result.returncode == 1
    assert result.stderr == (
        f"mcs-formats {argv[0]}: cannot write the output: No space left on device\n"
    )


def test_replay_shows_the_finish_reason_and_the_token_usage_beside_the_raw_ones():
    # pelican_name_generator: stop_reason tool_use; usage input_tokens 543 with no cache
    # read or written, output_tokens 40 (tests/test_finish_usage.py has every golden's row).
    result = run_cli("replay", str(ANTHROPIC_TOOL), "--json")
    assert result.returncode == 0, result.stderr
    final = _events(result.stdout)[-1]
    assert final["finish_reason"] == "tool_calls"
    assert final["token_usage"] == {
        "input_tokens": 543,
        "output_tokens": 40,
        "total_tokens": 583,
        "reasoning_tokens": None,
        "cached_input_tokens": 0,
    }
    text = run_cli("replay", str(ANTHROPIC_TOOL)).stdout
    assert 'finish_reason⟧ "tool_calls"' in text
    assert '"input_tokens": 543' in text.split("token_usage⟧", 1)[1].splitlines()[0]


# -- replay tells everything a client would want to know (issue 18, point 5) ---------------------

CUT = GOLDEN / "anthropic_messages" / "hand_max_tokens_cut_in_string.jsonl"
THINKING = GOLDEN / "anthropic_messages" / "llm_anthropic_thinking_tool_use.jsonl"


def _library(path: Path) -> dict:
    """What the library's events say of a stream: its reasoning, and each call that will
    never be runnable (name, id, reason, raw)."""
    buf = engine.LLMStreamBuffer(events=True)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    events = list(buf.consume(lines))
    return {
        "reasoning": "".join(e.text for e in events if isinstance(e, engine.ReasoningDelta)),
        "incomplete": [
            {"name": e.name, "id": e.id, "reason": e.reason, "raw": e.raw}
            for e in events if isinstance(e, engine.CallIncomplete)
        ],
    }


def test_replay_without_tools_shows_each_call_that_will_never_run_with_its_reason():
    (rc, out, err), (_, human, _) = in_process(("replay", str(CUT), "--json"), ("replay", str(CUT)))
    assert rc == 0, err
    events = _events(out)
    incomplete = [e for e in events if e["event"] == "incomplete"]
    want = _library(CUT)["incomplete"]
    assert want and [{k: e[k] for k in ("name", "id", "reason", "raw")} for e in incomplete] == want
    assert all("chunk" in e for e in incomplete)
    name, reason = want[0]["name"], want[0]["reason"]
    assert re.search(rf"incomplete⟧ {name} will never run \({reason}\)", human), human


def test_replay_shows_reasoning_as_it_streams():
    (rc, out, err), (_, human, _) = in_process(
        ("replay", str(THINKING), "--json"), ("replay", str(THINKING))
    )
    assert rc == 0, err
    events = _events(out)
    reasoning = [e for e in events if e["event"] == "reasoning"]
    assert len(reasoning) > 1  # as it streams, not once at the end
    want = _library(THINKING)["reasoning"]
    assert want and "".join(e["text"] for e in reasoning) == want
    kinds = [e["event"] for e in events]
    assert kinds.index("reasoning") < kinds.index("call")
    assert "reasoning⟧ " in human and want.split()[0] in human
    text = "".join(e["text"] for e in events if e["event"] == "text")
    assert want not in text  # reasoning is never display text


def test_replay_held_names_the_call_once_its_name_is_known(tmp_path):
    stream = _chat_stream(tmp_path, LEAK, size=3)
    result = run_cli("replay", str(stream), "--tools", "get_weather", "--json")
    assert result.returncode == 0, result.stderr
    held = [e for e in _events(result.stdout) if e["event"] == "held"]
    assert held[0]["tool"] is None  # `<tool_call>` opened: a call may be forming
    assert held[-1]["tool"] == "get_weather" and held[-1]["chunk"] > held[0]["chunk"]


# -- examples: the toy wires and the guide come with the package (issue 18, point 7) -------------

TOYS = sorted(p.name for p in GOLDEN.iterdir() if (p / f"{p.name}.yaml").is_file())


def test_examples_lists_each_toy_wire_with_what_it_shows():
    result = run("examples", script=True)
    assert result.returncode == 0, result.stderr
    rows = [line.split(None, 1) for line in result.stdout.splitlines()]
    assert [name for name, _ in rows] == TOYS and len(TOYS) >= 7
    for name, shows in rows:
        assert shows == engine.load_format(GOLDEN / name / f"{name}.yaml").title


def test_examples_name_writes_a_project_folder_that_test_passes(tmp_path):
    toy = TOYS[0]
    result = run_cli("examples", toy, "--dir", "ex", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    root = tmp_path / "ex"
    descriptor = root / "formats" / f"{toy}.yaml"
    streams = sorted(p.name for p in (GOLDEN / toy).glob("*.jsonl"))
    assert streams and sorted(p.name for p in (root / "tests/golden" / toy).glob("*.jsonl")) == (
        streams
    )
    assert descriptor.read_text(encoding="utf-8").startswith(
        "# yaml-language-server: $schema=../schemas/format.schema.json\n"
    )
    assert (root / "schemas/format.schema.json").read_bytes() == schema_path().read_bytes()
    assert run_cli("test", "ex", "--update", cwd=tmp_path).returncode == 0
    assert run_cli("test", "ex", cwd=tmp_path).returncode == 0
    again = run_cli("examples", toy, "--dir", "ex", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    unknown = run_cli("examples", "no_such_toy", cwd=tmp_path)
    assert unknown.returncode == 2 and TOYS[0] in unknown.stderr


def test_examples_guide_prints_the_authors_guide():
    result = run_cli("examples", "--guide")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (ROOT / "formats" / "README.md").read_text(encoding="utf-8")
