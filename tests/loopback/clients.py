"""The official SDK clients, pointed at ``mcs-formats serve`` (a ``ServeProcess``), dummy keys.

``sdk_stream(wire, fixture, server)`` runs the real client for that wire and returns every
object the SDK yields while streaming, unchanged (``sdk_iter`` yields them one at a time):
ChatCompletionChunk, Responses events, Anthropic raw stream events, boto3 event dicts,
GenerateContentResponse, ollama ChatResponse, Cohere v2 stream events.
``sdk_final(wire, fixture, server)`` returns the SDK's own assembled result where it has an
accumulator (openai chat, openai responses, anthropic). SDK errors propagate unchanged.

Every client is built with no retries, short timeouts and no proxy from the environment
(HTTP clients with ``trust_env=False``, botocore ``proxies={}``; litellm, which builds its own,
runs with 127.0.0.1 added to ``NO_PROXY``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .server import ServeProcess

TIMEOUT = 10.0  # seconds; everything is local
MODEL = "loopback-model"
PROMPT = "Hello"

WIRES = (
    "openai_chat",
    "openai_responses",
    "anthropic_messages",
    "bedrock_converse",
    "gemini",
    "ollama",
    "cohere_v2",
)
ACCUMULATING_WIRES = ("openai_chat", "openai_responses", "anthropic_messages")


@contextlib.contextmanager
def no_proxy_env():
    """For an SDK that takes no HTTP client of ours (litellm): loopback bypasses env proxies."""
    saved = {var: os.environ.get(var) for var in ("NO_PROXY", "no_proxy")}
    try:
        for var in saved:
            entries = [e for e in (saved[var] or "").split(",") if e.strip()]
            os.environ[var] = ",".join([*entries, "127.0.0.1", "localhost"])
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


# -- clients ---------------------------------------------------------------------------------
#
# The HTTP clients are made once and shared: building one loads a TLS context (tens of ms), which
# would otherwise dominate a loopback call. They never read proxy settings (trust_env=False).
# The SDK clients on top are cheap and made per fixture, since the fixture is in the base URL.


@functools.cache
def _shared_httpx2():
    """One httpx2 client for the SDKs built on it (openai, anthropic, google-genai)."""
    import httpx2

    return httpx2.Client(trust_env=False, timeout=TIMEOUT)


@functools.cache
def _shared_httpx2_async():
    import httpx2

    return httpx2.AsyncClient(trust_env=False, timeout=TIMEOUT)


@functools.cache
def _shared_httpx():
    """One httpx client for cohere (built on httpx)."""
    import httpx

    return httpx.Client(trust_env=False, timeout=TIMEOUT)


@functools.cache
def _boto3_session():
    """One boto3 session (it caches the loaded service model) with dummy static credentials."""
    import boto3

    return boto3.session.Session(
        aws_access_key_id="AKIDLOOPBACK",
        aws_secret_access_key="loopback-secret",
        aws_session_token=None,
        region_name="us-east-1",
    )


def openai_client(base_url: str):
    """An ``openai.OpenAI`` whose base URL is ``<base_url>/v1``."""
    import openai

    return openai.OpenAI(
        api_key="sk-loopback",
        organization=None,
        project=None,
        base_url=f"{base_url}/v1",
        max_retries=0,
        timeout=TIMEOUT,
        http_client=_shared_httpx2(),
    )


def anthropic_client(base_url: str):
    """An ``anthropic.Anthropic`` whose base URL is ``base_url`` (it appends ``/v1/messages``)."""
    import anthropic

    return anthropic.Anthropic(
        api_key="sk-ant-loopback",
        auth_token=None,
        base_url=base_url,
        max_retries=0,
        timeout=TIMEOUT,
        http_client=_shared_httpx2(),
    )


def bedrock_client(base_url: str):
    """A boto3 ``bedrock-runtime`` client with ``endpoint_url=base_url`` and dummy keys."""
    from botocore.config import Config

    return _boto3_session().client(
        "bedrock-runtime",
        endpoint_url=base_url,
        config=Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=TIMEOUT,
            read_timeout=TIMEOUT,
            proxies={},  # given (even empty), botocore does not read proxies from the environment
        ),
    )


def gemini_client(base_url: str):
    """A ``google.genai.Client`` (Gemini API, not Vertex) with ``http_options.base_url``."""
    from google import genai
    from google.genai import types

    return genai.Client(
        api_key="loopback-key",
        vertexai=False,
        http_options=types.HttpOptions(
            base_url=base_url,
            api_version="v1beta",
            timeout=int(TIMEOUT * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
            httpx_client=_shared_httpx2(),
            httpx_async_client=_shared_httpx2_async(),
        ),
    )


def ollama_client(base_url: str):
    """An ``ollama.Client`` with ``host=base_url`` (it builds its own httpx client)."""
    import ollama

    return ollama.Client(host=base_url, timeout=TIMEOUT, trust_env=False)


def cohere_client(base_url: str):
    """A ``cohere.ClientV2`` with ``base_url`` (it appends ``/v2/chat``)."""
    import cohere

    return cohere.ClientV2(
        api_key="loopback-key",
        base_url=base_url,
        timeout=TIMEOUT,
        max_retries=0,
        httpx_client=_shared_httpx(),
        log_warning_experimental_features=False,
    )


# -- streams ---------------------------------------------------------------------------------

_MESSAGES = [{"role": "user", "content": PROMPT}]


# The openai/anthropic/genai/cohere clients share one HTTP client (above), so they are not
# closed here; each stream is, which returns its connection to the pool.


def _openai_chat(base_url: str) -> Iterator[object]:
    client = openai_client(base_url)
    with client.chat.completions.create(model=MODEL, messages=_MESSAGES, stream=True) as stream:
        yield from stream


def _openai_responses(base_url: str) -> Iterator[object]:
    client = openai_client(base_url)
    with client.responses.create(model=MODEL, input=PROMPT, stream=True) as stream:
        yield from stream


def _anthropic(base_url: str) -> Iterator[object]:
    client = anthropic_client(base_url)
    with client.messages.create(
        model=MODEL, max_tokens=1024, messages=_MESSAGES, stream=True
    ) as stream:
        yield from stream


def _bedrock(base_url: str) -> Iterator[object]:
    client = bedrock_client(base_url)
    try:
        response = client.converse_stream(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": PROMPT}]}]
        )
        stream = response["stream"]
        try:
            yield from stream
        finally:
            stream.close()
    finally:
        client.close()


def _gemini(base_url: str) -> Iterator[object]:
    client = gemini_client(base_url)
    yield from client.models.generate_content_stream(model=MODEL, contents=PROMPT)


def _ollama(base_url: str) -> Iterator[object]:
    client = ollama_client(base_url)
    try:
        yield from client.chat(model=MODEL, messages=_MESSAGES, stream=True)
    finally:
        client.close()


def _cohere(base_url: str) -> Iterator[object]:
    client = cohere_client(base_url)
    yield from client.chat_stream(model=MODEL, messages=_MESSAGES)


_STREAMS: dict[str, Callable[[str], Iterator[object]]] = {
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "anthropic_messages": _anthropic,
    "bedrock_converse": _bedrock,
    "gemini": _gemini,
    "ollama": _ollama,
    "cohere_v2": _cohere,
}


def sdk_iter(wire: str, fixture_path: str | Path, server: ServeProcess) -> Iterator[object]:
    """The wire's official SDK streaming this fixture: its objects, one at a time, as it yields.

    ``wire`` is a format name from ``WIRES`` (the folder under tests/golden/). The request is
    made when iteration starts; the SDK's own errors propagate from the iteration.
    """
    try:
        run = _STREAMS[wire]
    except KeyError:
        raise ValueError(f"unknown wire {wire!r}; known: {', '.join(WIRES)}") from None
    return run(server.base_url(fixture_path))


def sdk_stream(
    wire: str,
    fixture_path: str | Path,
    server: ServeProcess,
    into: list | None = None,
) -> list[object]:
    """Every object the wire's official SDK yields while streaming this fixture, unchanged.

    Pass ``into`` to keep the objects yielded before an SDK error (they are appended as they
    arrive; the error still propagates).
    """
    objects = [] if into is None else into
    for obj in sdk_iter(wire, fixture_path, server):
        objects.append(obj)
    return objects


# -- the SDKs' own accumulators ---------------------------------------------------------------


def openai_chat_state(chunks: list[object]):
    """``openai.lib.streaming.chat.ChatCompletionStreamState`` fed with these chunks.

    Read ``.current_completion_snapshot`` (the raw accumulation) or call
    ``.get_final_completion()`` (parsed; raises ``openai.LengthFinishReasonError`` /
    ``ContentFilterFinishReasonError`` for those finish reasons, as the SDK does).
    """
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(chunk)
    return state


def _openai_chat_final(base_url: str):
    return openai_chat_state(list(_openai_chat(base_url))).get_final_completion()


def _openai_responses_final(base_url: str):
    client = openai_client(base_url)
    with client.responses.stream(model=MODEL, input=PROMPT) as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def _anthropic_final(base_url: str):
    client = anthropic_client(base_url)
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=_MESSAGES) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


_FINALS: dict[str, Callable[[str], object]] = {
    "openai_chat": _openai_chat_final,
    "openai_responses": _openai_responses_final,
    "anthropic_messages": _anthropic_final,
}


def sdk_final(wire: str, fixture_path: str | Path, server: ServeProcess) -> object:
    """The SDK's own assembled result for this fixture (wires in ``ACCUMULATING_WIRES``).

    openai_chat: ``ParsedChatCompletion`` from ``ChatCompletionStreamState.get_final_completion()``;
    openai_responses: ``ParsedResponse`` from ``client.responses.stream(...).get_final_response()``;
    anthropic_messages: ``Message`` from ``client.messages.stream(...).get_final_message()``.
    """
    try:
        run = _FINALS[wire]
    except KeyError:
        raise ValueError(
            f"{wire!r} has no SDK accumulator; these do: {', '.join(ACCUMULATING_WIRES)}"
        ) from None
    return run(server.base_url(fixture_path))


# -- non-streaming requests -----------------------------------------------------------------
#
# Each SDK's own non-streaming call; the server answers with the stream's assembled message in
# the provider's envelope (the descriptor's serve.response), and the SDK parses it into its type.


def _openai_chat_complete(base_url: str):
    return openai_client(base_url).chat.completions.create(model=MODEL, messages=_MESSAGES)


def _openai_responses_complete(base_url: str):
    return openai_client(base_url).responses.create(model=MODEL, input=PROMPT)


def _anthropic_complete(base_url: str):
    return anthropic_client(base_url).messages.create(
        model=MODEL, max_tokens=1024, messages=_MESSAGES
    )


def _bedrock_complete(base_url: str):
    client = bedrock_client(base_url)
    try:
        return client.converse(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": PROMPT}]}]
        )
    finally:
        client.close()


def _gemini_complete(base_url: str):
    return gemini_client(base_url).models.generate_content(model=MODEL, contents=PROMPT)


def _ollama_complete(base_url: str):
    client = ollama_client(base_url)
    try:
        return client.chat(model=MODEL, messages=_MESSAGES, stream=False)
    finally:
        client.close()


def _cohere_complete(base_url: str):
    return cohere_client(base_url).chat(model=MODEL, messages=_MESSAGES)


_COMPLETES: dict[str, Callable[[str], object]] = {
    "openai_chat": _openai_chat_complete,
    "openai_responses": _openai_responses_complete,
    "anthropic_messages": _anthropic_complete,
    "bedrock_converse": _bedrock_complete,
    "gemini": _gemini_complete,
    "ollama": _ollama_complete,
    "cohere_v2": _cohere_complete,
}


def sdk_complete(wire: str, fixture_path: str | Path, server: ServeProcess) -> object:
    """The SDK's non-streaming call for this fixture: its own response type (boto3: a dict)."""
    return _COMPLETES[wire](server.base_url(fixture_path))


# -- litellm (optional) ----------------------------------------------------------------------


# litellm's provider prefix and the api_base it takes, per wire (its Cohere client posts to the
# api_base as given).
_LITELLM = {"openai_chat": ("openai", "/v1"), "cohere_v2": ("cohere_chat", "/v2/chat")}


def litellm_stream(
    fixture_path: str | Path, server: ServeProcess, wire: str = "openai_chat", stream: bool = True
) -> Any:
    """litellm's ``completion(stream=True)`` chunks for a fixture of ``wire`` (OpenAI Chat or
    Cohere v2; optional SDK), or its response with ``stream=False``.

    litellm re-shapes the stream (its own ``ModelResponseStream`` objects; it may merge or add
    chunks), so callers compare content, not counts. Imports offline only with
    ``LITELLM_LOCAL_MODEL_COST_MAP=True``, which this sets.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    provider, suffix = _LITELLM[wire]
    with no_proxy_env():
        response = litellm.completion(
            model=f"{provider}/{MODEL}",
            api_base=f"{server.base_url(fixture_path)}{suffix}",
            api_key="sk-loopback",
            messages=_MESSAGES,
            stream=stream,
            max_retries=0,
            num_retries=0,
            timeout=TIMEOUT,
        )
        return list(response) if stream else response


def litellm_final(chunks: list[object]) -> object:
    """litellm's accumulator, ``litellm.stream_chunk_builder``, over ``litellm_stream`` chunks."""
    import litellm

    return litellm.stream_chunk_builder(chunks)
