"""The text codec: a tool call that a model wrote into plain text.

This is the one format the engine itself asks a model to emit (see ``formats/mcs_text.yaml``):
``{"tool": NAME, "arguments": {...}}`` (``name`` and ``parameters`` accepted as aliases, a
missing ``arguments`` meaning ``{}``, an array of such objects meaning several calls), bare, in
a ```json fence (or one with no language), or between delimiters such as ``<tool_call>``.

Two halves share one compiled, immutable :class:`TextCodec`:

- the parsing half. :meth:`TextCodec.new_scanner` gives a :class:`TextScanner`, a per-stream
  state machine fed display-text fragments; it reads every character once (O(new text) per
  feed), decides what may be shown now and what must be held because a call may be forming,
  and reports the calls that closed. :meth:`TextCodec.parse_calls` runs the same machine over
  a whole text, so that a message parsed whole and the same message streamed in any split agree
  on what is a call;
- the prompt half: the system message, the tool description, and the retry prompts.

Why a state machine and not a regex over the text: a call's end is found by following its
JSON (strings, escapes, nesting), which no greedy pattern does, and mid-stream the question is
not "is there a call" but "could this suffix still become one", answered character by
character so that ordinary text (answers, code, reasoning) is held only while it is truly
ambiguous and released the moment it cannot be a call.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, cast

from ..compile.schema import with_defaults
from ..compile.strategy import Problems
from ..errors import DescriptorError, Problem
from ..events import CAUSE_NOT_JSON, CAUSE_NOT_OBJECT, CAUSE_TOO_DEEP, CallIncomplete
from ..model.jsonscan import INVALID_TEXT, MAX_DEPTH, TOO_DEEP, nests_deeper
from ..model.partial import PartialJSON

__all__ = ["TextCall", "TextCodec", "TextScanner", "ToolLike"]


@dataclass(frozen=True)
class TextCall:
    """A call found in text: ``start`` is the offset of its first character (the opening
    fence or delimiter, if any) and ``end`` the offset just past it (and past its closing
    fence or delimiter), both into the full text fed. The calls of one JSON array share
    the array's span."""

    name: str
    arguments: dict[str, Any]
    start: int
    end: int
    # A call that would have run but never can (a turn's scanner only, see TextScanner):
    # ``raw`` its JSON text, and ``reason`` ``"cut"`` (the text ended inside it) or
    # ``"invalid"`` (its JSON closed but is no call object: it does not parse, or its
    # arguments are not an object). ``arguments`` is then what of them had streamed (``{}``
    # for an invalid one).
    raw: str = ""
    reason: str | None = None

    def as_incomplete(self, slot: Any, ended: str | None = None) -> CallIncomplete:
        """This would-be call as the model is told of it, at ``slot``. Its finer cause: a cut
        one was cut by however its stream ended (``ended``: the assembly's ``end_cause``, None
        for a whole text), an invalid one is not JSON, or JSON that is not a call object."""
        reason = self.reason or INVALID_TEXT  # (set on every call that cannot run)
        cause = ended if reason == "cut" else CAUSE_TOO_DEEP
        if reason == INVALID_TEXT:
            try:
                json.loads(self.raw)
                cause = CAUSE_NOT_OBJECT
            except (ValueError, RecursionError):
                cause = CAUSE_NOT_JSON
        return CallIncomplete(slot, self.name, None, self.raw, reason, cause)


class ToolLike(Protocol):
    """What the prompt side needs of a tool (``engine.Tool`` has it)."""

    name: str
    description: str
    parameters: Any


# -- the codec ---------------------------------------------------------------------------------

# The kinds of span the scanner reads, each a body of its own: a code fence (a language, then
# a call's JSON, or code), a call between delimiters, inline reasoning (never scanned), and
# bare JSON (opened by its own first character, and ended by its value).
_FENCE, _DELIM, _REASON, _BARE = range(4)


@dataclass(frozen=True)
class _Family:
    """A row of the scanner's table: the text that opens a span, the kind of its body, and
    the markers that close it (a fence: any fence marker; a delimiter or a reasoning span:
    its end; bare JSON: none, its value ends it)."""

    opener: str
    kind: int
    closers: tuple[str, ...] = ()
    pointer: str = ""  # where the descriptor writes the opener


@dataclass(frozen=True)
class _Prompt:
    """The prompt section as the schema checked it, the defaults of ``tool_format`` filled in."""

    system_template: str
    call_example: str
    tool_format: Mapping[str, Any]
    retry: Mapping[str, Any]


# JSON Schema keywords that say what a parameter is; a property with none of them is untyped.
_TYPING_KEYWORDS = frozenset(
    ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items")
)

_ONE_SPAN = "a marker starts one span only (the scanner would never read the other)"

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _any_of(chars: set[str]) -> re.Pattern[str]:
    """A pattern matching any one of ``chars`` (nothing, when there is none)."""
    return re.compile("[" + "".join(map(re.escape, sorted(chars))) + "]" if chars else "(?!)")


def _fill(template: str, **values: str) -> str:
    """Replace each ``{placeholder}`` that ``values`` names, in one pass: other braces (of
    JSON examples) in a template are left alone, and a value that itself contains a
    placeholder is never substituted again."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


class TextCodec:
    """The compiled text codec: immutable and shared; per-stream state is a
    :class:`TextScanner`. Compiled from a descriptor's ``codec`` section.

    Regexes and marker tables are built here, once. The section is taken as the schema checked
    it (``schemas/format.schema.json``, the one place that says what a codec section may hold;
    the engine's loader never compiles a section the schema refuses). What no schema can say
    is found here, each problem at the JSON pointer of its value (added to ``problems``, which
    the validator locates in the file; without, raised as a
    :class:`~engine.errors.DescriptorError`, ``source`` naming the dict): a healing replacement
    its pattern cannot fill (it would raise mid-stream, at the first text it heals), and a
    marker that starts two spans (the scanner would read only one).
    """

    def __init__(
        self, data: Mapping[str, Any], problems: Problems | None = None, source: str | None = None
    ) -> None:
        found = Problems() if problems is None else problems
        # The schema's defaults written in, the objects it defaults inside (which it gives
        # no default of their own) present so that theirs are too.
        codec = data["codec"]
        prompt = {"tool_format": {}, **codec["prompt"]}
        conf = with_defaults({"fences": {}, **codec, "prompt": prompt}, "codec")
        self.name_keys: tuple[str, ...] = tuple(conf["name_keys"])
        self.args_keys: tuple[str, ...] = tuple(conf["args_keys"])
        self.reject_keys: tuple[str, ...] = tuple(conf["reject_keys"])
        self.bare: bool = conf["bare"]
        self.fence_languages = frozenset(lang.lower() for lang in conf["fences"]["languages"])
        self.fence_markers: tuple[str, ...] = tuple(conf["fences"]["markers"])
        self.healing = tuple((re.compile(r["pattern"]), r["replacement"]) for r in conf["healing"])
        for i, (pattern, replacement) in enumerate(self.healing):
            try:
                pattern.sub(replacement, "")  # (the replacement is read even where none matches)
            except re.error as exc:
                pointer = f"/codec/healing/{i}/replacement"
                found.add(pointer, f"not a replacement for its pattern: {exc}")
        # The scanner's table: a row for each marker that opens a span and, when bare JSON is
        # read, for `{` and `[`; by first character, longest first (a marker before a bare
        # bracket of the same length), and the characters that may start something.
        rows = [
            _Family(m, _FENCE, self.fence_markers, f"/codec/fences/markers/{i}")
            for i, m in enumerate(self.fence_markers)
        ]
        rows += [
            _Family(pair["start"], kind, (pair["end"],), f"/codec/{key}/{i}/start")
            for kind, key in ((_DELIM, "delimiters"), (_REASON, "reasoning"))
            for i, pair in enumerate(conf[key])
        ]
        self._openers = tuple(row.opener for row in rows)  # (any of them ends a broken call)
        self._marker_trigger = _any_of({opener[0] for opener in self._openers})
        self._markers: dict[str, tuple[_Family, ...]] = {}
        starts: dict[str, str] = {}
        bare = [_Family(bracket, _BARE) for bracket in "{[" if self.bare]
        for row in [*sorted(rows, key=lambda row: len(row.opener), reverse=True), *bare]:
            self._markers[row.opener[0]] = (*self._markers.get(row.opener[0], ()), row)
            if row.kind != _BARE and (first := starts.get(row.opener)) is not None:
                found.add(row.pointer, f"{row.opener!r} already starts {first}: {_ONE_SPAN}")
            starts.setdefault(row.opener, row.pointer.removesuffix("/start"))
        self._trigger = _any_of(set(self._markers))  # (a bare `{` too, where it may open)
        # What is looked for in a span's body: the end of a code fence or of a reasoning span;
        # in a broken call, its end delimiter or any opener.
        ends = [row.closers for row in rows if row.kind != _DELIM]
        ends += [(row.closers[0], *self._openers) for row in rows if row.kind == _DELIM]
        self._ends_res = {e: re.compile("|".join(map(re.escape, e))) for e in ends}
        languages = self.fence_languages
        self._lang_prefixes = frozenset(g[:k] for g in languages for k in range(1, len(g) + 1))
        self._key_prefixes = frozenset(g[:k] for g in self.name_keys for k in range(len(g) + 1))
        if problems is None and found:
            file = source or "<descriptor>"
            raise DescriptorError([Problem(file, 0, 0, *at, "compile") for at in found])
        # Last: from here on the codec is frozen (__setattr__). (The schema allows the prompt
        # section no other key than these fields.)
        self.prompt = _Prompt(**conf["prompt"])

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "prompt"):
            raise AttributeError(f"the text codec is immutable and shared: {name}")
        object.__setattr__(self, name, value)

    # -- parsing --------------------------------------------------------------------------

    def new_scanner(
        self, offset: int = 0, *, rule: str | None = None, lead: bool = True
    ) -> TextScanner:
        """A fresh per-stream scanner; ``offset``: how far into the whole text the first
        fragment it is fed begins, so that the offsets it gives count in the whole text.

        ``rule``: None scans for every call anywhere (what :meth:`parse_calls` and the text
        strategy's ``extract`` find); a driver's turn is scanned with ``"end"`` (a call
        counts only when it ends the turn) or ``"anywhere"`` (delimited and fenced calls
        count where they close), bare JSON counting under both only as the whole text (see
        :class:`TextScanner`). ``lead``: nothing but whitespace came before ``offset``."""
        return TextScanner(self, offset, rule=rule, lead=lead)

    def scan_turn(self, text: str, rule: str | None = "end") -> TextScanner:
        """A whole turn's text scanned under a driver's ``rule`` (None: no rule, as
        :meth:`parse_calls` reads) and finished: its ``complete_calls()`` are those the rule
        lets run, its ``incomplete_calls()`` those that would have run but cannot, as a
        stream of the same text would give them."""
        scanner = TextScanner(self, rule=rule)
        scanner.feed(text)
        scanner.finish()
        return scanner

    def parse_calls(self, text: str) -> list[TextCall]:
        """Every call in a whole text, in order.

        The streaming scanner run over the whole text: one string-aware pass, reasoning
        skipped, arrays giving several calls, healing applied. A call is complete only when its
        object (and its closing fence or delimiter) closed; a fragment cut at the end is none.
        """
        return self.scan_turn(text, None).complete_calls()

    def _load(self, text: str) -> Any:
        """Parse a candidate, healing it if it does not parse as written; None on failure
        (a RecursionError, nesting past what the parser reads, goes to :meth:`_calls_of`)."""
        with suppress(ValueError):
            return json.loads(text, strict=False)
        for pattern, replacement in self.healing:
            text = pattern.sub(replacement, text)
        with suppress(ValueError):
            return json.loads(text, strict=False)  # (unhealed: fails as it did)
        return None

    def _call_of(self, value: Any) -> tuple[str, dict[str, Any]] | None:
        """(name, arguments) when ``value`` is a call object, else None."""
        if value.__class__ is not dict or not value:
            return None
        first, name = next(iter(value.items()))
        named = first in self.name_keys and isinstance(name, str) and name
        if not named or any(key in value for key in self.reject_keys):
            return None
        args = next((value[key] for key in self.args_keys if key in value), None)
        if args is None:  # no arguments key, or null: a call without arguments
            return name, {}
        if isinstance(args, str):  # the arguments written as JSON text (a leak shape)
            with suppress(ValueError):  # (text that does not parse stays text: no call)
                args = json.loads(args)
        return (name, args) if args.__class__ is dict else None

    def _calls_of(self, text: str) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        """The calls a closed candidate holds (one object, or an array of call objects), and
        why there are none: ``"too deep"`` where arguments nest past ``MAX_DEPTH`` or past what
        the parser reads (as the native path refuses them, arguments given as JSON text
        included), else ``"invalid"``."""
        try:
            value = self._load(text)
            found = [self._call_of(v) for v in (value if value.__class__ is list else [value])]
        except RecursionError:
            return [], TOO_DEEP
        calls = [call for call in found if call is not None]
        if not calls or len(calls) < len(found):
            return [], INVALID_TEXT
        if any(nests_deeper(args, MAX_DEPTH) for _, args in calls):
            return [], TOO_DEEP
        return calls, INVALID_TEXT

    # -- the prompt side ------------------------------------------------------------------

    def function_description(self, tools: Iterable[ToolLike]) -> str:
        """The tools as the model is told about them: a JSON document, ``{"tools": [...]}``
        by default, so that the model sees its tools in the same notation it calls them in."""
        fmt = self.prompt.tool_format
        fields = fmt["fields"].items()
        listed = [{key: self._described(tool, attr) for key, attr in fields} for tool in tools]
        return json.dumps({fmt["list_key"]: listed}, indent=fmt["indent"], ensure_ascii=False)

    def _described(self, tool: ToolLike | Mapping[str, Any], attribute: str) -> Any:
        """A tool's attribute (a ``Tool``'s, or a dict's) as described: "" for none; its
        parameter schema always an object schema, and a property that says nothing of its type
        given the untyped default, so that the model is never left guessing how to write a
        value."""
        value = tool.get(attribute) if isinstance(tool, Mapping) else getattr(tool, attribute, None)
        if attribute != "parameters":
            return "" if value is None else value
        if not isinstance(value, Mapping):
            return {"type": "object", "properties": {}}
        out = dict(value)
        props = out.get("properties")
        if isinstance(props, Mapping):
            default = self.prompt.tool_format["untyped_parameter"]
            given = {key: p if isinstance(p, Mapping) else {} for key, p in props.items()}
            out["properties"] = {
                k: p if _TYPING_KEYWORDS & p.keys() else {**default, **p} for k, p in given.items()
            }
        return out

    def system_message(self, tools: Iterable[ToolLike]) -> str:
        """The system message that asks the model for this codec's calls."""
        p = self.prompt
        tools_text = self.function_description(tools)
        return _fill(p.system_template, tools=tools_text, call_example=p.call_example)

    def retry_execution_failed(self, tool_name: str, error: Any) -> str:
        """What to tell the model after its call of ``tool_name`` raised ``error``."""
        return _fill(self.prompt.retry["execution_failed"], tool_name=tool_name, error=str(error))

    def retry_unknown_tool(self, tool_name: str, available: Iterable[Any]) -> str:
        """What to tell the model after it called a tool nobody has. ``available`` holds tool
        names or tools. Only a composition that knows every tool (an Orchestrator) may say
        this: a single driver cannot know that another one does not own the name."""
        names = [a if isinstance(a, str) else str(getattr(a, "name", a)) for a in available]
        template = self.prompt.retry["unknown_tool"]
        return _fill(template, tool_name=tool_name, available=", ".join(names))

    def retry_call_incomplete(
        self, call: CallIncomplete | str | None, reason: str | None = None, cause: str | None = None
    ) -> str:
        """What to tell the model after its call ended unrunnable: ``call`` the
        :class:`~engine.events.CallIncomplete` (its name, reason and cause read off it), or,
        as before, the tool's name (None: its name never arrived) and ``reason`` (``cut``,
        ``invalid``, ``too deep``), with ``cause`` if known. The cause's own message says
        what to do differently (a length limit: shorter arguments; the connection ended: the
        same call again; not JSON, not an object...); without one, the reason's message."""
        if isinstance(call, CallIncomplete):
            reason, cause, call = call.reason, call.cause, call.name
        templates = self.prompt.retry["call_incomplete"]
        template = templates.get(cause) or templates.get(reason) or templates["invalid"]
        return _fill(template, tool_name=call or "(no name)")

    def retry_schema_invalid(self, tool_name: str, problems: Iterable[tuple[str, str]]) -> str:
        """What to tell the model after its call of ``tool_name`` failed the tool's JSON
        Schema: ``problems`` are (JSON pointer, what was expected) pairs, each named on a
        line of its own (the pointer ``""``, the arguments object itself, as the
        descriptor's ``root`` says). A descriptor without ``schema_invalid`` sends
        ``execution_failed`` with the problems as its error."""
        section = self.prompt.retry.get("schema_invalid")
        if section is None:
            error = "; ".join(f"{pointer or '/'}: {message}" for pointer, message in problems)
            return self.retry_execution_failed(tool_name, error)
        lines = "\n".join(
            _fill(section["problem"], pointer=pointer or section["root"], message=str(text))
            for pointer, text in problems
        )
        return _fill(section["message"], tool_name=tool_name, problems=lines)

    def retry_no_tool_field(self) -> str:
        """What to tell the model after it wrote a JSON reply that names no tool."""
        return _fill(self.prompt.retry["no_tool_field"], call_example=self.prompt.call_example)


# -- the scanner -------------------------------------------------------------------------------

# A span's phases: after a fence marker, reading the language; the JSON value (after a fence
# or start delimiter, whitespace before it); the value closed, waiting for the closing fence
# or end delimiter; only its end looked for: reasoning or code, shown as it comes, or a named
# call whose JSON broke inside its delimiters, held to its end delimiter. A span holds the
# method that reads its phase (TextScanner._phase_lang, _value, _closer, _to_end), so that
# the feeding loop calls it directly.

# JSON validator states.
# (A value is awaited at the start, after a colon, and in an array: `]` may close it there.)
_S_VALUE, _S_KEY, _S_COLON, _S_AFTER, _S_STRING, _S_KEY_STRING, _S_NUMBER, _S_LITERAL = range(8)

# The first-key watch: the strict prefix a call must follow while it is held without a name.
# ``watch`` indexes _WATCH, the character that must come next, in order: a top-level array's
# first item is an object; the object's first key opens; inside it (_W_KEY), which must stay
# a prefix of a name key; its colon; the name's value opens, a string; inside it (_W_NAME).
# _W_DONE: nothing to check (named, or released).
_WATCH = '{"K:"N'
_W_KEY, _W_NAME, _W_DONE = 2, 5, 6


def _cut_call(codec: TextCodec, raw: str) -> tuple[dict[str, Any], str]:
    """What the arguments of a call cut short hold so far (for its ``ArgumentsDelta``):
    the first arguments key's object, as much of it as streamed (``{}`` when none); and why
    the call never runs: ``"cut"``, or ``"too deep"`` once they nest past ``MAX_DEPTH`` (the
    call object around them counted), as the native path refuses such arguments, cut or not."""
    reader = PartialJSON(max_depth=MAX_DEPTH + 1)
    reader.feed(raw)
    why = TOO_DEEP if reader.reason == TOO_DEEP else "cut"
    args = next((reader.value[key] for key in codec.args_keys if key in reader.value), None)
    return (args if args.__class__ is dict else {}), why


class _AlwaysMatches(Protocol):
    """A pattern that matches the empty string, so its ``match`` is never None."""

    def match(self, string: str, pos: int = 0) -> re.Match[str]: ...


_WS = cast(_AlwaysMatches, re.compile(r"[ \t\n\r]*"))
_STR_STOP = re.compile(r'["\\]')
_NUMBER = cast(_AlwaysMatches, re.compile(r"[-+0-9.eE]*"))
_TOOL_NAME = re.compile(r"[\w.:/-]+")  # a name a broken call is still held for
# What a scalar's first character starts: a literal (its letters), or a number ("").
_SCALARS = {"t": "true", "f": "false", "n": "null", **dict.fromkeys("-0123456789", "")}
_CLOSER_OF = {"}": "{", "]": "["}  # (the opener each closes)
# Where a closer may come: after a value, or in place of the first key or value.
_CLOSING = frozenset({(_S_AFTER, "}"), (_S_AFTER, "]"), (_S_KEY, "}"), (_S_VALUE, "]")})


@dataclass(slots=True, eq=False)
class _Span:
    """A span the scanner is inside: a candidate call (its phase, its JSON validator state),
    or text it only follows to its end (``shown``: reasoning, code, a candidate released)."""

    family: _Family
    start: int
    phase: Callable[[TextScanner, _Span, str, int, int], int]  # its reader, a TextScanner method
    shown: bool = False  # its text flows as it comes; it is tracked only to find its end
    parts: list[str] = field(default_factory=list)  # held text of earlier feeds
    lang: str = ""  # a fence's language so far
    lang_done: bool = False
    vstart: int = -1
    vend: int = -1
    stack: list[str] = field(default_factory=list)
    state: int = _S_VALUE
    escape: bool = False  # the string's last character read is a backslash
    literal: str = ""
    watch: int = _W_DONE
    collect: list[str] = field(default_factory=list)
    name: str = ""  # the tool name, once its string closed
    is_array: bool = False
    closer: str = ""  # closing marker matched so far


@dataclass(slots=True, eq=False)
class _Group:
    """The calls of one closed candidate, held until every call is decided (``calls``: those
    not decided yet, each taken out as the driver decides it; all of one span, and one
    ``reason``). ``bound``: it waits for the end of the turn (a turn's rule), and whatever
    else follows it makes it text."""

    calls: list[TextCall]
    text: str  # the span's, shown once every call is decided ("" once any of them ran)
    bound: bool
    bare: bool  # bare JSON: a call only as the whole text


class TextScanner:
    """Per-stream state of the text codec, fed display-text fragments in order.

    What is fed ends up, in order and exactly once, either in :meth:`releasable` or in the
    span of a call handed to :meth:`consume_call`. Held are: a suffix that may still become a
    start marker, the call forming, and complete calls not yet decided (with whatever text
    follows them, which must not overtake them). Everything is decided character by character,
    never by looking further than what was fed, so that results do not depend on how the
    text was split.

    One loop reads every span: in text, the codec's table says what opens one (a fence, a
    delimiter, reasoning, a bare `{` or `[`); inside one, its phase (the method it holds) reads on.

    A driver's turn is scanned under a rule (``rule``), because a call the model only quoted
    in prose must never run (a page it repeats could otherwise run any tool):

    - bare JSON (``"end"`` and ``"anywhere"``) is a call only as the whole text: a bare
      ``{`` or ``[`` opens a candidate only as the first character of the turn (whitespace
      and reasoning spans aside), and the call it gives waits for the end of the turn;
    - under ``"end"`` every call waits for the end of the turn (:meth:`finish`). While
      calls wait, whitespace and further calls may follow (they are held in order); the
      first other character makes all of them text, released in order, once;
    - under ``"anywhere"`` a delimited or fenced call is decided as soon as it closes;
    - at the end of the turn a call cut short, or one whose JSON closed but is no call object,
      is an incomplete call (:meth:`incomplete_calls`): it would have run.

    Without a rule (None) every call counts where it closes, bare JSON anywhere: the codec's
    plain reading of a text (:meth:`TextCodec.parse_calls`).
    """

    def __init__(
        self, codec: TextCodec, offset: int = 0, *, rule: str | None = None, lead: bool = True
    ) -> None:
        self._codec = codec
        self._all_bound = rule == "end"  # every call waits for the end of the turn
        # A turn's rule: bare JSON only as the first thing of the turn, and a named call
        # that ends unrunnable is a call that cannot run (_would_run).
        self._bare_lead = rule is not None
        self._lead = lead  # nothing but whitespace and reasoning fed so far
        self._trigger = codec._trigger if lead or not self._bare_lead else codec._marker_trigger
        self._finished = False  # finish(): the turn's text is all in
        self._span: _Span | None = None  # None: in text
        # The text fed last, unprocessed: a marker that may still complete (it ends at
        # ``_total``), read again with the next fragment.
        self._tail = ""
        self._tail_held = False  # the tail may become a call's start, so it is not shown
        # Offsets count from the start of the whole text, which the first fragment fed
        # begins ``offset`` characters into (a scan that starts mid-stream).
        self._total = offset  # characters fed, from the whole text's start
        self._emitted = offset  # everything before this offset is queued (or dropped)
        # Plain fragments (str) and held spans (_Group), told apart by class where read.
        self._queue: deque[str | _Group] = deque()
        self._groups: list[_Group] = []
        self._closed = False

    # -- the questions ----------------------------------------------------------------------

    def releasable(self) -> str:
        """Text safe to show now, handed out once: everything up to the first held span."""
        queue = self._queue
        if not queue:
            return ""  # nothing new settled: every round while a call forms
        if len(queue) == 1 and isinstance(only := queue[0], str):
            queue.popleft()
            return only  # one plain fragment since the last round: most rounds
        out = []
        while queue and (isinstance(queue[0], str) or not queue[0].calls):
            item = queue.popleft()  # (a decided group: its text, "" once one of its calls ran)
            out.append(item if isinstance(item, str) else item.text)
        return "".join(out)

    def forming(self) -> tuple[bool, str | None]:
        """Is a call forming, and its tool name once the name string has closed. A JSON
        array has no name while forming: its first call does not speak for the others."""
        c = self._span
        if c is not None and not c.shown:
            return True, None if c.is_array else c.name or None
        return self._tail_held, None

    @property
    def at_lead(self) -> bool:
        """Nothing but whitespace and reasoning spans has been fed: a bare call may still
        open (under a rule, only here)."""
        return self._lead

    def quiet(self) -> bool:
        """Nothing held and nothing undecided: no call forming, no marker prefix held, no
        complete call waiting for a decision. ``not forming()[0] and not complete_calls()``
        in O(1), for a client that asks after every fragment."""
        c = self._span
        return (c is None or c.shown) and not self._tail_held and not self._groups

    def complete_calls(self) -> list[TextCall]:
        """Calls whose candidate closed and parsed, not yet consumed or released, that may be
        decided now (one that waits for the end of the turn only after :meth:`finish`)."""
        return self._decidable(complete=True)

    def incomplete_calls(self) -> list[TextCall]:
        """Calls that would have run but cannot (``reason`` set), once the turn has ended
        (:meth:`finish`; they wait for it under either rule): consumed (reported to the
        model) or released (shown)."""
        return self._decidable(complete=False)

    def waiting_calls(self) -> list[TextCall]:
        """Calls (and would-be calls) held until the end of the turn: until then a driver
        that may run one holds them, and the text after them."""
        return [] if self._finished else [c for g in self._groups if g.bound for c in g.calls]

    def _decidable(self, complete: bool) -> list[TextCall]:
        if not self._groups:
            return []  # asked every round while a call forms, when none has closed yet
        groups = [g for g in self._groups if self._finished or not g.bound]
        return [c for g in groups for c in g.calls if (c.reason is None) is complete]

    # -- the driver's decisions ---------------------------------------------------------------

    def consume_call(self, call: Any) -> None:
        """The call ran: its span (fences and delimiters included) is never shown.

        ``call`` is a :class:`TextCall` (or anything with its ``end``, ``name`` and
        ``arguments``). Of an array, the span goes once any of its calls ran; it stays held
        until each of them is consumed or released. Unknown calls are ignored, so that several
        drivers may report the same call."""
        self._decide(call, consumed=True)

    def release_call(self, call: Any) -> None:
        """A complete call that is nobody's: its text is shown (unless a sibling in its array
        ran)."""
        self._decide(call, consumed=False)

    def release_held(self) -> None:
        """The forming call is not a call of anyone's: its held text becomes releasable, and
        the rest of it flows as text, unscanned, until its JSON (and fence) ends. A marker
        prefix still undecided (``<tool_c``) stays held: it is no call yet."""
        c = self._span
        if c is None or c.shown:
            return
        # Its text and a broken call's marker prefix (the one tail a candidate has beside it).
        tail, self._tail, self._tail_held = self._tail, "", False
        # No JSON opened yet: there is no end to follow, it is given up; else it is followed.
        release = self._give_up if c.vstart < 0 else self._fails
        release(c, tail, self._total - len(tail), len(tail))

    def finish(self) -> None:
        """The turn's text is all in (its wire's DONE, or the end of input), and nothing is
        released yet: the calls that waited for the end may be decided now. Under a rule, a
        named call still forming is cut: held as an incomplete call (its text is the model's
        call, not prose). A marker prefix, or a call whose name never came, is text. Text fed
        after this is shown unscanned."""
        if self._finished or self._closed:
            return
        self._finished = True
        c = self._span
        if self._would_run(c) and c.phase is not TextScanner._phase_to_end:
            held = "".join(c.parts)
            raw = held[c.vstart - c.start :]  # (named: its value has started)
            args, why = _cut_call(self._codec, raw)
            self._hold(c, [TextCall(c.name, args, c.start, self._total, raw, why)], held, True)
            self._span = None  # held as a call, not let go as text
        self._let_go()

    def close(self) -> None:
        """End of stream: everything still held becomes releasable; a call cut short is no
        call, and a complete call not consumed is shown as text."""
        if self._closed:
            return
        self._closed = True
        self._let_go()
        for g in self._groups:
            g.calls.clear()
        self._groups.clear()

    # -- feeding ------------------------------------------------------------------------------

    def feed(self, fragment: str) -> bool:
        """Take the next display-text fragment; return :meth:`quiet` after it (a client asks
        after every fragment, and the plain-text path knows the answer without a call)."""
        if self._closed:
            raise ValueError("the text scanner is closed")
        if not fragment:
            return self.quiet()
        self._total += len(fragment)
        if self._finished:  # after the end of the turn: shown, never scanned
            self._queue.append(fragment)
            self._emitted = self._total
            return self.quiet()
        if self._span is None and not self._tail and self._trigger.search(fragment) is None:
            # Plain text, most fragments: nothing held (no span, no tail held without a tail,
            # all before the fragment emitted), no marker starts in it. What the loop below
            # would do, without its machinery.
            if (self._lead or self._groups) and _WS.match(fragment).end() < len(fragment):
                self._other_text()
            self._queue.append(fragment)
            self._emitted = self._total
            return not self._groups  # no span, no held tail: quiet() but for groups
        s = self._tail + fragment
        self._tail, self._tail_held = "", False
        i, n = 0, len(s)
        s_abs = self._total - n  # (where ``s`` begins in the whole text)
        while i < n:
            if (c := self._span) is None:
                i = self._scan_text(s, i, s_abs)
            else:
                i = c.phase(self, c, s, i, s_abs)
        # Show what is settled; keep what is held.
        c = self._span
        if c is not None and not c.shown:  # (a broken call may keep a marker prefix as tail)
            c.parts.append(s[max(c.start - s_abs, 0) : n - len(self._tail)])
        else:
            self._emit(s, s_abs, self._total - (len(self._tail) if self._tail_held else 0))
        return self.quiet()

    # -- internals: output --------------------------------------------------------------------

    def _hold(self, c: _Span, calls: list[TextCall], text: str, bound: bool) -> None:
        """A closed candidate's calls wait, in order, for the driver's decision."""
        group = _Group(calls, text, bound, c.family.kind == _BARE)
        self._queue.append(group)
        self._groups.append(group)

    def _let_go(self) -> None:
        """Nothing is scanned on: what is still held (the call forming, a marker prefix) is
        text from here, queued in order."""
        c = self._span
        if c is not None and not c.shown:
            self._queue.append("".join(c.parts))
        if self._tail and self._tail_held:
            self._queue.append(self._tail)
        self._span = None
        self._tail, self._tail_held = "", False  # (the tail, a marker prefix, is text now)
        self._emitted = self._total

    def _other_text(self, bare_only: bool = False) -> None:
        """Text that is neither whitespace nor a call came: the turn no longer starts here
        (a bare `{` opens nothing from now on), and the calls that wait for the end of the
        turn do not end it: they are text (``bare_only``: only a bare call, which must be
        the whole text, while a delimited or fenced one may still be followed by more)."""
        if self._lead and self._bare_lead:
            self._trigger = self._codec._marker_trigger
        self._lead = False
        if not self._groups:
            return
        for g in self._groups:
            if g.bound and (g.bare or not bare_only):
                g.calls.clear()
        self._groups = [g for g in self._groups if g.calls]

    def _emit(self, s: str, s_abs: int, upto: int) -> None:
        """Queue ``s`` from the emitted cursor to the absolute offset ``upto``."""
        if upto > self._emitted:
            self._queue.append(s[self._emitted - s_abs : upto - s_abs])
            self._emitted = upto

    def _held_text(self, c: _Span, s: str, s_abs: int, upto: int) -> str:
        return "".join(c.parts) + s[max(c.start - s_abs, 0) : upto - s_abs]

    def _would_run(self, c: _Span | None) -> TypeGuard[_Span]:
        """A named call (not an array) forming under a turn's rule: if it ends unrunnable
        (cut, broken, no call object) it is a call that cannot run, not prose."""
        return self._bare_lead and c is not None and not c.shown and not c.is_array and bool(c.name)

    def _decide(self, call: Any, consumed: bool) -> None:
        said = tuple(getattr(call, key, None) for key in ("end", "name", "arguments"))
        for g in self._groups:  # (their spans are disjoint: one ends where the call does)
            for k, candidate in enumerate(g.calls):
                if (candidate.end, candidate.name, candidate.arguments) == said:
                    del g.calls[k]
                    if consumed:  # the span goes: it is never shown
                        g.text = ""
                    if not g.calls:
                        self._groups.remove(g)
                    return

    # -- internals: text ----------------------------------------------------------------------

    def _scan_text(self, s: str, i: int, s_abs: int) -> int:
        """Ordinary text: find the next opener of the codec's table, and open its span."""
        n = len(s)
        while True:
            m = self._trigger.search(s, i)  # (a bare `{` stops being one: read it each time)
            j = n if m is None else m.start()
            if (self._lead or self._groups) and _WS.match(s, i).end() < j:
                self._other_text()  # prose between the calls, or before a bare `{`
            if m is None:
                return n
            rows = self._codec._markers[s[j]]  # (longest first)
            waiting = [  # (a marker longer than the rest of the text that begins with it)
                row.kind for row in rows if n - j < len(row.opener) and row.opener.startswith(s[j:])
            ]
            if waiting:
                # A marker may still complete: wait for more text. Only a marker that may
                # start a call is held; a reasoning tag is shown meanwhile.
                self._tail, self._tail_held = s[j:], any(kind != _REASON for kind in waiting)
                return n
            row = next((row for row in rows if s.startswith(row.opener, j)), None)
            abs_j = s_abs + j
            if row is not None and row.kind == _REASON:
                if self._groups:
                    self._other_text()  # after a call, even reasoning ends the turn's calls
                self._span = _Span(row, abs_j, TextScanner._phase_to_end, shown=True)
                return j + len(row.opener)
            bare = row is not None and row.kind == _BARE
            if bare and self._bare_lead and not self._lead:
                row = None  # (under a rule, a bare `{` opens only as the turn's first text)
            if row is not None and abs_j >= self._emitted:
                self._other_text(bare_only=not bare)  # a call may follow a call, not bare JSON
                self._emit(s, s_abs, abs_j)
                phase = TextScanner._phase_lang if row.kind == _FENCE else TextScanner._phase_value
                self._span = _Span(row, abs_j, phase)
                return j if bare else j + len(row.opener)  # (bare: its bracket is its value's)
            self._other_text()  # what looked like a start is text
            i = j + 1

    # -- internals: a span's phases -----------------------------------------------------------

    def _give_up(self, c: _Span, s: str, s_abs: int, at: int) -> int:
        """The candidate is no call: release its text up to ``at`` (an index into ``s``) and
        go on from there, as text, or in the body of a fence (one that holds no call is code)."""
        if not c.shown:  # (a released one is text already: the turn's calls were let go then)
            self._fails(c, s, s_abs, at)
        if c.family.kind == _FENCE:  # no candidate from here: the body of a fence (code)
            c.phase = TextScanner._phase_to_end
        else:  # or text
            self._span = None
        return at

    def _fails(self, c: _Span, s: str, s_abs: int, at: int) -> int:
        """Cannot be a call (``at``, an index into ``s``, shows it; it is read again with the
        rule off): its held text is shown now, but its JSON followed to its end without
        scanning inside it, so that a record's nested object is not taken for a call."""
        self._queue.append(self._held_text(c, s, s_abs, s_abs + at))
        c.parts, c.shown, c.watch = [], True, _W_DONE  # released: its parts shown, not watched
        self._emitted = s_abs + at
        self._other_text()
        return at

    def _breaks(self, c: _Span, s: str, s_abs: int, at: int) -> int:
        """A character no JSON allows there (``at``, an index into ``s``). A named call whose
        JSON broke (an unescaped quote, a stray character) is held to its end delimiter, then
        a call that cannot run, reported if it ends the turn (any other marker before that
        delimiter makes it text); anything else is no call."""
        if self._would_run(c) and c.family.kind == _DELIM and _TOOL_NAME.fullmatch(c.name):
            c.phase = TextScanner._phase_to_end
            return at
        return self._give_up(c, s, s_abs, at)

    def _finish(self, c: _Span, s: str, s_abs: int, end: int) -> int:
        """The candidate closed at ``end`` (an index into ``s``): a group of calls, or text."""
        self._span = None
        if c.shown:
            return end
        end_abs = s_abs + end
        text = self._held_text(c, s, s_abs, end_abs)
        raw = text[c.vstart - c.start : c.vend - c.start]
        found, why = self._codec._calls_of(raw)
        if found:
            bound = self._all_bound or (c.family.kind == _BARE and self._bare_lead)
            calls = [TextCall(name, args, c.start, end_abs) for name, args in found]
            self._hold(c, calls, text, bound)
        elif self._would_run(c):
            # Named, closed, and still no call object: a call that cannot run, which the
            # model is told of if it ends the turn (its text is the model's call, not prose).
            # It waits for the end of the turn under either rule: reported only if it ends it.
            self._hold(c, [TextCall(c.name, {}, c.start, end_abs, raw, why)], text, True)
        else:  # no call: its text is text, as a candidate's that fails is
            return self._fails(c, s, s_abs, end)
        self._emitted = end_abs
        return end

    def _phase_lang(self, c: _Span, s: str, i: int, s_abs: int) -> int:
        """After a fence marker: hold while the language may become an accepted one."""
        for at in range(i, len(s)):  # (not enumerate(s[i:]): a copy per fence in the text)
            ch = s[at]
            if ch == " " or ch == "\t":
                c.lang_done = c.lang_done or bool(c.lang)
            elif ch in "\r\n{[" and c.lang.lower() in self._codec.fence_languages:
                c.phase = TextScanner._phase_value
                return at
            elif not c.lang_done and (c.lang + ch).lower() in self._codec._lang_prefixes:
                c.lang += ch
            else:  # another language (its line end too), or text after the language
                return self._give_up(c, s, s_abs, at)
        return len(s)

    def _phase_to_end(self, c: _Span, s: str, i: int, s_abs: int) -> int:
        """Only the span's end marker is looked for. Reasoning or code is shown as it comes,
        its end closes it. A broken call (delimited) is held: its end delimiter closes it (an
        invalid call); the start of any other marker (a fence, a delimiter, reasoning) first
        makes it text, read again from that marker. With no end in the text, its longest
        suffix that may begin one is kept as the tail (held if the span is), matched again
        with the next fragment."""
        closers = c.family.closers
        ends = (closers[0], *self._codec._openers) if c.family.kind == _DELIM else closers
        m = self._codec._ends_res[ends].search(s, i)
        if m is None:
            n = len(s)
            for k in range(min(max(map(len, ends)) - 1, n - i), 0, -1):
                if any(e.startswith(s[n - k :]) for e in ends):
                    self._tail, self._tail_held = s[n - k :], not c.shown
                    break
            return n
        if m.group() in closers:  # (the end delimiter first, where it and an opener both start)
            c.vend = s_abs + m.start()
            return self._finish(c, s, s_abs, m.end())  # (shown: it only ends)
        return self._give_up(c, s, s_abs, m.start())

    def _phase_closer(self, c: _Span, s: str, i: int, s_abs: int) -> int:
        """The JSON closed inside a fence or delimiters: only the closing marker may follow
        (whitespace before it), read as it comes: the first character that no closer
        continues gives the candidate up."""
        if not c.closer:
            i = _WS.match(s, i).end()
        for at in range(i, len(s)):
            c.closer += s[at]
            if c.closer in c.family.closers:
                return self._finish(c, s, s_abs, at + 1)
            if not any(x.startswith(c.closer) for x in c.family.closers):
                return self._give_up(c, s, s_abs, at)
        return len(s)

    def _phase_value(self, c: _Span, s: str, i: int, s_abs: int) -> int:
        """Follow the JSON value over ``s[i:]`` (whitespace, after a fence or start delimiter,
        first), checking the first-key rule while it is held: to its end (bare JSON closes
        there, a fenced or delimited value waits for its closing marker), to a character that
        breaks it (:meth:`_breaks`) or shows it is no call (:meth:`_fails`), or to the end of
        ``s``. Lenient where healing can still repair: a trailing comma passes.
        """
        stack, n = c.stack, len(s)
        while i < n:
            st, w = c.state, c.watch
            if st in (_S_STRING, _S_KEY_STRING):
                m = _STR_STOP.search(s, i + c.escape)  # (the character after a backslash too)
                j = n if m is None else m.start()
                c.escape = s[j : j + 1] == "\\"
                if w in (_W_KEY, _W_NAME):  # the string watched for, collected as written
                    c.collect.append(s[i : j + c.escape])
                    raw = "".join(c.collect)
                    if w == _W_KEY and (c.escape or raw not in self._codec._key_prefixes):
                        return self._fails(c, s, s_abs, j + c.escape)  # (no escape in a name key)
                if m is None:
                    return n
                i = j + 1
                if c.escape:
                    continue
                if w == _W_KEY and raw not in self._codec.name_keys:
                    return self._fails(c, s, s_abs, j)
                if w == _W_NAME:
                    with suppress(ValueError):
                        c.name = json.loads('"' + raw + '"', strict=False)
                    if not c.name:
                        return self._fails(c, s, s_abs, j)
                if w in (_W_KEY, _W_NAME):
                    c.watch, c.collect = w + 1, []
                c.state = _S_COLON if st == _S_KEY_STRING else _S_AFTER
                continue
            if st == _S_NUMBER:
                i = _NUMBER.match(s, i).end()
                if i >= n:
                    return n
                c.state = _S_AFTER
                continue
            if st == _S_LITERAL:
                if s[i] != c.literal[0]:
                    return self._breaks(c, s, s_abs, i)
                c.literal = c.literal[1:]
                i += 1
                if not c.literal:
                    c.state = _S_AFTER
                continue
            ch = s[i]
            if ch in " \t\n\r":
                i = _WS.match(s, i).end()
                if i >= n:
                    return n
                ch = s[i]
            if w < _W_DONE:  # the watched prefix: only its next character may come
                if ch != _WATCH[w]:
                    return self._fails(c, s, s_abs, i)
                c.watch = w + 1
            if not stack and ch not in "{[":  # before the value: only JSON may come
                return self._breaks(c, s, s_abs, i)
            if ch == '"' and st in (_S_VALUE, _S_KEY):
                c.state = _S_KEY_STRING if st == _S_KEY else _S_STRING
            elif (ch == "{" or ch == "[") and st == _S_VALUE:
                if not stack:  # the value's first character
                    c.is_array, c.vstart = ch == "[", s_abs + i
                    c.watch = 0 if c.is_array else 1
                stack.append(ch)
                c.state = _S_KEY if ch == "{" else _S_VALUE
            elif (st, ch) in _CLOSING and stack[-1] == _CLOSER_OF[ch]:
                stack.pop()  # (`{}`, `[]`, or a trailing comma: closed as after a value)
                c.state = _S_AFTER
                if not stack:
                    c.vend = s_abs + i + 1
                    if not c.family.closers:  # (bare JSON: its value ends it)
                        return self._finish(c, s, s_abs, i + 1)
                    c.phase = TextScanner._phase_closer
                    return i + 1
            elif ch == "," and st == _S_AFTER:
                c.state = _S_KEY if stack[-1] == "{" else _S_VALUE
            elif ch == ":" and st == _S_COLON:
                c.state = _S_VALUE
            elif st == _S_VALUE and ch in _SCALARS:
                c.literal = _SCALARS[ch]
                c.state = _S_LITERAL if c.literal else _S_NUMBER
                continue
            else:
                return self._breaks(c, s, s_abs, i)
            i += 1
        return n
