"""``mcs-formats serve`` through its real entry point (``python -m engine serve``), over HTTP.

One server process serves this module's streams (two of one wire, to see the turns cycle);
the requests are plain urllib POSTs, so what is checked is the bytes a provider would send:
the first line, the framing per wire, the cycling, the ``/s/KEY/`` pick, the non-streaming
envelope, the 4xx answers, and the usage errors. The SDKs' own view is in
tests/test_loopback_sdks.py and tests/test_sdk_agreement.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from engine.compile.serve import ServeError, compile_serve

try:  # pytest's default "prepend" import mode puts tests/ itself on sys.path
    from loopback.server import ServeProcess
    from test_cli import ENV, ROOT, run
except ImportError:  # tests/ made a package, or importlib mode from the repository root
    from tests.loopback.server import ServeProcess
    from tests.test_cli import ENV, ROOT, run

# One worker runs this module (pyproject's --dist loadgroup): its module fixture is built once.
pytestmark = pytest.mark.xdist_group("serve_cli")


GOLDEN = ROOT / "tests" / "golden"
CHAT_A = GOLDEN / "openai_chat" / "hand_text_before_after.jsonl"
CHAT_B = GOLDEN / "openai_chat" / "oai_py_text.jsonl"
OLLAMA = GOLDEN / "ollama" / "hand_calls_on_done_line.jsonl"
GEMINI = GOLDEN / "gemini" / "hand_parallel_calls_ids.jsonl"
ANTHROPIC_ERROR = GOLDEN / "anthropic_messages" / "hand_error_overloaded.jsonl"
STREAMS = [CHAT_A, CHAT_B, OLLAMA, GEMINI, ANTHROPIC_ERROR]

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def served():
    with ServeProcess(STREAMS) as srv:
        yield srv


def post(url: str, body: dict | None = None) -> tuple[int, str, bytes]:
    """(status, Content-Type, body) of one POST."""
    data = json.dumps(body or {}).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def _data_lines(body: bytes) -> list[str]:
    return [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]


def test_first_line_names_the_url_then_one_line_a_stream():
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", str(CHAT_A), str(OLLAMA), "--port", "0"],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("serving on http://127.0.0.1:") and first.endswith("\n")
        assert int(first.rsplit(":", 1)[1]) > 0  # --port 0 picked a free port
        rows = [proc.stdout.readline().strip().split("\t") for _ in range(2)]
        assert rows == [
            ["openai_chat.hand_text_before_after", "openai_chat", str(CHAT_A)],
            ["ollama.hand_calls_on_done_line", "ollama", str(OLLAMA)],
        ]
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0  # SIGTERM is a clean stop


def test_each_streaming_request_gets_the_next_stream_of_its_wire_cycling(served):
    ids = []
    for _ in range(3):
        status, kind, body = post(f"{served.url}/v1/chat/completions", {"stream": True})
        assert (status, kind) == (200, "text/event-stream; charset=utf-8")
        data = _data_lines(body)
        assert data[-1] == "[DONE]"
        ids.append(json.loads(data[0])["id"])
    first_a = json.loads(CHAT_A.read_text().splitlines()[0])["id"]
    first_b = json.loads(CHAT_B.read_text().splitlines()[0])["id"]
    assert ids == [first_a, first_b, first_a]


def test_sse_data_is_the_recorded_payload_byte_for_byte(served):
    _, _, body = post(served.base_url(CHAT_A) + "/v1/chat/completions", {"stream": True})
    assert _data_lines(body)[:-1] == CHAT_A.read_text().splitlines()


def test_ndjson_and_crlf_sse_framing(served):
    status, kind, body = post(served.base_url(OLLAMA) + "/api/chat")  # streams by default
    assert (status, kind) == (200, "application/x-ndjson")
    assert body.decode().splitlines() == OLLAMA.read_text().splitlines()
    path = "/v1beta/models/m:streamGenerateContent?alt=sse"
    status, _, body = post(served.base_url(GEMINI) + path)
    assert status == 200
    assert body.decode().split("\r\n\r\n")[:-1] == [
        f"data: {line}" for line in GEMINI.read_text().splitlines()
    ]


def test_a_provider_error_event_goes_out_as_the_provider_sends_it(served):
    _, _, body = post(served.base_url(ANTHROPIC_ERROR) + "/v1/messages", {"stream": True})
    assert b"event: error\ndata: " in body


def test_non_streaming_request_gets_the_assembled_message_in_the_envelope(served):
    status, kind, body = post(served.base_url(CHAT_A) + "/v1/chat/completions", {"stream": False})
    assert (status, kind) == (200, "application/json")
    completion = json.loads(body)
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    message = completion["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"
    status, _, body = post(served.base_url(OLLAMA) + "/api/chat", {"stream": False})
    reply = json.loads(body)
    assert status == 200 and reply["done"] is True and reply["done_reason"] == "stop"
    assert [c["function"]["name"] for c in reply["message"]["tool_calls"]] == [
        "get_temperature",
        "get_temperature",
    ]


def test_non_streaming_request_for_an_error_stream_gets_the_error_status(served):
    status, _, body = post(served.base_url(ANTHROPIC_ERROR) + "/v1/messages")
    assert status == 500
    assert json.loads(body) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_what_cannot_be_answered_is_a_4xx_that_says_why(served):
    status, _, body = post(f"{served.url}/v1/embeddings")
    assert status == 404 and b"no endpoint at /v1/embeddings" in body
    status, _, body = post(f"{served.url}/s/nope/api/chat")
    assert status == 404 and b"no stream 'nope'" in body
    status, _, body = post(served.base_url(OLLAMA) + "/v1/messages")
    assert status == 404 and b"is a ollama stream" in body
    status, _, body = post(served.base_url(GEMINI) + "/v1beta/models/m:streamGenerateContent")
    assert status == 400 and b"alt=sse" in body


def test_the_log_has_one_line_a_request(served):
    before = len(served.requests)
    post(served.base_url(OLLAMA) + "/api/chat", {"stream": False, "model": "m"})
    (entry,) = served.requests[before:]
    assert entry["path"].endswith("/api/chat") and entry["streaming"] is False
    assert json.loads(entry["body"]) == {"stream": False, "model": "m"}


def test_delay_spaces_the_events():
    with ServeProcess([OLLAMA]) as quick:
        start = time.monotonic()
        post(f"{quick.url}/api/chat")
        undelayed = time.monotonic() - start
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", str(OLLAMA), "--delay", "150"],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().split()[-1]
        start = time.monotonic()
        status, _, body = post(f"{url}/api/chat")
        elapsed = time.monotonic() - start
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    events = len(OLLAMA.read_text().splitlines())
    assert status == 200 and len(body.splitlines()) == events
    assert elapsed >= 0.15 * (events - 1) > undelayed


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ((), 2, "the following arguments are required: STREAM"),
        ((str(OLLAMA), "--host", "0.0.0.0"), 2, "only a loopback address"),
        ((str(OLLAMA), "--port", "70000"), 2, "--port 70000: 0 to 65535"),
        (("missing.jsonl",), 1, "missing.jsonl: No such file or directory"),
        ((str(GOLDEN / "mcs_text" / "README.md"),), 1, "README.md:1: not JSON"),
    ],
)
def test_usage_errors_and_unservable_streams(args, code, message):
    result = run("serve", *args)
    assert result.returncode == code
    assert message in result.stderr and result.stdout == ""


def test_a_stream_no_format_recognises_names_the_file(tmp_path):
    stream = tmp_path / "odd.jsonl"
    stream.write_text('{"hello": 1}\n', encoding="utf-8")
    result = run("serve", str(stream))
    assert result.returncode == 1
    assert f"{stream}: the stream does not assemble" in result.stderr
    assert "--format" in result.stderr


def test_a_format_without_a_serve_section_is_refused():
    toy = ROOT / "tests" / "toy"
    stream = sorted(toy.glob("*.jsonl"))[0]
    result = run("serve", str(stream), "--format", str(toy / "toy_wire.yaml"))
    assert result.returncode == 1
    assert "format toy_wire has no serve section" in result.stderr


# -- the section's own errors, located --------------------------------------------------------


def _serve_section(**overrides) -> dict:
    section = {
        "endpoints": [{"path": "/api/chat", "stream": True}],
        "framing": {"kind": "ndjson", "content_type": "application/x-ndjson"},
        "response": {"message": {"$path": "message"}},
    }
    section.update(overrides)
    return {"serve": section}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"framing": {"kind": "xml", "content_type": "x"}}, "/serve/framing/kind: one of"),
        (
            {"framing": {"kind": "ndjson", "content_type": "x", "done": "[DONE]"}},
            "/serve/framing/done: not an option of framing ndjson",
        ),
        ({"endpoints": [{"path": "api", "stream": True}]}, "/serve/endpoints/0/path: a request"),
        (
            {"endpoints": [{"path": "/a", "stream": {"field": "a.b"}}]},
            "/serve/endpoints/0/stream/field: a body field name",
        ),
        ({"response": {"$pth": "message"}}, "/serve/response/$pth: unknown construct $pth"),
        ({"error": {"status": 500}}, "/serve/error: missing 'body'"),
    ],
)
def test_a_bad_serve_section_is_a_located_error(overrides, message):
    with pytest.raises(ServeError) as caught:
        compile_serve(_serve_section(**overrides))
    assert str(caught.value).startswith(message)


def test_a_serve_section_compiled_without_the_validator_names_every_problem():
    """compile_serve asks the schema of a section no validator saw, then compiles it: every
    problem is in ``problems`` (pointer order), the message names each, the first first."""
    section = _serve_section(
        endpoints=[{"path": "api", "stream": True}, {"path": "/{m}/{m}", "stream": False}],
        framing={"kind": "sse", "content_type": "x", "exception_suffix": "Exception"},
        response={"$pth": "message"},
        headers={"x-id": 1},
    )
    with pytest.raises(ServeError) as caught:
        compile_serve(section)
    assert [(pointer, rule) for pointer, _, rule in caught.value.problems] == [
        ("/serve/endpoints/0/path", "pattern"),
        ("/serve/endpoints/1/path", "path"),
        ("/serve/framing/exception_suffix", "not"),
        ("/serve/headers/x-id", "type"),
        ("/serve/response/$pth", "template"),
    ]
    said = [f"{pointer}: {message}" for pointer, message, _ in caught.value.problems]
    assert said[0] == "/serve/endpoints/0/path: a request path starting with /"
    assert str(caught.value).splitlines() == said


def test_every_built_in_wire_declares_how_it_is_served():
    import engine

    for name in engine.list_formats():
        fmt = engine.load_format(name)
        spec = compile_serve(fmt.descriptor)
        assert (spec is not None) == fmt.is_wire, name
