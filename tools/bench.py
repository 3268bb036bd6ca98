"""Per-chunk cost of the client loop, as a ratio to the ``json.loads`` floor.

For each wire and size, a generated stream (as dicts) goes through the loop a client runs on
every chunk, in three flavours:

- the buffer alone: ``buf.add(chunk)``, ``buf.forming()``, ``buf.calls()``;
- with a driver (rows ``+driver``): ``buf.add(chunk)``, ``driver.process_llm_response(buf)``,
  ``buf.text()``, then once ``buf.close()`` and a last round, as a real application runs it.
  The driver (a :class:`engine.BaseDriver` over the wire alone, its buffer from
  ``new_stream_buffer()``, so that the text codec scans the display text) owns the tools the
  generated stream calls, and its ``execute_tool`` echoes the arguments;
- the events loop (rows ``+events``): ``for ev in buf.consume(chunks)``, reading ``partial``
  on every ``ArgumentsDelta``, as a client without a driver runs it. Its rows also give its
  cost over the buffer loop of the same wire and stream (``vs buffer``), measured side by
  side: runs of the two loops interleaved, each events run over the mean of the buffer runs
  on either side, the median of at least five such ratios.

Its time is divided by the time ``json.loads`` takes to decode the same chunks' JSON text,
measured in the same run just before and after (the median of ``--repeat`` such ratios), so
the figure does not depend on the machine; times are CPU time of the process, and a timed
run covers at least ``RUN_CHUNKS`` chunks (a shorter stream runs again within it), and equal
chunks of a stream are one object, read from cache as a freshly decoded chunk is
(:func:`shared`). Two stream
kinds: two parallel calls whose arguments stream in fragments of about 8 bytes (as far as the
wire streams arguments: Ollama sends each call whole, after the thinking that precedes it),
and text only.
Beside them, for the wires that send calls whole, rows ``whole``: every chunk a whole call.

    python tools/bench.py [--sizes 100,1000,10000,100000] [--wires a,b] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402

FRAG = 8


def _arg_fragments(n: int) -> Iterator[str]:
    """A JSON object's text in ~8-byte pieces, about n of them."""
    body = json.dumps({"q": "x" * max(1, n * FRAG - 10)})
    for i in range(0, len(body), FRAG):
        yield body[i : i + FRAG]


def _split(n: int, kinds: int = 2) -> list[list[str]]:
    per = max(1, (n - 4) // kinds)
    return [list(_arg_fragments(per)) for _ in range(kinds)]


def _words(n: int) -> Iterator[str]:
    for i in range(n):
        yield f"word{i % 10} "


# -- generators: each returns the chunks of one stream, as dicts ---------------------------


def openai_chat(n: int, calls: bool) -> list[dict]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": None})]
    if calls:
        a, b = _split(n)
        for slot, name in ((0, "alpha"), (1, "beta")):
            fn = {"name": name, "arguments": ""}
            tc = {"index": slot, "id": f"call_{slot}", "type": "function", "function": fn}
            out.append(chunk({"tool_calls": [tc]}))
        for i in range(max(len(a), len(b))):
            for slot, frags in ((0, a), (1, b)):
                if i < len(frags):
                    tc = {"index": slot, "function": {"arguments": frags[i]}}
                    out.append(chunk({"tool_calls": [tc]}))
        out.append(chunk({}, "tool_calls"))
    else:
        out += [chunk({"content": w}) for w in _words(n - 2)]
        out.append(chunk({}, "stop"))
    return out


def openai_responses(n: int, calls: bool) -> list[dict]:
    out = [{"type": "response.created", "response": {"id": "resp_1", "object": "response",
                                                     "status": "in_progress", "output": []}}]
    if calls:
        a, b = _split(n)
        for slot in (0, 1):
            item = {"type": "function_call", "id": f"fc_{slot}", "call_id": f"call_{slot}",
                    "name": f"tool{slot}", "arguments": "", "status": "in_progress"}
            out.append({"type": "response.output_item.added", "output_index": slot, "item": item})
        for i in range(max(len(a), len(b))):
            for slot, frags in ((0, a), (1, b)):
                if i < len(frags):
                    out.append({"type": "response.function_call_arguments.delta",
                                "item_id": f"fc_{slot}", "output_index": slot,
                                "delta": frags[i]})
    else:
        item = {"type": "message", "id": "msg_1", "role": "assistant", "content": [],
                "status": "in_progress"}
        out.append({"type": "response.output_item.added", "output_index": 0, "item": item})
        out.append({"type": "response.content_part.added", "item_id": "msg_1",
                    "output_index": 0, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}})
        out += [{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                 "content_index": 0, "delta": w} for w in _words(n - 4)]
    out.append({"type": "response.completed", "response": {"id": "resp_1", "object": "response",
                                                           "status": "completed", "output": []}})
    return out


def anthropic_messages(n: int, calls: bool) -> list[dict]:
    out = [{"type": "message_start", "message": {"id": "msg_1", "type": "message",
                                                 "role": "assistant", "content": [],
                                                 "model": "m", "usage": {"output_tokens": 1}}}]
    if calls:
        a, b = _split(n)
        for slot in (0, 1):
            out.append({"type": "content_block_start", "index": slot,
                        "content_block": {"type": "tool_use", "id": f"toolu_{slot}",
                                          "name": f"tool{slot}", "input": {}}})
        for i in range(max(len(a), len(b))):
            for slot, frags in ((0, a), (1, b)):
                if i < len(frags):
                    out.append({"type": "content_block_delta", "index": slot,
                                "delta": {"type": "input_json_delta", "partial_json": frags[i]}})
        out += [{"type": "content_block_stop", "index": s} for s in (0, 1)]
    else:
        out.append({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})
        out += [{"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": w}} for w in _words(n - 4)]
        out.append({"type": "content_block_stop", "index": 0})
    out.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": n}})
    out.append({"type": "message_stop"})
    return out


def bedrock_converse(n: int, calls: bool) -> list[dict]:
    out = [{"messageStart": {"role": "assistant"}}]
    if calls:
        a, b = _split(n)
        for slot in (0, 1):
            out.append({"contentBlockStart": {"contentBlockIndex": slot, "start": {
                "toolUse": {"toolUseId": f"tooluse_{slot}", "name": f"tool{slot}"}}}})
        for i in range(max(len(a), len(b))):
            for slot, frags in ((0, a), (1, b)):
                if i < len(frags):
                    out.append({"contentBlockDelta": {"contentBlockIndex": slot,
                                                      "delta": {"toolUse": {"input": frags[i]}}}})
        out += [{"contentBlockStop": {"contentBlockIndex": s}} for s in (0, 1)]
        stop = "tool_use"
    else:
        out += [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": w}}}
                for w in _words(n - 3)]
        out.append({"contentBlockStop": {"contentBlockIndex": 0}})
        stop = "end_turn"
    out.append({"messageStop": {"stopReason": stop}})
    return out


def gemini(n: int, calls: bool) -> list[dict]:
    def chunk(parts: list, finish: str | None = None) -> dict:
        cand = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand], "modelVersion": "gemini-x", "responseId": "r1"}

    def call(part: dict) -> dict:
        return chunk([{"functionCall": part}])

    out = []
    if calls:
        # Gemini 3 streams a call's arguments as partialArgs pieces, one call after the
        # other: a part opens the call, each piece continues the string leaf $.q by about 8
        # bytes, and an empty functionCall closes it.
        per = max(1, (n - 7) // 2)
        for slot in (0, 1):
            out.append(call({"name": f"tool{slot}", "willContinue": True}))
            for _ in range(per):
                piece = {"jsonPath": "$.q", "stringValue": "x" * FRAG, "willContinue": True}
                out.append(call({"partialArgs": [piece], "willContinue": True}))
            out.append(call({"partialArgs": [{"jsonPath": "$.q", "stringValue": ""}],
                             "willContinue": True}))
            out.append(call({}))
    else:
        out = [chunk([{"text": w}]) for w in _words(n - 1)]
    out.append(chunk([{"text": ""}], "STOP"))
    return out


def cohere_v2(n: int, calls: bool) -> list[dict]:
    out = [{"id": "c1", "type": "message-start", "delta": {"message": {
        "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}}]
    if calls:
        a, b = _split(n)
        for slot in (0, 1):
            out.append({"type": "tool-call-start", "index": slot, "delta": {"message": {
                "tool_calls": {"id": f"t{slot}", "type": "function",
                               "function": {"name": f"tool{slot}", "arguments": ""}}}}})
        for i in range(max(len(a), len(b))):
            for slot, frags in ((0, a), (1, b)):
                if i < len(frags):
                    out.append({"type": "tool-call-delta", "index": slot, "delta": {"message": {
                        "tool_calls": {"function": {"arguments": frags[i]}}}}})
        out += [{"type": "tool-call-end", "index": s} for s in (0, 1)]
    else:
        out.append({"type": "content-start", "index": 0,
                    "delta": {"message": {"content": {"type": "text", "text": ""}}}})
        out += [{"type": "content-delta", "index": 0,
                 "delta": {"message": {"content": {"text": w}}}} for w in _words(n - 3)]
        out.append({"type": "content-end", "index": 0})
    out.append({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}})
    return out


def ollama(n: int, calls: bool) -> list[dict]:
    def chunk(message: dict, done: bool = False) -> dict:
        out = {"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": message,
               "done": done}
        if done:
            out.update(done_reason="stop", eval_count=n, prompt_eval_count=1)
        return out

    if calls:
        # Ollama never splits a call: it streams the model's thinking, then sends each call
        # whole once its arguments are complete. Two parallel calls, arguments about 8 bytes
        # per chunk of the stream.
        out = [chunk({"role": "assistant", "content": "", "thinking": w})
               for w in _words(n - 2)]
        out.append(chunk({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": f"tool{slot}", "arguments": {"q": "x" * (n * FRAG // 2)}}}
            for slot in (0, 1)]}))
    else:
        out = [chunk({"role": "assistant", "content": w}) for w in _words(n - 1)]
    out.append(chunk({"role": "assistant", "content": ""}, True))
    return out


def ollama_whole_calls(n: int) -> list[dict]:
    """Every chunk a whole call: no server sends this at length, but it is the costliest
    chunk per byte there is (a new call tracked and returned per chunk)."""
    return [{"model": "m", "created_at": "2025-01-01T00:00:00Z", "done": False,
             "message": {"role": "assistant", "content": "", "tool_calls": [
                 {"function": {"name": f"tool{i % 2}", "arguments": {"q": "x" * FRAG}}}]}}
            for i in range(n)]


def gemini_whole_calls(n: int) -> list[dict]:
    """Every chunk a whole call, as Gemini 2 sends calls (see ollama_whole_calls)."""
    return [{"candidates": [{"index": 0, "content": {"role": "model", "parts": [
                {"functionCall": {"name": f"tool{i % 2}", "args": {"q": "x" * FRAG}}}]}}],
             "modelVersion": "gemini-x", "responseId": "r1"}
            for i in range(n)]


GENERATORS: dict[str, Callable[[int, bool], list[dict]]] = {
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "anthropic_messages": anthropic_messages,
    "bedrock_converse": bedrock_converse,
    "gemini": gemini,
    "cohere_v2": cohere_v2,
    "ollama": ollama,
}

STRESS: dict[str, Callable[[int], list[dict]]] = {
    "gemini": gemini_whole_calls,
    "ollama": ollama_whole_calls,
}
"""Streams outside the bar, reported in rows of their own (``whole``): every chunk a whole call."""


# -- measurement ------------------------------------------------------------------------------


RUN_CHUNKS = 20000
"""A timed run covers at least this many chunks: a stream shorter than that is run again in
the same run (each time with a new buffer), so that a run of 1000 chunks is not a millisecond
a scheduler tick can double."""


def _cpu(fn: Callable[[], None], times: int = 1) -> float:
    """One run (``fn`` ``times`` over), in CPU seconds of this process: on a shared machine
    the wall clock also counts the time other processes had the CPU."""
    gc.collect()
    gc.disable()
    start = time.process_time()
    for _ in range(times):
        fn()
    spent = time.process_time() - start
    gc.enable()
    return spent


def _paired(
    loop: Callable[[], None], floor: Callable[[], None], repeat: int, times: int = 1
) -> tuple[float, float]:
    """``repeat`` runs of the loop, each between two runs of the floor, so that each ratio
    compares runs made under the same load; the median ratio, and the best loop time (of
    one pass)."""
    ratios, best = [], float("inf")
    for _ in range(repeat):
        before, spent, after = _cpu(floor, times), _cpu(loop, times), _cpu(floor, times)
        ratios.append(spent / ((before + after) / 2))
        best = min(best, spent / times)
    return statistics.median(ratios), best


def _versus(
    loop: Callable[[], None], base: Callable[[], None], repeat: int, times: int = 1
) -> float:
    """The loop's cost over ``base``'s, from interleaved runs (base, loop, base, loop, ...,
    base): each run of the loop over the mean of the two runs of ``base`` beside it, the
    median of ``repeat`` such ratios (at least 5: a ratio of two loops of the engine is what
    a bar is set on, and one run in three disturbed must not move it)."""
    ratios = []
    last = _cpu(base, times)
    for _ in range(max(5, repeat)):
        spent = _cpu(loop, times)
        after = _cpu(base, times)
        ratios.append(spent / ((last + after) / 2))
        last = after
    return statistics.median(ratios)


# The schema of the ``+schema`` rows' tools: what a real tool declares (a typed, required
# member, a bound, no other members), which every generated call's ``{"q": "xxx..."}`` meets.
SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string", "minLength": 1}, "n": {"type": "integer"}},
    "required": ["q"],
    "additionalProperties": False,
}


class EchoDriver(engine.BaseDriver):
    """Owns the tools a generated stream calls; each returns its arguments. ``schema``: the
    tools declare :data:`SCHEMA` and every call is checked against it before it runs;
    without, no call is checked (``validate_arguments=False``)."""

    def __init__(
        self, names: list[str], strategy: engine.ExtractionStrategy, schema: bool = False
    ) -> None:
        super().__init__(strategies=[strategy], validate_arguments=schema)
        parameters = SCHEMA if schema else {"type": "object", "properties": {}}
        self.tools = [engine.Tool(name, f"echo {name}", parameters) for name in names]

    def list_tools(self) -> list[engine.Tool]:
        return self.tools

    def execute_tool(self, tool_name: str, arguments: dict) -> dict:
        return arguments


def called_names(wire: str) -> list[str]:
    """The tool names a wire's generated call stream calls (read back through the engine)."""
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format(wire)])
    for chunk in GENERATORS[wire](20, True):
        buf.add(chunk)
    buf.close()
    return sorted({call.name for call in buf.calls()})


def buffer_loop(
    strategy: engine.ExtractionStrategy, chunks: list[dict], buffer: Any = engine.LLMStreamBuffer
) -> Callable[[], None]:
    """The buffer alone: add, forming, calls per chunk (``buffer``: another engine's buffer
    class, for tools/bench_ab.py)."""

    def loop() -> None:
        buf = buffer(strategies=[strategy])
        add, forming, calls = buf.add, buf.forming, buf.calls
        for c in chunks:
            add(c)
            forming()
            calls()

    return loop


def driver_loop(
    strategy: engine.ExtractionStrategy, chunks: list[dict], schema: bool = False
) -> Callable[[], None]:
    """A real application: add, process_llm_response, text per chunk; close and a last round.
    ``schema``: each call's arguments checked against its tool's JSON Schema first."""
    names = called_names(strategy.name)

    def loop() -> None:
        driver = EchoDriver(names, strategy, schema)
        buf = driver.new_stream_buffer()
        add, process, text = buf.add, driver.process_llm_response, buf.text
        for c in chunks:
            add(c)
            process(buf)
            text()
        buf.close()
        process(buf)
        text()

    return loop


def events_loop(strategy: engine.ExtractionStrategy, chunks: list[dict]) -> Callable[[], None]:
    """A client without a driver: consume() the stream, reading partial on every delta."""
    delta = engine.ArgumentsDelta

    def loop() -> None:
        buf = engine.LLMStreamBuffer(strategies=[strategy])
        for ev in buf.consume(chunks):
            if ev.__class__ is delta:
                ev.partial.get("q")

    return loop


LOOPS = {
    "": buffer_loop,
    "+driver": driver_loop,
    "+schema": partial(driver_loop, schema=True),
    "+events": events_loop,
}
# What a flavour's ``vs`` column compares it with, side by side: the events loop with the
# buffer loop, the driver loop that checks arguments with the one that does not.
VERSUS = {"+events": "", "+schema": "+driver"}


def shared(chunks: list[dict]) -> list[dict]:
    """The stream with equal chunks as one object (the engine never writes to a chunk).

    A client's chunk comes fresh from its decoder, in cache when ``add`` reads it. 100000
    distinct dicts made beforehand are a hundred megabytes read back from memory, which made
    the largest size look 10-15% dearer per chunk, for the buffer loop as for the others:
    the machine's cache, not the engine (``--distinct-chunks`` measures that input still).
    Shared, every size reads its input from cache, and growth is the engine's own."""
    seen: dict[str, dict] = {}
    return [seen.setdefault(json.dumps(c), c) for c in chunks]


def _times(chunks: list[dict]) -> int:
    return max(1, RUN_CHUNKS // len(chunks))


def measure(wire: str, chunks: list[dict], repeat: int, flavour: str = "") -> tuple[float, float]:
    """The client loop (``flavour``: ``""``, ``"+driver"`` or ``"+events"``) as a ratio to
    the json.loads floor, and its best time in seconds per chunk."""
    strategy = engine.load_format(wire)
    text_of: dict[int, str] = {}  # a shared chunk's text is shared too (see shared())
    texts = [text_of.setdefault(id(c), json.dumps(c)) for c in chunks]
    loads = json.loads

    def floor() -> None:
        for t in texts:
            loads(t)

    LOOPS[flavour](strategy, chunks[:50])()  # warm up: what loads once is not per chunk
    ratio, best = _paired(LOOPS[flavour](strategy, chunks), floor, repeat, _times(chunks))
    return ratio, best / len(chunks)


def measure_versus(wire: str, chunks: list[dict], repeat: int, flavour: str = "+events") -> float:
    """The ``flavour`` loop over the loop it is compared with (``VERSUS``) on the same wire
    and stream, measured side by side (:func:`_versus`): no floor in between, so a load that
    changes between rows does not enter the figure."""
    strategy = engine.load_format(wire)
    loop, base = LOOPS[flavour](strategy, chunks), LOOPS[VERSUS[flavour]](strategy, chunks)
    loop(), base()  # warm up
    return _versus(loop, base, repeat, _times(chunks))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--wires", default=",".join(GENERATORS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--distinct-chunks", action="store_true",
                        help="every chunk its own dict, made beforehand (see shared())")
    parser.add_argument("--flavours", default=",".join(f or "buffer" for f in LOOPS),
                        help="buffer (add+forming+calls), +driver (add+process+text), "
                        "+schema (+driver, arguments checked), +events (consume)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    wires = args.wires.split(",")
    flavours = ["" if f == "buffer" else f for f in args.flavours.split(",")]
    head = f"{'wire':<20} {'stream':<13} " + " ".join(f"{s:>9}" for s in sizes)
    print(head + "   growth   us/chunk  vs buffer")
    worst = {flavour: (0.0, 0.0) for flavour in flavours}
    versus: dict[str, list[float]] = {}  # a VERSUS flavour over its base, each size from 1000
    ref = sizes.index(1000) if 1000 in sizes else 0
    for wire in wires:
        for flavour in flavours:
            kinds = [("calls", True), ("text", False)] + [("whole", None)] * (wire in STRESS)
            for kind, calls in kinds:
                ratios, per_chunk, over = [], [], []
                for size in sizes:
                    make = STRESS[wire] if calls is None else partial(GENERATORS[wire], calls=calls)
                    chunks = make(size) if args.distinct_chunks else shared(make(size))
                    repeat = args.repeat  # at every size: one run of the largest was noise
                    ratio, seconds = measure(wire, chunks, repeat, flavour)
                    ratios.append(ratio)
                    per_chunk.append(seconds)
                    if flavour in VERSUS:
                        over.append(measure_versus(wire, chunks, repeat, flavour))
                growth = ratios[-1] / ratios[ref]  # the chunks, so the floor, are alike
                if calls is not None:  # the bar's streams; ``whole`` is reported beside them
                    ratio, grown = worst[flavour]
                    worst[flavour] = (max(ratio, *ratios[ref:]), max(grown, growth))
                cells = " ".join(f"{r:>8.2f}x" for r in ratios)
                vs = ""
                if over:
                    # +schema's bar row is the smallest size (a call every 10 chunks at 20)
                    start = 0 if flavour == "+schema" else ref
                    if calls is not None:
                        versus.setdefault(flavour, []).extend(over[start:])
                    vs = f"   {max(over[start:]):6.2f}x"
                print(f"{wire:<20} {kind + flavour:<13} {cells}   {growth:6.2f}"
                      f"   {per_chunk[-1] * 1e6:8.2f}{vs}")
    print("\nratio = per-chunk cost of the loop / json.loads of the same chunk's text;"
          "\n  rows without a suffix: add+forming+calls; rows +driver: add+"
          "process_llm_response+text;"
          f"\ngrowth = per-chunk cost at {sizes[-1]} / at {sizes[ref]} (as the ratios, whose floor"
          f" is per chunk alike at every size); us/chunk: the best run at {sizes[-1]}."
          "\nwhole: every chunk a whole call (Gemini, Ollama), outside the bar's streams."
          "\n+schema: the +driver loop with each call's arguments checked against its tool's"
          " JSON Schema; its vs column\n  is over the +driver loop (no check), side by side as"
          " below; at size 20 a call completes every 10 chunks."
          f"\nvs buffer (+events rows): the events loop over the buffer loop of the same wire"
          f" and stream, measured side by side\n  (interleaved runs, CPU time, the median"
          f" ratio), the largest of the sizes from {sizes[ref]} up."
          f"\nA run of fewer than {RUN_CHUNKS} chunks repeats the stream within the run;"
          f" equal chunks {'are distinct dicts' if args.distinct_chunks else 'share one dict'}.")
    for flavour, (ratio, grown) in worst.items():
        print(f"worst {flavour or 'buffer':<8} from {sizes[ref]} up: ratio {ratio:.2f}x, "
              f"growth {grown:.2f}")
    bars = {"+events": ("buffer", 2.0), "+schema": ("+driver", 1.2)}
    for flavour, ratios in versus.items():
        base, bar = bars[flavour]
        low = sizes[0] if flavour == "+schema" else sizes[ref]
        print(f"worst {flavour} over {base} from {low} up: {max(ratios):.2f}x (bar {bar}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
