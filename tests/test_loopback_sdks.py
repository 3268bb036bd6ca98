"""Every golden stream, replayed by ``mcs-formats serve``, goes through the provider's official SDK.

The server is the product's fake provider, started once for this module as a subprocess
(tests/loopback/server.py runs ``python -m engine serve`` with every golden and the module's own
streams); it answers on 127.0.0.1 the exact endpoint each SDK calls, with the provider's framing
as the wire's descriptor declares it (its ``serve`` section). The SDKs (tests/loopback/clients.py)
run with dummy credentials, no retries and no proxy. For each fixture the SDK must yield one
object per recorded event, in order, except where a difference is documented below; where an
SDK cannot take a fixture, the error it raises is asserted (never skipped).

Documented differences:
- anthropic: the SDK drops ``ping`` events (``Stream.__stream__`` skips ``event: ping``).
- An error event ends the stream with the SDK's error: openai raises ``APIError`` on a chunk
  carrying a top-level ``error`` (Groq sends it as ``event: error``), anthropic raises
  ``APIStatusError`` on ``event: error``, boto3 raises ``EventStreamError`` on an exception
  message, ollama raises ``ResponseError`` on a line with ``error``, google-genai raises
  ``errors.APIError`` on a chunk that is ``{"error": ...}``.
- The SDK accumulators are stricter than the streams: see ``ACCUMULATOR_FAILURES``.

A non-streaming request for a stream that ends in a provider error gets the status, headers
and body the provider answers that kind of error with; each SDK raises its own error type
with that status (``ERROR_REPLIES``). ``--log`` keeps no credential any SDK sent.

Needs the SDKs of the ``sdk`` extra (tests/loopback/REQUIREMENTS.txt); a wire whose SDK is not
installed is skipped with that reason.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import struct
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine
from engine.cli.serve_http import is_loopback
from engine.compile.serve import RecordedEvent as Event
from engine.compile.serve import compile_serve
from engine.compile.serve import read_recording as read_events
from engine.compile.serve import typed_event as bedrock_event
from engine.transport import eventstream

try:  # pytest's default "prepend" import mode puts tests/ itself on sys.path
    from loopback import clients
    from loopback.server import ServeProcess
except ImportError:  # tests/ made a package, or importlib mode from the repository root
    from tests.loopback import clients
    from tests.loopback.server import ServeProcess

ACCUMULATING_WIRES, WIRES = clients.ACCUMULATING_WIRES, clients.WIRES
openai_chat_state, sdk_final, sdk_stream = (
    clients.openai_chat_state,
    clients.sdk_final,
    clients.sdk_stream,
)


def is_bedrock_exception(event_type: str) -> bool:
    """Bedrock's modelled stream errors are the union members named ``...Exception``."""
    return event_type.endswith("Exception")


GOLDEN = Path(__file__).parent / "golden"

# openai's models warn when serialising a compatible server's list-valued `content`: SDK noise.
# litellm's import warns about its own TypedDicts: import noise.
pytestmark = [
    # One worker runs the SDK modules (pyproject's --dist loadgroup): the SDKs are imported once.
    pytest.mark.xdist_group("sdk"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*using the `ReadOnly` qualifier:UserWarning"),
]

SDK_MODULE = {
    "openai_chat": "openai",
    "openai_responses": "openai",
    "anthropic_messages": "anthropic",
    "bedrock_converse": "boto3",
    "gemini": "google.genai",
    "ollama": "ollama",
    "cohere_v2": "cohere",
}


def golden_fixtures(wires=WIRES):
    """(wire, path) of every golden stream of these wires, *.expect.json companions excluded."""
    for wire in wires:
        for path in sorted((GOLDEN / wire).glob("*.jsonl")):
            if ".expect." not in path.name:
                yield wire, path


def _params(wires=WIRES):
    return [pytest.param(w, p, id=f"{w}/{p.stem}") for w, p in golden_fixtures(wires)]


# -- no network but loopback -----------------------------------------------------------------

_BLOCKED: list[object] = []


def _is_loopback(address) -> bool:
    """A socket address on this machine: an AF_UNIX path, or a host `serve` would bind."""
    return not isinstance(address, tuple) or is_loopback(address[0])


@pytest.fixture(scope="module", autouse=True)
def loopback_only():
    """Refuse (and remember) any connection this module's SDKs try beyond 127.0.0.0/8 and ::1."""
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self, address):
        if not _is_loopback(address):
            _BLOCKED.append(address)
            raise ConnectionRefusedError(f"loopback tests: no network to {address!r}")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _is_loopback(address):
            _BLOCKED.append(address)
            return 111  # ECONNREFUSED
        return real_connect_ex(self, address)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket.socket, "connect_ex", connect_ex)
        # A client that read proxies from the environment would fail against this dead proxy.
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            mp.setenv(var, "http://127.0.0.1:9")
            mp.setenv(var.lower(), "http://127.0.0.1:9")
        mp.delenv("NO_PROXY", raising=False)
        mp.delenv("no_proxy", raising=False)
        yield
    assert not _BLOCKED, f"an SDK tried to reach beyond loopback: {_BLOCKED}"


def module_streams(folder: Path) -> list[Path]:
    """Every golden, and this module's own streams (``STREAMS``) written into ``folder``."""
    own = []
    for name, lines in STREAMS.items():
        path = folder / f"{name}.jsonl"  # WIRE/NAME: a folder per wire, as goldens have
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        own.append(path)
    return [p for _, p in golden_fixtures()] + own


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One ``mcs-formats serve`` subprocess for the module, serving every stream it needs."""
    folder = tmp_path_factory.mktemp("streams")
    with ServeProcess(module_streams(folder)) as srv:
        srv.own = folder  # type: ignore[attr-defined]
        yield srv


def own_stream(server, name: str) -> Path:
    """The path of one of this module's ``STREAMS``, as given to the server."""
    return server.own / f"{name}.jsonl"


def _need_sdk(wire: str) -> None:
    pytest.importorskip(SDK_MODULE[wire], reason=f"{wire}: its SDK is not installed (sdk extra)")


# -- what each SDK is expected to do with a fixture ---------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What the SDK does with a fixture: yields these event kinds in order, or raises."""

    kinds: list | None = None  # per yielded object, see _event_kind / _sdk_kind
    raises: type[BaseException] | None = None
    why: str = ""


def _gemini_validation_error():
    """pydantic 2.13 reports the bad enum as a ValidationError; 2.14's enum validator
    raises AttributeError ('int' object has no attribute 'upper') from inside google-genai."""
    import pydantic

    return (pydantic.ValidationError, AttributeError)


def _openai_api_error():
    import openai

    return openai.APIError


# Fixtures an SDK cannot parse, by "<wire>/<stem>": (exception type factory, why).
SDK_CANNOT_PARSE = {
    "openai_chat/hand_compat_error_first": (
        _openai_api_error,
        "the stream is one provider error ({error: {...}}): the SDK raises it before it yields"
        " any chunk",
    ),
    "gemini/langchaingo_text_jsonarray": (
        _gemini_validation_error,
        "langchaingo recorded usageMetadata.promptTokensDetails[].modality as the enum number 1;"
        " google-genai's GenerateContentResponse accepts only enum names ('TEXT', ...) and the"
        " first chunk fails validation",
    ),
}


def _error_index(wire: str, events: list[Event]) -> tuple[int | None, type | None]:
    """Where the SDK's stream stops with its error, and the error type (None, None if never)."""
    for i, event in enumerate(events):
        obj = event.payload
        if wire in ("openai_chat", "openai_responses") and obj.get("error"):
            import openai

            return i, openai.APIError
        if wire == "anthropic_messages" and (event.name or obj.get("type")) == "error":
            import anthropic

            return i, anthropic.APIStatusError
        if wire == "bedrock_converse" and is_bedrock_exception(bedrock_event(event)[0]):
            import botocore.exceptions

            return i, botocore.exceptions.EventStreamError
        if wire == "ollama" and obj.get("error"):
            import ollama

            return i, ollama.ResponseError
        if wire == "gemini" and next(iter(obj), None) == "error":
            from google.genai import errors

            return i, errors.APIError
    return None, None


def _event_kind(wire: str, event: Event):
    """What identifies a recorded event, to compare with the SDK object it became."""
    obj = event.payload
    if wire == "openai_chat":
        return obj.get("id")
    if wire == "bedrock_converse":
        return bedrock_event(event)[0]
    if wire == "gemini":
        return obj.get("responseId")
    if wire == "ollama":
        return obj.get("done")
    return obj.get("type")  # responses, anthropic, cohere


def _sdk_kind(wire: str, obj):
    if wire == "openai_chat":
        return getattr(obj, "id", None)
    if wire == "bedrock_converse":
        (name,) = obj.keys()
        return name
    if wire == "gemini":
        return obj.response_id
    if wire == "ollama":
        return obj.done
    return obj.type


def expected_stream(wire: str, path: Path) -> Outcome:
    """What the SDK's stream does with a fixture: the objects it yields, then maybe its error."""
    key = f"{wire}/{path.stem}"
    if key in SDK_CANNOT_PARSE:
        factory, why = SDK_CANNOT_PARSE[key]
        return Outcome(kinds=[], raises=factory(), why=why)
    events = read_events(path)
    stop, error = _error_index(wire, events)
    why = ""
    if stop is not None:
        events = events[:stop]
        why = f"event {stop + 1} is the provider's error event"
    if wire == "anthropic_messages":
        events = [e for e in events if e.payload.get("type") != "ping"]
    return Outcome(kinds=[_event_kind(wire, e) for e in events], raises=error, why=why)


# openai's ChatCompletionStreamState rejects some streams that the SDK itself streams fine (it
# assumes OpenAI's own shapes). By "<wire>/<stem>": (error type, why).
ACCUMULATOR_FAILURES = {
    "openai_chat/compat_mistral_vercel_reasoning": (
        RuntimeError,
        "Mistral (magistral) streams delta.content as a list of typed blocks; accumulate_delta"
        " requires an `index` in list entries",
    ),
    "openai_chat/hand_compat_mistral_thinking_chunks": (
        RuntimeError,
        "delta.content as a list of thinking/text blocks without `index` (Mistral)",
    ),
    "openai_chat/compat_mistral_vercel_tool_call": (
        TypeError,
        "Mistral's tool_calls delta entry has no `index`; the state indexes its list by it",
    ),
    "openai_chat/hand_compat_no_index": (
        TypeError,
        "tool_calls delta entries without `index`",
    ),
    "openai_chat/compat_anthropic_compat_vercel_tool_call_sanitized": (
        IndexError,
        "Anthropic's OpenAI-compatible endpoint numbers its only tool call index 1 (after the text"
        " block); the state expects dense indices from 0",
    ),
    "openai_chat/hand_compat_first_index_1": (
        IndexError,
        "tool call indices start at 1 (Anthropic's compatible endpoint), not dense from 0",
    ),
    "openai_chat/hand_compat_tool_calls_object": (
        KeyError,
        "delta.tool_calls is one object, not a list; the state iterates it as a list",
    ),
    "openai_chat/hand_compat_usage_choices_absent": (
        TypeError,
        "the trailing usage chunk has no `choices` key; the state iterates chunk.choices (None)",
    ),
    "openai_chat/hand_compat_usage_choices_null": (
        TypeError,
        "the trailing usage chunk has `choices: null`; the state iterates chunk.choices",
    ),
    "openai_chat/hand_compat_vllm_error_object_first": (
        KeyError,
        "vLLM's bare ErrorResponse ({object: error, message, ...}) has no `error` key, so the SDK"
        " does not raise it, and the state reads its `choices`",
    ),
    "openai_chat/hand_compat_vllm_error_object_mid": (
        TypeError,
        "vLLM's bare ErrorResponse mid-stream: the SDK yields it as a chunk with choices None,"
        " which the state iterates",
    ),
}


def expected_final(wire: str, path: Path) -> Outcome:
    """What the SDK's own accumulator does with a fixture (see ``sdk_final``)."""
    stream = expected_stream(wire, path)
    if stream.raises is not None:
        return stream
    key = f"{wire}/{path.stem}"
    if key in ACCUMULATOR_FAILURES:
        error, why = ACCUMULATOR_FAILURES[key]
        return Outcome(raises=error, why=why)
    events = read_events(path)
    if wire == "openai_chat":
        import openai

        reasons = {
            choice.get("finish_reason")
            for event in events
            for choice in event.payload.get("choices") or []
        }
        if "length" in reasons:
            return Outcome(
                raises=openai.LengthFinishReasonError,
                why="get_final_completion() refuses finish_reason 'length'",
            )
        if "content_filter" in reasons:
            return Outcome(
                raises=openai.ContentFilterFinishReasonError,
                why="get_final_completion() refuses finish_reason 'content_filter'",
            )
    if wire == "openai_responses" and not any(
        e.payload.get("type") == "response.completed" for e in events
    ):
        return Outcome(
            raises=RuntimeError,
            why="ResponseStream.get_final_response() needs `response.completed`;"
            " response.incomplete / response.failed / error end without it",
        )
    return Outcome()


# -- the golden streams through the SDKs -------------------------------------------------------


def _expect_raise(outcome: Outcome, run) -> None:
    try:
        run()
    except outcome.raises:
        return
    pytest.fail(f"expected {outcome.raises.__name__}: {outcome.why}")


@pytest.mark.parametrize(("wire", "path"), _params())
def test_golden_stream_through_sdk(wire, path, server):
    _need_sdk(wire)
    expected = expected_stream(wire, path)
    objects: list = []
    if expected.raises is not None:
        _expect_raise(expected, lambda: sdk_stream(wire, path, server, into=objects))
    else:
        sdk_stream(wire, path, server, into=objects)
    assert [_sdk_kind(wire, o) for o in objects] == expected.kinds


@pytest.mark.parametrize(("wire", "path"), _params(ACCUMULATING_WIRES))
def test_golden_stream_through_sdk_accumulator(wire, path, server):
    _need_sdk(wire)
    expected = expected_final(wire, path)
    if expected.raises is not None:
        _expect_raise(expected, lambda: sdk_final(wire, path, server))
        return
    try:
        final = sdk_final(wire, path, server)
    except Exception as error:
        pytest.fail(
            f"{wire}'s SDK accumulator raised {type(error).__name__}: {error}. If that is the"
            " SDK's limitation, list the fixture in ACCUMULATOR_FAILURES with why."
        )
    if wire == "openai_chat":
        assert final.object == "chat.completion"
        assert final.choices, "the accumulated completion has no choice"
    elif wire == "openai_responses":
        assert final.object == "response" and final.output is not None
    else:
        assert final.type == "message" and final.role == "assistant"


def test_every_known_failure_names_a_golden_fixture():
    names = {f"{w}/{p.stem}" for w, p in golden_fixtures()}
    stale = sorted((set(SDK_CANNOT_PARSE) | set(ACCUMULATOR_FAILURES)) - names)
    assert not stale, f"expected-failure entries without a golden fixture: {stale}"


EXPECTED_PATH = {
    "openai_chat": r"/v1/chat/completions",
    "openai_responses": r"/v1/responses",
    "anthropic_messages": r"/v1/messages",
    "bedrock_converse": r"/model/loopback-model/converse-stream",
    "gemini": r"/v1beta/models/loopback-model:streamGenerateContent",
    "ollama": r"/api/chat",
    "cohere_v2": r"/v2/chat",
}


@pytest.mark.parametrize("wire", WIRES)
def test_sdk_requests_the_provider_endpoint(wire, server):
    """Each SDK sends one POST to its provider's real path (the prefix only picks the fixture)."""
    _need_sdk(wire)
    fixture = own_stream(server, f"{wire}/minimal")
    key = server.register(fixture)
    before = len(server.requests)
    sdk_stream(wire, fixture, server)
    requests = server.requests[before:]
    assert [(r["method"], r["path"]) for r in requests] == [
        ("POST", f"/s/{key}{EXPECTED_PATH[wire]}")
    ]
    body = json.loads(requests[0]["body"] or b"{}")
    if wire == "gemini":
        assert requests[0]["query"] == "alt=sse"
    elif wire in ("openai_chat", "openai_responses", "anthropic_messages", "ollama", "cohere_v2"):
        assert body.get("stream") is True


# One short, valid stream per wire, for the tests that need a stream of their own.
_MINIMAL = {
    "openai_chat": "\n".join(
        [
            '{"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":'
            '[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}',
            '{"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":'
            '[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        ]
    ),
    "openai_responses": "\n".join(
        [
            '{"type":"response.created","sequence_number":0,"response":{"id":"r1","object":'
            '"response","created_at":0,"status":"in_progress","model":"m","output":[],'
            '"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}}',
            '{"type":"response.completed","sequence_number":1,"response":{"id":"r1","object":'
            '"response","created_at":0,"status":"completed","model":"m","output":[],'
            '"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}}',
        ]
    ),
    "anthropic_messages": "\n".join(
        [
            '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
            '"model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
            '"usage":{"input_tokens":1,"output_tokens":1}}}',
            '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
            '"usage":{"output_tokens":1}}',
            '{"type":"message_stop"}',
        ]
    ),
    "bedrock_converse": "\n".join(
        [
            '{"messageStart":{"role":"assistant"}}',
            '{"_event":"messageStop","stopReason":"end_turn","p":"abc"}',
        ]
    ),
    "gemini": '{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},'
    '"finishReason":"STOP"}],"responseId":"g1"}',
    "ollama": '{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant",'
    '"content":"Hi"},"done":true,"done_reason":"stop"}',
    "cohere_v2": "\n".join(
        [
            '{"id":"k1","type":"message-start","delta":{"message":{"role":"assistant"}}}',
            '{"type":"message-end","delta":{"finish_reason":"COMPLETE"}}',
        ]
    ),
}


# The module's own streams (given to the server with the goldens), by WIRE/NAME: JSON lines.
STREAMS: dict[str, list[str]] = {
    **{f"{wire}/minimal": text.splitlines() for wire, text in _MINIMAL.items()},
    "openai_chat/error_event": [
        _MINIMAL["openai_chat"].splitlines()[0],
        '{"_event":"error","error":{"message":"boom","type":"invalid_request_error"}}',
    ],
    "anthropic_messages/error_event": [
        _MINIMAL["anthropic_messages"].splitlines()[0],
        '{"type":"ping"}',
        '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    ],
    "bedrock_converse/exception_boto3": [
        '{"messageStart":{"role":"assistant"}}',
        '{"modelStreamErrorException":{"message":"model failed","originalStatusCode":500}}',
    ],
    "bedrock_converse/exception__event": [
        '{"messageStart":{"role":"assistant"}}',
        '{"_event":"modelStreamErrorException","message":"model failed"}',
    ],
    "ollama/error_line": ['{"error":"model runner has unexpectedly stopped"}'],
    # Provider errors of the kinds each API documents, for the non-streaming error replies.
    "openai_chat/rate_limited": [
        _MINIMAL["openai_chat"].splitlines()[0],
        '{"_event":"error","error":{"message":"Rate limit reached for requests","type":"requests",'
        '"param":null,"code":"rate_limit_exceeded"}}',
    ],
    "openai_responses/rate_limited": [
        _MINIMAL["openai_responses"].splitlines()[0],
        '{"type":"error","sequence_number":1,"code":"rate_limit_exceeded",'
        '"message":"Rate limit reached","param":null}',
    ],
    "anthropic_messages/rate_limited": [
        _MINIMAL["anthropic_messages"].splitlines()[0],
        '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens'
        ' has exceeded your per-minute rate limit"}}',
    ],
    "gemini/overloaded": [
        '{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}],"responseId":"g2"}',
        '{"error":{"code":503,"message":"The model is overloaded. Please try again later.",'
        '"status":"UNAVAILABLE"}}',
    ],
    "gemini/quota": [
        '{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}],"responseId":"g3"}',
        '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).",'
        '"status":"RESOURCE_EXHAUSTED"}}',
    ],
    "ollama/error_mid": [
        '{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant",'
        '"content":"Hi"},"done":false}',
        '{"error":"an error was encountered while running the model"}',
    ],
    "cohere_v2/error_end": [
        _MINIMAL["cohere_v2"].splitlines()[0],
        '{"type":"message-end","delta":{"finish_reason":"ERROR","error":"internal server error"}}',
    ],
}


# -- error frames, as each provider sends them --------------------------------------------------


def test_openai_error_event_raises_api_error(server):
    _need_sdk("openai_chat")
    import openai

    with pytest.raises(openai.APIError, match="boom"):
        sdk_stream("openai_chat", own_stream(server, "openai_chat/error_event"), server)


def test_anthropic_error_event_raises_status_error(server):
    _need_sdk("anthropic_messages")
    import anthropic

    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        path = own_stream(server, "anthropic_messages/error_event")
        sdk_stream("anthropic_messages", path, server)


@pytest.mark.parametrize("shape", ["boto3", "_event"])
def test_bedrock_exception_event_raises_event_stream_error(server, shape):
    _need_sdk("bedrock_converse")
    import botocore.exceptions

    path = own_stream(server, f"bedrock_converse/exception_{shape}")
    with pytest.raises(botocore.exceptions.EventStreamError) as caught:
        sdk_stream("bedrock_converse", path, server)
    assert caught.value.response["Error"]["Code"] == "modelStreamErrorException"
    assert caught.value.response["Error"]["Message"] == "model failed"


def test_ollama_error_line_raises_response_error(server):
    _need_sdk("ollama")
    import ollama

    with pytest.raises(ollama.ResponseError, match="unexpectedly stopped"):
        sdk_stream("ollama", own_stream(server, "ollama/error_line"), server)


# -- non-streaming error replies, as each provider sends them -----------------------------------
#
# A non-streaming request for a stream that ends with a provider error gets the HTTP status and
# body the provider's API documents for that error (the descriptor's serve.error), and the SDK
# turns them into its own error type: (wire, stream, error type, status, what else the SDK read).


def _sdk_error_type(dotted: str) -> type[BaseException]:
    module, _, name = dotted.rpartition(".")
    return getattr(__import__(module, fromlist=[name]), name)


def _status_of(wire: str, error: BaseException) -> int | None:
    if wire == "bedrock_converse":
        return error.response["ResponseMetadata"]["HTTPStatusCode"]  # type: ignore[attr-defined]
    if wire == "gemini":
        return error.code  # type: ignore[attr-defined]
    return error.status_code  # type: ignore[attr-defined]


def _what_the_sdk_read(wire: str, error: BaseException) -> dict:
    """What of the error body each SDK exposes, to compare with the provider's documented one."""
    if wire == "bedrock_converse":
        response = dict(error.response)  # type: ignore[attr-defined]
        return {
            "Code": response["Error"]["Code"],
            **{k: v for k, v in response.items() if k not in ("Error", "ResponseMetadata")},
        }
    if wire == "gemini":
        return {"status": error.status, "message": error.message}  # type: ignore[attr-defined]
    if wire == "ollama":
        return {"error": error.error}  # type: ignore[attr-defined]
    return error.body  # type: ignore[attr-defined]


_THROTTLED = "Too many tokens, please wait before trying again."
ERROR_REPLIES = [
    (
        "openai_chat",
        "openai_chat/error_event",
        "openai.BadRequestError",
        400,
        {"message": "boom", "type": "invalid_request_error"},
    ),
    (
        "openai_chat",
        "openai_chat/rate_limited",
        "openai.RateLimitError",
        429,
        {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        },
    ),
    (
        "openai_chat",
        GOLDEN / "openai_chat" / "hand_compat_error_frame.jsonl",
        "openai.InternalServerError",
        503,
        {
            "message": "Service Unavailable",
            "type": "internal_server_error",
            "code": "service_unavailable",
            "status_code": 503,
        },
    ),
    (
        "openai_responses",
        GOLDEN / "openai_responses" / "hand_error_event.jsonl",
        "openai.InternalServerError",
        500,
        {
            "message": "The server had an error processing your request. Sorry about that! You can"
            " retry your request, or contact us through our help center at help.openai.com if"
            " you keep seeing this error.",
            "type": "server_error",
            "param": None,
            "code": "server_error",
        },
    ),
    (
        "openai_responses",
        "openai_responses/rate_limited",
        "openai.RateLimitError",
        429,
        {
            "message": "Rate limit reached",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        },
    ),
    (
        "anthropic_messages",
        GOLDEN / "anthropic_messages" / "hand_error_overloaded.jsonl",
        "anthropic.OverloadedError",
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ),
    (
        "anthropic_messages",
        "anthropic_messages/rate_limited",
        "anthropic.RateLimitError",
        429,
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Number of request tokens has exceeded your per-minute rate limit",
            },
        },
    ),
    (
        "bedrock_converse",
        GOLDEN / "bedrock_converse" / "hand_exception_throttling_frames.jsonl",
        "botocore.exceptions.ClientError",
        429,
        {"Code": "ThrottlingException", "message": _THROTTLED},
    ),
    (
        "bedrock_converse",
        GOLDEN / "bedrock_converse" / "hand_exception_first_throttling_frames.jsonl",
        "botocore.exceptions.ClientError",
        429,
        {"Code": "ThrottlingException", "message": _THROTTLED},
    ),
    (
        "bedrock_converse",
        GOLDEN / "bedrock_converse" / "hand_exception_model_stream_boto3.jsonl",
        "botocore.exceptions.ClientError",
        424,
        {
            "Code": "ModelErrorException",
            "message": "Received error from the model while streaming.",
            "originalStatusCode": 500,
        },
    ),
    (
        "bedrock_converse",
        GOLDEN / "bedrock_converse" / "hand_exception_first_validation_boto3.jsonl",
        "botocore.exceptions.ClientError",
        400,
        {
            "Code": "ValidationException",
            "message": "The model returned the following errors: messages: final assistant"
            " content cannot end with trailing whitespace",
        },
    ),
    (
        "gemini",
        "gemini/overloaded",
        "google.genai.errors.ServerError",
        503,
        {"status": "UNAVAILABLE", "message": "The model is overloaded. Please try again later."},
    ),
    (
        "gemini",
        "gemini/quota",
        "google.genai.errors.ClientError",
        429,
        {
            "status": "RESOURCE_EXHAUSTED",
            "message": "Resource has been exhausted (e.g. check quota).",
        },
    ),
    (
        "ollama",
        "ollama/error_mid",
        "ollama.ResponseError",
        500,
        {"error": "an error was encountered while running the model"},
    ),
    (
        "cohere_v2",
        "cohere_v2/error_end",
        "cohere.InternalServerError",
        500,
        {"message": "internal server error"},
    ),
]


@pytest.mark.parametrize(
    ("wire", "stream", "error_type", "status", "said"),
    [pytest.param(*case, id=f"{case[0]}/{Path(case[1]).stem}") for case in ERROR_REPLIES],
)
def test_non_streaming_error_reply_is_the_sdk_error_with_the_provider_status(
    wire, stream, error_type, status, said, server
):
    _need_sdk(wire)
    path = stream if isinstance(stream, Path) else own_stream(server, stream)
    with pytest.raises(_sdk_error_type(error_type)) as caught:
        clients.sdk_complete(wire, path, server)
    assert _status_of(wire, caught.value) == status
    assert _what_the_sdk_read(wire, caught.value) == said


@pytest.mark.parametrize(
    ("name", "error_type", "code"),
    [
        ("gemini/overloaded", "google.genai.errors.ServerError", 503),
        ("gemini/quota", "google.genai.errors.ClientError", 429),
    ],
)
def test_gemini_streamed_error_is_the_sdk_error_with_the_chunk_code(server, name, error_type, code):
    """Streaming, the status is 200 and Gemini's error is a chunk: google-genai raises it after
    the chunks before it, its class and code from the chunk's google.rpc status."""
    _need_sdk("gemini")
    objects: list = []
    with pytest.raises(_sdk_error_type(error_type)) as caught:
        sdk_stream("gemini", own_stream(server, name), server, into=objects)
    assert caught.value.code == code and len(objects) == 1


def test_cohere_streamed_error_ends_with_the_message_end_that_carries_it(server):
    """Cohere's SDK raises nothing mid-stream: the message-end event carries the error."""
    _need_sdk("cohere_v2")
    *_, last = sdk_stream("cohere_v2", own_stream(server, "cohere_v2/error_end"), server)
    assert (last.delta.finish_reason, last.delta.error) == ("ERROR", "internal server error")


def test_bedrock_error_reply_names_its_type_in_the_header_as_bedrock_does(server):
    """botocore reads the error code from ``x-amzn-ErrorType`` (it would take the status code
    for it without one); Bedrock sends the code, a colon, and its service namespace."""
    import urllib.request

    path = GOLDEN / "bedrock_converse" / "hand_exception_throttling_frames.jsonl"
    url = server.base_url(path) + "/model/m/converse"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(request, timeout=5)
    assert caught.value.code == 429
    error_type = caught.value.headers["x-amzn-ErrorType"]
    assert error_type.split(":", 1)[0] == "ThrottlingException"
    assert json.loads(caught.value.read()) == {"message": _THROTTLED}


def test_the_log_keeps_no_credential_an_sdk_sent(server):
    """Every SDK authenticates its requests its own way (a bearer token, x-api-key,
    x-goog-api-key, a SigV4 Authorization); ``--log`` names the headers, never their values."""
    sent = 0
    for wire in WIRES:
        if importlib.util.find_spec(SDK_MODULE[wire]) is None:
            continue
        sdk_stream(wire, own_stream(server, f"{wire}/minimal"), server)
        sent += 1
    assert sent, "no SDK installed"
    logged = server.log.read_text(encoding="utf-8")
    for credential in ("sk-loopback", "sk-ant-loopback", "loopback-key", "AKIDLOOPBACK"):
        assert credential not in logged
    assert "Signature=" not in logged


def test_unknown_fixture_or_path_is_404(server):
    import urllib.request

    chat = server.register(GOLDEN / "openai_chat" / "hand_text_before_after.jsonl")
    for path in ("/s/nope/v1/chat/completions", "/v1/embeddings", f"/s/{chat}/api/chat"):
        request = urllib.request.Request(server.url + path, data=b"{}", method="POST")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as caught:
            opener.open(request, timeout=5)
        assert caught.value.code == 404


# -- the event-stream encoder against botocore's own parser ------------------------------------


def test_eventstream_frame_layout():
    frame = eventstream.event_message("messageStop", b'{"stopReason":"end_turn"}')
    total, headers_len, prelude_crc = struct.unpack(">III", frame[:12])
    assert total == len(frame)
    assert prelude_crc == zlib.crc32(frame[:8])
    assert struct.unpack(">I", frame[-4:])[0] == zlib.crc32(frame[:-4])
    assert frame[12 + headers_len : -4] == b'{"stopReason":"end_turn"}'
    assert frame[12:13] == bytes([len(":event-type")])


def test_eventstream_round_trip_with_botocore():
    pytest.importorskip("botocore")
    from botocore.eventstream import EventStreamBuffer

    payloads = [
        ("messageStart", {"role": "assistant", "p": "abc"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "héllo ✓"}}),
        ("messageStop", {"stopReason": "end_turn"}),
    ]
    data = b"".join(eventstream.event_message(name, body) for name, body in payloads)
    data += eventstream.exception_message("throttlingException", {"message": "slow down"})
    buffer = EventStreamBuffer()
    messages = []
    for i in range(0, len(data), 7):  # frames split across arbitrary reads
        buffer.add_data(data[i : i + 7])
        messages.extend(buffer)
    assert [m.headers[":event-type"] for m in messages[:3]] == [n for n, _ in payloads]
    assert [json.loads(m.payload) for m in messages[:3]] == [b for _, b in payloads]
    assert all(m.headers[":message-type"] == "event" for m in messages[:3])
    assert all(m.headers[":content-type"] == "application/json" for m in messages)
    last = messages[3]
    assert last.headers[":message-type"] == "exception"
    assert last.headers[":exception-type"] == "throttlingException"
    assert json.loads(last.payload) == {"message": "slow down"}


def test_eventstream_corrupt_crc_is_rejected_by_botocore():
    pytest.importorskip("botocore")
    from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

    frame = bytearray(eventstream.event_message("messageStop", {"stopReason": "end_turn"}))
    frame[-6] ^= 0xFF  # a payload byte
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(frame))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


# -- the SDK accumulator helper ---------------------------------------------------------------


def test_openai_chat_state_accumulates_sdk_chunks(server):
    _need_sdk("openai_chat")
    path = own_stream(server, "openai_chat/minimal")
    state = openai_chat_state(sdk_stream("openai_chat", path, server))
    message = state.get_final_completion().choices[0].message
    assert message.content == "Hi" and message.role == "assistant"


# -- litellm (optional) --------------------------------------------------------------------------


def _content_of(path: Path) -> str:
    text = []
    for event in read_events(path):
        for choice in event.payload.get("choices") or []:
            content = (choice.get("delta") or {}).get("content")
            if choice.get("index", 0) == 0 and isinstance(content, str):
                text.append(content)
    return "".join(text)


@pytest.mark.parametrize(
    ("wire", "path"),
    [p for p in _params(("openai_chat",)) if not p.values[1].stem.startswith("compat_")],
)
def test_golden_stream_through_litellm(wire, path, server, monkeypatch):
    """litellm (optional) re-shapes chunks, so its assembled text is compared, not counts."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytest.importorskip("litellm", reason="litellm is optional")
    # A provider error the openai SDK does not know as one (vLLM's bare ErrorResponse,
    # {object: error}) still ends the stream without a finish_reason, which litellm raises.
    bare_error = any(e.payload.get("object") == "error" for e in read_events(path))
    if expected_stream(wire, path).raises is not None or bare_error:
        with pytest.raises(Exception):  # noqa: B017 - litellm maps provider errors its own way
            clients.litellm_stream(path, server)
        return
    chunks = clients.litellm_stream(path, server)
    assert chunks
    final = clients.litellm_final(chunks)
    assert (final.choices[0].message.content or "") == _content_of(path)


# -- the framing itself --------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _serving(wire: str):
    """The wire's compiled ``serve`` section, from its descriptor."""
    return compile_serve(engine.load_format(wire).descriptor)


def _framed(wire: str, events) -> bytes:
    return b"".join(_serving(wire).framing.frames(events))


def test_sse_framing_per_provider(tmp_path):
    path = _write(
        tmp_path,
        "x.jsonl",
        '{"_event":"error", "error":{"message":"m"}}',
        '{"type":"message_stop"}',
    )
    events = read_events(path)
    assert events[0].name == "error" and events[0].text == '{"error":{"message":"m"}}'
    assert _framed("openai_chat", events) == (
        b'event: error\ndata: {"error":{"message":"m"}}\n\n'
        b'data: {"type":"message_stop"}\n\ndata: [DONE]\n\n'
    )
    messages = _framed("anthropic_messages", events[1:])
    assert messages == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    assert _framed("gemini", events[1:]) == b'data: {"type":"message_stop"}\r\n\r\n'
    assert _framed("ollama", events[1:]) == b'{"type":"message_stop"}\n'
    assert _framed("openai_responses", events[1:]) == messages
    assert _framed("cohere_v2", events[1:]) == messages + b"data: [DONE]\n\n"  # as Cohere ends
    served = {w: _serving(w) for w in WIRES}
    for wire, path in EXPECTED_PATH.items():
        assert [w for w, spec in served.items() if spec.route(path)] == [wire]
    assert not any(spec.route("/v1/embeddings") for spec in served.values())


def test_bedrock_frames_from_both_recorded_shapes(tmp_path):
    pytest.importorskip("botocore")
    from botocore.eventstream import EventStreamBuffer

    path = _write(
        tmp_path,
        "b.jsonl",
        '{"_event":"contentBlockStop","contentBlockIndex":0,"p":"ab"}',
        '{"messageStop":{"stopReason":"end_turn"}}',
    )
    buffer = EventStreamBuffer()
    for frame in _serving("bedrock_converse").framing.frames(read_events(path)):
        buffer.add_data(frame)
    messages = list(buffer)
    assert [m.headers[":event-type"] for m in messages] == ["contentBlockStop", "messageStop"]
    assert messages[0].payload == b'{"contentBlockIndex":0,"p":"ab"}'  # padding kept, as sent
    assert json.loads(messages[1].payload) == {"stopReason": "end_turn"}


# -- what the SDKs ask besides the chat call, and what they read of a reply (issue 18) ----------

TEXT_OF = {
    "openai_chat": GOLDEN / "openai_chat" / "oai_py_text.jsonl",
    "anthropic_messages": GOLDEN / "anthropic_messages" / "llm_anthropic_text.jsonl",
    "bedrock_converse": GOLDEN / "bedrock_converse" / "vercel_text.jsonl",
    "gemini": GOLDEN / "gemini" / "vercel_text.jsonl",
    "ollama": GOLDEN / "ollama" / "langchaingo_chat_text.jsonl",
}


def test_sdk_model_lookups_get_the_providers_model_objects(server):
    for wire in ("openai_chat", "anthropic_messages", "gemini", "ollama"):
        _need_sdk(wire)
    base = {wire: server.base_url(path) for wire, path in TEXT_OF.items()}
    openai = clients.openai_client(base["openai_chat"])
    model = openai.models.retrieve("gpt-4o")
    assert (model.id, model.object, model.owned_by) == ("gpt-4o", "model", "mcs-formats")
    assert {m.object for m in openai.models.list().data} == {"model"}
    anthropic = clients.anthropic_client(base["anthropic_messages"]).models.retrieve("claude-x")
    assert (anthropic.id, anthropic.type, anthropic.lifecycle) == ("claude-x", "model", "active")
    gemini = clients.gemini_client(base["gemini"]).models.get(model="gemini-2.0-flash")
    assert gemini.name == "models/gemini-2.0-flash" and gemini.input_token_limit > 0
    assert "generateContent" in gemini.supported_actions
    ollama = clients.ollama_client(base["ollama"])
    try:
        shown = ollama.show("llama3.2")
        assert "tools" in shown.capabilities and shown.modelinfo["llama.context_length"] > 0
        assert ollama.list().models[0].model
    finally:
        ollama.close()


def test_sdks_read_the_providers_request_id(server):
    for wire in ("openai_chat", "anthropic_messages", "bedrock_converse"):
        _need_sdk(wire)
    completion = clients.sdk_complete("openai_chat", TEXT_OF["openai_chat"], server)
    assert completion._request_id.startswith("req_")
    message = clients.sdk_complete("anthropic_messages", TEXT_OF["anthropic_messages"], server)
    assert message._request_id.startswith("req_")
    converse = clients.sdk_complete("bedrock_converse", TEXT_OF["bedrock_converse"], server)
    assert converse["ResponseMetadata"]["RequestId"]


def test_openai_sdk_gets_every_choice_of_an_n_gt_1_stream(server):
    _need_sdk("openai_chat")
    n3 = GOLDEN / "openai_chat" / "oai_py_n3_choices.jsonl"
    completion = clients.sdk_complete("openai_chat", n3, server)
    assert [c.index for c in completion.choices] == [0, 1, 2]
    assert len({c.message.content for c in completion.choices}) == 3


def test_a_cut_call_reaches_the_sdk_with_an_object_input(server):
    _need_sdk("anthropic_messages")
    _need_sdk("bedrock_converse")
    cut = GOLDEN / "anthropic_messages" / "hand_max_tokens_cut_in_string.jsonl"
    message = clients.sdk_complete("anthropic_messages", cut, server)
    assert message.stop_reason == "max_tokens" and message.content[1].input == {}
    cut = GOLDEN / "bedrock_converse" / "hand_max_tokens_cut_in_string.jsonl"
    converse = clients.sdk_complete("bedrock_converse", cut, server)
    assert converse["output"]["message"]["content"][1]["toolUse"]["input"] == {}


def _cohere_text(path: Path) -> str:
    return "".join(
        e.payload["delta"]["message"]["content"].get("text", "")
        for e in read_events(path)
        if e.payload.get("type") == "content-delta"
    )


@pytest.mark.parametrize(("wire", "path"), _params(("cohere_v2",)))
def test_cohere_stream_through_litellm(wire, path, server, monkeypatch):
    """litellm's Cohere v2 client asks for application/json and reads one JSON text a line;
    the cohere SDK (test_golden_stream_through_sdk) reads the SSE the same path sends it."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytest.importorskip("litellm", reason="litellm is optional")
    chunks = clients.litellm_stream(path, server, wire)
    final = clients.litellm_final(chunks)
    assert (final.choices[0].message.content or "") == _cohere_text(path)
    calls = [e for e in read_events(path) if e.payload.get("type") == "tool-call-start"]
    assert len(final.choices[0].message.tool_calls or []) == len(calls)


def _required(model) -> set[str]:
    return {name for name, info in model.model_fields.items() if info.is_required()}


def _required_fields(wire: str) -> list[tuple[object, set[str]]]:
    """(where in the reply, the fields the SDK's response type requires there) per wire: the
    pydantic types' required fields, botocore's Converse output shape; google-genai's response
    type requires nothing, so Gemini's reference fields are named."""
    if wire == "openai_chat":
        from openai.types.chat import ChatCompletion
        from openai.types.chat.chat_completion import Choice

        choice = _required(Choice)
        return [(lambda r: r, _required(ChatCompletion)), (lambda r: r["choices"][0], choice)]
    if wire == "openai_responses":
        from openai.types.responses import Response

        return [(lambda r: r, _required(Response))]
    if wire == "anthropic_messages":
        from anthropic.types import Message

        return [(lambda r: r, _required(Message))]
    if wire == "cohere_v2":
        from cohere import V2ChatResponse

        return [(lambda r: r, _required(V2ChatResponse))]
    if wire == "ollama":
        from ollama import ChatResponse

        return [(lambda r: r, _required(ChatResponse))]
    if wire == "bedrock_converse":
        import botocore.session

        model = botocore.session.get_session().get_service_model("bedrock-runtime")
        shape = model.operation_model("Converse").output_shape
        return [(lambda r: r, set(shape.required_members))]
    return [(lambda r: r["candidates"][0], {"content", "finishReason", "index"})]


NON_STREAMING_PATH = {
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "anthropic_messages": "/v1/messages",
    "bedrock_converse": "/model/m/converse",
    "gemini": "/v1beta/models/m:generateContent",
    "cohere_v2": "/v2/chat",
    "ollama": "/api/chat",
}


@pytest.mark.parametrize("wire", WIRES)
def test_every_non_streaming_reply_has_the_fields_the_sdk_type_requires(wire, server):
    """Each golden of the wire that ends without a provider error, asked without streaming:
    the reply holds every field the SDK's response type (the API reference) requires."""
    _need_sdk(wire)
    required = _required_fields(wire)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for _, path in golden_fixtures((wire,)):
        if expected_stream(wire, path).raises is not None:
            continue
        url = server.base_url(path) + NON_STREAMING_PATH[wire]
        body = json.dumps({"stream": False, "model": "m"}).encode()
        try:
            with opener.open(urllib.request.Request(url, data=body), timeout=10) as response:
                reply = json.loads(response.read())
        except urllib.error.HTTPError as error:  # a stream that does not assemble, an error
            assert error.code >= 400, path
            continue
        for where, fields in required:
            assert fields <= set(where(reply)), (path.name, fields - set(where(reply)))
