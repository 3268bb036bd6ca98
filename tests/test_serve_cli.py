"""``mcs-formats serve`` through its real entry point (``python -m engine serve``), over HTTP.

One server process serves this module's streams (two of one wire, to see the turns cycle);
the requests are plain urllib POSTs, so what is checked is the bytes a provider would send:
the first line, the framing per wire, the cycling, the ``/s/KEY/`` pick, the non-streaming
envelope, the 4xx answers, and the usage errors. The SDKs' own view is in
tests/test_loopback_sdks.py and tests/test_sdk_agreement.py.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import engine
from engine.cli.serve_http import FakeProvider, load_recordings
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
    assert status == 529  # overloaded_error, as Anthropic answers it
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


# Credentials as each SDK sends them (header names in the case some SDK writes them), and the
# query-string signature of a presigned AWS request: none is written to --log.
_SECRETS = {
    "Authorization": "Bearer sk-secret-bearer-1",
    "x-api-key": "sk-ant-secret-2",
    "X-Goog-Api-Key": "secret-goog-3",
    "API-KEY": "secret-azure-4",
    "X-Amz-Security-Token": "secret-session-token-5",
}
_AWS_AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=AKIDSECRET6/20260101/us-east-1/bedrock/aws4_request,"
    " SignedHeaders=host;x-amz-date, Signature=0123456789abcdefsecret7"
)
_SIGNED_QUERY = "X-Amz-Credential=AKIDSECRET8%2F20260101&X-Amz-Signature=secret9&key=secret10"


def test_the_log_never_writes_credentials(served):
    """Each credential header (whatever its case) and a query-string signature goes through a
    real request; the log keeps the names (a test may ask what was sent) but not the values."""
    path = served.base_url(OLLAMA).split(str(served.port), 1)[1] + f"/api/chat?{_SIGNED_QUERY}"
    for name, value in [*_SECRETS.items(), ("authorization", _AWS_AUTHORIZATION)]:
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        try:  # http.client sends the header names as given (urllib would capitalize them)
            connection.request("POST", path, b'{"stream": false}', {name: value})
            assert connection.getresponse().status == 200
        finally:
            connection.close()
    logged = served.log.read_text(encoding="utf-8")
    for secret in ("secret-bearer-1", "secret-2", "secret-goog-3", "secret-azure-4"):
        assert secret not in logged
    for secret in ("secret-session-token-5", "AKIDSECRET6", "secret7", "AKIDSECRET8"):
        assert secret not in logged
    assert "secret9" not in logged and "secret10" not in logged
    entries = served.requests[-len(_SECRETS) - 1 :]
    names = [{k.lower() for k in entry["headers"]} for entry in entries]
    assert [n & {k.lower() for k in _SECRETS} for n in names[:-1]] == [
        {k.lower()} for k in _SECRETS
    ]
    assert entries[-1]["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert "X-Amz-Signature=" in entries[-1]["query"]


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
        # One wording of a schema error, the validator's, whoever asks the schema.
        ({"framing": {"kind": "xml", "content_type": "x"}}, "/serve/framing/kind: 'xml' is not"),
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
        ({"error": {"status": 500}}, "/serve/error: missing required key 'body'"),
        (
            {"endpoints": [{"path": "/m", "method": "GET", "stream": True, "reply": {}}]},
            "/serve/endpoints/0/stream: an endpoint with a reply does not stream",
        ),
        ({"endpoints": [{"path": "/m", "method": "PUT", "reply": {}}]}, "/serve/endpoints/0/me"),
        ({"endpoints": [{"path": "/m"}]}, "/serve/endpoints/0: missing required key 'stream'"),
        (
            {"endpoints": [{"path": "/m", "reply": {"$pth": "x"}}]},
            "/serve/endpoints/0/reply/$pth: unknown construct $pth",
        ),
        (
            {"accept": {"application/json": {"kind": "ndjson", "content_type": "x", "done": "x"}}},
            "/serve/accept/application~1json/done: not an option of framing ndjson",
        ),
        (
            {"error": {"body": {}, "headers": {"x-kind": {"$pth": "kind"}}}},
            "/serve/error/headers/x-kind/$pth: unknown construct $pth",
        ),
        ({"error": {"body": {}, "kinds": [529]}}, "/serve/error/kinds: expected object"),
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


def test_a_path_pattern_segment_names_the_segments_it_matches():
    spec = compile_serve(
        _serve_section(endpoints=[{"path": "/{v}/{name=models/*}", "method": "GET", "reply": {}}])
    )
    assert spec is not None
    found = spec.route("/v1beta/models/gemini-2.0-flash", "GET")
    assert found is not None and found[1] == {"v": "v1beta", "name": "models/gemini-2.0-flash"}
    assert spec.route("/v1beta/tunedModels/x", "GET") is None
    assert spec.route("/v1beta/models/a/b", "GET") is None
    assert spec.route("/v1beta/models/m", "POST") is None


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"code": "context_length_exceeded", "type": "invalid_request_error"}, 400),
        ({"code": "rate_limit_exceeded", "type": "requests"}, 429),
        ({"message": "m", "type": "tokens", "code": None}, 429),
        ({"object": "error", "type": "BadRequestError", "code": 400}, 400),  # vLLM's own
        ({"type": "invalid_request_error", "status_code": 422}, 422),  # a server's own status
        ({"code": "made_up", "type": "made_up"}, 500),
    ],
)
def test_an_error_reply_has_the_status_of_the_first_kind_its_table_knows(error, status):
    """The OpenAI error's ``code`` names its kind, else its ``type`` (``kind`` is a list): the
    first the ``kinds`` table holds gives the status; none gives the server's own, else 500."""
    spec = compile_serve(engine.load_format("openai_chat").descriptor)
    assert spec.reply({"error": error})[:2] == (status, {"error": error})


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ({"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}, 503),
        ({"message": "quota", "status": "RESOURCE_EXHAUSTED"}, 429),  # no code: the status's
        ({"message": "?", "status": "MADE_UP"}, 500),
    ],
)
def test_a_gemini_error_reply_has_the_code_of_its_rpc_status(error, status):
    spec = compile_serve(engine.load_format("gemini").descriptor)
    assert spec.reply({"error": error})[:2] == (status, {"error": error})


def test_an_error_reply_sends_the_headers_its_kind_names():
    spec = compile_serve(engine.load_format("bedrock_converse").descriptor)
    status, body, headers = spec.reply(
        {"error": {"message": "slow"}, "last_event": "throttlingException"}
    )
    assert (status, body) == (429, {"message": "slow"})
    assert headers["x-amzn-ErrorType"].split(":")[0] == "ThrottlingException"
    assert "x-amzn-RequestId" in headers  # the section's headers go with an error reply too
    _, _, headers = spec.reply({"error": {"message": "?"}, "last_event": "unknownException"})
    assert headers["x-amzn-ErrorType"].split(":")[0] == "InternalServerException"


def test_every_built_in_wire_declares_how_it_is_served():
    for name in engine.list_formats():
        fmt = engine.load_format(name)
        spec = compile_serve(fmt.descriptor)
        assert (spec is not None) == fmt.is_wire, name


# -- what a real client asks besides the chat call, and the replies' completeness (issue 18) ---
#
# In process (engine.cli.serve_http's FakeProvider on a thread) where the entry point proves
# nothing more; the load and the malformed requests go through the served subprocess.

N3 = GOLDEN / "openai_chat" / "oai_py_n3_choices.jsonl"
MISTRAL_CALL = GOLDEN / "openai_chat" / "compat_mistral_vercel_tool_call.jsonl"
ANTHROPIC_CUT = GOLDEN / "anthropic_messages" / "hand_max_tokens_cut_in_string.jsonl"
BEDROCK_CUT = GOLDEN / "bedrock_converse" / "hand_max_tokens_cut_in_string.jsonl"
COHERE = GOLDEN / "cohere_v2" / "vercel_text.jsonl"
ONE_OF_EACH = [CHAT_A, ANTHROPIC_CUT, BEDROCK_CUT, GEMINI, OLLAMA, COHERE]


@contextlib.contextmanager
def in_process(*streams: Path, log: io.StringIO | None = None) -> Iterator[FakeProvider]:
    provider = FakeProvider(load_recordings(streams), log=log)
    thread = threading.Thread(target=provider.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.httpd.shutdown()
        provider.close()


def call(
    url: str, body: dict | bytes | None = None, method: str = "POST", headers: dict | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request (a body only when one is given; bytes as is)."""
    data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read()


def test_a_non_streaming_reply_holds_every_choice_of_an_n_gt_1_stream():
    with in_process(N3) as provider:
        _, _, body = call(provider.url + "/v1/chat/completions", {"n": 3})
    choices = json.loads(body)["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2]
    assert [json.loads(c["message"]["content"])["temperature"] for c in choices] == [65, 61, 59]
    assert {c["finish_reason"] for c in choices} == {"stop"}


def test_gemini_non_streaming_reply_holds_every_candidate(tmp_path):
    def chunk(a: str, b: str, end: dict) -> str:
        parts = [{"content": {"role": "model", "parts": [{"text": t}]}, "index": i, **end}
                 for i, t in enumerate((a, b))]
        return json.dumps({"candidates": parts, "modelVersion": "gemini-2.0-flash"})

    stream = tmp_path / "two.jsonl"
    stream.write_text(chunk("A", "B", {}) + "\n" + chunk("!", "?", {"finishReason": "STOP"}))
    with in_process(stream) as provider:
        _, _, body = call(provider.url + "/v1beta/models/m:generateContent", {})
    candidates = json.loads(body)["candidates"]
    assert [(c["index"], c["content"]["parts"][0]["text"]) for c in candidates] == [
        (0, "A!"),
        (1, "B?"),
    ]
    assert {c["finishReason"] for c in candidates} == {"STOP"}


def test_a_non_streaming_tool_call_has_the_type_the_provider_always_sends():
    with in_process(MISTRAL_CALL) as provider:
        _, _, body = call(provider.url + "/v1/chat/completions", {})
    (tool_call,) = json.loads(body)["choices"][0]["message"]["tool_calls"]
    assert tool_call == {
        "id": "gSIMJiOkT",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location": "San Francisco"}'},
    }


def test_a_call_cut_by_the_length_limit_has_an_object_input_where_the_api_says_so():
    with in_process(ANTHROPIC_CUT, BEDROCK_CUT) as provider:
        _, _, body = call(provider.url + "/v1/messages", {"model": "m", "max_tokens": 9})
        message = json.loads(body)
        _, _, body = call(provider.url + "/model/m/converse", {})
        converse = json.loads(body)
    assert message["stop_reason"] == "max_tokens"
    assert [b["type"] for b in message["content"]] == ["text", "tool_use"]
    assert message["content"][1]["input"] == {} and message["content"][1]["name"] == "write_file"
    assert converse["stopReason"] == "max_tokens"
    tool_use = converse["output"]["message"]["content"][1]["toolUse"]
    assert tool_use["input"] == {} and tool_use["name"] == "write_file"


REQUEST_ID = {
    "openai_chat": "x-request-id",
    "anthropic_messages": "request-id",
    "bedrock_converse": "x-amzn-RequestId",
    "cohere_v2": "x-debug-trace-id",
}


def test_every_reply_carries_the_provider_request_id_header():
    asks = {
        "openai_chat": "/v1/chat/completions",
        "anthropic_messages": "/v1/messages",
        "bedrock_converse": "/model/m/converse",
        "cohere_v2": "/v2/chat",
    }
    with in_process(*ONE_OF_EACH) as provider:
        for wire, path in asks.items():
            streaming = path.replace("/converse", "/converse-stream")
            for body in ({}, {"stream": True}):
                status, headers, _ = call(provider.url + streaming, body)
                assert status == 200 and headers.get(REQUEST_ID[wire]), (wire, body)
            status, headers, _ = call(provider.url + path, b"not JSON")
            assert status == 400 and headers.get(REQUEST_ID[wire]), (wire, status)


def test_model_lookups_are_answered_as_the_providers_document_them():
    with in_process(*ONE_OF_EACH) as provider:
        url = provider.url
        status, _, body = call(url + "/v1/models", method="GET")
        listed = json.loads(body)
        assert status == 200 and listed["object"] == "list"
        assert {m["object"] for m in listed["data"]} == {"model"}
        status, _, body = call(url + "/v1/models/gpt-4o", method="GET")
        assert status == 200
        assert json.loads(body) == {
            "id": "gpt-4o", "object": "model", "created": 0, "owned_by": "mcs-formats"
        }
        anthropic = {"anthropic-version": "2023-06-01"}
        key = next(r.key for r in provider.recordings if r.wire == "anthropic_messages")
        status, _, body = call(f"{url}/s/{key}/v1/models/claude-x", method="GET")
        assert status == 400 and b"anthropic-version header" in body
        status, _, body = call(url + "/v1/models/claude-x", method="GET", headers=anthropic)
        model = json.loads(body)
        assert (status, model["type"], model["id"]) == (200, "model", "claude-x")
        status, _, body = call(url + "/v1beta/models/gemini-2.0-flash", method="GET")
        model = json.loads(body)
        assert status == 200 and model["name"] == "models/gemini-2.0-flash"
        assert "generateContent" in model["supportedGenerationMethods"]
        assert isinstance(model["inputTokenLimit"], int)
        status, _, body = call(url + "/api/show", {"model": "llama3.2"})
        shown = json.loads(body)
        assert status == 200 and "tools" in shown["capabilities"]
        assert shown["model_info"]["general.architecture"] == "llama"
        assert isinstance(shown["model_info"]["llama.context_length"], int)
        status, _, body = call(url + "/api/tags", method="GET")
        assert status == 200 and json.loads(body)["models"][0]["name"]


def test_the_log_records_every_request_whatever_its_method():
    log = io.StringIO()
    with in_process(CHAT_A, log=log) as provider:
        call(provider.url + "/v1/models", method="GET")
        call(provider.url + "/v1/chat/completions", {}, method="PUT")
        call(provider.url + "/nowhere", method="DELETE")
        call(provider.url + "/v1/chat/completions", method="HEAD")
        call(provider.url + "/v1/chat/completions", method="OPTIONS")
    entries = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["method"], e["path"]) for e in entries] == [
        ("GET", "/v1/models"),
        ("PUT", "/v1/chat/completions"),
        ("DELETE", "/nowhere"),
        ("HEAD", "/v1/chat/completions"),
        ("OPTIONS", "/v1/chat/completions"),
    ]
    assert [e["status"] for e in entries] == [200, 405, 404, 405, 405]


def test_cohere_streams_as_sse_with_its_done_line_and_as_json_lines_when_json_is_asked():
    with in_process(COHERE) as provider:
        status, headers, body = call(provider.url + "/v2/chat", {"stream": True})
        assert (status, headers["Content-Type"]) == (200, "text/event-stream")
        assert body.decode().startswith("event: message-start\ndata: {")
        assert body.decode().endswith("data: [DONE]\n\n")
        accept = {"Accept": "application/json"}
        status, headers, body = call(provider.url + "/v2/chat", {"stream": True}, headers=accept)
    assert status == 200 and headers["Content-Type"] == "application/stream+json"
    assert body.decode().splitlines() == COHERE.read_text().splitlines()


def _raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Length: twelve\r\n\r\n{}",
        b"Content-Length: -3\r\n\r\n{}",
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    ],
)
def test_a_malformed_length_or_chunk_size_gets_a_json_400(served, head):
    reply = _raw(served.url, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + head)
    status_line, _, rest = reply.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 400"), reply[:200]
    assert b"application/json" in rest
    assert "Traceback" not in served.stderr_text()


def test_150_concurrent_clients_are_all_served(served):
    count = 150
    barrier = threading.Barrier(count)
    outcomes: list[object] = []

    def client() -> None:
        barrier.wait()
        try:
            status, _, body = post(served.base_url(CHAT_B) + "/v1/chat/completions")
            outcomes.append(status if json.loads(body)["object"] == "chat.completion" else body)
        except Exception as exc:  # noqa: BLE001 - each failure is counted and shown
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=client) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes == [200] * count, [o for o in outcomes if o != 200][:3]


# The non-streaming envelope of each wire, field by field as its API reference (and the SDK's
# response type) has it: (endpoint, a text stream, the top-level fields, where the message is
# and its fields). Optional fields the recording carries are in; a field the stream cannot
# know (logprobs) is the reference's null.
ENVELOPES = {
    "openai_chat": (
        "/v1/chat/completions",
        GOLDEN / "openai_chat" / "vercel_openai_text.jsonl",
        {"id", "object", "created", "model", "choices", "usage", "system_fingerprint",
         "service_tier"},
        lambda r: r["choices"][0],
        {"index", "message", "finish_reason", "logprobs"},
    ),
    "openai_responses": (
        "/v1/responses",
        GOLDEN / "openai_responses" / "llm_text.jsonl",
        {"id", "object", "created_at", "status", "model", "output", "usage", "error",
         "incomplete_details"},
        lambda r: r["output"][-1],
        {"id", "type", "role", "content", "status"},
    ),
    "anthropic_messages": (
        "/v1/messages",
        GOLDEN / "anthropic_messages" / "llm_anthropic_text.jsonl",
        {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"},
        lambda r: r["content"][0],
        {"type", "text"},
    ),
    "bedrock_converse": (
        "/model/m/converse",
        GOLDEN / "bedrock_converse" / "vercel_text.jsonl",
        {"output", "stopReason", "usage", "metrics"},
        lambda r: r["output"]["message"],
        {"role", "content"},
    ),
    "gemini": (
        "/v1beta/models/m:generateContent",
        GOLDEN / "gemini" / "vercel_text.jsonl",
        {"candidates", "usageMetadata", "modelVersion", "responseId"},
        lambda r: r["candidates"][0],
        {"content", "finishReason", "index"},
    ),
    "cohere_v2": (
        "/v2/chat",
        COHERE,
        {"id", "finish_reason", "message", "usage"},
        lambda r: r["message"],
        {"role", "content"},
    ),
    "ollama": (
        "/api/chat",
        GOLDEN / "ollama" / "langchaingo_chat_text.jsonl",
        {"model", "created_at", "message", "done", "done_reason", "total_duration",
         "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
         "eval_duration"},
        lambda r: r["message"],
        {"role", "content"},
    ),
}


def test_each_wires_non_streaming_envelope_has_the_fields_of_its_api_reference():
    streams = [stream for _, stream, *_ in ENVELOPES.values()]
    with in_process(*streams) as provider:
        for wire, (path, stream, fields, inner, inner_fields) in ENVELOPES.items():
            key = next(r.key for r in provider.recordings if r.path == stream)
            status, _, body = call(f"{provider.url}/s/{key}{path}", {"stream": False})
            reply = json.loads(body)
            assert status == 200, (wire, reply)
            assert fields <= set(reply), (wire, fields - set(reply))
            assert inner_fields <= set(inner(reply)), (wire, inner_fields - set(inner(reply)))


def test_a_format_file_served_is_compiled_once(tmp_path, monkeypatch):
    """The serve section the validating pass compiled is the one served (issue 17's one
    compile per load): check_serve runs once, not again when the streams load."""
    import engine.compile.serve as serve_module
    from engine.cli.common import _load_strategy

    calls: list[int] = []
    real = serve_module.check_serve
    monkeypatch.setattr(serve_module, "check_serve", lambda d: calls.append(1) or real(d))
    descriptor = tmp_path / "ollama.yaml"
    descriptor.write_text((ROOT / "formats" / "ollama.yaml").read_text(encoding="utf-8"))
    (recording,) = load_recordings([OLLAMA], _load_strategy(str(descriptor)))
    assert recording.spec.route("/api/chat") is not None
    assert len(calls) == 1


def test_a_request_http_server_refuses_is_a_logged_json_error():
    """A method no endpoint knows (501) and a request line that is not HTTP (400) are answered
    in JSON, as every other refusal, and logged."""
    log = io.StringIO()
    with in_process(CHAT_A, log=log) as provider:
        unknown = _raw(provider.url, b"BREW /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        garbage = _raw(provider.url, b"not a request line\r\n\r\n")
    for reply, status in ((unknown, b"501"), (garbage, b"400")):
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.split(b" ")[1] == status and b"application/json" in head, reply
        assert "message" in json.loads(body)["error"]
    entries = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["method"], e["status"]) for e in entries] == [("BREW", 501), ("", 400)]
