"""A draft descriptor inferred from one recorded stream (``mcs-formats new NAME --from STREAM``).

Why: writing a descriptor starts with reading a capture and asking the same questions every
time (what names an event, which field is the SLOT, where text and arguments stream, what is
DONE). The answers follow from the stream's shape in most cases, so a draft saves the first
hour; every answer is a guess, so each one is written with a ``# REVIEW:`` comment saying what
was guessed and from what evidence. The draft is plain descriptor data: it validates and
replays its own stream, and the author corrects it from there.

Two families of wire, which every built-in descriptor falls into, are told apart by the
stream itself:

- *event wires* (a field, or the one key that wraps the payload, names each event; start /
  delta / stop per SLOT): each event type gets rules from its role (``open``, ``append``,
  ``args``, ``close``, ``set``, ``merge``, ``finish``, ``error``), read off its name (``*start``,
  ``*delta``, ``*stop``, ...) and, failing that, off its structure (a sub-object once per slot,
  strings that vary, nothing but the slot);
- *delta-merge wires* (every chunk alike, no event names): the chunk's delta object is folded
  (strings concatenate, lists of calls merge by their SLOT), or, where it carries a list of
  whole parts, the parts are extended.

Every path the draft writes is spelled by :func:`spell` alone, so that a change of path syntax
is one edit there.

The library never imports the CLI; the CLI calls :func:`infer_draft` and :meth:`Draft.to_yaml`.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# -- path spelling: the one place where the draft writes a path -------------------------------

Step = tuple[str, "str | None"]  # a field, and the SLOT key of the list item it picks ("*": all)


def spell(steps: Iterable[Step | str]) -> str:
    """The descriptor spelling of a path, built from its steps.

    A step is a field name, or ``(field, slot)`` where ``slot`` picks an item of the list at
    that field by the SLOT key the event carries (``("content", "index")``), or every item
    (``("content", "*")``). ``[("content", "index"), "text"]`` is ``content[index].text``; a
    path of plain fields is a read path (``delta.text``); no steps is ``""``, the object itself.
    """
    out: list[str] = []
    for step in steps:
        name, slot = (step, None) if isinstance(step, str) else step
        out.append(name if slot is None else f"{name}[{slot}]")
    return ".".join(out)


def _fields(path: str) -> list[str]:
    return [p for p in path.split(".") if p] if path else []


# -- the draft -----------------------------------------------------------------------------------

Pointer = tuple[str, ...]


@dataclass
class Draft:
    """A descriptor under construction and the review notes on its keys."""

    descriptor: dict[str, Any]
    reviews: dict[Pointer, list[str]] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)

    def review(self, pointer: Sequence[str], note: str) -> None:
        self.reviews.setdefault(tuple(pointer), []).append(note)

    def to_yaml(self, schema_ref: str = "../schemas/format.schema.json") -> str:
        """The draft as a descriptor file, each guess's ``# REVIEW:`` comment above its key."""
        head = [
            f"# yaml-language-server: $schema={schema_ref}",
            f"# A DRAFT inferred by `mcs-formats new --from` from {self.summary[0]}."
            if self.summary
            else "# A DRAFT inferred by `mcs-formats new --from`.",
            "# Every `# REVIEW:` comment is a guess and the evidence behind it: check each one",
            "# against the provider's documentation, then delete the comment.",
        ]
        lines = head + _render_map(self.descriptor, (), 0, self.reviews, top=True)
        return "\n".join(lines) + "\n"


# -- YAML rendering (block style as formats/*.yaml write it, with comments) ---------------------

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "y", "n", "off", "~"}


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _key(value: str) -> str:
    return value if value == "on" else _scalar(value)


def _flow(value: Any) -> str | None:
    """The value in flow style (``{at: x, from: y}``, ``[a, b]``), or None when too long."""
    if isinstance(value, dict):
        if any(isinstance(v, list) and any(isinstance(x, dict) for x in v) for v in value.values()):
            return None  # a table of rules reads best as a block
        parts = []
        for k, v in value.items():
            inner = _flow(v)
            if inner is None:
                return None
            parts.append(f"{_key(k)}: {inner}")
        text = "{" + ", ".join(parts) + "}"
    elif isinstance(value, list):
        parts = []
        for v in value:
            inner = _flow(v)
            if inner is None:
                return None
            parts.append(inner)
        text = "[" + ", ".join(parts) + "]"
    else:
        return _scalar(value)
    return text if len(text) <= 84 else None


def _notes(reviews: dict[Pointer, list[str]], pointer: Pointer, indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for note in reviews.get(pointer, []):
        wrapped = textwrap.wrap(note, width=max(40, 98 - indent - 10))
        out.append(f"{pad}# REVIEW: {wrapped[0]}")
        out.extend(f"{pad}#   {line}" for line in wrapped[1:])
    return out


def _render_map(
    data: dict[str, Any],
    pointer: Pointer,
    indent: int,
    reviews: dict[Pointer, list[str]],
    top: bool = False,
) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for k, v in data.items():
        here = pointer + (k,)
        if top and isinstance(v, (dict, list)):
            lines.append("")
        lines.extend(_notes(reviews, here, indent))
        flow = None if (top and isinstance(v, dict) and v) else _flow(v)
        if flow is not None and not (isinstance(v, list) and v and isinstance(v[0], dict)):
            lines.append(f"{pad}{_key(k)}: {flow}")
        elif isinstance(v, dict):
            lines.append(f"{pad}{_key(k)}:")
            lines.extend(_render_map(v, here, indent + 2, reviews))
        else:
            lines.append(f"{pad}{_key(k)}:")
            lines.extend(_render_list(v, here, indent + 2, reviews))
    return lines


def _render_list(
    data: list[Any], pointer: Pointer, indent: int, reviews: dict[Pointer, list[str]]
) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for i, item in enumerate(data):
        flow = _flow(item)
        if not isinstance(item, dict) or not item:
            lines.append(f"{pad}- {flow if flow is not None else _scalar(item)}")
            continue
        first = True
        for k, v in item.items():
            lead = f"{pad}- " if first else f"{pad}  "
            inner = _flow(v)
            if inner is not None:
                lines.append(f"{lead}{_key(k)}: {inner}")
            elif isinstance(v, dict):
                lines.append(f"{lead}{_key(k)}:")
                lines.extend(_render_map(v, pointer + (str(i), k), indent + 4, reviews))
            else:
                lines.append(f"{lead}{_key(k)}:")
                lines.extend(_render_list(v, pointer + (str(i), k), indent + 4, reviews))
            first = False
    return lines


# -- vocabulary: what names usually mean --------------------------------------------------------

NAME_KEYS = (
    "name",
    "tool_name",
    "toolName",
    "toolCallName",
    "tool",
    "function_name",
    "functionName",
)
CALL_ID_KEYS = ("call_id", "tool_call_id", "toolCallId", "toolUseId", "tool_use_id", "callId")
ARGS_KEYS = ("arguments", "args", "input", "parameters", "params", "partial_json")
STOP_KEYS = ("stop_reason", "finish_reason", "stopReason", "finishReason", "done_reason")
USAGE_KEYS = ("usage", "usageMetadata", "usage_metadata")
REASONING_WORDS = re.compile(r"think|reason|thought", re.I)
NOT_TEXT_WORDS = re.compile(r"signature|citation|annotation|refusal|plan|redacted", re.I)
ERROR_WORDS = re.compile(r"error|exception", re.I)
ROLE_WORDS = [
    ("open", re.compile(r"(^|[._\-])(start|added|begin|open|created)$|Start$|Added$", re.I)),
    ("delta", re.compile(r"(^|[._\-])(delta|chunk|progress)$|Delta$", re.I)),
    ("close", re.compile(r"(^|[._\-])(stop|end|done|close|finish|completed?)$|(Stop|End|Done)$")),
]
# Fields that vary from event to event but carry nothing (padding, obfuscation, counters).
NOISE_KEYS = ("p", "obfuscation", "padding", "sequence_number", "logprobs")
CONTAINERS = ("delta", "data", "message", "payload", "chunk", "event")
GENERIC_FRAGMENTS = ("delta", "chunk", "fragment", "piece", "data")
ID_KEY = re.compile(r"^(type|id)$|_id$|Id$")
_ID = re.compile(r"(^|_)id$|Id$")  # a field that holds an id
ARGS_HINT = re.compile(r"json|arg|input|param", re.I)
FINISH_WORDS = re.compile(r"stop|end|done|complete|finish|bye", re.I)
NAME_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]*$")


def _role_of_name(name: str) -> str | None:
    for role, pattern in ROLE_WORDS:
        if pattern.search(name):
            return role
    return None


def _family(name: str) -> str:
    """An event name without its role word (``content_block_start`` -> ``content_block``)."""
    stripped = re.sub(
        r"([._\-]?)(start|added|begin|open|delta|chunk|stop|end|done|close)$", "", name, flags=re.I
    )
    return stripped or name


def _get(obj: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _leaves(obj: Any, prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    """Every (path, value) under a dict, lists not entered."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, dict) and v:
                yield from _leaves(v, prefix + (k,))
            else:
                yield prefix + (k,), v


def _first_key(obj: Any, keys: Sequence[str]) -> str | None:
    if not isinstance(obj, dict):
        return None
    for key in keys:
        if key in obj:
            return key
    return None


def _looks_json(text: str) -> bool:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
        return True
    except ValueError:
        return stripped.startswith("{")


# -- reading the stream --------------------------------------------------------------------------


@dataclass
class Event:
    index: int
    name: str | None
    payload: dict[str, Any]
    sub: str | None = None  # the sub-kind, where a nested discriminator names one


@dataclass
class Disc:
    field: str
    or_wrapped: bool = False

    def spelled(self) -> Any:
        return {"field": self.field, "or_wrapped": True} if self.or_wrapped else self.field


def find_discriminator(events: list[dict[str, Any]]) -> tuple[Disc | None, str]:
    """The field that names each event, and the evidence; None for a delta-merge wire."""
    n = len(events)
    named = sum(1 for e in events if isinstance(e.get("_event"), str))
    wrapped = sum(1 for e in events if len(e) == 1 and isinstance(next(iter(e.values())), dict))
    if named and named + wrapped >= n * 0.8:
        return Disc("_event", wrapped > 0), f"`_event` names {named} of {n} events"
    if wrapped >= n * 0.8:
        return (
            Disc("_event", True),
            f"{wrapped} of {n} events are one key wrapping an object (the event's name)",
        )
    best: tuple[float, int, str] | None = None
    preferred = ("type", "event", "kind", "event_type", "eventType", "_type")
    for key in {k for e in events for k in e}:
        values = [e.get(key) for e in events]
        texts = [v for v in values if isinstance(v, str)]
        if len(texts) < n * 0.9 or not all(NAME_VALUE.match(v) for v in texts):
            continue
        distinct = len(set(texts))
        if distinct < 2 or (distinct > 0.8 * n and n > 10):  # ids, timestamps: no names
            continue
        score = (len(texts) / n, -preferred.index(key) if key in preferred else -99, key)
        if best is None or score > best:
            best = score
    if best is None:
        return None, "no field names the events (each chunk has the same shape)"
    key = best[2]
    distinct = len({e.get(key) for e in events})
    return Disc(key), f"`{key}` is on every event with {distinct} distinct names"


def _name_and_payload(event: dict[str, Any], disc: Disc) -> tuple[str | None, dict[str, Any]]:
    value = event.get(disc.field)
    if isinstance(value, str):
        return value, event
    if disc.or_wrapped and len(event) == 1:
        ((key, inner),) = event.items()
        if isinstance(inner, dict):
            return key, inner
    return None, event


# -- event wires ---------------------------------------------------------------------------------


@dataclass
class Kind:
    """One event type (or sub-kind) and what its events carry."""

    name: str
    sub: str | None
    events: list[Event]
    slots: list[str] = field(default_factory=list)
    role: str = ""
    why: str = ""

    @property
    def label(self) -> str:
        return self.name if self.sub is None else f"{self.name} / {self.sub}"

    @property
    def first(self) -> int:
        return self.events[0].index


class EventWire:
    """The inference for a wire whose events are named."""

    def __init__(self, events: list[dict[str, Any]], disc: Disc, draft: Draft) -> None:
        self.raw = events
        self.disc = disc
        self.draft = draft
        self.events = [Event(i, *_name_and_payload(e, disc)) for i, e in enumerate(events)]
        self.envelope = self._envelope_keys()
        self.string_ids = False  # the SLOTs are string ids, one per event (_slot_keys)
        self.slot_keys = self._slot_keys()
        self.kinds: dict[tuple[str, str | None], Kind] = {}
        self.sub_disc: dict[str, str] = {}
        self.message_from: str | None = None  # the read path of the message object
        self.message: dict[str, Any] = {}
        self.lists: dict[str, tuple[Step, ...]] = {}  # open kind -> its item's steps
        self.items: dict[
            tuple[Any, ...], dict[str, Any]
        ] = {}  # (open kind name, slot values) -> item seen
        self.item_kind: dict[tuple[Any, ...], str] = {}
        self.text_places: list[tuple[tuple[Step, ...], str, set[Any]]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (open kind, item) for items with a name
        self.args_fragments: dict[str, str] = {}  # open kind -> the args field streamed
        self.open_from: dict[str, tuple[str, ...]] = {}  # open kind -> its item's source
        self.delta_targets: dict[tuple[Any, ...], tuple[str | None, bool]] = {}
        self.opened_by: dict[tuple[Any, ...], str] = {}  # (kind, sub) -> the open kind of its items

    # evidence gathering

    def _envelope_keys(self) -> set[str]:
        """Fields on most event types that are no content: padding, sequence numbers."""
        kinds: dict[str, set[str]] = {}
        for ev in self.events:
            kinds.setdefault(ev.name or "", set()).update(ev.payload)
        keys: Counter[str] = Counter(k for ks in kinds.values() for k in ks)
        out = {self.disc.field, "_event", *NOISE_KEYS}
        for key, count in keys.items():
            values = [ev.payload.get(key) for ev in self.events if key in ev.payload]
            scalar = all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values)
            if scalar and count >= max(3, 0.6 * len(kinds)) and not self._slot_like(key):
                out.add(key)
        return out

    @staticmethod
    def _slot_like(key: str) -> bool:
        return bool(re.search(r"index|idx", key, re.I)) or key in ("n", "slot")

    def _slot_keys(self) -> list[str]:
        """Int fields named like an index, outer first; else the string ids shared by kinds
        (an event protocol keys each part by its own id: a text part by ``id``, a call by
        ``toolCallId``), each event then keyed by the one it carries (:attr:`string_ids`).
        An id on events that carry nothing else, always the same (a run's, a thread's), is
        no SLOT."""
        counts: Counter[str] = Counter()
        for ev in self.events:
            for key, value in ev.payload.items():
                if isinstance(value, int) and not isinstance(value, bool) and self._slot_like(key):
                    counts[key] += 1
        if counts:
            return [k for k, _ in counts.most_common()]
        self.string_ids = True
        shared: dict[str, set[Any]] = {}
        values: dict[str, set[Any]] = {}
        content: set[str] = set()
        for ev in self.events:
            ids = [k for k, v in ev.payload.items() if isinstance(v, str) and _ID.search(k)]
            rest = [k for k in ev.payload if k not in ids and k != self.disc.field]
            for key in ids:
                shared.setdefault(key, set()).add(ev.name)
                values.setdefault(key, set()).add(ev.payload[key])
                if rest:
                    content.add(key)
        return [
            k
            for k, names in shared.items()
            if len(names) >= 2 and (k in content or len(values[k]) > 1)
        ]

    def build(self) -> dict[str, Any]:
        self._group()
        self._find_message()
        for kind in self.kinds.values():
            self._classify(kind)
        # Opens first (they name the lists), then deltas (they name the fields), then the rest.
        order = {"open": 0, "delta": 1}
        ranked = sorted(self.kinds.items(), key=lambda kv: order.get(kv[1].role, 2))
        rules = {kind_key: self._rules(kind) for kind_key, kind in ranked}
        self._scope(rules)
        return self._events_section(rules)

    def _scope(self, rules: dict[tuple[str, str | None], list[Any]]) -> None:
        """Two opens of one list whose slot values collide number their own ids: each kind
        gets its own scope, named after its event family, on every rule that addresses it."""
        opens = [k for k in self.kinds.values() if k.role == "open"]
        for kind in opens:
            rivals = [
                o
                for o in opens
                if o is not kind
                and self.lists.get(o.name) == self.lists.get(kind.name)
                and self._slot_set(o) & self._slot_set(kind)
            ]
            if not rivals:
                continue
            scope = re.sub(r"[^A-Za-z0-9_-]", "_", _family(kind.name)) or "items"
            if not re.match(r"^[A-Za-z_]", scope):
                scope = f"s_{scope}"
            users = [key for key, opener in self.opened_by.items() if opener == kind.name]
            for key in [(kind.name, kind.sub), *users]:
                for rule in rules.get(key, []):
                    if isinstance(rule, dict):
                        for op in rule.values():
                            if isinstance(op, dict) and "at" in op:
                                op["scope"] = scope
                if key in self.kinds:
                    self.kinds[
                        key
                    ].why += (
                        f"; scope `{scope}`: its ids collide with `{rivals[0].name}`'s in one list"
                    )

    def _slot_set(self, kind: Kind) -> set[Any]:
        return {self._slot_values(ev, kind) for ev in kind.events}

    def _group(self) -> None:
        by_name: dict[str, list[Event]] = {}
        for ev in self.events:
            if ev.name is not None:
                by_name.setdefault(ev.name, []).append(ev)
        for name, evs in by_name.items():
            sub = self._sub_discriminator(name, evs)
            if sub:
                self.sub_disc[name] = sub
                for ev in evs:
                    ev.sub = str(_get(ev.payload, _fields(sub)))
            for ev in evs:
                key = (name, ev.sub)
                if key not in self.kinds:
                    self.kinds[key] = Kind(name, ev.sub, [])
                self.kinds[key].events.append(ev)
        for kind in self.kinds.values():
            present = {k for ev in kind.events for k in ev.payload}
            kind.slots = [k for k in self.slot_keys if k in present]
            if self.string_ids:  # one id keys a part: never nested as index lists nest
                kind.slots = kind.slots[:1]

    def _sub_discriminator(self, name: str, evs: list[Event]) -> str | None:
        """A delta event whose fragment object names its own kind (``delta.type``)."""
        if _role_of_name(name) != "delta" and not name.endswith(("Delta", "delta")):
            return None
        for key in ("delta", "data", "chunk"):
            values = [_get(ev.payload, (key, self.disc.field)) for ev in evs]
            if all(isinstance(v, str) for v in values) and values:
                return spell([key, self.disc.field])
        return None

    def _find_message(self) -> None:
        """The first event without a slot that carries the message object."""
        for kind in sorted(self.kinds.values(), key=lambda k: k.first):
            if kind.slots:
                continue
            payload = kind.events[0].payload
            for path, value in self._objects(payload):
                if "role" in value or any(isinstance(v, list) for v in value.values()):
                    self.message_from, self.message = spell(path), value
                    return
            return

    def _objects(
        self, payload: dict[str, Any], depth: int = 3
    ) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
        """Sub-objects of an event, outermost first."""
        out: list[tuple[tuple[str, ...], dict[str, Any]]] = []

        def walk(obj: dict[str, Any], prefix: tuple[str, ...]) -> None:
            if len(prefix) >= depth:
                return
            for k, v in obj.items():
                if k in self.envelope and not prefix:
                    continue
                if isinstance(v, dict):
                    out.append((prefix + (k,), v))
                    walk(v, prefix + (k,))

        walk(payload, ())
        return out

    def _fragments(self, kind: Kind) -> dict[tuple[str, ...], list[str]]:
        """String leaves that vary from event to event (a stream of pieces)."""
        found: dict[tuple[str, ...], list[str]] = {}
        skip = set(kind.slots) | self.envelope | set(NOISE_KEYS)
        for ev in kind.events:
            for path, value in _leaves(ev.payload):
                if path[0] in skip or path[-1] == self.disc.field or ID_KEY.search(path[-1]):
                    continue
                if isinstance(value, str):
                    found.setdefault(path, []).append(value)
        return {
            p: vs
            for p, vs in found.items()
            if len(set(vs)) > 1 or len(kind.events) == 1 or not any(vs) or len(vs) < 3
        }

    # classification

    def _classify(self, kind: Kind) -> None:
        by_name = _role_of_name(kind.name if kind.sub is None else kind.name)
        label = kind.name
        if ERROR_WORDS.search(label):
            kind.role, kind.why = "error", f"its name `{label}`"
            return
        objects = self._objects(kind.events[0].payload)
        fragments = self._fragments(kind)
        if kind.slots:
            per_slot = Counter(tuple(ev.payload.get(s) for s in kind.slots) for ev in kind.events)
            once = max(per_slot.values()) == 1
            inside = {path for path, _ in objects}
            loose = [p for p in fragments if not any(p[: len(o)] == o for o in inside)]
            wanted = by_name == "open" or (by_name is None and once and not loose)
            if by_name is None and self._ends_each_slot(kind):
                kind.role = "close"
                kind.why = "the last event of each of its slots, after others"
                return
            if wanted and (objects or (self.string_ids and by_name == "open")):
                kind.role = "open"
                kind.why = (
                    f"its name `{label}`" if by_name else "an object, once per slot"
                ) + f", slot {', '.join(kind.slots)}"
                return
            if by_name == "close" or (by_name is None and not fragments and not objects):
                kind.role = "close"
                kind.why = f"its name `{label}`" if by_name else "nothing but its slot"
                return
            kind.role = "delta"
            kind.why = f"its name `{label}`" if by_name == "delta" else "strings that vary"
            return
        rest = {k for k in kind.events[0].payload if k not in self.envelope}
        if (kind.name, kind.sub) == self._message_kind():
            kind.role, kind.why = "message", "the first event, carrying the message object"
        elif FINISH_WORDS.search(label) and (by_name == "close" or not rest or by_name is None):
            if kind.events[-1].index < self._last_finish():  # a step's end, not the stream's
                kind.role = "turn" if rest else "ignore"
                kind.why = f"its name `{label}`, but events of the stream's end follow it"
            else:
                kind.role, kind.why = "finish", f"its name `{label}`"
        elif not rest:
            kind.role, kind.why = "ignore", "it carries nothing but its name"
        else:
            kind.role, kind.why = "turn", "message-level fields"

    def _last_finish(self) -> int:
        """Where the last event named like a finish is: the stream's end; one before it
        ends a step or a part (``finish-step``, ``TEXT_MESSAGE_END``)."""
        return max(
            (
                ev.index
                for ev in self.events
                if ev.name
                and FINISH_WORDS.search(ev.name)
                and not any(s in ev.payload for s in self.slot_keys)
            ),
            default=-1,
        )

    def _ends_each_slot(self, kind: Kind) -> bool:
        """Each of its events is the last of its slot's events, and not the first (AI SDK's
        ``tool-input-available`` after the input streamed): it ends the part."""
        slot = kind.slots[0]
        for ev in kind.events:
            same = [e.index for e in self.events if e.payload.get(slot) == ev.payload[slot]]
            if len(same) < 2 or same[-1] != ev.index:
                return False
        return True

    def _message_kind(self) -> tuple[str, str | None] | None:
        for key, kind in sorted(self.kinds.items(), key=lambda kv: kv[1].first):
            if not kind.slots:
                return key if self.message_from is not None or self._scalars(kind) else None
        return None

    def _scalars(self, kind: Kind) -> dict[str, Any]:
        return {
            k: v
            for k, v in kind.events[0].payload.items()
            if k not in self.envelope and isinstance(v, str) and k == "role"
        }

    # rules

    def _list_for(self, kind: Kind, source: tuple[str, ...]) -> tuple[Step, ...]:
        """The steps of the item an open addresses: one list per slot key."""
        steps: list[Step] = []
        lists = [k for k, v in self.message.items() if isinstance(v, list)]
        for depth, slot in enumerate(kind.slots):
            stem = re.sub(r"_?(index|Index|idx|Idx)$", "", slot)
            if depth == 0 and source and source[-1] in lists:
                name, why = source[-1], f"the message's list `{source[-1]}` named like the source"
            elif stem in lists:
                name, why = stem, f"the message's list `{stem}`, named like the slot `{slot}`"
            elif depth > 0 and stem and stem != slot:
                name, why = stem, f"named like the slot `{slot}`"
            elif depth == 0 and len(lists) == 1:
                name, why = lists[0], f"the message's only list `{lists[0]}`"
            else:
                name, why = "content", "no list to name it after: a common name"
            steps.append((name, slot))
            kind.why += f"; list `{name}`: {why}"
        return tuple(steps)

    def _open_for(self, kind: Kind) -> Kind | None:
        """The open event whose items this event addresses: same slots, same family first."""
        opens = [k for k in self.kinds.values() if k.role == "open" and k.slots == kind.slots]
        same = [k for k in opens if _family(k.name) == _family(kind.name)]
        pick = same or opens
        if pick:
            self.opened_by[(kind.name, kind.sub)] = pick[0].name
        return pick[0] if pick else None

    def _rules(self, kind: Kind) -> list[Any]:
        handler = getattr(self, f"_rules_{kind.role}")
        rules: list[Any] = handler(kind)
        return rules

    def _rules_error(self, kind: Kind) -> list[Any]:
        source = "error" if isinstance(kind.events[0].payload.get("error"), dict) else ""
        return [{"error": {"from": source}}]

    def _rules_ignore(self, kind: Kind) -> list[Any]:
        return []

    def _rules_message(self, kind: Kind) -> list[Any]:
        if self.message_from is not None:
            rules: list[Any] = [{"set": {"at": "", "from": self.message_from}}]
            usage = _first_key(self.message, USAGE_KEYS)
            if usage:
                rules.append({"usage": spell(_fields(self.message_from) + [usage])})
            return rules
        return [{"set": {"at": k, "from": k}} for k in self._scalars(kind)]

    def _rules_turn(self, kind: Kind) -> list[Any]:
        return self._turn_fields(kind.events[0].payload, kind)

    def _rules_finish(self, kind: Kind) -> list[Any]:
        return self._turn_fields(kind.events[0].payload, kind) + ["finish"]

    def _turn_fields(self, payload: dict[str, Any], kind: Kind) -> list[Any]:
        """Message-level fields: a restated message merged, a delta merged, stop, usage."""
        rules: list[Any] = []
        streamed = [p for p in self._fragments(kind) if len(kind.events) > 1]
        for path, obj in self._objects(payload, depth=2):
            read = spell(path)
            if any(p[: len(path)] == path for p in streamed):
                continue  # an object that carries text pieces: appended below, not merged
            if read == self.message_from:
                opened = {steps[0][0] for steps in self.lists.values() if steps}
                lists = [k for k, v in obj.items() if isinstance(v, list) and k in opened]
                rules.append(
                    {"merge": {"from": read, "except": lists} if lists else {"from": read}}
                )
            elif path == ("delta",):  # a message-level delta (stop reason, usage) merged in
                rules.append({"merge": {"from": read}})
        for path, _value in _leaves(payload):
            if path[0] in self.envelope:
                continue
            if path[-1] in STOP_KEYS:
                rules.append({"stop_reason": spell(path)})
            elif path[-1] in USAGE_KEYS:
                rules.append({"usage": spell(path)})
        for path, _obj in self._objects(payload, depth=2):
            if path[-1] in USAGE_KEYS:
                rules.append({"usage": spell(path)})
        fragments = [p for p in self._fragments(kind) if p[-1] not in STOP_KEYS]
        for path in fragments:
            if len(kind.events) > 1:
                target = self._message_field(path)
                label = f"{kind.label} {spell(path)}"
                texty = target in (*GENERIC_FRAGMENTS, "text", "content") and not (
                    REASONING_WORDS.search(label)
                    or NOT_TEXT_WORDS.search(label)
                    or _looks_json(self._joined(kind, path))
                )
                if texty and target in GENERIC_FRAGMENTS:  # `delta` names no field: content
                    target = "content"
                rules.append({"append": {"at": target, "from": spell(path)}})
                if texty:
                    self.text_places.append(((), target, set()))  # the text is where it goes
        return rules

    def _message_field(self, path: tuple[str, ...]) -> str:
        prefix = _fields(self.message_from or "")
        if prefix and list(path[: len(prefix)]) == prefix and len(path) > len(prefix):
            return spell(path[len(prefix) :])
        return spell(path[-1:])

    def _rules_open(self, kind: Kind) -> list[Any]:
        objects = self._objects(kind.events[0].payload)
        if not objects:
            return self._rules_open_fields(kind)
        path, obj = objects[0]
        while len(obj) == 1 and isinstance(next(iter(obj.values())), dict):
            # A container of one object (Cohere's delta.message.tool_calls): the item is inside;
            # a key that names the item's kind (Bedrock's start.toolUse) is part of the item.
            key = next(iter(obj))
            if key not in CONTAINERS and key not in self.message and not key.endswith("s"):
                break
            path, obj = path + (key,), obj[key]
        steps = self._list_for(kind, path)
        self.lists[kind.name] = steps
        for ev in kind.events:
            item = _get(ev.payload, path)
            if isinstance(item, dict):
                self.items[(kind.name, self._slot_values(ev, kind))] = item
                if _call_fields(item) is not None:
                    self.calls.append((kind.name, item))
        self.open_from[kind.name] = path
        return [{"open": {"at": spell(steps), "from": spell(path)}}]

    def _rules_open_fields(self, kind: Kind) -> list[Any]:
        """An open that carries no object, only fields beside its id (``text-start`` {id},
        ``TOOL_CALL_START`` {toolCallId, toolCallName}): the item is made of those fields
        and a ``type`` named after the event's family, so that text and reasoning parts of
        one list tell apart; an item with a name is a call, in a list of its own."""
        family = _family(kind.name)
        keys = [
            k
            for k, v in kind.events[0].payload.items()
            if k not in self.envelope and isinstance(v, str | int | bool)
        ]
        items = [{"type": family, **{k: ev.payload.get(k) for k in keys}} for ev in kind.events]
        is_call = _call_fields(items[0]) is not None
        steps: tuple[Step, ...] = (("tool_calls" if is_call else "content", kind.slots[0]),)
        kind.why += f"; an item of its fields, typed `{family}`"
        self.lists[kind.name] = steps
        for ev, item in zip(kind.events, items, strict=True):
            self.items[(kind.name, self._slot_values(ev, kind))] = item
            if is_call:
                self.calls.append((kind.name, item))
        fields = ", ".join(f"{_jmes_key(k)}: {_jmes_key(k)}" for k in keys)
        literal = family.replace("\\", "\\\\").replace("'", "\\'")
        return [
            {"open": {"at": spell(steps), "from": {"jmespath": f"{{type: '{literal}', {fields}}}"}}}
        ]

    @staticmethod
    def _slot_values(ev: Event, kind: Kind) -> tuple[Any, ...]:
        return tuple(ev.payload.get(s) for s in kind.slots)

    def _rules_close(self, kind: Kind) -> list[Any]:
        opened = self._open_for(kind)
        steps = self.lists.get(opened.name) if opened else None
        if steps is None:
            steps = self._list_for(kind, ())
        fragments = self._fragments(kind)
        delta = self._delta_in_family(kind)
        path = self._restatement(kind, delta, fragments) if delta is not None else None
        if delta is not None and path is not None:
            # A done event restating what its deltas streamed: the whole value, set again.
            target, is_args = self.delta_targets.get((delta.name, delta.sub), (None, False))
            if target is not None:
                op = "args_final" if is_args else "set"
                kind.why += f"; it restates what `{delta.name}` streamed (`{spell(path)}`)"
                return [{op: {"at": target, "from": spell(path)}}]
        rule: dict[str, Any] = {"at": spell(steps)}
        restated = self.open_from.get(opened.name) if opened else None
        if restated is not None and _get(kind.events[0].payload, restated) is not None:
            rule["from"] = spell(restated)
        return [{"close": rule}]

    def _restatement(
        self, kind: Kind, delta: Kind, fragments: dict[tuple[str, ...], list[str]]
    ) -> tuple[str, ...] | None:
        """The field of a done event that holds the whole value its deltas streamed: equal to
        their concatenation where the stream shows it, else named like the delta's target."""
        streamed = {self._joined(delta, p) for p in self._fragments(delta)}
        for path, values in fragments.items():
            if set(values) & streamed:
                return path
        target, _ = self.delta_targets.get((delta.name, delta.sub), (None, False))
        last = (target or "").rsplit(".", 1)[-1]
        return next((p for p in fragments if p[-1] == last), None)

    def _delta_in_family(self, kind: Kind) -> Kind | None:
        for other in self.kinds.values():
            same = other.role == "delta" and _family(other.name) == _family(kind.name)
            if same and other.slots == kind.slots and other is not kind:
                return other
        return None

    def _rules_delta(self, kind: Kind) -> list[Any]:
        opened = self._open_for(kind)
        steps = self.lists.get(opened.name) if opened else None
        if steps is None:
            steps = self._list_for(kind, ())
        source = self.open_from.get(opened.name, ()) if opened else ()
        rules: list[Any] = []
        for path, _values in self._fragments(kind).items():
            joined = self._joined(kind, path)
            hinted = ARGS_HINT.search(f"{kind.label} {spell(path)}") is not None
            is_args = _looks_json(joined) or (hinted and not joined.strip())
            field_path = self._item_field(kind, path, source, opened, is_args)
            target = spell(steps + tuple(field_path))
            if is_args:
                rules.append({"args": {"at": target, "from": spell(path)}})
                if opened is not None:
                    self.args_fragments[opened.name] = spell(field_path)
            else:
                rules.append({"append": {"at": target, "from": spell(path)}})
                self._note_text(kind, steps, field_path, path, opened)
            self.delta_targets[(kind.name, kind.sub)] = (target, is_args)
        if not rules:
            kind.why += "; no string fragment seen: no rule guessed"
        return rules

    def _joined(self, kind: Kind, path: tuple[str, ...]) -> str:
        by_slot: dict[tuple[Any, ...], list[str]] = {}
        for ev in kind.events:
            value = _get(ev.payload, path)
            if isinstance(value, str):
                by_slot.setdefault(self._slot_values(ev, kind), []).append(value)
        return max(("".join(v) for v in by_slot.values()), key=len, default="")

    def _item_field(
        self,
        kind: Kind,
        path: tuple[str, ...],
        source: tuple[Any, ...],
        opened: Kind | None,
        is_args: bool,
    ) -> list[str]:
        """Where in the item a fragment goes: the path below the open's source, the path
        below the event's fragment object, or the item's own field for it."""
        if source and path[: len(source)] == source and len(path) > len(source):
            return list(path[len(source) :])
        items = [i for (name, _), i in self.items.items() if opened and name == opened.name]
        if is_args:
            for item in items:
                found = _call_fields(item)
                if found is not None and found[2] is not None:
                    return _fields(found[2])
        if len(path) > 1:
            return list(path[1:])
        for item in items:
            empty = [k for k, v in item.items() if v == ""]
            if empty:
                return [empty[0]]
        if is_args:
            return ["arguments"]
        return ["text"] if path[-1] in GENERIC_FRAGMENTS else [path[-1]]

    def _note_text(
        self,
        kind: Kind,
        steps: tuple[Any, ...],
        field_path: list[str],
        path: tuple[str, ...],
        opened: Kind | None,
    ) -> None:
        label = f"{kind.label} {spell(path)}"
        if REASONING_WORDS.search(label) or NOT_TEXT_WORDS.search(label):
            return
        types: set[Any] = set()
        if opened is not None:
            slots = {self._slot_values(ev, kind) for ev in kind.events}
            for (name, values), item in self.items.items():
                if name == opened.name and values in slots and isinstance(item.get("type"), str):
                    types.add(item["type"])
        self.text_places.append((tuple(steps), spell(field_path), types))

    # the events section

    def _events_section(self, rules: dict[tuple[str, str | None], list[Any]]) -> dict[str, Any]:
        on: dict[str, Any] = {}
        ignore: list[str] = []
        for (name, sub), kind in self.kinds.items():
            if kind.role == "ignore":
                ignore.append(name)
                self.draft.review(("events", "ignore"), f"`{name}`: {kind.why}")
                continue
            if sub is None:
                on[name] = rules[(name, sub)]
                self.draft.review(("events", "on", name), f"{kind.role}: {kind.why}")
            else:
                table = on.setdefault(name, {"discriminator": self.sub_disc[name], "on": {}})
                table["on"][sub] = rules[(name, sub)]
                self.draft.review(("events", "on", name, "on", sub), f"{kind.role}: {kind.why}")
        section: dict[str, Any] = {"discriminator": self.disc.spelled(), "on": on}
        if ignore:
            section["ignore"] = ignore
        return section


def _jmes_key(key: str) -> str:
    """A field name as a JMESPath identifier (quoted unless it is a bare one)."""
    return key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) else json.dumps(key)


def _call_fields(item: dict[str, Any]) -> tuple[str, str | None, str | None] | None:
    """(name, id, args) paths of a call item: the item itself or one object inside it."""
    candidates: list[tuple[tuple[str, ...], dict[str, Any]]] = [((), item)]
    candidates += [((k,), v) for k, v in item.items() if isinstance(v, dict)]
    for prefix, obj in candidates:
        name = _first_key(obj, NAME_KEYS)
        if name is None or not isinstance(obj.get(name), str):
            continue
        call_id = _first_key(obj, CALL_ID_KEYS) or _first_key(item, CALL_ID_KEYS)
        id_path = None
        if call_id is not None and call_id in obj:
            id_path = spell(prefix + (call_id,))
        elif call_id is not None and call_id in item:
            id_path = call_id
        elif "id" in obj:
            id_path = spell(prefix + ("id",))
        elif "id" in item:
            id_path = "id"
        else:
            other = [k for k in obj if k != name and re.search(r"(^|_)id$|Id$|^ref$", k)]
            id_path = spell(prefix + (other[0],)) if other else None
        args = _first_key(obj, ARGS_KEYS)
        return spell(prefix + (name,)), id_path, spell(prefix + (args,)) if args else None
    return None


def _args_path(entries: list[dict[str, Any]]) -> str | None:
    """Where the arguments sit in list entries, from the first entry that carries them (the
    first fragment of a call may bring only its name)."""
    for entry in entries:
        for prefix, obj in [((), entry)] + [((k,), v) for k, v in entry.items()]:
            key = _first_key(obj, ARGS_KEYS)
            if key is not None:
                return spell(prefix + (key,))
    return None


def _is_parts(key: str, value: Any) -> bool:
    """A list of whole typed parts (Gemini's ``parts``): objects with text or a call, no
    SLOT, in a list not named for calls alone (``tool_calls`` entries are folded)."""
    if not isinstance(value, list) or not value or not all(isinstance(p, dict) for p in value):
        return False
    texts = any(isinstance(p.get("text"), str) for p in value)
    calls = any(isinstance(v, dict) and _call_fields(v) for p in value for v in p.values())
    if any(isinstance(p.get("index"), int) for p in value):
        return False
    return texts or (calls and not re.search(r"call|tool", key, re.I))


# -- delta-merge wires ---------------------------------------------------------------------------


class MergeWire:
    """The inference for a wire whose chunks are all alike: a fold of deltas, or whole parts."""

    def __init__(self, events: list[dict[str, Any]], draft: Draft) -> None:
        self.events = events
        self.draft = draft
        self.choice: dict[str, Any] | None = None
        self.alias: str | None = None

    def _choice_list(self) -> tuple[str, str] | None:
        for key in {k for e in self.events for k in e}:
            values: list[list[Any]] = [v for e in self.events if isinstance(v := e.get(key), list)]
            entries = [x for v in values for x in v]
            dicts = bool(values and entries) and all(isinstance(x, dict) for x in entries)
            indexed = sum("index" in x for x in entries) >= len(entries) * 0.5
            carrying = dicts and all(any(isinstance(v, dict) for v in x.values()) for x in entries)
            if dicts and (indexed or (carrying and len(values) >= 0.8 * len(self.events))):
                alias = key[:-1] if key.endswith("s") else f"{key}_item"
                return key, alias
        return None

    def _delta(self) -> tuple[list[str], str]:
        """The path of the object each chunk contributes, and the evidence."""
        found = self._choice_list()
        if found is not None:
            key, alias = found
            self.choice, self.alias = {"list": key, "key": "index", "alias": alias}, alias
            entries = [x for e in self.events for x in e.get(key) or [] if isinstance(x, dict)]
            objects: Counter[str] = Counter(
                k for x in entries for k, v in x.items() if isinstance(v, dict)
            )
            inner = objects.most_common(1)[0][0] if objects else "delta"
            return [alias, inner], f"each chunk's `{key}` entries carry `{inner}`"
        objects = Counter(k for e in self.events for k, v in e.items() if isinstance(v, dict))
        for key, _ in objects.most_common():
            if key not in USAGE_KEYS:
                return [key], f"`{key}` is the object on most chunks"
        return [], "no object on the chunks: the chunk itself"

    def _deltas(self, path: list[str]) -> list[dict[str, Any]]:
        out = []
        for event in self.events:
            if self.choice is not None:
                entries = event.get(self.choice["list"]) or []
                first = next((x for x in entries if isinstance(x, dict)), None) or {}
                value = _get(first, path[1:])
            else:
                value = _get(event, path)
            if isinstance(value, dict):
                out.append(value)
        return out

    def build(self, result: dict[str, Any]) -> None:
        path, why = self._delta()
        deltas = self._deltas(path)
        source = spell(path)
        events: dict[str, Any] = {}
        if self.choice is not None:
            events["choice"] = self.choice
            self.draft.review(("events", "choice"), f"the list of alternatives: {why}")
        parts = self._parts_list(deltas)
        if parts is not None:
            every = self._extend(source, parts, deltas, result)
        else:
            every = self._fold(source, deltas, result)
        self.draft.review(("events", "every"), f"every chunk folds its delta at `{source}`: {why}")
        every += self._turn(path)
        events["every"] = every
        result["events"] = events

    def _parts_list(self, deltas: list[dict[str, Any]]) -> str | None:
        for delta in deltas:
            for key, value in delta.items():
                if _is_parts(key, value):
                    return key
        return None

    def _extend(
        self, source: str, key: str, deltas: list[dict[str, Any]], result: dict[str, Any]
    ) -> list[Any]:
        parts = [p for d in deltas for p in d.get(key) or [] if isinstance(p, dict)]
        wrappers = Counter(
            k for p in parts for k, v in p.items() if isinstance(v, dict) and _call_fields(v)
        )
        join: dict[str, Any] = {}
        if any("thought" in p for p in parts):
            join["key"] = ["thought"]
        join["text"] = ["text"]
        if wrappers:
            join["unless"] = sorted(wrappers)
        rules: list[Any] = [
            {"extend": {"at": key, "from": spell(_fields(source) + [key]), "join": join}}
        ]
        if any("role" in d for d in deltas):
            rules.append({"set_once": {"at": "role", "from": spell(_fields(source) + ["role"])}})
        text_where = {"not": {"field": "thought", "equals": True}} if "key" in join else None
        result["_text"] = ({"at": spell([(key, "*"), "text"])}, text_where, "whole parts")
        if wrappers:
            wrapper = wrappers.most_common(1)[0][0]
            sample = next(p[wrapper] for p in parts if isinstance(p.get(wrapper), dict))
            name, call_id, args = _call_fields(sample) or ("name", None, None)
            calls = {
                "at": spell([(key, "*")]),
                "where": {"has": spell([wrapper, name])},
                "name": spell([wrapper, name]),
                "id": spell([wrapper, call_id or "id"]),
                "args": spell([wrapper, args or "args"]),
                "args_form": "object",
                "args_arrive": "whole",
            }
            result["_calls"] = (calls, f"parts carrying `{wrapper}` with a name", call_id)
        return rules

    def _fold(self, source: str, deltas: list[dict[str, Any]], result: dict[str, Any]) -> list[Any]:
        strings: dict[str, set[Any]] = {}
        lists: dict[str, list[dict[str, Any]]] = {}
        for delta in deltas:
            for key, value in delta.items():
                if isinstance(value, str):
                    strings.setdefault(key, set()).add(value)
                elif isinstance(value, list):
                    lists.setdefault(key, []).extend(x for x in value if isinstance(x, dict))
        concat = [k for k, vs in strings.items() if len(vs) > 1 or k not in ("role",)]
        concat = [k for k in concat if k != "role"]
        fold: dict[str, Any] = {"from": source}
        if concat:
            fold["concat"] = concat
        folded: dict[str, Any] = {}
        for key, entries in lists.items():
            spec = self._fold_list(key, entries, result)
            if spec is not None:
                folded[key] = spec
        if folded:
            fold["lists"] = folded
        text = next(
            (k for k in concat if not REASONING_WORDS.search(k) and not NOT_TEXT_WORDS.search(k)),
            None,
        )
        if text is not None:
            result["_text"] = (
                {"at": text},
                None,
                f"`{text}` is a string that grows chunk by chunk",
            )
        return [{"fold": fold}]

    def _fold_list(
        self, key: str, entries: list[dict[str, Any]], result: dict[str, Any]
    ) -> dict[str, Any] | None:
        calls = [e for e in entries if _call_fields(e) is not None]
        if not entries:
            return None
        spec: dict[str, Any] = {}
        slot = None
        if sum(isinstance(e.get("index"), int) for e in entries) >= len(entries) / 2:
            slot = "index"
        else:
            for e in entries:
                for k, v in e.items():
                    if isinstance(v, dict) and isinstance(v.get("index"), int):
                        slot = spell([k, "index"])
        sample = calls[0] if calls else entries[0]
        name, call_id, args = _call_fields(sample) or (None, None, None)
        args = args or _args_path(entries)
        arg_values = [_get(e, _fields(args)) for e in entries] if args else []
        streamed = any(isinstance(v, str) for v in arg_values)
        if slot is None and name is not None:
            slot = "index"
            self.draft.review(
                ("events", "every", "0", "fold"),
                f"list `{key}`: no SLOT key seen on its entries: guessed `index`",
            )
        if slot is not None:
            spec["slot"] = slot
        spec["without_slot"] = "continue" if streamed else "new"
        if streamed and name:
            spec["identity"] = [p for p in (call_id, name) if p]
        if slot == "index":
            spec["drop"] = ["index"]
        if args:
            spec["args"] = args
        if name is not None:
            calls_section = {
                "at": spell([(key, "*")]),
                "name": name,
                "id": call_id or "id",
                "args": args or "arguments",
                "args_form": "string" if streamed else "object",
            }
            if not streamed:
                calls_section["args_arrive"] = "whole"
            how = "arguments stream as JSON text" if streamed else "arguments arrive as objects"
            result["_calls"] = (calls_section, f"entries of `{key}` with a name; {how}", call_id)
        self.draft.review(
            ("events", "every", "0", "fold"),
            f"list `{key}`: slot {slot or 'none seen'}; "
            + (
                "fragments without a slot continue the open call (text arguments)"
                if streamed
                else "each entry without a slot is a new call (whole arguments)"
            ),
        )
        return spec

    def _turn(self, path: list[str]) -> list[Any]:
        """Stop reason, usage, DONE and errors, at the chunk or the choice."""
        rules: list[Any] = []
        places: list[tuple[list[str], dict[str, Any]]] = []
        if self.choice is not None:
            entries = [x for e in self.events for x in e.get(self.choice["list"]) or []]
            places.append(
                (
                    [self.alias or "choice"],
                    {k: v for x in entries for k, v in x.items() if isinstance(x, dict)},
                )
            )
        places.append(([], {k: v for e in self.events for k, v in e.items() if v is not None}))
        stop = None
        for prefix, merged in places:
            key = _first_key(merged, STOP_KEYS)
            if key:
                stop = spell(prefix + [key])
                rules.append({"stop_reason": stop})
                self.draft.review(("events", "every"), f"stop reason at `{stop}`: its name")
                break
        usage = _first_key(places[-1][1], USAGE_KEYS)
        if usage:
            rules.append({"usage": usage})
        done = next(
            (
                k
                for k in ("done", "is_finished", "finished")
                if any(e.get(k) is True for e in self.events)
            ),
            None,
        )
        when = done or stop
        if when:
            rules.append({"finish": {"when": when}})
            self.draft.review(
                ("events", "every"),
                f"DONE when `{when}` holds a value: "
                + ("it turns true on the last chunk" if done else "the stop reason arrives"),
            )
        rules.append({"error": {"from": "error"}})
        self.draft.review(("events", "every"), "`error`: not seen here, the usual field name")
        return rules


# -- the whole draft -----------------------------------------------------------------------------


def _recognize(
    events: list[dict[str, Any]], disc: Disc | None, wire: EventWire | None
) -> dict[str, Any]:
    if disc is not None and wire is not None:
        names = list(dict.fromkeys(ev.name for ev in wire.events if ev.name))
        if disc.or_wrapped:
            return {"any": [{"field": disc.field, "in": names}] + [{"has": n} for n in names]}
        return {"field": disc.field, "in": names}
    always = [k for k in events[0] if all(k in e for e in events)]
    constant = [
        k
        for k in always
        if isinstance(events[0][k], str)
        and all(e[k] == events[0][k] for e in events)
        and NAME_VALUE.match(events[0][k])
        and k not in ("id", "model")
    ]
    if constant:
        return {"field": constant[0], "equals": events[0][constant[0]]}
    picked = [k for k in always if isinstance(events[0][k], (dict, list))][:1] + [
        k for k in always if not isinstance(events[0][k], (dict, list))
    ][:2]
    if not picked:
        picked = list(events[0])[:2]
    return {"all": [{"has": k} for k in picked]}


def infer_draft(name: str, events: list[Any], source: str = "the stream") -> Draft:
    """A draft descriptor for ``events`` (decoded JSON objects, one a chunk)."""
    events = [e for e in events if isinstance(e, dict)]
    if not events:
        raise ValueError("no JSON object in the stream: nothing to infer from")
    draft = Draft({})
    draft.summary.append(f"{source} ({len(events)} events)")
    d = draft.descriptor
    d["name"] = name
    d["title"] = f"TODO {name} (streaming; a draft inferred from {len(events)} events)"
    d["docs"] = "https://example.com/TODO-the-provider-streaming-documentation"
    d["api_version"] = "TODO"
    choices = MergeWire(events, draft)._choice_list()
    if choices is not None:  # alternatives in a list: the chunks are deltas, whatever names them
        disc, why = None, f"each chunk carries its alternatives in `{choices[0]}`"
    else:
        disc, why = find_discriminator(events)
    draft.review(("events",), f"{'event wire' if disc else 'delta-merge wire'}: {why}")
    body: dict[str, Any] = {}
    wire = None
    if disc is not None:
        wire = EventWire(events, disc, draft)
        body["events"] = wire.build()
        _event_calls(wire, body, draft)
        _event_text(wire, body)
    else:
        MergeWire(events, draft).build(body)
    d["recognize"] = {"chunk": _recognize(events, disc, wire)}
    draft.review(
        ("recognize",),
        "the names or keys seen on every chunk of this stream; make it "
        "specific enough that no other wire's chunk matches",
    )
    d["events"] = body["events"]
    d["message"] = {"role": "assistant"}
    _place_calls(body, d, draft)
    _place_text(body, d, draft)
    _after_done(events, d, draft)
    d["leaks_into_text"] = False
    draft.review(
        ("leaks_into_text",),
        "unknown from one stream: does a text-only reply still carry the call envelope?",
    )
    return draft


def _after_done(events: list[dict[str, Any]], d: dict[str, Any], draft: Draft) -> None:
    """What followed the DONE in this stream, as ``events.after_done`` (what may follow it,
    and is then taken): the names of the events after it on an event wire, a test for the
    usage they brought on a delta-merge wire, ``[]`` when nothing followed. A draft without
    it would list its own stream's usage chunk as after the stream's end."""
    from ..compile.strategy import ExtractionStrategy

    section = d["events"]
    section["after_done"] = []
    try:
        strategy = ExtractionStrategy(d)
    except ValueError:
        return  # the draft does not compile: validate says why, at its line
    done = next((i for i, e in enumerate(events) if strategy.is_stream_complete(e)), None)
    after = events[done + 1 :] if done is not None else []
    program = strategy.program
    entries: list[Any] = []
    if program.discriminator is not None:
        for event in after:
            name = program.event_name(event)
            if name is not None and program.table.get(name) is not None and name not in entries:
                entries.append(name)
    else:
        usage = next(
            (
                r["usage"]
                for r in section.get("every", [])
                if isinstance(r, dict) and isinstance(r.get("usage"), str)
            ),
            None,
        )
        if usage and any(_get(e, _fields(usage)) is not None for e in after):
            entries.append({"has": usage})
    section["after_done"] = entries
    seen = (
        f"{len(after)} event(s) followed the DONE in this stream"
        if after
        else ("nothing followed the DONE in this stream")
    )
    draft.review(
        ("events", "after_done"),
        f"{seen}: what may follow it is taken, anything else is listed as after the stream's end",
    )


def _event_calls(wire: EventWire, body: dict[str, Any], draft: Draft) -> None:
    if not wire.calls:
        return
    kind_name, item = wire.calls[0]
    steps = wire.lists[kind_name]
    name, call_id, args = _call_fields(item) or ("name", None, None)
    streamed = wire.args_fragments.get(kind_name)
    args = args or streamed or "arguments"
    if streamed is not None and streamed != args and "." in streamed:
        args = streamed
    value = _get(item, _fields(args))
    if isinstance(value, (dict, str)):
        form = "object" if isinstance(value, dict) else "string"
        form_why = f"the start event's `{args}` is {'an object' if form == 'object' else 'text'}"
    else:
        form = "string" if args.endswith("arguments") else "object"
        form_why = f"the start event has no `{args}`: guessed from its name"
    calls: dict[str, Any] = {"at": spell(steps[:-1] + ((steps[-1][0], "*"),))}
    list_items = [i for (k, _), i in wire.items.items() if k == kind_name]
    call_items = [i for i in list_items if _call_fields(i) is not None]
    types = Counter(i.get("type") for i in call_items if isinstance(i.get("type"), str))
    wrapper = name.split(".")[0] if "." in name else None
    listed = steps[-1][0]
    if types and (len(call_items) < len(list_items) or not re.search("call|tool", listed)):
        calls["where"] = {"field": "type", "equals": types.most_common(1)[0][0]}
    elif wrapper is not None and not re.search("call|tool", listed):
        calls["where"] = {"has": wrapper}
    calls.update({"name": name, "id": call_id or "id", "args": args, "args_form": form})
    evidence = "streamed as JSON text by " + (
        "a delta event" if streamed else "no event (the item carries them)"
    )
    if streamed is None:
        calls["args_arrive"] = "whole"
    body["_calls"] = (
        calls,
        f"items opened by `{kind_name}` carry a name; arguments {evidence}; "
        f"kept as {'an object' if form == 'object' else 'JSON text'} ({form_why})",
        call_id,
    )


def _event_text(wire: EventWire, body: dict[str, Any]) -> None:
    if not wire.text_places:
        return
    steps, field_path, types = wire.text_places[0]
    pattern = spell(tuple((name, "*") for name, _ in steps) + tuple(_fields(field_path)))
    where = {"field": "type", "equals": sorted(types)[0]} if len(types) == 1 else None
    evidence = "the first string fragment that is neither reasoning nor a signature"
    body["_text"] = ({"at": pattern}, where, evidence)


def _place_calls(body: dict[str, Any], d: dict[str, Any], draft: Draft) -> None:
    if "_calls" in body:
        calls, why, call_id = body["_calls"]
        d["calls"] = calls
        draft.review(("calls",), why)
        if call_id is None:
            draft.review(("calls", "id"), "no call id seen: guessed `id` beside the name")
        else:
            draft.review(("calls", "id"), f"`{call_id}` read as the CALL-ID (not the SLOT)")
        return
    d["calls"] = {
        "at": "tool_calls[*]",
        "name": "function.name",
        "id": "id",
        "args": "function.arguments",
        "args_form": "string",
        "args_arrive": "whole",
    }
    draft.review(
        ("calls",),
        "no tool call in this stream: a placeholder (OpenAI's shape); "
        "record a stream with a call and infer again",
    )


def _place_text(body: dict[str, Any], d: dict[str, Any], draft: Draft) -> None:
    if "_text" in body:
        text, where, why = body["_text"]
        d["text"] = dict(text, where=where) if where else text
        draft.review(("text",), f"display text: {why}")
        return
    d["text"] = {"at": "content"}
    draft.review(("text",), "no display text seen: a placeholder")
