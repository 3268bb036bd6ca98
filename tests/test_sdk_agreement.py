"""The engine agrees with the official SDKs on every golden stream.

1. Fed the very objects each SDK yields (pydantic models, boto3 dicts, ...), unconverted, the
   engine ends where replaying the recorded dicts ends: same format, message, calls, text,
   stop reason, error presence. Where the SDK raises on a provider error event, the objects it
   yielded before are compared with replaying the same recorded prefix; anthropic's dropped
   ``ping`` events change nothing.
2. Where the SDK has its own accumulator (openai chat, openai responses, anthropic), the engine's
   ``as_dict()`` and ``calls()`` equal the SDK's assembled message on every field the stream
   carried. Where the accumulator fails or is wrong, the engine's answer is pinned to the
   fixture's ``.expect.json`` and the SDK behaviour is named, never skipped.

One ``mcs-formats serve`` subprocess for the module; each (wire, fixture) is streamed through its
SDK once.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import engine
from engine.compile.serve import read_recording as read_events

try:  # pytest's default "prepend" import mode puts tests/ itself on sys.path
    from conftest import outcome, read_stream, replay
    from loopback import clients
    from loopback.server import ServeProcess
    from test_loopback_sdks import (
        ACCUMULATOR_FAILURES,
        SDK_CANNOT_PARSE,
        SDK_MODULE,
        _error_index,
        expected_final,
        golden_fixtures,
    )
except ImportError:  # tests/ made a package, or importlib mode from the repository root
    from tests.conftest import outcome, read_stream, replay
    from tests.loopback import clients
    from tests.loopback.server import ServeProcess
    from tests.test_loopback_sdks import (
        ACCUMULATOR_FAILURES,
        SDK_CANNOT_PARSE,
        SDK_MODULE,
        _error_index,
        expected_final,
        golden_fixtures,
    )

pytestmark = [
    # One worker runs the SDK modules (pyproject's --dist loadgroup): the SDKs are imported once.
    pytest.mark.xdist_group("sdk"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]

# Where an SDK accumulator runs but assembles a wrong message: "<wire>/<stem>": (the SDK's
# behaviour, a check that pins the engine's answer given (buf, the SDK's final object)).


def _pin_repeated(buf, final):
    quirks: list[str] = []
    _differences(buf.as_dict(), _sdk_message_and_calls("openai_chat", final)[1], quirks=quirks)
    assert quirks, "the SDK no longer concatenates repeated strings"


def _pin_mcp_input(buf, final):
    assert final.content[0].type == "mcp_tool_use" and final.content[0].input == {}
    assert buf.as_dict()["content"][0]["input"] == {"message": "hello world"}
    assert buf.calls() == []  # a call the provider runs itself is not extracted


def _pin_mistral_thinking(buf, final):
    content = buf.as_dict()["content"]
    assert [block["type"] for block in content] == ["thinking", "text"]
    assert final.choices[0].message.content == buf.get_content() == content[1]["text"]


def _pin_token_id(buf, final):
    assert buf.as_dict()["token_id"] == 128798  # the first value: "other values are set once"
    assert final.choices[0].message.token_id == 11117656  # the SDK's sum over every delta


ACCUMULATOR_WRONG = {
    "openai_chat/hand_compat_repeated_id_name_type": (
        "the server repeats id, type and function.name on every tool-call fragment;"
        " openai's accumulate_delta concatenates every string it sees again",
        _pin_repeated,
    ),
    "anthropic_messages/vercel_mcp_tool_use": (
        "anthropic's accumulator applies input_json_delta only to tool_use/server_tool_use"
        " blocks: an mcp_tool_use block keeps its start input {}",
        _pin_mcp_input,
    ),
    "openai_chat/compat_mistral_pydantic_ai_thinking": (
        "Mistral's content arrives as '' then lists of thinking/text blocks; openai's"
        " accumulate_delta keeps only the text, losing the thinking block",
        _pin_mistral_thinking,
    ),
    "openai_chat/compat_together_pydantic_ai_hf_router_thinking": (
        "a message-level integer (token_id) sent on every delta: openai's accumulate_delta adds"
        " numbers, summing the token ids",
        _pin_token_id,
    ),
}

# Keys the SDK accumulators add or rewrite that the stream never carried as such.
IGNORED_KEYS = {"parsed", "parsed_arguments", "encrypted_content"}


def _params(wires=clients.WIRES):
    return [pytest.param(w, p, id=f"{w}/{p.stem}") for w, p in golden_fixtures(wires)]


def _key(wire: str, path: Path) -> str:
    return f"{wire}/{path.stem}"


@pytest.fixture(scope="module")
def server():
    """One ``mcs-formats serve`` subprocess for the module, serving every golden."""
    with ServeProcess(p for _, p in golden_fixtures()) as srv:
        yield srv


_STREAMED: dict[tuple[str, str], tuple[list, BaseException | None]] = {}
_FINALS: dict[tuple[str, str], tuple[object, BaseException | None]] = {}


def _sdk_objects(wire: str, path: Path, server) -> tuple[list, BaseException | None]:
    """What the SDK yields for this fixture (once per module), and the error it ended with."""
    key = (wire, str(path))
    if key not in _STREAMED:
        objects: list = []
        error = None
        try:
            clients.sdk_stream(wire, path, server, into=objects)
        except Exception as exc:  # the SDK's own error on a provider error event
            error = exc
        _STREAMED[key] = (objects, error)
    return _STREAMED[key]


def _recorded_prefix(wire: str, path: Path) -> list[dict]:
    """The recorded dicts the SDK gets through: all, or those before the provider's error."""
    stop, _ = _error_index(wire, read_events(path))
    events = read_stream(path)
    return events if stop is None else events[:stop]


def _observable(buf: engine.LLMStreamBuffer) -> dict:
    seen = outcome(buf)
    return {
        "format": seen["format"],
        "message": seen["message"],
        "calls": seen["calls"],
        "text": seen["text"],
        "stop_reason": seen["stop_reason"],
        "error": seen["error"] is not None,
    }


def _ollama_drops(event: dict) -> dict:
    """ollama's ``Message.ToolCall`` models only ``function.name`` and ``function.arguments``:
    the SDK drops the ``id`` and ``function.index`` that Ollama sends (ollama 0.6.3)."""
    for call in (event.get("message") or {}).get("tool_calls") or []:
        call.pop("id", None)
        call.get("function", {}).pop("index", None)
    return event


# Fields an SDK's models lose, by wire: removed from the recorded dicts before comparing.
SDK_DROPS = {"ollama": _ollama_drops}


def _base64(value):
    """boto3 yields blobs (Bedrock's ``redactedContent``) as bytes, as its ``converse()`` does;
    the recorded wire carries them as standard base64."""
    if isinstance(value, dict):
        return {k: _base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_base64(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _need_sdk(wire: str) -> None:
    pytest.importorskip(SDK_MODULE[wire], reason=f"{wire}: its SDK is not installed (sdk extra)")


# -- 1. the SDK's objects fed straight in ----------------------------------------------------------


@pytest.mark.parametrize(("wire", "path"), _params())
def test_sdk_objects_replay_like_recorded_dicts(wire, path, server):
    _need_sdk(wire)
    objects, error = _sdk_objects(wire, path, server)
    key = _key(wire, path)
    if key in SDK_CANNOT_PARSE:
        factory, why = SDK_CANNOT_PARSE[key]
        assert objects == [] and isinstance(error, factory()), why
        # The engine reads what the SDK cannot validate.
        assert replay(read_stream(path)).format == wire
        return
    prefix = _recorded_prefix(wire, path)
    if len(prefix) < len(read_stream(path)):
        assert error is not None, f"{key}: the SDK should raise on the provider's error event"
    else:
        assert error is None, f"{key}: the SDK raised {error!r}"
    if not prefix:
        # The provider's error is the stream's first event (a Bedrock exception frame before
        # any messageStart): the SDK raises before it yields anything, so there is nothing
        # of its to replay.
        assert objects == [], f"{key}: the SDK yielded {objects!r} before the error"
        return
    assert objects, f"{key}: the SDK yielded nothing"

    buf = engine.LLMStreamBuffer()
    for obj in objects:
        buf.add(obj)
    buf.close()
    drop = SDK_DROPS.get(wire)
    if drop:
        prefix = [drop(json.loads(json.dumps(event))) for event in prefix]
    assert _base64(_observable(buf)) == _observable(replay(prefix))


# -- 2. the engine against the SDK's own accumulator -----------------------------------------------


def _empty(value) -> bool:
    return value is None or value == [] or value == {}


def _parses(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return _UNPARSED


_UNPARSED = object()


def _differences(ours, theirs, at: str = "", quirks: list | None = None) -> list[str]:
    """Where the engine's value differs from the SDK's (the SDK's null/empty extras ignored).

    Known SDK accumulator behaviours are appended to ``quirks`` instead (when given): openai's
    ``accumulate_delta`` concatenates a string repeated on every delta (``role``, ``id``, ...).
    """
    quirks = [] if quirks is None else quirks
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for k in sorted(set(ours) | set(theirs)):
            if k in IGNORED_KEYS:
                continue
            if k not in ours:
                # openai's state keeps each tool call's delta `index`; as_dict() has none (API).
                index_kept = k == "index" and "/tool_calls/" in at
                if not _empty(theirs[k]) and not index_kept:
                    found.append(f"{at}/{k}: engine lacks it, SDK has {theirs[k]!r}")
            elif k not in theirs:
                if not _empty(ours[k]):
                    found.append(f"{at}/{k}: SDK lacks it, engine has {ours[k]!r}")
            else:
                found += _differences(ours[k], theirs[k], f"{at}/{k}", quirks)
        return found
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{at}: engine has {len(ours)} items, SDK {len(theirs)}"]
        found = []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found += _differences(a, b, f"{at}/{i}", quirks)
        return found
    if ours == theirs:
        return []
    if isinstance(ours, str) and isinstance(theirs, dict):
        parsed = _parses(ours)
        if parsed == theirs:  # a wire that sent an arguments object: as_dict() has its JSON text
            return []
        if parsed is _UNPARSED:  # cut arguments: the engine keeps the raw text (API rule),
            return []  # the SDK shows its partial parse
    if (
        isinstance(ours, str)
        and isinstance(theirs, str)
        and ours
        and theirs == ours * (len(theirs) // len(ours))
    ):
        quirks.append(f"{at}: SDK concatenated {ours!r} {len(theirs) // len(ours)} times")
        return []
    return [f"{at}: engine {ours!r} != SDK {theirs!r}"]


def _dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True)


def _as_call(name, arguments, call_id) -> dict | None:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return {"name": name, "arguments": arguments, "id": call_id}


def _sdk_message_and_calls(wire: str, final) -> tuple[dict, dict, list[dict]]:
    """(the part of as_dict() compared, the SDK's counterpart, the SDK's calls parsed)."""
    if wire == "openai_chat":
        choice = next(c for c in final.choices if c.index == 0)
        message = _dump(choice.message)
        calls = [
            _as_call(t["function"]["name"], t["function"]["arguments"], t["id"])
            for t in message.get("tool_calls") or []
        ]
        legacy = message.get("function_call")  # the deprecated single call: no id
        if legacy:
            calls.append(_as_call(legacy["name"], legacy["arguments"], None))
        return {}, message, [c for c in calls if c]
    dumped = _dump(final)
    if wire == "openai_responses":
        items = dumped["output"]
        calls = [
            _as_call(i["name"], i["arguments"], i["call_id"])
            if i.get("type") == "function_call"
            # a custom tool's free-form input, never parsed: the call's {"input": text}
            else {"name": i["name"], "arguments": {"input": i["input"]}, "id": i["call_id"]}
            for i in items
            if i.get("type") in ("function_call", "custom_tool_call")
        ]
        return {}, {"output": items}, [c for c in calls if c]
    blocks = dumped["content"]
    calls = [_as_call(b["name"], b["input"], b["id"]) for b in blocks if b["type"] == "tool_use"]
    return {}, dumped, [c for c in calls if c]


def _sdk_final(wire: str, path: Path, server):
    key = (wire, str(path))
    if key not in _FINALS:
        try:
            if wire == "openai_chat":  # the same state sdk_final uses, over the cached chunks
                objects, _ = _sdk_objects(wire, path, server)
                _FINALS[key] = (clients.openai_chat_state(objects).get_final_completion(), None)
            else:
                _FINALS[key] = (clients.sdk_final(wire, path, server), None)
        except Exception as exc:
            _FINALS[key] = (None, exc)
    return _FINALS[key]


def _expect_path(path: Path) -> Path:
    return path.with_name(path.stem + ".expect.json")


def _pin_to_expect(path: Path, buf: engine.LLMStreamBuffer, why: str) -> None:
    """The engine's answer is the fixture's .expect.json (where the SDK cannot give one)."""
    if not _expect_path(path).exists():
        # No expect file: the engine still yields a finished message and every streamed call.
        wanted = any(
            (choice.get("delta") or {}).get("tool_calls")
            for event in read_stream(path)
            for choice in event.get("choices") or []
        )
        assert buf.is_finished(), why
        assert bool(buf.calls()) == wanted, f"engine calls (the SDK cannot: {why})"
        assert all(call.name for call in buf.calls()), why
        return
    expect = json.loads(_expect_path(path).read_text(encoding="utf-8"))
    seen = outcome(buf)
    assert seen["calls"] == expect["calls"], f"engine calls (the SDK cannot: {why})"
    if "message" in expect:
        assert seen["message"] == expect["message"], f"engine message (the SDK cannot: {why})"


@pytest.mark.parametrize(("wire", "path"), _params(clients.ACCUMULATING_WIRES))
def test_engine_message_equals_sdk_accumulator(wire, path, server):
    _need_sdk(wire)
    key = _key(wire, path)
    buf = replay(read_stream(path))
    if key in ACCUMULATOR_FAILURES:
        error_type, why = ACCUMULATOR_FAILURES[key]
        final, error = _sdk_final(wire, path, server)
        assert isinstance(error, error_type), f"the SDK accumulator should fail: {why}"
        _pin_to_expect(path, buf, why)
        return
    if key in ACCUMULATOR_WRONG:
        why, pin = ACCUMULATOR_WRONG[key]
        final, error = _sdk_final(wire, path, server)
        assert error is None, error
        pin(buf, final)
        if _expect_path(path).exists():
            _pin_to_expect(path, buf, why)
        return

    expected = expected_final(wire, path)
    if expected.raises is not None:
        objects, _ = _sdk_objects(wire, path, server)
        if wire != "openai_chat":
            final, error = _sdk_final(wire, path, server)
            assert isinstance(error, expected.raises), expected.why
            return
        if not objects:  # the stream is one provider error: nothing to accumulate
            _pin_to_expect(path, buf, expected.why)
            return
        # get_final_completion() refuses length / content_filter, and a provider error event
        # stops the stream: compare the raw accumulation of what the SDK yielded.
        final = clients.openai_chat_state(objects).current_completion_snapshot
        buf = replay(_recorded_prefix(wire, path))
    else:
        final, error = _sdk_final(wire, path, server)
        assert error is None, f"{key}: {error!r}"

    _, sdk_message, sdk_calls = _sdk_message_and_calls(wire, final)
    ours = buf.as_dict()
    if wire == "openai_responses":
        ours = {"output": ours.get("output", [])}
    quirks: list[str] = []
    problems = _differences(ours, sdk_message, quirks=quirks)
    assert not problems, f"{key}: engine vs SDK accumulator:\n" + "\n".join(problems)
    engine_calls = [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in buf.calls()]
    if wire == "anthropic_messages":  # cut input: the engine keeps raw text and extracts no call
        raw = {b.get("id") for b in ours["content"] if isinstance(b.get("input"), str)}
        sdk_calls = [c for c in sdk_calls if c["id"] not in raw]
    call_quirks: list[str] = []
    assert not _differences(engine_calls, sdk_calls, quirks=call_quirks), (engine_calls, sdk_calls)
    if quirks or call_quirks:
        # openai's accumulate_delta concatenated a string the server repeated on every delta:
        # the engine's single value is pinned against the fixture's expectation where there is one.
        why = "; ".join(quirks + call_quirks)
        if _expect_path(path).exists():
            _pin_to_expect(path, buf, why)


# -- 3. a non-streaming request: the assembled message, in the SDK's own type -------------------


def _sdk_response_type(wire: str) -> type:
    """What each SDK's non-streaming call returns (boto3: a plain dict)."""
    if wire == "openai_chat":
        from openai.types.chat import ChatCompletion

        return ChatCompletion
    if wire == "openai_responses":
        from openai.types.responses import Response

        return Response
    if wire == "anthropic_messages":
        from anthropic.types import Message

        return Message
    if wire == "gemini":
        from google.genai.types import GenerateContentResponse

        return GenerateContentResponse
    if wire == "cohere_v2":
        from cohere.v2.types import V2ChatResponse

        return V2ChatResponse
    if wire == "ollama":
        from ollama import ChatResponse

        return ChatResponse
    return dict


def _sdk_status_error(wire: str) -> type[BaseException]:
    """The error each SDK raises on an HTTP error status."""
    if wire in ("openai_chat", "openai_responses"):
        import openai

        return openai.APIStatusError
    if wire == "anthropic_messages":
        import anthropic

        return anthropic.APIStatusError
    if wire == "bedrock_converse":
        from botocore.exceptions import ClientError

        return ClientError
    if wire == "gemini":
        from google.genai import errors

        return errors.APIError
    if wire == "cohere_v2":
        from cohere.core.api_error import ApiError

        return ApiError
    import ollama

    return ollama.ResponseError


def _assembled_in_sdk_type(wire: str, response) -> object:
    """The message inside the SDK's response, as plain data to compare with ``as_dict()``
    (google-genai: the SDK's own Content, compared with the SDK's parse of ``as_dict()``)."""
    if wire == "bedrock_converse":
        return _base64(response["output"]["message"])
    if wire == "gemini":
        return response.candidates[0].content
    message = {
        "openai_chat": lambda r: r.choices[0].message,
        "cohere_v2": lambda r: r.message,
        "ollama": lambda r: r.message,
    }.get(wire, lambda r: r)(response)
    return message.model_dump(mode="json", exclude_unset=True, by_alias=True)


def _typed_calls(message: dict) -> dict:
    return {**message, "tool_calls": [{**c, "type": "function"} for c in message["tool_calls"]]}


def _cut_inputs_empty(message: dict) -> dict:
    def empty(block: dict) -> dict:
        if isinstance(block.get("input"), str):
            return {**block, "input": {}}
        if isinstance(block.get("toolUse", {}).get("input"), str):
            return {**block, "toolUse": {**block["toolUse"], "input": {}}}
        return block

    return {**message, "content": [empty(b) for b in message["content"]]}


# Where the provider's non-streaming reply differs from the message the stream assembles (the
# descriptor's serve.response says so): "<wire>/<stem>": (what the reply holds, the change).
REPLY_DIFFERS = {
    "openai_chat/compat_mistral_vercel_tool_call": (
        "each tool call typed, as the non-streaming API sends it (the stream never did)",
        _typed_calls,
    ),
    "anthropic_messages/hand_max_tokens_cut_in_string": (
        "the cut call's input an object ({}), as Message.content[].input is",
        _cut_inputs_empty,
    ),
    "bedrock_converse/hand_max_tokens_cut_in_string": (
        "the cut call's toolUse.input an object ({}), as the Converse API's is",
        _cut_inputs_empty,
    ),
}


def _engine_message(wire: str, path: Path) -> tuple[engine.LLMStreamBuffer, object]:
    """The golden replayed from its recorded dicts (less what the SDK's models drop), and its
    message as the SDK's response should hold it."""
    drop = SDK_DROPS.get(wire)
    events = [drop(e) if drop else e for e in read_stream(path)]
    buf = replay(events, wire)
    if wire == "gemini":
        from google.genai.types import Content

        return buf, Content.model_validate(buf.as_dict())
    return buf, buf.as_dict()


@pytest.mark.parametrize(("wire", "path"), _params())
def test_non_streaming_request_returns_the_assembled_message(wire, path, server):
    """``mcs-formats serve`` answers a stream=false request with the golden's assembled message
    in the provider's envelope (the descriptor's serve.response); the SDK returns it in its own
    type. A golden that ends with a provider error is answered with the provider's error
    status (serve.error), which the SDK raises as its own error."""
    _need_sdk(wire)
    key = _key(wire, path)
    buf, expected = _engine_message(wire, path)
    if key in SDK_CANNOT_PARSE:
        factory, why = SDK_CANNOT_PARSE[key]
        with pytest.raises(factory()):
            clients.sdk_complete(wire, path, server)
        return
    if buf.error is not None:
        with pytest.raises(_sdk_status_error(wire)):
            clients.sdk_complete(wire, path, server)
        return
    response = clients.sdk_complete(wire, path, server)
    assert isinstance(response, _sdk_response_type(wire))
    if key in REPLY_DIFFERS:
        expected = REPLY_DIFFERS[key][1](expected)
    assert _assembled_in_sdk_type(wire, response) == expected
