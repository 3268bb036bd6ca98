"""Drivers: the tools a client offers, run when the model calls them.

A driver owns tools (``list_tools``) and runs its own calls (``execute_tool``); everything
else, the calls of other drivers included, it leaves alone. ``process_llm_response`` takes
what the model sent in one of three shapes and answers with status only (a
:class:`DriverResponse`); display text is read from the buffer (``buf.text()``), never from
the response:

- a ``str``: plain text, read by the text codec (``formats/mcs_text.yaml``);
- a ``dict``: one whole non-streaming message. Its wire is the first built-in that recognises
  it; its native calls run, and where its envelope also carries pure text
  (``leaks_into_text``) and it has no native call, its text goes to the text codec (the
  *native backup*). ``tool_calls: null`` on a wire that does not leak says "no call":
  nothing is looked for in its text;
- an :class:`~engine.stream.buffer.LLMStreamBuffer`: a stream, one round per chunk (see
  :meth:`BaseDriver.process_llm_response`).

``await aprocess_llm_response(...)`` is the same on an event loop: the same decisions (each
round is planned once, by code both paths share), its calls run concurrently, async tools
awaited and sync ones in worker threads.

An :class:`Orchestrator` is itself a driver, over the tools of several: one extraction, one
history, and, knowing every tool, it may tell the model that a tool it called does not exist.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..compile.results import result_messages
from ..compile.strategy import ExtractionStrategy, Forming
from ..events import CallIncomplete, ExtractedCall
from ..language.registry import text_strategy, wire_strategies
from ..model.fragments import copy_json
from ..records import Tool, ToolCallRecord
from ..stream.buffer import LLMStreamBuffer
from ..text.codec import TextCodec

__all__ = ["BaseDriver", "DriverResponse", "Orchestrator", "Tool", "ToolCallRecord"]


@dataclass
class DriverResponse:
    """What a driver made of one response, or of one round of a stream. No flag set: no call
    of this driver's, the text flows."""

    call_pending: bool = False  # a call is forming: keep streaming, show nothing of it
    call_executed: bool = False  # at least one owned call ran without raising
    call_failed: bool = False  # at least one owned call raised
    retry_prompt: str | None = None  # what to tell the model after a failure
    messages: list[dict] | None = None  # native history: the assistant turn and the results
    executed_calls: list[ToolCallRecord] | None = None
    # This driver's calls that will never be runnable (at the wire's DONE or close()), each
    # reported once, in the round it ended; ``retry_prompt`` then says which and why.
    incomplete_calls: list[CallIncomplete] | None = None


def default_codec() -> TextCodec:
    """The built-in text codec (``formats/mcs_text.yaml``), compiled once and shared."""
    return text_strategy().codec


def _codec_of(strategy: Any) -> TextCodec:
    """The codec of a text strategy (``engine.text.strategy.TextStrategy``), or a codec."""
    return getattr(strategy, "codec", strategy)


_DEFAULT = object()  # "the driver's own text strategy", for the native backup
# Where a call written into text may run (BaseDriver's ``text_calls``): the first is the default.
TEXT_CALLS = ("end", "anywhere")


@functools.cache
def _builtin_text_strategy() -> Any:
    """The built-in text strategy, looked up once: a driver asks for it every round, and the
    registry's look-up walks every built-in."""
    return text_strategy()


class StreamRounds:
    """What the drivers of one stream did in its rounds: the native calls they handled, the
    incomplete calls they reported, the text calls they ran in this round.

    Every driver of a round sees the same calls, so what one handled is advanced past only
    from the next round on: a consume marks where the round left off (``native_mark``,
    ``incomplete_mark``), and the first look in a later round (:meth:`state`, keyed on
    the buffer's ``round``) applies the marks. Shared by the drivers of the stream, kept in
    the buffer's one slot for it (so that it goes with the stream; ``reset()`` drops it),
    which the buffer never reads."""

    __slots__ = (
        "round",
        "native_done",
        "native_mark",
        "incomplete_done",
        "incomplete_mark",
        "claimed",
    )

    def __init__(self, round_: int) -> None:
        self.round = round_  # the buffer's round these marks were made in
        self.native_done = 0  # calls() before this index were handled (consume_native)
        self.native_mark: int | None = None  # consume_native of this round, applied next
        self.incomplete_done = 0  # incomplete calls before this index were reported
        self.incomplete_mark: int | None = None  # consume_incomplete of this round
        self.claimed: list[ExtractedCall] = []  # text calls consumed in this round

    def new_round(self, round_: int) -> None:
        """Apply what the drivers deferred in the rounds that ended."""
        self.round = round_
        if self.claimed:
            self.claimed = []
        if self.native_mark is not None:
            self.native_done = max(self.native_done, self.native_mark)
            self.native_mark = None
        if self.incomplete_mark is not None:
            self.incomplete_done = max(self.incomplete_done, self.incomplete_mark)
            self.incomplete_mark = None

    def state(self, buf: LLMStreamBuffer) -> tuple[list[ExtractedCall], bool, Forming]:
        """The buffer's ``stream_state()``, its calls those not yet advanced past (the marks
        of a round that ended applied first)."""
        if self.round != buf._round:
            self.new_round(buf._round)
        return buf.stream_state(self.native_done)

    def consume_native(self, buf: LLMStreamBuffer) -> None:
        """A driver handled the native calls so far: from the next round on, ``state()``
        holds only those after them."""
        self.native_mark = len(buf.calls())

    def incomplete(self, buf: LLMStreamBuffer) -> list[CallIncomplete]:
        """The incomplete calls not yet advanced past by ``consume_incomplete``: what the
        drivers of this round report (each driver its own)."""
        return buf.incomplete_calls()[self.incomplete_done :]

    def consume_incomplete(self, buf: LLMStreamBuffer) -> None:
        """A driver reported the incomplete calls so far: from the next round on,
        ``incomplete()`` holds only those after them."""
        self.incomplete_mark = len(buf.incomplete_calls())

    def text_quiet(self, buf: LLMStreamBuffer) -> bool:
        """Does the text codec hold nothing, and no driver ran a text call in this round?"""
        return not self.claimed and buf.text_quiet()

    def text_calls(self, buf: LLMStreamBuffer) -> list[ExtractedCall]:
        """The complete text calls, in text order: those not yet consumed and those consumed
        in this round, so that every driver of the round sees them."""
        found = buf.text_calls()
        if not self.claimed:
            return found
        return sorted([*self.claimed, *found], key=lambda c: c.end or 0)  # a text call has its end

    def consume_text_call(self, buf: LLMStreamBuffer, call: ExtractedCall) -> bool:
        """A driver runs ``call`` (one of ``text_calls()``): its span is never shown. False
        when it was consumed already (by another driver, or earlier in this round)."""
        if not buf.consume_text_call(call):
            return False
        self.claimed.append(call)
        return True


class _StreamView:
    """What a driver remembers of one stream between rounds, so that a round in which nothing
    changed costs O(1) and reads no tool list.

    Decisions are keyed on the very objects the buffer hands out: its calls list (which grows
    in place by appending, so only the calls past ``checked`` are new) and its ``Forming``
    (the same object while the forming call and its name stay the same). Whether a name is
    one of this driver's tools is read from ``list_tools`` once per name and stream."""

    __slots__ = (
        "buf",
        "driver",
        "scans",
        "names",
        "native",
        "checked",
        "native_mine",
        "forming",
        "forming_mine",
        "pending",
    )

    def __init__(self, buf: LLMStreamBuffer, driver: BaseDriver, scans: bool) -> None:
        self.buf = weakref.ref(buf)  # a finished stream is not kept alive by its driver
        self.driver = driver
        self.scans = scans  # the driver has a native backup: text calls are looked for
        self.names: dict[Any, bool] = {}
        self.native: list[ExtractedCall] | None = None
        self.checked = 0  # native calls looked at
        self.native_mine = False  # one of them is this driver's
        self.forming: Forming | None = None
        self.forming_mine = False  # ``forming`` is this driver's, or its name is unknown yet
        self.pending = False  # the round's ``call_pending`` for native calls

    def owns(self, name: Any) -> bool:
        owned = self.names.get(name)
        if owned is None:
            owned = self.names[name] = name in self.driver._owned()
        return owned

    def look(self, native: list[ExtractedCall], forming: Forming) -> None:
        """Something changed: is a native call of this driver's on its way (``pending``)?
        Either a complete one waiting for the batch to end, or the forming one, when it is
        this driver's or its name has not streamed yet."""
        if native is not self.native or len(native) < self.checked:
            self.native, self.checked, self.native_mine = native, 0, False
        if not self.native_mine and len(native) > self.checked:
            self.native_mine = any(self.owns(c.name) for c in native[self.checked :])
        self.checked = len(native)
        if forming is not self.forming:
            name = forming.tool_name
            self.forming = forming
            self.forming_mine = bool(forming) and (name is None or self.owns(name))
        self.pending = self.native_mine or self.forming_mine


_History = Callable[[list[ToolCallRecord]], list[dict]]  # a batch's records -> its history
# A call's outcome: its record, and why it failed (the exception, or "cancelled") or None.
_Outcome = tuple[ToolCallRecord, Any]


class _Round:
    """A round's plan: everything decided before any tool runs, so that the sync and the
    async path share it and differ only in how the calls run. ``response`` holds the flags
    decided already (``call_pending``); ``batches`` this driver's calls to run, each batch
    with how its history is built from its records; ``unknown`` the names of calls of tools
    this driver does not own (``owned``, its tool names, when at hand); ``incomplete`` the
    calls that will never run, to report."""

    __slots__ = ("response", "batches", "unknown", "owned", "incomplete")

    def __init__(
        self, response: DriverResponse | None = None, owned: frozenset[str] | None = None
    ) -> None:
        self.response = response if response is not None else DriverResponse()
        self.batches: list[tuple[list[ExtractedCall], _History]] = []
        self.unknown: list[str] = []
        self.owned = owned
        self.incomplete: list[CallIncomplete] = []

    def add(self, calls: list[ExtractedCall], history: _History) -> None:
        if calls:
            self.batches.append((calls, history))

    def calls(self) -> list[ExtractedCall]:
        """Every call to run, batch after batch: the order of the records."""
        return [call for calls, _ in self.batches for call in calls]


def _args(call: ExtractedCall) -> dict:
    """The arguments a tool gets: its own copy, so that it cannot change the record's."""
    return copy_json(call.arguments)


def _ran(call: ExtractedCall, result: Any) -> _Outcome:
    return ToolCallRecord(call.name, call.arguments, result, None, call.id), None


def _failed(call: ExtractedCall, exc: Exception) -> _Outcome:
    error = f"Tool '{call.name}' failed: {exc}"
    return ToolCallRecord(call.name, call.arguments, None, error, call.id), exc


def _cancelled(call: ExtractedCall) -> _Outcome:
    return ToolCallRecord(call.name, call.arguments, None, "cancelled", call.id), "cancelled"


def _refuse_awaitable(result: Any) -> Any:
    """The sync path never puts a coroutine into a result (nor into the history sent to the
    model): an awaitable is refused, and a coroutine closed, so that it never runs half and
    Python never warns that it was not awaited."""
    if not inspect.isawaitable(result):
        return result
    kind = "a coroutine" if inspect.iscoroutine(result) else f"a {type(result).__name__}"
    if inspect.iscoroutine(result) or inspect.isgenerator(result):
        result.close()  # a Future or a Task is left to its owner
    raise TypeError(
        f"execute_tool returned {kind}, an awaitable, not a result: process_llm_response "
        "does not await, so the tool did not run; run async tools with "
        "`await driver.aprocess_llm_response(...)`"
    )


class BaseDriver:
    """A driver: subclass it with ``list_tools`` and ``execute_tool``.

    Keyword options (all optional; a subclass need not call ``__init__``):
    ``text_strategy``, the text codec's strategy for prompts, plain text and (unless changed
    with ``set_native_backup_strategy``) calls leaked into a native message (the built-in
    ``mcs_text`` by default), ``strategies``, the wires a message or a stream may be in
    (every built-in wire), and ``text_calls``, where a call written into text may run:

    - ``"end"`` (the default): only when it ends the turn (nothing but whitespace or further
      calls after it), and a bare-JSON call only as the whole text, whitespace and
      ``<think>`` blocks aside. A call the model quotes inside prose (a page it repeats, an
      example) is shown as text and never runs: text is the model's to write, and what it
      read may have written it;
    - ``"anywhere"``: for a client that prompted the codec on purpose, a delimited or fenced
      call runs as soon as it is complete, wherever it is (bare JSON still only as the whole
      text).

    Either way text is read for calls only in a turn without a native call, and only by a
    driver with a native backup (``set_native_backup_strategy(None)`` turns it off).
    """

    _text: Any = None
    _strategies: list[ExtractionStrategy] | None = None
    _backup: Any = _DEFAULT
    _view: _StreamView | None = None  # the stream processed last (see ``_StreamView``)
    _text_calls: str = "end"

    def __init__(
        self,
        *,
        text_strategy: Any = None,
        strategies: Iterable[ExtractionStrategy] | None = None,
        text_calls: str = "end",
    ) -> None:
        if text_strategy is not None:
            self._text = text_strategy
        if strategies is not None:
            self._strategies = list(strategies)
        if text_calls not in TEXT_CALLS:
            allowed = ", ".join(repr(v) for v in TEXT_CALLS)
            raise ValueError(f"text_calls must be one of {allowed}, not {text_calls!r}")
        self._text_calls = text_calls

    # -- what a subclass provides ------------------------------------------------------------

    def list_tools(self) -> list[Tool]:
        raise NotImplementedError(f"{type(self).__name__} must implement list_tools()")

    def execute_tool(self, tool_name: str, arguments: dict) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement execute_tool()")

    # -- configuration -------------------------------------------------------------------------

    @property
    def text_strategy(self) -> Any:
        """The text codec's strategy (``mcs_text``): prompts, and calls in plain text."""
        return self._text if self._text is not None else _builtin_text_strategy()

    @property
    def codec(self) -> TextCodec:
        return _codec_of(self.text_strategy)

    def extraction_strategies(self) -> list[ExtractionStrategy]:
        """The wires this driver reads, in priority order."""
        if self._strategies is None:
            return wire_strategies()
        return list(self._strategies)

    def get_native_backup_strategy(self) -> Any:
        """The text strategy that reads calls leaked into a native message's text, or None."""
        return self.text_strategy if self._backup is _DEFAULT else self._backup

    def set_native_backup_strategy(self, strategy: Any) -> None:
        """Set the text strategy (or codec) for leaked calls; None: a native message's text
        is never read for calls."""
        self._backup = strategy
        self._view = None  # a stream reads its backup once: let the next round read it anew

    def new_stream_buffer(self, events: bool = False) -> LLMStreamBuffer:
        """A buffer over this driver's wires, its text scanned by the native backup
        (``events``: it records events, read with ``buf.events()`` after each round)."""
        buf = LLMStreamBuffer(strategies=self.extraction_strategies(), events=events)
        backup = self.get_native_backup_strategy()
        if backup is not None:
            buf.attach_codec(_codec_of(backup), self._text_calls)
        return buf

    def get_function_description(self) -> str:
        """The tools as the text codec describes them to the model."""
        return self.codec.function_description(self.list_tools())

    def get_driver_system_message(self) -> str:
        """The text codec's system message, the tools described in it."""
        return self.codec.system_message(self.list_tools())

    # -- processing ------------------------------------------------------------------------------
    #
    # A round is three steps, shared by the sync and the async path, so that the two cannot
    # drift apart: *plan* (``_plan``: read the response or the buffer and decide everything,
    # what runs, what is pending, what is held, what is reported; every buffer cursor moves
    # here, before any tool runs), *run* (the only step that differs: one call after the
    # other in this thread, or concurrently on the event loop), *report* (``_report``: the
    # records into the response and the history, in call order).

    def process_llm_response(self, llm_response: str | dict | LLMStreamBuffer) -> DriverResponse:
        """Run this driver's calls in a response: plain text, a whole message, or a stream.

        A stream is processed once per chunk (a *round*: after every ``buf.add`` and once
        after ``buf.close()``), by every driver fed the buffer, before the client reads
        ``buf.text()``:

        - a native call: ``call_pending`` while one of this driver's (or one whose name has
          not streamed yet) is on its way; at the wire's DONE the batch runs, this driver's
          calls of it, and the drivers advance past it in the next round. A stream that never
          sends its DONE (some OpenAI-compatible servers send no ``finish_reason``) runs its
          batch in the round after ``buf.close()``;
        - a text call (in the display text, in a turn without a native call): while it
          forms, and while it waits for the end of the turn, its text is held
          (``call_pending``) if its name is not known yet or is this driver's, from its
          possible start on (the fence or delimiter that opens it, or a bare ``{`` that is
          the turn's first character): the text before it is shown in the same round. By
          default (``text_calls="end"``) it runs at the wire's DONE (or ``close()``) if
          nothing but whitespace and further calls followed it, and its text is never shown;
          any other text after it makes it text, shown at once. With
          ``text_calls="anywhere"`` a delimited or fenced call runs as soon as it is
          complete. A call that no driver holds in a round flows as text; at the end of the
          stream everything held flows, but a call of this driver's cut short or invalid at
          the turn's end, which is reported in ``incomplete_calls``.

        The calls run here, one after the other. An ``execute_tool`` that returns a
        coroutine (an ``async def`` tool) or any other awaitable is not awaited: that call
        fails with an error naming :meth:`aprocess_llm_response`, and a coroutine is closed
        unrun. A whole message whose call's arguments never parse reports the call in
        ``incomplete_calls`` (reason ``"cut"``, ``"invalid"`` or ``"too deep"``, as a
        stream's DONE would).
        """
        plan = self._plan(llm_response)
        if isinstance(plan, DriverResponse):
            return plan  # nothing to run or report: most rounds of a stream
        return self._report(plan, [self._outcome(call) for call in plan.calls()])

    async def aprocess_llm_response(
        self, llm_response: str | dict | LLMStreamBuffer
    ) -> DriverResponse:
        """:meth:`process_llm_response` on an event loop: the same rounds, decisions and
        response (records, history, flags; identical for the same tools), with the calls run
        concurrently.

        An ``async def execute_tool`` is awaited; a sync one runs in a worker thread
        (``asyncio.to_thread``), so that it never blocks the loop. The calls of one round (a
        native batch at its DONE; text calls that completed in the same chunk) run
        concurrently; their records and results are in call order whatever order they
        finish in. A tool's raise is an error record, as in the sync path.

        Cancelling the task that awaits this (``task.cancel()``, a timeout) cancels the
        round's tools still running; each is recorded as failed with the error
        ``"cancelled"`` (a sync tool's thread cannot be stopped: it runs to its end and its
        result is dropped). Then the ``CancelledError`` propagates, as asyncio expects: the
        caller gets no return value, but the round's response (every call recorded, those
        that finished with their results, and the history answering them all) rides on the
        exception as ``exc.response``, for a client that still has to tell the model. The
        buffer has advanced past the round's calls either way: none runs again.
        """
        plan = self._plan(llm_response)
        if isinstance(plan, DriverResponse):
            return plan
        outcomes, cancelled = await self._aoutcomes(plan.calls())
        response = self._report(plan, outcomes)
        if cancelled is not None:
            cancelled.response = response  # type: ignore[attr-defined]
            raise cancelled
        return response

    # -- plan ------------------------------------------------------------------------------------

    def _plan(self, llm_response: Any) -> DriverResponse | _Round:
        """The round's decisions, or its final response when there is nothing to run or
        report (the common case of a stream's round)."""
        if isinstance(llm_response, LLMStreamBuffer):
            return self._plan_stream(llm_response)
        if isinstance(llm_response, str):
            return self._plan_text(llm_response, self.text_strategy, self.codec)
        if isinstance(llm_response, dict):
            return self._plan_message(llm_response)
        raise TypeError(
            "process_llm_response and aprocess_llm_response take a str, a dict (a whole "
            f"message) or an LLMStreamBuffer, not {type(llm_response).__name__}"
        )

    def _plan_message(self, message: dict) -> DriverResponse | _Round:
        strategies = self.extraction_strategies()
        strategy = next((s for s in strategies if s.recognizes(message)), None)
        if strategy is None:
            content = message.get("content")
            if not isinstance(content, str):
                return DriverResponse()
            return self._plan_text(content, self.text_strategy, self.codec)
        calls = strategy.extract(message)
        if calls or strategy.forming(message) or not strategy.leaks_into_text:
            owned = self._owned()
            plan = self._plan_calls(calls, lambda rs: result_messages(strategy, message, rs), owned)
            owns = owned.__contains__
            never = getattr(strategy, "incomplete_calls", None)  # a strategy of the user's
            plan.incomplete = [c for c in never(message) if self._reports(owns, c)] if never else []
            return plan
        backup = self.get_native_backup_strategy()
        if backup is None:
            return DriverResponse()
        return self._plan_text(strategy.content_text(message), strategy, _codec_of(backup))

    def _plan_text(self, text: str, fmt: Any, codec: TextCodec) -> _Round:
        """A whole text (a ``str``, or a message's text in the fall-through), read as a
        stream of it would be under this driver's ``text_calls``: the calls that may run run
        (this driver's, when ``_runnable_text_call`` says so), and the would-be calls that
        cannot (cut, invalid) are reported."""
        scanner = codec.scan_turn(text, self._text_calls)
        owned = self._owned()
        found = scanner.complete_calls()
        calls = [ExtractedCall(c.name, c.arguments, None, c.end) for c in found]
        runnable = [c for c in calls if c.name not in owned or self._runnable_text_call(c)]
        plan = self._plan_calls(runnable, lambda rs: result_messages(fmt, text, rs), owned)
        never = scanner.incomplete_calls()
        slots = sorted([*found, *never], key=lambda c: c.start)  # ("text", n) in text order
        for call in never:
            event = CallIncomplete(
                ("text", slots.index(call)), call.name, None, call.raw, call.reason or "invalid"
            )
            if self._reports(owned.__contains__, event):
                plan.incomplete.append(event)
        return plan

    def _runnable_text_call(self, call: ExtractedCall) -> bool:
        """May this text call run: its tool is this driver's (and, with argument validation,
        its arguments are valid)? A call that may not is shown as text."""
        return call.name in self._owned()

    def _plan_calls(
        self, calls: list[ExtractedCall], history: _History, owned: frozenset[str]
    ) -> _Round:
        """This driver's calls of ``calls`` run as one batch; the others are another's."""
        plan = _Round(owned=owned)
        plan.add([c for c in calls if c.name in owned], history)
        plan.unknown = [c.name for c in calls if c.name not in owned]
        return plan

    def _plan_stream(self, buf: LLMStreamBuffer) -> DriverResponse | _Round:
        """One round. While the stream runs and nothing new arrived for this driver (no call
        completed, the forming call and its name unchanged, the text codec holding nothing)
        the round is a handful of identity checks: a client runs it on every chunk."""
        view = self._view
        if view is None or view.buf() is not buf:
            view = self._view = self._new_view(buf)
        rounds = buf._rounds
        if rounds is None:  # the stream's first round: the drivers' record of it starts
            rounds = buf._rounds = StreamRounds(buf._round)
        native, ended, forming = rounds.state(buf)  # the first look of a round: state()
        if ended:
            return self._plan_ended(buf, rounds, view, native)
        if len(native) != view.checked or native is not view.native or forming is not view.forming:
            view.look(native, forming)
        if view.scans and not rounds.text_quiet(buf):
            plan = _Round(DriverResponse(call_pending=view.pending))
            self._plan_text_calls(buf, rounds, view, False, plan)
            return plan
        return DriverResponse(call_pending=True) if view.pending else DriverResponse()

    def _plan_ended(
        self, buf: LLMStreamBuffer, rounds: StreamRounds, view: _StreamView, native
    ) -> _Round:
        """A round at or after the end of input: the wire's DONE, or ``close()`` on a stream
        that never sent its DONE (no sibling can still stream either way). The native batch
        runs, this driver's calls of it; nothing is pending any more."""
        plan = _Round()
        if native:
            rounds.consume_native(buf)  # the drivers advance past the batch in the next round
            mine = [c for c in native if view.owns(c.name)]
            plan.unknown += [c.name for c in native if not view.owns(c.name)]
            if mine:
                message, strategy = buf.as_dict(), buf.strategy
                plan.add(mine, lambda rs: result_messages(strategy, message, rs))
        if view.scans and not rounds.text_quiet(buf):
            self._plan_text_calls(buf, rounds, view, True, plan)
        incomplete = rounds.incomplete(buf)
        if incomplete:
            rounds.consume_incomplete(buf)  # the drivers advance past them in the next round
            plan.incomplete = [c for c in incomplete if self._reports(view.owns, c)]
        return plan

    @staticmethod
    def _reports(owns: Callable[[Any], bool], call: CallIncomplete) -> bool:
        """Is this incomplete call this driver's to report: one of its tools, or one whose
        name never streamed (it may have been this driver's, as a forming call is)?"""
        return call.name is None or owns(call.name)

    def _note_incomplete(self, response: DriverResponse, calls: list[CallIncomplete]) -> None:
        """Never silent: the calls go into the response, and the retry prompt (unless a
        failure already set it) names the first and why it cannot run."""
        if not calls:
            return
        response.incomplete_calls = [*(response.incomplete_calls or []), *calls]
        if response.retry_prompt is None:
            first = calls[0]
            response.retry_prompt = self.codec.retry_call_incomplete(first.name, first.reason)

    def _new_view(self, buf: LLMStreamBuffer) -> _StreamView:
        """Start remembering ``buf``: the driver remembers the stream it processed last (a
        client that alternates between buffers only loses the shortcuts). The native backup
        is read here, once per stream: its codec scans the buffer's display text."""
        backup = self.get_native_backup_strategy()
        if backup is not None and buf.codec is None:
            buf.attach_codec(_codec_of(backup), self._text_calls)
        return _StreamView(buf, self, scans=backup is not None)

    def _plan_text_calls(
        self,
        buf: LLMStreamBuffer,
        rounds: StreamRounds,
        view: _StreamView,
        ended: bool,
        plan: _Round,
    ) -> None:
        """Text calls (the buffer offers them only in a turn without a native call): this
        driver's complete ones that may run now run (their text is never shown): under
        ``text_calls="end"`` those that end the turn, at its end; under ``"anywhere"`` a
        delimited or fenced one as soon as it is complete. While one this driver may run
        forms, or waits for the turn's end, its text is held (from its possible start: what
        precedes it still flows in this round). At the end, the would-be calls that end the
        turn but cannot run (cut, invalid) become the stream's incomplete calls, which the
        round reports. The names of calls that are not this driver's go to
        ``plan.unknown``."""
        mine = []
        for call in rounds.text_calls(buf):
            if not view.owns(call.name):
                plan.unknown.append(call.name)
            elif self._runnable_text_call(call) and rounds.consume_text_call(buf, call):
                mine.append(call)
        if mine:
            text, strategy = buf.get_content()[: mine[-1].end], buf.strategy
            plan.add(mine, lambda rs: result_messages(strategy, text, rs))
        if ended:
            for never in buf.text_incomplete():  # those that would have run: this driver's
                probe = CallIncomplete(None, never.name, None, never.raw, never.reason or "")
                if self._reports(view.owns, probe):
                    # Now one of the stream's incomplete calls, which the round reports.
                    buf.report_text_incomplete(never)
            return
        forming = buf.text_forming()
        waiting = buf.text_waiting()
        if self._text_calls == "end":
            holds = any(self._holds_text(view, name) for name in waiting) or (
                bool(forming) and self._holds_text(view, forming.tool_name)
            )
        else:
            holds = any(self._holds_text(view, name) for name in waiting)
            if forming:
                name = forming.tool_name
                if name is None or view.owns(name):
                    holds = True
                else:
                    plan.unknown.append(name)
        if holds:
            buf.hold_text_call()  # the calls' text only: the prose before them flows now
            plan.response.call_pending = True

    def _holds_text(self, view: _StreamView, name: str | None) -> bool:
        """Does this driver hold a text call of ``name`` (None: not streamed yet) until it is
        decided: one it may run. (An Orchestrator holds every one: it tells the model of a
        call of a tool nobody owns, once the call ends the turn.)"""
        return name is None or view.owns(name)

    # -- run -------------------------------------------------------------------------------------

    def _owned(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.list_tools())

    def _outcome(self, call: ExtractedCall) -> _Outcome:
        """Run one of this driver's calls here and now; a raise becomes an error record."""
        try:
            return _ran(call, _refuse_awaitable(self.execute_tool(call.name, _args(call))))
        except Exception as exc:  # a tool's failure is reported, never raised
            return _failed(call, exc)

    async def _aoutcome(self, call: ExtractedCall) -> _Outcome:
        """:meth:`_outcome` on the event loop (see :meth:`_aexecute_tool`)."""
        try:
            return _ran(call, await self._aexecute_tool(call.name, _args(call)))
        except Exception as exc:  # a tool's failure is reported, never raised
            return _failed(call, exc)

    async def _aexecute_tool(self, tool_name: str, arguments: dict) -> Any:
        """``execute_tool`` without blocking the loop: an ``async def`` one awaited, a sync
        one in a worker thread (what it returns awaited, should it be awaitable)."""
        execute = self.execute_tool
        if inspect.iscoroutinefunction(execute):
            return await execute(tool_name, arguments)
        result = await asyncio.to_thread(execute, tool_name, arguments)
        return await result if inspect.isawaitable(result) else result

    async def _aoutcomes(
        self, calls: list[ExtractedCall]
    ) -> tuple[list[_Outcome], asyncio.CancelledError | None]:
        """Run ``calls`` concurrently; their outcomes in call order, and the CancelledError
        when the round was cancelled (raised by the caller once the round is reported).

        A cancelled round: ``gather`` cancels every task still running and completes only
        once all have ended, so each task is then finished (its outcome stands) or
        cancelled (recorded as failed, ``"cancelled"``). A tool that cancels itself while
        the round goes on is recorded the same way and the round goes on."""
        tasks = [asyncio.ensure_future(self._aoutcome(call)) for call in calls]
        cancelled = None
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError as exc:
            cancelled = exc
        outcomes = [
            _cancelled(call) if task.cancelled() else task.result()
            for call, task in zip(calls, tasks, strict=True)
        ]
        return outcomes, cancelled

    # -- report ----------------------------------------------------------------------------------

    def _report(self, plan: _Round, outcomes: list[_Outcome]) -> DriverResponse:
        """The round's response: each batch's records and history in call order, then the
        calls of other drivers' tools, then the calls that will never run."""
        response = plan.response
        at = 0
        for calls, history in plan.batches:
            self._merge(response, self._batch_response(outcomes[at : at + len(calls)], history))
            at += len(calls)
        self._note_unknown(response, plan.unknown, plan.owned)
        self._note_incomplete(response, plan.incomplete)
        return response

    def _batch_response(self, outcomes: list[_Outcome], history: _History) -> DriverResponse:
        records = [record for record, _ in outcomes]
        failure = next(((r.name, why) for r, why in outcomes if why is not None), None)
        return DriverResponse(
            call_executed=any(r.error is None for r in records),
            call_failed=any(r.error is not None for r in records),
            retry_prompt=None if failure is None else self.codec.retry_execution_failed(*failure),
            messages=history(records),
            executed_calls=records,
        )

    @staticmethod
    def _merge(into: DriverResponse, more: DriverResponse) -> None:
        into.call_executed |= more.call_executed
        into.call_failed |= more.call_failed
        into.call_pending |= more.call_pending
        if into.retry_prompt is None:
            into.retry_prompt = more.retry_prompt
        for field in ("messages", "executed_calls", "incomplete_calls"):
            extra = getattr(more, field)
            if extra:
                setattr(into, field, [*(getattr(into, field) or []), *extra])

    def _note_unknown(
        self, response: DriverResponse, names: list[str], owned: frozenset[str] | None = None
    ) -> None:
        """Calls of tools this driver does not own are another driver's: left alone. Only a
        driver that knows every tool (an Orchestrator) says that one does not exist.
        ``owned``: the driver's tool names, when the caller has them at hand."""


class Orchestrator(BaseDriver):
    """A driver over the tools of several drivers: each call runs in the driver that owns
    it. A tool name owned twice is a ValueError."""

    def __init__(self, drivers: Iterable[BaseDriver], **options: Any) -> None:
        super().__init__(**options)
        self.drivers = list(drivers)
        self._owner_of()

    def _owner_of(self) -> dict[str, BaseDriver]:
        owners: dict[str, BaseDriver] = {}
        for driver in self.drivers:
            for tool in driver.list_tools():
                other = owners.get(tool.name)
                if other is not None and other is not driver:
                    raise ValueError(
                        f"tool {tool.name!r} is owned by both {type(other).__name__} and "
                        f"{type(driver).__name__}"
                    )
                owners[tool.name] = driver
        return owners

    def list_tools(self) -> list[Tool]:
        return [tool for driver in self.drivers for tool in driver.list_tools()]

    def _owner(self, tool_name: str) -> BaseDriver:
        owner = self._owner_of().get(tool_name)
        if owner is None:
            raise KeyError(f"no driver owns the tool {tool_name!r}")
        return owner

    def execute_tool(self, tool_name: str, arguments: dict) -> Any:
        return self._owner(tool_name).execute_tool(tool_name, arguments)

    async def _aexecute_tool(self, tool_name: str, arguments: dict) -> Any:
        """Each call as its owner runs it on the loop: an async tool awaited, a sync one in a
        thread (drivers of both kinds mix). A subclass that dispatches in its own
        ``execute_tool`` is run as any driver is."""
        if type(self).execute_tool is not Orchestrator.execute_tool:
            return await super()._aexecute_tool(tool_name, arguments)
        return await self._owner(tool_name)._aexecute_tool(tool_name, arguments)

    @staticmethod
    def _reports(owns: Callable[[Any], bool], call: CallIncomplete) -> bool:
        """Knowing every tool, an Orchestrator reports every incomplete call (one of a tool
        nobody owns too: the model still has to be told that it did not run)."""
        return True

    def _holds_text(self, view: _StreamView, name: str | None) -> bool:
        """Every text call waits for its decision: one of a tool nobody owns is told to the
        model, if it ends the turn."""
        return True

    def _note_unknown(
        self, response: DriverResponse, names: list[str], owned: frozenset[str] | None = None
    ) -> None:
        if names and response.retry_prompt is None:
            owned = self._owned() if owned is None else owned
            response.retry_prompt = self.codec.retry_unknown_tool(names[0], sorted(owned))
