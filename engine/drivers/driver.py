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
from dataclasses import dataclass, field
from typing import Any, cast

from ..compile.results import result_messages
from ..compile.strategy import ExtractionStrategy, Forming
from ..events import CallIncomplete, ExtractedCall
from ..language.registry import text_strategy, wire_strategies
from ..model.fragments import copy_json
from ..records import Tool, ToolCallRecord
from ..stream.buffer import LLMStreamBuffer
from ..text.codec import TextCodec
from .arguments import problems_of, schema_of

__all__ = ["BaseDriver", "DriverResponse", "Orchestrator", "Tool", "ToolCallRecord"]


@dataclass
class DriverResponse:
    """What a driver made of one response, or of one round of a stream. No flag set: no call
    of this driver's, the text flows."""

    call_pending: bool = False  # a call is forming: keep streaming, show nothing of it
    call_executed: bool = False  # at least one owned call ran without raising
    call_failed: bool = False  # at least one owned call raised
    retry_prompt: str | None = None  # what to tell the model after a failure
    # Native history to append: the stream's assistant turn (once) and the results.
    messages: list[dict[str, Any]] = field(default_factory=list)
    executed_calls: list[ToolCallRecord] | None = None
    # This driver's calls that will never be runnable (at the wire's DONE or close()), each
    # reported once, in the round it ended; ``retry_prompt`` then says which and why.
    incomplete_calls: list[CallIncomplete] | None = None
    # Calls answered with an error result without running: their arguments failed the
    # tool's schema, or (an Orchestrator) nobody owns the tool. Each record's ``error`` is
    # what the model is told.
    rejected_calls: list[ToolCallRecord] | None = None


def _codec_of(strategy: Any) -> TextCodec:
    """The codec of a text strategy (``engine.text.strategy.TextStrategy``), or a codec."""
    codec = getattr(strategy, "codec", strategy)
    if not isinstance(codec, TextCodec):
        raise TypeError(f"not a text strategy or a text codec: {strategy!r}")
    return codec


_DEFAULT = object()  # "the driver's own text strategy", for the native backup
# Where a call written into text may run (BaseDriver's ``text_calls``): the first is the default.
TEXT_CALLS = ("end", "anywhere")


# The built-in text strategy, looked up once: a driver asks for it every round, and the
# registry's look-up walks every built-in.
_builtin_text_strategy = functools.cache(text_strategy)


@dataclass(slots=True, eq=False, weakref_slot=True)
class _StreamView:
    """What one driver knows of one stream: what it handled (so that each of its calls runs
    once, however often and from wherever the buffer is processed), whether the stream's
    assistant turn went into its history, and the shortcuts that make a round in which
    nothing changed cost O(1) and read no tool list.

    The driver keeps one view per buffer (weakly: a finished stream is not kept alive by its
    driver), so several drivers fed one buffer each keep their own, and a client that
    alternates between buffers loses nothing. Every cursor moves when a round is planned,
    before any tool runs: a round processed again, or from another task while the first
    still runs its tools, finds nothing new.

    Shortcut decisions are keyed on the very objects the buffer hands out: its calls list
    (which grows in place by appending, so only the calls past ``checked`` are new) and its
    ``Forming`` (the same object while the forming call and its name stay the same). Whether
    a name is one of this driver's tools is read from ``list_tools`` once per name and
    stream."""

    buf: weakref.ref[LLMStreamBuffer]
    driver: BaseDriver
    scans: bool  # the driver has a native backup: text calls are looked for
    names: dict[Any, bool] = field(default_factory=dict)
    native: list[ExtractedCall] | None = None
    checked: int = 0  # native calls looked at
    native_mine: bool = False  # one of them is this driver's
    forming: Forming | None = None
    forming_mine: bool = False  # ``forming`` is this driver's, or its name is unknown yet
    native_done: int = 0  # buf.calls() before this index were handled by this driver
    incomplete_done: int = 0  # buf.incomplete_calls() before this index were reported
    turn_sent: bool = False  # the stream's assistant turn is in this driver's history
    covered: int = 0  # display text before this offset is in that history (text calls)

    def owns(self, name: Any) -> bool:
        owned = self.names.get(name)
        if owned is None:
            owned = self.names[name] = name in self.driver._owned()
        return owned

    def look(self, native: list[ExtractedCall], forming: Forming) -> None:
        """Something changed: is a native call of this driver's on its way (the round's
        ``call_pending`` for native calls: ``native_mine or forming_mine``)? Either a complete
        one waiting for the batch to end, or the forming one, when it is this driver's or its
        name has not streamed yet."""
        if native is not self.native or len(native) < self.checked:
            self.native, self.checked, self.native_mine = native, 0, False
        if not self.native_mine and len(native) > self.checked:
            self.native_mine = any(self.owns(c.name) for c in native[self.checked :])
        self.checked = len(native)
        if forming is not self.forming:
            name = forming.tool_name
            self.forming = forming
            self.forming_mine = bool(forming) and (name is None or self.owns(name))


# A round's records -> its history.
_History = Callable[[list[ToolCallRecord]], list[dict[str, Any]]]


class _Refused(str):
    """Why a call was answered without running: its arguments failed the tool's schema, or
    nobody owns its tool, or it never became runnable; the text its error result and the
    retry prompt carry to the model."""


# A call's outcome: its record, and why it failed: the exception it raised, "cancelled", a
# _Refused (it never ran), or None (it ran).
_Outcome = tuple[ToolCallRecord, Any]


@dataclass(slots=True, eq=False)
class _Round:
    """A round's plan: everything decided before any tool runs, so that the sync and the
    async path share it and differ only in how the calls run. The round is ``driver``'s,
    ``owns`` telling its tools; ``response`` holds the flags decided already
    (``call_pending``); ``calls`` those the driver runs (their arguments checked first),
    ``answered`` those it answers with an error result without running them (a tool nobody
    owns, for a driver that knows every tool; an incomplete call), all in one ``history``,
    how their records become the native history (None: the round sends none);
    ``incomplete`` the calls that will never run, to report."""

    driver: BaseDriver
    owns: Callable[[Any], bool]
    response: DriverResponse = field(default_factory=DriverResponse)
    calls: list[ExtractedCall] = field(default_factory=list)
    answered: list[_Outcome] = field(default_factory=list)
    history: _History | None = None
    incomplete: list[CallIncomplete] = field(default_factory=list)

    def claims(self, name: str | None) -> bool:
        """Is a call of ``name`` the driver's to hold (a text call, until it is decided) and
        to report (an incomplete call): one of its tools, or one whose name has not streamed
        (None: it may be the driver's, as a forming call is)? A driver that knows every tool
        (an Orchestrator) claims every call: it tells the model of one of a tool nobody
        owns."""
        return name is None or self.driver._knows_every_tool or self.owns(name)

    def batch(
        self, calls: list[ExtractedCall], history: _History, never: list[CallIncomplete]
    ) -> None:
        """The round's calls, answered in one ``history``: the driver's ``calls`` to run,
        those of tools it does not own answered if its ``_unknown`` says so, and the
        incomplete ones (``never``) answered."""
        self.calls = [c for c in calls if self.owns(c.name)]
        self.history = history
        # A call of a tool the driver does not own is another driver's: left alone (out of
        # its history), unless it tells the model the tool does not exist (``_unknown``).
        others = [(c, self.driver._unknown(c.name)) for c in calls if not self.owns(c.name)]
        self.answered = [_rejected(c, c.arguments, told) for c, told in others if told is not None]
        # Each call that will never run is answered with an error result saying why, so that
        # every call id of the assistant turn has its result (the turn then carries its
        # arguments as the API accepts them: ``answerable``).
        retry = self.driver.codec.retry_call_incomplete
        self.answered += [_rejected(call, {}, retry(call)) for call in never]


def _args(call: ExtractedCall) -> dict[str, Any]:
    """The arguments a tool gets: its own copy, so that it cannot change the record's."""
    return cast("dict[str, Any]", copy_json(call.arguments))  # a copy of a dict is a dict


def _ran(call: ExtractedCall, result: Any) -> _Outcome:
    return ToolCallRecord(call.name, call.arguments, result, None, call.id), None


def _failed(call: ExtractedCall, exc: Exception) -> _Outcome:
    error = f"Tool '{call.name}' failed: {exc}"
    return ToolCallRecord(call.name, call.arguments, None, error, call.id, exc), exc


def _rejected(call: Any, arguments: Any, error: str) -> _Outcome:
    """A call (an ExtractedCall or a CallIncomplete) answered with ``error`` without running."""
    return ToolCallRecord(call.name, arguments, None, error, call.id), _Refused(error)


def _settled(calls: list[ExtractedCall], tasks: list[asyncio.Task[_Outcome]]) -> list[_Outcome]:
    """Each call's outcome once its task has ended: what it returned, or, cancelled (the
    round's or its own cancellation), a failure whose error is ``"cancelled"``."""
    return [
        (ToolCallRecord(call.name, call.arguments, None, "cancelled", call.id), "cancelled")
        if task.cancelled()
        else task.result()
        for call, task in zip(calls, tasks, strict=True)
    ]


def _not_awaitable(result: Any) -> Any:
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
    ``mcs_text`` by default); ``strategies``, the wires a message or a stream may be in
    (every built-in wire); ``validate_arguments`` (default True): check each call's
    arguments against its tool's ``parameters`` (JSON Schema) before it runs, and answer a
    call that fails with an error result naming each failing pointer instead of running it;
    and ``text_calls``, where a call written into text may run:

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
    _validate = True
    _text_calls: str = "end"
    _knows_every_tool = False  # an Orchestrator does: see _Round.claims and _unknown
    _view: _StreamView | None = None  # the stream processed last: the fast path
    _views: weakref.WeakKeyDictionary[LLMStreamBuffer, _StreamView] | None = None

    def __init__(
        self,
        *,
        text_strategy: Any = None,
        strategies: Iterable[ExtractionStrategy] | None = None,
        validate_arguments: bool = True,
        text_calls: str = "end",
    ) -> None:
        self._text = text_strategy
        self._strategies = None if strategies is None else list(strategies)
        self._validate = validate_arguments
        if text_calls not in TEXT_CALLS:
            allowed = ", ".join(repr(v) for v in TEXT_CALLS)
            raise ValueError(f"text_calls must be one of {allowed}, not {text_calls!r}")
        self._text_calls = text_calls

    # -- what a subclass provides ------------------------------------------------------------

    def list_tools(self) -> list[Tool]:
        raise NotImplementedError(f"{type(self).__name__} must implement list_tools()")

    def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
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
        return wire_strategies() if self._strategies is None else list(self._strategies)

    def get_native_backup_strategy(self) -> Any:
        """The text strategy that reads calls leaked into a native message's text, or None."""
        return self.text_strategy if self._backup is _DEFAULT else self._backup

    def set_native_backup_strategy(self, strategy: Any) -> None:
        """Set the text strategy (or codec) for leaked calls; None: a native message's text
        is never read for calls. A stream already under way reads it at its next round."""
        self._backup = strategy
        for view in (self._views or {}).values():
            view.scans = strategy is not None
            self._scan(view.buf(), strategy)

    def new_stream_buffer(self, events: bool = False) -> LLMStreamBuffer:
        """A buffer over this driver's wires, its text scanned by the native backup
        (``events``: it records events, read with ``buf.events()`` after each round)."""
        buf = LLMStreamBuffer(strategies=self.extraction_strategies(), events=events)
        self._scan(buf, self.get_native_backup_strategy())
        return buf

    def _scan(self, buf: LLMStreamBuffer | None, backup: Any) -> None:
        """The ``backup`` strategy's codec scans ``buf``'s display text for calls (a buffer
        keeps the codec it has: the first driver's)."""
        if backup is not None and buf is not None and buf.codec is None:
            buf.attach_codec(_codec_of(backup), self._text_calls)

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
    # what runs, what is pending, what is held, what is reported; every cursor moves here,
    # before any tool runs, so that a round processed again finds nothing new), *run* (the
    # only step that differs: one call after the other in this thread, or concurrently on the
    # event loop; each call's arguments checked against its tool's schema first), *report*
    # (``_report``: the records into the response and the history, in call order).

    def process_llm_response(
        self, llm_response: str | dict[str, Any] | LLMStreamBuffer
    ) -> DriverResponse:
        """Run this driver's calls in a response: plain text, a whole message, or a stream.

        A stream is processed once per chunk (a *round*: after every ``buf.add`` and once
        after ``buf.close()``), by every driver fed the buffer, before the client reads
        ``buf.text()``. Each call runs at most once per driver, however often the buffer is
        processed:

        - a native call: ``call_pending`` while one of this driver's (or one whose name has
          not streamed yet) is on its way; at the wire's DONE the batch runs, this driver's
          calls of it. A stream that never sends its DONE (some OpenAI-compatible servers
          send no ``finish_reason``) runs its batch in the round after ``buf.close()``;
        - a text call (in the display text, in a turn without a native call): while it
          forms, and while it waits for the end of the turn, its text is held
          (``call_pending``) if its name is not known yet or is this driver's, from its
          possible start on (the fence or delimiter that opens it, or a bare ``{`` that is
          the turn's first character): the text before it is shown in the same round. By
          default (``text_calls="end"``) it runs at the wire's DONE (or ``close()``) if
          nothing but whitespace and further calls followed it, and its text is never shown;
          any other text after it makes it text, shown at once. With
          ``text_calls="anywhere"`` a delimited or fenced call runs as soon as it is
          complete. At the end of the stream everything held flows, but a call of this
          driver's cut short or invalid at the turn's end, which is reported in
          ``incomplete_calls``.

        ``messages`` holds the stream's assistant turn exactly once (text-only turns too),
        in the round the stream ended (or the round its text calls ran), with a result for
        every call of this driver's in it: a call whose arguments fail its tool's schema, or
        that will never be runnable (``incomplete_calls``), is answered with an error result
        saying why, as ``retry_prompt`` does. A call of a tool this driver does not own is
        another driver's: left out of this driver's history (an :class:`Orchestrator`,
        which knows every tool, answers it).

        The calls run here, one after the other. An ``async def execute_tool`` raises
        ``TypeError`` (naming :meth:`aprocess_llm_response`) before anything of the round
        is decided, so that the same round on ``aprocess_llm_response`` then runs them.
        An ``execute_tool`` that returns an awaitable is not awaited: that call fails with
        the same advice, and a coroutine is closed unrun.
        """
        if self._has_async_tools():
            # A programmer's error is raised, never sent to the model: the sync path cannot
            # run an ``async def`` tool, so it refuses before any cursor moves.
            raise TypeError(
                f"{type(self).__name__}.execute_tool is an async def: process_llm_response "
                "does not await, so nothing of this round ran; use "
                "`await driver.aprocess_llm_response(...)`"
            )
        plan = self._plan(llm_response)
        if isinstance(plan, DriverResponse):
            return plan  # nothing to run or report: most rounds of a stream
        return self._report(plan, [self._outcome(call) for call in plan.calls])

    async def aprocess_llm_response(
        self, llm_response: str | dict[str, Any] | LLMStreamBuffer
    ) -> DriverResponse:
        """:meth:`process_llm_response` on an event loop: the same rounds, decisions and
        response (records, history, flags; identical for the same tools), with the calls run
        concurrently.

        An ``async def execute_tool`` is awaited; a sync one runs in a worker thread
        (``asyncio.to_thread``), so that it never blocks the loop. The calls of one round (a
        native batch at its DONE; text calls that completed in the same chunk) run
        concurrently; their records and results are in call order whatever order they
        finish in. A tool's raise is an error record, as in the sync path. A round is
        planned before its first await, so rounds started as concurrent tasks (one per
        chunk) never run a call twice.

        Cancelling the task that awaits this (``task.cancel()``, a timeout) cancels the
        round's tools still running; each is recorded as failed with the error
        ``"cancelled"`` (a sync tool's thread cannot be stopped: it runs to its end and its
        result is dropped). Then the ``CancelledError`` propagates, as asyncio expects: the
        caller gets no return value, but the round's response (every call recorded, those
        that finished with their results, and the history answering them all) rides on the
        exception as ``exc.response``, for a client that still has to tell the model. The
        driver has advanced past the round's calls either way: none runs again.
        """
        plan = self._plan(llm_response)
        if isinstance(plan, DriverResponse):
            return plan
        # The calls run concurrently. A cancelled round: ``gather`` cancels every task still
        # running and completes only once all have ended, so each task is then finished (its
        # outcome stands) or cancelled (recorded as failed, ``"cancelled"``). A tool that
        # cancels itself while the round goes on is recorded the same way and the round goes
        # on. The records are in call order.
        tasks = [asyncio.ensure_future(self._aoutcome(call)) for call in plan.calls]
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError as cancelled:
            # The round's response rides on it (an attribute CancelledError does not declare).
            vars(cancelled)["response"] = self._report(plan, _settled(plan.calls, tasks))
            raise
        return self._report(plan, _settled(plan.calls, tasks))

    def _has_async_tools(self) -> bool:
        return inspect.iscoroutinefunction(self.execute_tool)

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

    def _plan_message(self, message: dict[str, Any]) -> DriverResponse | _Round:
        strategy = next((s for s in self.extraction_strategies() if s.recognizes(message)), None)
        if strategy is None:  # no wire's shape: a plain {role, content} message
            content = message.get("content")
            if not isinstance(content, str):
                return DriverResponse()
            as_came: DriverResponse | _Round = DriverResponse(messages=[copy_json(message)])
            plan = self._plan_text(content, self.text_strategy, self.codec)
        else:
            calls = strategy.extract(message)
            history = _native_history(strategy, message, True)
            if calls or strategy.forming(message) or not strategy.leaks_into_text:
                never = getattr(strategy, "incomplete_calls", None)  # a strategy of the user's
                return self._whole(calls, never(message) if never else [], history)
            as_came = self._whole([], [], history)
            backup = self.get_native_backup_strategy()
            if backup is None:
                return as_came
            plan = self._plan_text(strategy.content_text(message), strategy, _codec_of(backup))
        # The text's calls, if it has any that run or are answered; else the turn as it came.
        return plan if plan.calls or plan.answered else as_came

    def _plan_text(self, text: str, fmt: Any, codec: TextCodec) -> _Round:
        """A whole text (a ``str``, or a message's text in the fall-through), read as a
        stream of it would be under this driver's ``text_calls``: the calls that may run run
        (this driver's), and the would-be calls that
        cannot (cut, invalid) are reported and answered."""
        scanner = codec.scan_turn(text, self._text_calls)
        found, never = scanner.complete_calls(), scanner.incomplete_calls()
        slots = sorted([*found, *never], key=lambda c: c.start)  # ("text", n) in text order
        incomplete = [call.as_incomplete(("text", slots.index(call))) for call in never]
        calls = [ExtractedCall(c.name, c.arguments, None, c.end) for c in found]
        return self._whole(calls, incomplete, functools.partial(result_messages, fmt, text))

    def _whole(
        self, calls: list[ExtractedCall], incomplete: list[CallIncomplete], history: _History
    ) -> _Round:
        """A whole turn: this driver's calls run, the incomplete ones it reports are answered
        with an error result, and ``history`` answers them all."""
        plan = _Round(self, self._owned().__contains__)
        plan.incomplete = [c for c in incomplete if plan.claims(c.name)]
        plan.batch(calls, history, plan.incomplete)
        return plan

    def _view_of(self, buf: LLMStreamBuffer) -> _StreamView:
        """What this driver knows of ``buf``, remembered from its first round on. The native
        backup is read then, once per stream: its codec scans the buffer's display text."""
        view = self._view
        if view is None or view.buf() is not buf:
            if self._views is None:
                self._views = weakref.WeakKeyDictionary()
            view = self._views.get(buf)
            if view is None:
                backup = self.get_native_backup_strategy()
                self._scan(buf, backup)
                view = _StreamView(weakref.ref(buf), self, scans=backup is not None)
                self._views[buf] = view
            self._view = view
        return view

    def _plan_stream(self, buf: LLMStreamBuffer) -> DriverResponse | _Round:
        """One round. While the stream runs and nothing new arrived for this driver (no call
        completed, the forming call and its name unchanged, the text codec holding nothing)
        the round is a handful of identity checks: a client runs it on every chunk.

        A round at or after the end of input (the wire's DONE, or ``close()`` on a stream
        that never sent its DONE: no sibling can still stream either way) runs the native
        batch, this driver's calls of it, or the text calls that end the turn; the stream's
        assistant turn goes into the history once, answering every call of this driver's;
        nothing is pending any more. (``native``, ``quiet`` and ``never``: what changed since
        the driver's mark, ``LLMStreamBuffer.changes``.)"""
        view = self._view_of(buf)
        native, ended, forming, quiet, never = buf.changes(view.native_done, view.incomplete_done)
        if not ended:
            grown = len(native) != view.checked or native is not view.native
            if grown or forming is not view.forming:
                view.look(native, forming)
            pending = view.native_mine or view.forming_mine
            if view.scans and not quiet:
                plan = _Round(self, view.owns, DriverResponse(call_pending=pending))
                self._plan_text_calls(buf, view, False, plan)
                return plan
            return DriverResponse(call_pending=True) if pending else DriverResponse()
        plan = _Round(self, view.owns)
        texts = self._plan_text_calls(buf, view, True, plan) if view.scans and not quiet else []
        incomplete = [*never, *plan.incomplete]  # the text calls it reported, last
        if not native and not incomplete and not texts and view.turn_sent:
            return DriverResponse()  # the turn was handled: a round after it finds nothing
        view.native_done += len(native)
        view.incomplete_done += len(incomplete)
        plan.incomplete = reported = [c for c in incomplete if plan.claims(c.name)]
        sent, view.turn_sent = view.turn_sent, True
        strategy = buf.strategy
        if sent or strategy is None:
            return plan
        in_text = [c for c in reported if _text_slot(c.slot)]
        if texts or in_text or (view.covered and not native and not reported):
            # The turn's text calls: the text since the last history, and their results.
            content = buf.get_content()
            end = (texts[-1].end or 0) if texts and not in_text else len(content)
            if texts or in_text or content[view.covered : end].strip():
                plan.batch(texts, _text_turn(buf, view, end), in_text)
            return plan
        history = _native_history(strategy, buf.as_dict(), bool(buf.get_content()))
        plan.batch(native, history, plan.incomplete)
        return plan

    def _plan_text_calls(
        self, buf: LLMStreamBuffer, view: _StreamView, ended: bool, plan: _Round
    ) -> list[ExtractedCall]:
        """Text calls (the buffer offers them only in a turn without a native call): this
        driver's complete ones that may run now are claimed (their text is never shown):
        under ``text_calls="end"`` those that end the turn, at its end (the round that ends
        the turn answers them with the turn); under ``"anywhere"`` a delimited or fenced one
        as soon as it is complete (run in this round, with the text since the last history).
        Every call claimed is returned. While one this driver may run forms, or waits for
        the turn's end, its text is held (from its possible start: what precedes it still
        flows in this round). At the end, the would-be calls that end the turn but cannot
        run (cut, invalid) become the stream's incomplete calls, which the round reports."""
        mine = []
        response = plan.response  # its retry prompt: the first call of a tool not this driver's
        for call in buf.text_calls():
            owned = view.owns(call.name)  # (its arguments are checked when it runs)
            # At the turn's end, a driver that answers unknown tools (an Orchestrator) takes
            # the call to answer it; any other leaves it as text.
            takes = owned or (ended and plan.claims(call.name))
            if takes and buf.consume_text_call(call):
                mine.append(call)
            elif not owned and response.retry_prompt is None:
                response.retry_prompt = self._unknown(call.name)
        if ended:
            # Those that would have run, this driver's: now the stream's incomplete calls,
            # which the round reports (each once: the buffer reports one already reported as
            # None).
            never = [n for n in buf.text_incomplete() if plan.claims(n.name)]
            plan.incomplete += filter(None, map(buf.report_text_incomplete, never))
            return mine
        if mine:
            plan.batch(mine, _text_turn(buf, view, mine[-1].end or 0), [])
        forming = buf.text_forming()
        # A call still forming is held whoever's tool it names: until it closes it may still
        # break, and the text is then read again from the next marker inside it, where a call
        # of this driver's may begin (shown, it could no longer run). Once complete, a call of
        # another's tool flows (``text_waiting()`` holds only those this driver may run).
        if forming or any(plan.claims(name) for name in buf.text_waiting()):
            buf.hold_text_call()  # the calls' text only: the prose before them flows now
            response.call_pending = True
        name = forming.tool_name if forming and self._text_calls == "anywhere" else None
        if name is not None and not view.owns(name) and response.retry_prompt is None:
            response.retry_prompt = self._unknown(name)
        return mine

    def _unknown(self, name: str) -> str | None:
        """What the model is told of its call of a tool this driver does not own: nothing,
        the call is another driver's as far as this one knows (a text call flows as text).
        Only an Orchestrator, which knows every tool, tells it the tool does not exist."""
        return None

    # -- run -------------------------------------------------------------------------------------

    def _owned(self) -> frozenset[str]:
        """This driver's tool names; listing the tools compiles each one's schema once (a
        ``parameters`` that is no usable schema is a ValueError naming the tool)."""
        tools = self.list_tools()
        if self._validate:
            for tool in tools:
                schema_of(tool)
        return frozenset(tool.name for tool in tools)

    def _checked(self, call: ExtractedCall) -> _Outcome | None:
        """None when ``call`` may run; else its answer: its arguments failed the tool's
        schema, or a free-form call's text input its ``format`` (never a JSON Schema)."""
        tools = self.list_tools() if self._validate else []
        tool = next((tool for tool in tools if tool.name == call.name), None)
        problems = problems_of(tool, call.arguments, call.free_form) if tool is not None else []
        if not problems:
            return None
        return _rejected(call, call.arguments, self.codec.retry_schema_invalid(call.name, problems))

    def _outcome(self, call: ExtractedCall) -> _Outcome:
        """Run one of this driver's calls here and now; a raise becomes an error record."""
        refused = self._checked(call)
        try:
            return refused or _ran(call, _not_awaitable(self.execute_tool(call.name, _args(call))))
        except Exception as exc:  # a tool's failure is reported, never raised
            return _failed(call, exc)

    async def _aoutcome(self, call: ExtractedCall) -> _Outcome:
        """:meth:`_outcome` on the event loop (see :meth:`_aexecute_tool`)."""
        refused = self._checked(call)
        try:
            return refused or _ran(call, await self._aexecute_tool(call.name, _args(call)))
        except Exception as exc:  # a tool's failure is reported, never raised
            return _failed(call, exc)

    async def _aexecute_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        """``execute_tool`` without blocking the loop: an ``async def`` one awaited, a sync
        one in a worker thread (what it returns awaited, should it be awaitable)."""
        execute = self.execute_tool
        if inspect.iscoroutinefunction(execute):
            return await execute(tool_name, arguments)
        result = await asyncio.to_thread(execute, tool_name, arguments)
        return await result if inspect.isawaitable(result) else result

    # -- report ----------------------------------------------------------------------------------

    def _report(self, plan: _Round, outcomes: list[_Outcome]) -> DriverResponse:
        """The round's response: its records and history in call order (the calls run, then
        those answered without running), then the calls that will never run. The
        first failure is what the model is told: why a call was refused, or its raise."""
        response = plan.response
        done = [*outcomes, *plan.answered]
        if plan.history is not None:
            response.messages = plan.history([record for record, _ in done])
        ran = [record for record, why in done if type(why) is not _Refused]
        response.call_executed = any(record.error is None for record in ran)
        response.call_failed = any(record.error is not None for record in ran)
        response.executed_calls = ran or None
        response.rejected_calls = [record for record, why in done if type(why) is _Refused] or None
        failed = next(((record.name, why) for record, why in done if why is not None), None)
        if response.retry_prompt is None and failed is not None:
            response.retry_prompt = self._told(*failed)
        if plan.incomplete and response.retry_prompt is None:
            response.retry_prompt = self.codec.retry_call_incomplete(plan.incomplete[0])
        response.incomplete_calls = plan.incomplete or None
        return response

    def _told(self, name: str, why: Any) -> str:
        """What the model is told of a call that failed: why it was refused, or its raise."""
        return str(why) if type(why) is _Refused else self.codec.retry_execution_failed(name, why)


def _native_history(strategy: Any, message: Any, said: bool) -> _History:
    """How a native turn's records become its history: the assistant turn as the API accepts
    it back (``answerable``: a call whose arguments never parsed carries empty ones) with
    every result. A turn that ``said`` nothing (no text) and answers no call of this
    driver's sends nothing back."""
    answerable = getattr(strategy, "answerable", None)

    def history(records: list[ToolCallRecord]) -> list[dict[str, Any]]:
        if not records and not said:
            return []
        turn = answerable(message) if answerable is not None else message
        return result_messages(strategy, turn, records)

    return history


def _text_turn(buf: LLMStreamBuffer, view: _StreamView, end: int) -> _History:
    """How text calls' records become their history: the display text since the last one
    (``view.covered``) up to ``end``, the turn that wrote them, with their results; the next
    history starts at ``end``."""
    text = buf.get_content()[view.covered : end]
    view.covered = end
    return functools.partial(result_messages, buf.strategy, text)


def _text_slot(slot: Any) -> bool:
    """Is this the slot of a call written into text (``("text", n)``)?"""
    return slot.__class__ is tuple and len(slot) == 2 and slot[0] == "text"


class Orchestrator(BaseDriver):
    """A driver over the tools of several drivers: each call runs in the driver that owns
    it. A tool name owned twice is a ValueError. Knowing every tool, it answers a call of a
    tool nobody owns with an error result naming the tools there are, so that its history
    answers every call of the turn."""

    _knows_every_tool = True

    def __init__(self, drivers: Iterable[BaseDriver], **options: Any) -> None:
        super().__init__(**options)
        self.drivers = list(drivers)
        self._owner_of()

    def _owner_of(self) -> dict[str, BaseDriver]:
        owners: dict[str, BaseDriver] = {}
        for driver in self.drivers:
            for tool in driver.list_tools():
                other = owners.setdefault(tool.name, driver)
                if other is not driver:
                    raise ValueError(
                        f"tool {tool.name!r} is owned by both {type(other).__name__} and "
                        f"{type(driver).__name__}"
                    )
        return owners

    def list_tools(self) -> list[Tool]:
        return [tool for driver in self.drivers for tool in driver.list_tools()]

    def _owner(self, tool_name: str) -> BaseDriver:
        owner = self._owner_of().get(tool_name)
        if owner is None:
            raise KeyError(f"no driver owns the tool {tool_name!r}")
        return owner

    def execute_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        return self._owner(tool_name).execute_tool(tool_name, arguments)

    def _has_async_tools(self) -> bool:
        """Its own ``execute_tool`` dispatches to the drivers': any async one among them
        needs the async path."""
        if type(self).execute_tool is not Orchestrator.execute_tool:
            return super()._has_async_tools()
        return any(driver._has_async_tools() for driver in self.drivers)

    async def _aexecute_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        """Each call as its owner runs it on the loop: an async tool awaited, a sync one in a
        thread (drivers of both kinds mix). A subclass that dispatches in its own
        ``execute_tool`` is run as any driver is."""
        if type(self).execute_tool is not Orchestrator.execute_tool:
            return await super()._aexecute_tool(tool_name, arguments)
        return await self._owner(tool_name)._aexecute_tool(tool_name, arguments)

    def _unknown(self, name: str) -> str | None:
        return self.codec.retry_unknown_tool(name, sorted(self._owned()))
