"""Async drivers: ``await driver.aprocess_llm_response(x)``.

- Concurrency, on recorded parallel calls (``oai_py_parallel_tools_a``: two calls in one
  OpenAI Chat batch): tools that sleep take about one sleep, not two, whether they are
  ``async def`` or sync (each in a worker thread); results in call order whatever order they
  finish in.
- The same decisions as the sync path: every golden stream's transcript (display text, what
  ran in which round, the history) through ``aprocess_llm_response`` equals the sync one,
  for sync and async tools; the same for calls leaked into text and for an Orchestrator.
- Cancellation: cancelling the round's task cancels its tools, each recorded as failed
  (``"cancelled"``), and the CancelledError propagates with the round's response on it.
- The sync path never puts a coroutine into a result: the call fails naming
  ``aprocess_llm_response`` and the coroutine is closed, with no "never awaited" warning.
- An Orchestrator over a sync and an async driver does both.
- A whole message whose call arguments never parse reports the call in ``incomplete_calls``
  with the buffer's reason (issue 9, item 12), in both paths.

Each test drives the loop with ``asyncio.run`` (a golden loop, a round at a time, with one
``asyncio.Runner``): no pytest-asyncio.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
import time
import warnings

import pytest
from conftest import GOLDEN, golden_streams, read_stream, replay, stream_id
from test_drivers import (
    FAMILIES,
    STREAMS,
    WIRES,
    Echo,
    Session,
    _ending,
    _mixed_events,
    _text_events,
    chat_stream,
    split,
    transcript,
)

import engine
from engine import BaseDriver, CallIncomplete, DriverResponse, Orchestrator, Tool

pytestmark = pytest.mark.filterwarnings("error")  # a "never awaited" warning fails a test

CODEC = BaseDriver().codec  # the built-in text codec
SLEEP = 0.2
PARALLEL = GOLDEN / "openai_chat" / "oai_py_parallel_tools_a.jsonl"  # two calls, one batch
WEATHER, STOCK = "GetWeatherArgs", "get_stock_price"  # its calls, in call order


class AsyncEcho(Echo):
    """Echo with ``async def execute_tool`` (it yields to the loop once before answering)."""

    async def execute_tool(self, tool_name: str, arguments: dict):
        await asyncio.sleep(0)
        return super().execute_tool(tool_name, arguments)


class AsyncSession(Session):
    """The client loop of ``test_drivers.Session``, each round awaited on one event loop."""

    def __init__(self, drivers, runner: asyncio.Runner, buf=None) -> None:
        super().__init__(drivers, buf)
        self.runner = runner

    def process(self, driver: BaseDriver) -> DriverResponse:
        return self.runner.run(driver.aprocess_llm_response(self.buf))


class Sleepy(BaseDriver):
    """Owns ``names``; each tool sleeps (``sleeps[name]``, else ``SLEEP``) then returns its
    name and arguments. ``sync``: ``time.sleep`` in a sync ``execute_tool`` (so it runs in a
    worker thread), else ``asyncio.sleep`` in an ``async def`` one. Logs (name, thread) of
    every start and the names in the order they finished."""

    def __init__(self, *names: str, sync: bool = False, sleeps: dict | None = None) -> None:
        super().__init__()
        self.names, self.sleeps = names, sleeps or {}
        self.started: list[tuple[str, int]] = []
        self.finished: list[str] = []
        if sync:
            self.execute_tool = self._sync_tool

    def list_tools(self) -> list[Tool]:
        return [Tool(name) for name in self.names]

    async def execute_tool(self, tool_name: str, arguments: dict):
        self.started.append((tool_name, threading.get_ident()))
        await asyncio.sleep(self.sleeps.get(tool_name, SLEEP))
        self.finished.append(tool_name)
        return {"tool": tool_name, **arguments}

    def _sync_tool(self, tool_name: str, arguments: dict):
        self.started.append((tool_name, threading.get_ident()))
        time.sleep(self.sleeps.get(tool_name, SLEEP))
        self.finished.append(tool_name)
        return {"tool": tool_name, **arguments}


async def _drive(driver: BaseDriver, events) -> tuple[list[DriverResponse], float]:
    """The async client loop over a stream; the responses and the loop's wall time."""
    buf = driver.new_stream_buffer()
    responses = []
    start = time.perf_counter()
    for event in events:
        buf.add(event)
        responses.append(await driver.aprocess_llm_response(buf))
    buf.close()
    responses.append(await driver.aprocess_llm_response(buf))
    return responses, time.perf_counter() - start


def _records(responses):
    return [rec for r in responses for rec in r.executed_calls or []]


def _expected_parallel():
    calls = replay(read_stream(PARALLEL)).calls()
    assert [c.name for c in calls] == [WEATHER, STOCK]
    return calls


# -- concurrency ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sync", [False, True], ids=["async-tools", "sync-tools-in-threads"])
def test_a_two_call_batch_takes_one_sleep_not_two(sync):
    driver = Sleepy(WEATHER, STOCK, sync=sync)
    responses, elapsed = asyncio.run(_drive(driver, read_stream(PARALLEL)))
    assert SLEEP <= elapsed < 1.6 * SLEEP, f"{elapsed:.3f}s for two {SLEEP}s tools"
    records = _records(responses)
    calls = _expected_parallel()
    assert [(r.name, r.arguments, r.tool_call_id) for r in records] == [
        (c.name, c.arguments, c.id) for c in calls
    ]
    assert [r.result for r in records] == [{"tool": c.name, **c.arguments} for c in calls]
    (batch,) = [r for r in responses if r.executed_calls]
    assert batch.call_executed and not batch.call_failed and not batch.call_pending
    threads = {ident for _, ident in driver.started}
    main = threading.get_ident()
    assert (main not in threads and len(threads) == 2) if sync else threads == {main}


@pytest.mark.parametrize("sync", [False, True], ids=["async-tools", "sync-tools-in-threads"])
def test_results_are_in_call_order_whatever_finishes_first(sync):
    driver = Sleepy(WEATHER, STOCK, sync=sync, sleeps={WEATHER: 0.15, STOCK: 0.01})
    responses, _ = asyncio.run(_drive(driver, read_stream(PARALLEL)))
    assert driver.finished == [STOCK, WEATHER]  # the second call finished first
    (batch,) = [r for r in responses if r.executed_calls]
    assert [r.name for r in batch.executed_calls] == [WEATHER, STOCK]
    assert [r.result["tool"] for r in batch.executed_calls] == [WEATHER, STOCK]
    ids = [c.id for c in _expected_parallel()]
    assert [m["tool_call_id"] for m in batch.messages if m["role"] == "tool"] == ids
    sync_driver = Sleepy(WEATHER, STOCK, sync=True, sleeps={WEATHER: 0, STOCK: 0})
    assert batch.messages == sync_driver.process_llm_response(replay_buf()).messages


def replay_buf() -> engine.LLMStreamBuffer:
    """The parallel golden, whole and closed: its batch runs in the next round."""
    buf = Echo().new_stream_buffer()
    for event in read_stream(PARALLEL):
        buf.add(event)
    buf.close()
    return buf


# -- the same decisions as the sync path ---------------------------------------------------------


@pytest.mark.parametrize("tools", [Echo, AsyncEcho], ids=["sync-tools", "async-tools"])
@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_golden_transcript_is_the_sync_one(path, tools):
    events = read_stream(path)
    expected = transcript(events)
    with asyncio.Runner() as runner:
        got = transcript(events, lambda drivers: AsyncSession(drivers, runner), tools)
    assert got == expected


def test_the_goldens_cover_every_wire():
    assert {p.parent.name for p in STREAMS} == set(WIRES)
    assert PARALLEL in golden_streams(["openai_chat"])


@pytest.mark.parametrize("text_calls", ["end", "anywhere"])
@pytest.mark.parametrize("size", [1, 5])
@pytest.mark.parametrize("family", FAMILIES)
def test_a_text_call_runs_when_the_sync_path_runs_it(family, size, text_calls):
    """At the turn's end by default; as soon as complete with ``text_calls="anywhere"``
    (where a bare call must still be the whole text)."""
    text = _ending(family) if text_calls == "end" or family == "bare" else None
    text = text or f"Let me check. {FAMILIES[family]} Done."
    events = chat_stream(split(text, size))
    sync = Session([Echo("get_weather", text_calls=text_calls)]).play(events)
    with asyncio.Runner() as runner:
        driver = AsyncEcho("get_weather", text_calls=text_calls)
        got = AsyncSession([driver], runner).play(events)
    assert driver.ran == [("get_weather", {"city": "Oslo"})]
    assert got.shown == sync.shown  # the same text released in the same rounds
    assert got.responses == sync.responses


def test_an_orchestrator_round_is_the_sync_one():
    """Text calls, a native batch, a tool nobody owns (the retry prompt): round by round."""
    sync = Session([Orchestrator([Echo("get_weather"), Echo("send_mail")])]).play(_mixed_events())
    with asyncio.Runner() as runner:
        both = Orchestrator([AsyncEcho("get_weather"), Echo("send_mail")])
        got = AsyncSession([both], runner).play(_mixed_events())
    assert got.text == sync.text and got.responses == sync.responses
    assert any(r.retry_prompt and "teleport" in r.retry_prompt for (r,) in got.responses)
    sync = Session([Orchestrator([Echo("get_weather"), Echo("send_mail")])]).play(_text_events())
    with asyncio.Runner() as runner:
        both = Orchestrator([AsyncEcho("get_weather"), Echo("send_mail")])
        got = AsyncSession([both], runner).play(_text_events())
    assert got.text == sync.text and got.responses == sync.responses
    assert any(r.executed_calls for (r,) in got.responses)


def test_a_failing_tool_is_a_record_in_the_async_path_too():
    text = '{"tool": "boom", "arguments": {"n": 1}}'
    expected = Echo("boom").process_llm_response(text)
    got = asyncio.run(AsyncEcho("boom").aprocess_llm_response(text))
    assert got == expected and got.call_failed and got.retry_prompt


def test_the_input_type_is_checked_in_the_async_path_too():
    with pytest.raises(TypeError, match="aprocess_llm_response"):
        asyncio.run(Echo().aprocess_llm_response(42))


# -- cancellation --------------------------------------------------------------------------------


class Stuck(BaseDriver):
    """``WEATHER`` never finishes on its own (async: a long sleep; sync: a thread waiting for
    ``release``); ``STOCK`` answers at once and sets ``answered``."""

    def __init__(self, sync: bool) -> None:
        super().__init__()
        self.sync = sync
        self.answered = asyncio.Event()
        self.release = threading.Event()
        self.saw_cancel = False

    def list_tools(self) -> list[Tool]:
        return [Tool(WEATHER), Tool(STOCK)]

    async def execute_tool(self, tool_name: str, arguments: dict):
        if tool_name == STOCK:
            self.answered.set()
            return "AAPL 1.0"
        if self.sync:
            return await asyncio.to_thread(self.release.wait, 10)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.saw_cancel = True
            raise


@pytest.mark.parametrize("sync", [False, True], ids=["async-tool", "sync-tool-in-a-thread"])
def test_cancelling_the_round_cancels_its_tools_and_propagates(sync):
    driver = Stuck(sync)
    buf = replay_buf()

    async def main():
        task = asyncio.create_task(driver.aprocess_llm_response(buf))
        await driver.answered.wait()
        await asyncio.sleep(0.01)  # STOCK's record is in; WEATHER still runs
        task.cancel()
        try:
            with pytest.raises(asyncio.CancelledError) as caught:
                await task
        finally:
            driver.release.set()  # let a stuck worker thread end
        assert task.cancelled()  # the caller's task ends cancelled, as asyncio expects
        return caught.value

    start = time.perf_counter()
    exc = asyncio.run(main())
    assert time.perf_counter() - start < 5
    response = exc.response
    weather, stock = response.executed_calls
    assert (weather.name, weather.error, weather.result) == (WEATHER, "cancelled", None)
    assert (stock.name, stock.error, stock.result) == (STOCK, None, "AAPL 1.0")
    assert response.call_failed and response.call_executed
    assert response.retry_prompt == CODEC.retry_execution_failed(WEATHER, "cancelled")
    results = [m for m in response.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == [c.id for c in _expected_parallel()]
    assert "cancelled" in results[0]["content"] and results[1]["content"] == "AAPL 1.0"
    assert driver.saw_cancel is not sync  # an async tool is cancelled inside, at its await
    # The buffer advanced past the batch: in the next round (a second close()) nothing
    # runs twice.
    buf.close()
    assert asyncio.run(driver.aprocess_llm_response(buf)) == DriverResponse()


def test_a_tool_that_cancels_itself_is_recorded_and_the_round_goes_on():
    class SelfCancel(Sleepy):
        async def execute_tool(self, tool_name, arguments):
            if tool_name == WEATHER:
                raise asyncio.CancelledError
            return await super().execute_tool(tool_name, arguments)

    response = asyncio.run(
        SelfCancel(WEATHER, STOCK, sleeps={STOCK: 0}).aprocess_llm_response(replay_buf())
    )
    assert [r.error for r in response.executed_calls] == ["cancelled", None]


# -- the sync path refuses a coroutine -----------------------------------------------------------


class Mail(BaseDriver):
    """An ``async def execute_tool``; ``ran`` lists the calls whose body ran."""

    def __init__(self, *names: str) -> None:
        super().__init__()
        self.names = names or (WEATHER, STOCK)
        self.ran: list[str] = []

    def list_tools(self) -> list[Tool]:
        return [Tool(name) for name in self.names]

    async def execute_tool(self, tool_name: str, arguments: dict):
        self.ran.append(tool_name)
        return "sent"


def _without_runtime_warnings(run):
    """``run()``, its result dropped and collected inside, with every warning recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        response = run()
        snapshot = (response.executed_calls, response.messages, response.retry_prompt)
        del response
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    return snapshot


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(lambda: replay_buf(), id="stream"),
        pytest.param(lambda: '{"tool": "get_stock_price", "arguments": {}}', id="text"),
    ],
)
def test_sync_process_refuses_an_async_tool_before_the_round_moves(response):
    """A programmer's error raises (it is never sent to the model as a tool result), before
    any cursor moves: the same round on the async path then runs the calls."""
    driver = Mail()
    llm_response = response()
    with pytest.raises(TypeError, match="aprocess_llm_response"):
        driver.process_llm_response(llm_response)
    assert driver.ran == []
    again = asyncio.run(driver.aprocess_llm_response(llm_response))
    assert driver.ran and [r.result for r in again.executed_calls] == ["sent"] * len(driver.ran)


def test_the_returned_coroutine_itself_is_closed():
    made = []

    class Returns(Mail):
        def execute_tool(self, tool_name, arguments):  # sync, but hands back a coroutine
            made.append(Mail.execute_tool(self, tool_name, arguments))
            return made[-1]

    text = '{"tool": "get_stock_price", "arguments": {}}'
    _without_runtime_warnings(lambda: Returns().process_llm_response(text))
    (coroutine,) = made
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED
    # ... and the async path awaits what a sync execute_tool returns.
    made.clear()
    response = asyncio.run(Returns().aprocess_llm_response(text))
    assert response.executed_calls[0].result == "sent"


# -- an Orchestrator over sync and async drivers -------------------------------------------------


def test_an_orchestrator_mixes_sync_and_async_drivers():
    weather, stock = Sleepy(WEATHER), Sleepy(STOCK, sync=True)
    both = Orchestrator([weather, stock])
    responses, elapsed = asyncio.run(_drive(both, read_stream(PARALLEL)))
    assert elapsed < 1.6 * SLEEP, f"{elapsed:.3f}s for two {SLEEP}s tools"
    records = _records(responses)
    assert [(r.name, r.result["tool"], r.error) for r in records] == [
        (WEATHER, WEATHER, None),
        (STOCK, STOCK, None),
    ]
    main = threading.get_ident()
    assert weather.started[0][1] == main and stock.started[0][1] != main
    # Sync, the same Orchestrator refuses the round: one of its drivers' tools is async.
    with pytest.raises(TypeError, match="aprocess_llm_response"):
        both.process_llm_response(replay_buf())
    assert len(weather.started) == 1 and len(stock.started) == 1  # nothing more ran


# -- a whole message whose call's arguments never parse (issue 9, item 12) -----------------------


def _chat_message(arguments) -> dict:
    call = {"id": "call_1", "type": "function", "function": {"name": STOCK, "arguments": arguments}}
    other = {"id": "call_2", "type": "function", "function": {"name": WEATHER, "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call, other]}


DEEP = '{"a": ' + "[" * 600 + "]" * 600 + "}"


@pytest.mark.parametrize(
    "arguments, reason",
    [
        ('{"a": ', "cut"),
        ('{"ticker": "AAPL"', "cut"),
        ('{"a" 1}', "invalid"),  # ('{"a": 1}}' is a call: its first value, as streamed)
        ("[1, 2]", "invalid"),
        (" ", "invalid"),
        (DEEP, "too deep"),
        ('{"a": ' + "[" * 5000, "too deep"),
    ],
)
def test_a_whole_message_reports_arguments_that_never_parse(arguments, reason):
    message = _chat_message(arguments)
    expected = [CallIncomplete(0, STOCK, "call_1", arguments, reason)]
    sync_driver, async_driver = Echo(WEATHER, STOCK), AsyncEcho(WEATHER, STOCK)
    for response in (
        sync_driver.process_llm_response(message),
        asyncio.run(async_driver.aprocess_llm_response(message)),
    ):
        assert response.incomplete_calls == expected
        (told,) = response.incomplete_calls
        assert reason == "cut" or told.cause is not None  # the prompt says the finer cause
        assert response.retry_prompt == CODEC.retry_call_incomplete(told)
        assert [r.name for r in response.executed_calls] == [WEATHER]  # its sibling ran
    assert sync_driver.ran == async_driver.ran == [(WEATHER, {})]


def test_a_whole_message_on_an_object_wire_reports_its_raw_text():
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": STOCK, "input": '{"ticker": "AA'},
        ],
    }
    response = Echo(STOCK).process_llm_response(message)
    assert response.incomplete_calls == [
        CallIncomplete(1, STOCK, "toolu_1", '{"ticker": "AA', "cut")
    ]
    assert not response.executed_calls


def test_a_whole_message_call_of_another_driver_is_its_own_to_report():
    message = _chat_message('{"a": ')
    assert Echo(WEATHER).process_llm_response(message).incomplete_calls is None
    both = Orchestrator([Echo(WEATHER)])  # knowing every tool, it reports them all
    assert [c.name for c in both.process_llm_response(message).incomplete_calls] == [STOCK]


def _cut_cases():
    """Every golden stream with calls, cut after each chunk, where the cut leaves a call
    with argument text that never parses. A cut that leaves a free-form call (a Responses
    custom tool's) is left out: its text has no end of its own, so a whole message cannot
    tell that it was cut; the stream can, and says so (tests/test_wire_shapes.py)."""
    cases = []
    for path in STREAMS:
        events = read_stream(path)
        if not replay(events).calls():
            continue
        for end in range(1, len(events)):
            cut = replay(events[:end])
            if any(c.raw for c in cut.incomplete_calls()) and not any(
                c.free_form for c in cut.strategy.extract(cut.as_dict())
            ):
                cases.append(pytest.param(events[:end], id=f"{stream_id(path)}[:{end}]"))
    return cases


@pytest.mark.parametrize("events", _cut_cases())
def test_a_cut_stream_as_a_whole_message_reports_what_the_stream_reports(events):
    """The stream's own verdict, read again from ``as_dict()`` handed over whole: the same
    name, id, raw text and reason (a call cut before its first fragment, raw ``""``, reads
    as a no-argument call there: a whole message carries no finish reason). The slot of a
    whole message's call is its position in the list: the message keeps no wire index
    (OpenAI-compatible servers whose first index is 1 key the stream's slot otherwise)."""
    buf = replay(events)
    streamed = [_unslotted(c) for c in buf.incomplete_calls() if c.raw]
    whole = buf.strategy.incomplete_calls(buf.as_dict())
    assert [_unslotted(c) for c in whole if c.raw] == streamed
    names = sorted({c.name for c in whole if c.name})
    response = Echo(*names).process_llm_response(buf.as_dict())
    assert response.incomplete_calls == whole
    places = buf.strategy.spec.places
    message = buf.as_dict()
    for c in whole:  # the slot finds the call in its place: a list position, or a field
        place = next(p for p in places if any(s == c.slot for s, _ in p.items_at(message)))
        item = next(i for s, i in place.items_at(message) if s == c.slot)
        assert place.name(item) == c.name


def _unslotted(call: CallIncomplete) -> tuple:
    return call.name, call.id, call.raw, call.reason
