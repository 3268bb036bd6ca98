"""What ``mcs-formats replay`` (and ``test``, ``serve``) read: JSON Lines, raw SSE captures, stdin.

Every golden is turned into the SSE capture its provider would have sent (``event:`` lines,
``data:`` lines, comments, ``id:``/``retry:``, ``data: [DONE]`` where the wire has it), with
the line ending (LF, CRLF, CR) and the data layout (one line, spread over several ``data:``
fields, no space after the colon) rotating over the goldens, and must replay to the same
``--json`` output as its JSON Lines file. All goldens go through ``engine.cli.main`` (what
``python -m engine`` runs) in this process; one golden of each wire, stdin and the errors go
through ``python -m engine`` itself.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ENV, run_cli, run_engine

from engine.cli import commands as cli
from engine.cli.project import read_stream
from engine.compile.serve import read_recording
from engine.language import registry
from engine.transport.captures import CaptureError, parse_capture
from engine.transport.eventstream import event_message, exception_message

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
STREAMS = sorted(p for name in registry.list_formats() for p in (GOLDEN / name).glob("*.jsonl"))
# (the built-in wires' goldens; a toy wire's folder holds its own descriptor: tests/test_golden.py)
LINE_ENDS = ("\n", "\r\n", "\r")
LAYOUTS = ("one_line", "multi_line", "no_space")


def _event_name(obj: object) -> tuple[str | None, object]:
    """(the SSE ``event:`` name, the payload sent as data): a recorded ``_event`` travels in
    the ``event:`` line where the payload has no ``type``; a ``type`` is also sent as the
    name, as the typed wires do."""
    if not isinstance(obj, dict):
        return None, obj
    if "_event" in obj and "type" not in obj:
        rest = {k: v for k, v in obj.items() if k != "_event"}
        return obj["_event"], rest
    kind = obj.get("type")
    return (kind if isinstance(kind, str) else None), obj


def _data_lines(text: str, payload: object, layout: str) -> list[str]:
    if layout == "multi_line":  # one JSON token group a field: joined with LF, the same JSON
        return [f"data: {piece}" for piece in json.dumps(payload, indent=1).split("\n")]
    if layout == "no_space":
        return [f"data:{text}"]
    return [f"data: {text}"]


def sse_capture(path: Path, end: str = "\n", layout: str = "one_line") -> str:
    """The golden at ``path`` as the raw SSE body its wire would have sent."""
    wire = registry.load_format(path.parent.name)
    out = [": a capture of " + path.name, "retry: 3000", ""]
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        name, payload = _event_name(obj)
        text = line if payload is obj else json.dumps(payload, ensure_ascii=False)
        if name:
            out.append(f"event: {name}")
        out.append(f"id: {number}")
        out.extend(_data_lines(text, payload, layout))
        if number % 3 == 0:
            out.append(": keep-alive")
        out.append("")
    for marker in sorted(wire.spec.sentinels):  # data: [DONE] where the wire sends it
        out += [f"data: {marker}", ""]
    return end.join(out)


def replay_json(*args: str, stdin: bytes | None = None) -> tuple[int, list[dict], str]:
    """``replay ... --json`` through ``engine.cli.main``: (exit code, events, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["replay", *args, "--json"])
    finally:
        sys.stdin = old_stdin
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def run(*args: str, stdin: bytes = b"", cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """One invocation of ``python -m engine``, bytes both ways."""
    return run_engine(*args, cwd=cwd, stdin=stdin, timeout=60)


def _expected_with_marker(path: Path, expected: list[dict]) -> list[dict]:
    """A wire that ends with ``data: [DONE]``: where the JSON Lines file (which keeps no
    marker) never finished, the capture's marker finishes it at its own chunk, and a finished
    stream without a raw stop reason has the finish reason "other"; nothing else may differ."""
    if not registry.load_format(path.parent.name).spec.sentinels:
        return expected
    if any(event["event"] == "done" for event in expected):
        return expected
    chunks = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    at = next(i for i, event in enumerate(expected) if event["event"] == "message")
    message = expected[at]
    assert message["stop_reason"] is None and message["finish_reason"] is None
    finished = {**message, "finish_reason": "other"}
    return [*expected[:at], {"event": "done", "chunk": chunks}, finished, *expected[at + 1 :]]


@pytest.mark.parametrize("index", range(len(STREAMS)), ids=[p.stem for p in STREAMS])
def test_every_golden_as_an_sse_capture_replays_as_its_json_lines(index, tmp_path):
    path = STREAMS[index]
    end, layout = LINE_ENDS[index % 3], LAYOUTS[(index // 3) % 3]
    capture = tmp_path / "capture.sse"
    capture.write_bytes(sse_capture(path, end, layout).encode("utf-8"))
    code, want, _ = replay_json(str(path))
    got_code, got, err = replay_json(str(capture))
    assert (got_code, err) == (code, "")
    assert got == _expected_with_marker(path, want)


def _one_golden_per_wire() -> list[Path]:
    chosen: dict[str, Path] = {}
    for path in STREAMS:
        chosen.setdefault(path.parent.name, path)
    return list(chosen.values())


def test_captures_through_python_m_engine(tmp_path):
    """The real entry point reads each wire's raw capture as ``engine.cli.main`` reads its
    JSON Lines file (the in-process answer: the test above shows it is the same for every
    golden): one child a wire, started together."""
    goldens = _one_golden_per_wire()
    assert len(goldens) >= 7
    procs = []
    for i, path in enumerate(goldens):
        capture = tmp_path / f"{path.parent.name}.sse"
        end, layout = LINE_ENDS[i % 3], LAYOUTS[i % 3]
        capture.write_bytes(sse_capture(path, end, layout).encode("utf-8"))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "engine", "replay", str(capture), "--json"],
                env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        )
    outputs = [(p.communicate(timeout=60), p.returncode) for p in procs]
    for path, ((got, err), got_rc) in zip(goldens, outputs, strict=True):
        want_rc, want, _ = replay_json(str(path))
        assert (got_rc, err) == (want_rc, b""), path
        expected = _expected_with_marker(path, want)
        assert [json.loads(x) for x in got.splitlines()] == expected, path


def test_stdin_dash_takes_either_format():
    path = GOLDEN / "anthropic_messages" / "llm_anthropic_tool_use.jsonl"
    file = run_cli("replay", str(path), "--json")  # in process: what stdin must give
    want = file.stdout.encode("utf-8")
    as_jsonl = run("replay", "-", "--json", stdin=path.read_bytes())
    as_sse = run("replay", "-", "--json", stdin=sse_capture(path, "\r\n").encode("utf-8"))
    assert file.returncode == as_jsonl.returncode == as_sse.returncode == 0
    assert b'"event": "call"' in want
    assert as_jsonl.stdout == want and as_sse.stdout == want
    human = run("replay", "-", stdin=path.read_bytes())
    assert human.returncode == 0 and b"<stdin>" in human.stdout


def test_stdin_in_process_matches_the_file():
    path = GOLDEN / "openai_chat" / "hand_parallel_interleaved.jsonl"
    code, want, _ = replay_json(str(path))
    assert replay_json("-", stdin=sse_capture(path, "\r").encode())[:2] == (
        code, _expected_with_marker(path, want)
    )


def test_empty_stdin_exits_1_no_events():
    """The entry point's stdin, empty, in a child; what else reads as no events (blank lines,
    a comment alone) through ``engine.cli.main`` in this process, the same stdin read."""
    said = "mcs-formats replay: <stdin>: no events (an empty stream)"
    result = run("replay", "-", stdin=b"")
    assert (result.returncode, result.stderr.decode().strip()) == (1, said)
    for body in (b"", b"\n\n", b": only a comment\r\n\r\n"):
        code, events, err = replay_json("-", stdin=body)
        assert (code, events, err.strip()) == (1, [], said), body


def test_malformed_captures_give_a_located_error_and_exit_1(tmp_path):
    good = sse_capture(GOLDEN / "anthropic_messages" / "llm_anthropic_tool_use.jsonl")
    lines = good.split("\n")
    first_data = next(i for i, line in enumerate(lines) if line.startswith("data: {"))
    at = lines.index("", first_data) + 1  # an event of its own, after the first one
    cut = lines[:at] + ['data: {"type": "content_block_delta", oops', ""] + lines[at:]
    header = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", *lines]
    (tmp_path / "cut.sse").write_text("\n".join(cut), encoding="utf-8")
    (tmp_path / "headers.sse").write_text("\n".join(["data: {}", "", *header]), encoding="utf-8")
    (tmp_path / "text.sse").write_text(lines[0] + "\n\ndata: hello\n\n", encoding="utf-8")
    results = [run("replay", name, cwd=tmp_path) for name in ("cut.sse", "headers.sse", "text.sse")]
    errors = [r.stderr.decode() for r in results]
    assert [r.returncode for r in results] == [1, 1, 1]
    expected = "not JSON: Expecting property name enclosed in double quotes (column 39)"
    assert f"cut.sse:{at + 1}: {expected}" in errors[0]
    assert "headers.sse:3: expected an SSE line (event:, data:, id:, retry:" in errors[1]
    assert "'HTTP/1.1 200 OK'" in errors[1]
    assert "text.sse:3: expected a JSON object, got the text 'hello'" in errors[2]
    assert not any("Traceback" in e for e in errors)


# -- the reading rules, directly -------------------------------------------------------------


def _values(text: str) -> list:
    return [event.value for event in parse_capture(text, "cap")]


def test_data_fields_join_with_lf_and_lose_one_space():
    events = parse_capture("data:  a\ndata:b\ndata\n\n", "cap")
    assert [e.data for e in events] == [" a\nb\n"]
    assert events[0].value == "data:  a\nb\n" and not events[0].is_json
    spread = parse_capture('data: {"a":\ndata: [1,\ndata:  2]}\n\n', "cap")
    assert spread[0].value == {"a": [1, 2]} and spread[0].data == '{"a":\n[1,\n 2]}'


def test_event_names_travel_as_event_where_there_is_no_type():
    text = (
        "event: error\ndata: {\"error\": {\"message\": \"x\"}}\n\n"
        "event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n"
        "event: ping\n\n"  # no data: not dispatched, and its name goes with it
        "data: {\"n\": 1}\n\n"
    )
    assert _values(text) == [
        {"_event": "error", "error": {"message": "x"}},
        {"type": "message_stop"},
        {"n": 1},
    ]
    assert list(_values("event: error\ndata: {\"n\": 1}\n\n")[0]) == ["_event", "n"]


def test_line_ends_bom_comments_and_the_last_event_without_its_blank_line():
    for end in ("\n", "\r\n", "\r"):
        text = "\ufeff: hi" + end + "id: 7" + end + "retry: x" + end + 'data: {"n": 1}'
        events = parse_capture(text, "cap")
        assert [(e.line, e.value) for e in events] == [(4, {"n": 1})]


def test_done_marker_is_handed_on_as_the_sse_line():
    events = parse_capture('data: {"n": 1}\n\ndata: [DONE]\n\n', "cap")
    assert [(e.line, e.value, e.is_json) for e in events] == [
        (1, {"n": 1}, True), (3, "data: [DONE]", False)
    ]


def test_json_lines_are_told_from_captures_by_content():
    jsonl = parse_capture('{"a": 1}\r\n\r\n{"b": "\u2028"}\n', "f")
    assert [(e.line, e.value, e.sse) for e in jsonl] == [
        (1, {"a": 1}, False), (3, {"b": "\u2028"}, False)  # U+2028 does not end a line
    ]
    assert parse_capture(": comment first\ndata: {}\n", "f")[0].sse


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ('data: {"a":\ndata: 1,,}\n\n', "f:2", "not JSON: Expecting property name enclosed"),
        ("data: {}\n\nevent: x\ngarbage\n", "f:4", "expected an SSE line"),
        ("data: {}\n\ndata:\n\n", "f:3", "an event with empty data"),
        ('{"a": 1}\nnot json\n', "f:2", "not JSON: Expecting value (column 1)"),
        ("Content-Type: text/event-stream\n", "f:1", "(expected JSON Lines, or an SSE capture"),
    ],
)
def test_errors_name_the_line_and_what_was_expected(text, where, what):
    with pytest.raises(CaptureError) as caught:
        parse_capture(text, "f")
    assert str(caught.value).startswith(f"{where}: ") and what in str(caught.value)


def test_the_column_of_a_json_error_counts_from_the_start_of_the_file_line():
    with pytest.raises(CaptureError, match=r"^f:2: not JSON: .* \(column 10\)$"):
        parse_capture('data: {"a":\ndata:  1 2}\n', "f")


# -- test and serve read the same captures ---------------------------------------------------


def test_project_streams_may_be_captures(tmp_path):
    path = GOLDEN / "openai_responses" / "hand_text_then_calls.jsonl"
    capture = tmp_path / "capture.jsonl"  # `test` finds *.jsonl; the content says what it is
    capture.write_text(sse_capture(path, "\r\n", "multi_line"), encoding="utf-8")
    assert read_stream(capture).events == read_stream(path).events


def test_serve_reads_a_capture_as_its_json_lines(tmp_path):
    for path in (
        GOLDEN / "anthropic_messages" / "llm_anthropic_tool_use.jsonl",
        GOLDEN / "openai_chat" / "hand_parallel_interleaved.jsonl",
        GOLDEN / "bedrock_converse" / "hand_parallel_tool_use_frames.jsonl",
    ):
        capture = tmp_path / "capture.sse"
        capture.write_text(sse_capture(path, layout="multi_line"), encoding="utf-8")
        want, got = read_recording(path), read_recording(capture, registry.end_markers())
        assert [(e.payload, e.recorded) for e in got] == [(e.payload, e.recorded) for e in want]
        for a, b in zip(want, got, strict=True):
            assert b.name == (a.name or a.payload.get("type"))
            assert json.loads(b.text) == b.payload and "\n" not in b.text
    binary = tmp_path / "capture.bin"
    frames = GOLDEN / "bedrock_converse" / "hand_exception_throttling_frames.jsonl"
    binary.write_bytes(eventstream_capture(frames))
    assert read_recording(binary) == read_recording(frames)
    (tmp_path / "text.sse").write_text('data: {"a": 1}\n\ndata: hello\n\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"text.sse:3: expected a JSON object or an end marker"):
        read_recording(tmp_path / "text.sse")


# -- a binary AWS event stream capture (Bedrock's converse-stream body) ----------------------

FRAMES = sorted((GOLDEN / "bedrock_converse").glob("*_frames.jsonl"))


def eventstream_capture(path: Path) -> bytes:
    """The golden's frames as the binary body Bedrock sent: one message each, the name in
    its header (an ``...Exception`` as an exception message, as AWS sends it)."""
    out = b""
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        name = obj.pop("_event")
        encode = exception_message if name.endswith("Exception") else event_message
        out += encode(name, obj)
    return out


@pytest.mark.parametrize("path", FRAMES, ids=[p.stem for p in FRAMES])
def test_a_binary_bedrock_capture_replays_as_its_json_lines(path, tmp_path):
    capture = tmp_path / "capture.bin"
    capture.write_bytes(eventstream_capture(path))
    assert replay_json(str(capture)) == replay_json(str(path))


def test_a_binary_capture_from_stdin_and_a_broken_crc(tmp_path):
    path = GOLDEN / "bedrock_converse" / "hand_parallel_tool_use_frames.jsonl"
    raw = eventstream_capture(path)
    from_stdin = run("replay", "-", "--json", stdin=raw)
    assert from_stdin.stdout.decode("utf-8") == run_cli("replay", str(path), "--json").stdout
    second = struct.unpack_from(">I", raw)[0]  # where the second message starts
    broken = bytearray(raw)
    broken[second + 20] ^= 0xFF  # a byte of its headers: the message CRC no longer checks
    (tmp_path / "broken.bin").write_bytes(bytes(broken))
    cut = tmp_path / "cut.bin"
    cut.write_bytes(raw[: second + 10])
    results = [run("replay", name, cwd=tmp_path) for name in ("broken.bin", "cut.bin")]
    assert [r.returncode for r in results] == [1, 1]
    broken_err, cut_err = (r.stderr.decode() for r in results)
    assert f"broken.bin: byte {second}: the message CRC does not match" in broken_err
    assert f"cut.bin: byte {second}: a message cut short (10 bytes left)" in cut_err
