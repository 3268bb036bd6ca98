"""Templates: the descriptor's small, declarative language for building wire shapes.

A descriptor says how a tool result, an assistant echo or a tool declaration looks on its
wire as plain data. :func:`compile_template` checks a template once, when the descriptor
loads, and :meth:`Template.render` fills it from a *context*: a dict such as
``{"message": ..., "records": [...], "record": {...}}`` or ``{"tools": [...]}``. Nothing
is evaluated: there are no expressions, no code and no string formatting, only the
constructs below. A template is

- a **literal**: a string, number, boolean or null stands for itself; a list renders each
  element; a mapping renders each value. A value that renders to *nothing* (see below) is
  left out: a mapping drops the key, a list drops the element. Keys beginning with ``$``
  are reserved for the constructs and are an error anywhere else.
- ``{$path: "a.b[0].c"}``: the value at a *path* in the context, a read path of
  :mod:`engine.compile.paths` (field names joined by dots, ``[n]`` indexing a list). A value that
  is absent or null renders to nothing, unless ``default: <template>`` says what to use
  instead. The value is the context's own (shared, not copied). ``with: <mapping template>``
  gives a copy of a mapping value with the fields it renders set (the others kept): a
  provider's envelope that differs from the assembled message in one field, say
  ``{$path: call, with: {type: function}}``.
- ``{$if: <condition>, then: <template>, else: <template>}``: one branch or the other;
  a missing branch renders to nothing. The condition is a path (true when the value there
  is truthy), or a predicate mapping of the descriptor's predicate language
  (``{field: P, equals: V}``, ``{has: P}``, ``{field: P, is: object}``, ``any``/``all``/
  ``not``; see :mod:`engine.compile.predicates`) tested against the context.
- ``{$each: "path", as: name, $emit: <template>}``: a list with one rendering of ``$emit``
  per element of the list at the path, the element bound as ``name`` (default ``item``).
  A missing or null list gives ``[]``.
- ``{$json: <template>}``: the rendered value serialised as JSON text.
- ``{$result: "path", as: text | object}``: a tool result, rendered from the call record
  at the path (default ``record``: a mapping with ``result``, ``error`` and ``failed``).
  ``text`` (the default): the error message for a failed call, a string result as it is,
  any other result as JSON text. ``object``, for wires that need a JSON object: a failed
  call as ``{"error": message}``, a mapping result as it is, any other result wrapped as
  ``{"result": value}``.
- ``{$echo: "path", list: field, calls: {where: <predicate>, id: P, name: P},
  drop: <predicate>, records: "path"}``: the assistant turn as the wire needs it back. The
  value at the path (a list of items, or a mapping whose ``list`` field holds the items) is
  copied with every item kept in order (text, thinking blocks and their signatures, reasoning
  fields, thought signatures, whatever the wire sent), except that a *call* item no record
  answers is dropped, so that the history never holds a call without its result, and so is
  an item matching ``drop`` (an empty text block a wire would refuse). ``calls`` says which
  items are calls (``where``, every item when absent) and where their call id and tool name
  are (item paths); ``where`` and ``drop`` are conditions tested on each item. An item is
  answered by the record whose ``tool_call_id`` equals its id, or, when the item has no id,
  by a record without one that has its name. ``records`` is the path of the records
  (default ``records``). Without ``calls`` every call is kept. A list left empty renders to
  nothing (with ``list``: the field is removed). ``merge: <template>`` (it needs ``calls``)
  puts each result into its own call item, for wires whose history is the assistant message
  restated (results ``mode: restate``): rendered with ``record`` and ``item`` bound, its
  mapping's fields are added to the item (or replace its own); a record that answers no item
  is an error, never dropped.

A template that is not one of these raises :class:`TemplateError` (a ``ValueError``) with
every problem, each named by the JSON pointer of the offending part, e.g.
``/results/result/content/0: unknown construct $pth``; :func:`compile_into` gathers them.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from ..errors import escape
from .paths import PathError, compile_lookup
from .predicates import compile_predicate
from .schema import Located, section_problems, with_defaults


class _Missing:
    """What a template renders to when it renders to nothing."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()

Node = Callable[[dict[str, Any]], Any]
Keep = Callable[[list[Any], list[Any]], tuple[list[Any], list[Any]]]  # $echo's calls: kept, left

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESULT_MODES = ("text", "object")


class Template:
    """A compiled template; immutable and shareable."""

    __slots__ = ("spec", "_node")

    def __init__(self, spec: Any, node: Node) -> None:
        self.spec = spec
        self._node = node

    def render(self, context: dict[str, Any], default: Any = None) -> Any:
        """The rendered value, or ``default`` when the template renders to nothing."""
        value = self._node(context)
        return default if value is MISSING else value

    def __repr__(self) -> str:
        return f"Template({self.spec!r})"


class TemplateError(ValueError):
    """A template that does not compile: ``problems`` holds every problem as
    ``(pointer, message, rule)``; the message of the error is the first, ``pointer: message``.
    ``rule`` is ``template``, or ``old-path`` for a path written in an old dialect."""

    def __init__(self, problems: list[Located]) -> None:
        pointer, message, _ = problems[0]
        super().__init__(f"{pointer}: {message}")
        self.problems = problems


def compile_template(spec: Any, pointer: str = "") -> Template:
    """Check ``spec`` and compile it. ``pointer`` is where the spec sits in its document,
    so that a problem names the place (``/results/assistant/content``). Raises
    :class:`TemplateError` with every problem found."""
    problems: list[Located] = []
    template = compile_into(spec, pointer, problems)
    if problems:
        raise TemplateError(problems)
    return template


def compile_into(spec: Any, pointer: str, problems: list[Located]) -> Template:
    """Compile ``spec``, every problem added to ``problems``, each ``(pointer, message,
    rule)``, in document order: how a section's compiler gathers every problem of its
    templates. A template with problems renders the good parts only: use it only when
    there are none."""
    spec = with_defaults(spec, "template")  # what a construct leaves out, the schema says
    return Template(spec, _Compiler(problems).node(spec, pointer))


# --- paths ---------------------------------------------------------------------------------


def _absent(value: Any) -> bool:
    return value is MISSING or value is None


def _child(pointer: str, key: Any) -> str:
    return f"{pointer}/{escape(str(key))}"


def _nothing(ctx: dict[str, Any]) -> Any:
    return MISSING


# --- compilation ---------------------------------------------------------------------------


class _Compiler:
    """Compiles a template and collects every problem, never stopping at the first: a bad
    part compiles to a node that renders nothing, and the walk goes on."""

    def __init__(self, problems: list[Located]) -> None:
        self.problems = problems

    def fail(self, pointer: str, message: str, rule: str = "template") -> Node:
        """Record a problem; the part compiles to :func:`_nothing` (falsy, as a condition)."""
        self.problems.append((pointer, message, rule))
        return _nothing

    def reader(self, path: Any, pointer: str) -> Callable[[Any], Any]:
        """A context path (the read form of :mod:`engine.compile.paths`: fields and ``[n]``)."""
        if not isinstance(path, str) or not path:
            return self.fail(pointer, f"a path must be a non-empty string, got {path!r}")
        try:
            return compile_lookup(path)
        except PathError as exc:
            rule = "old-path" if exc.hint else "template"
            return self.fail(pointer, f"path {path!r}: {exc}", rule)

    def part(self, spec: dict[str, Any], key: str, pointer: str) -> Node:
        """The template at ``spec[key]``, the mapping at ``pointer`` (absent: nothing)."""
        return self.node(spec[key], _child(pointer, key)) if key in spec else _nothing

    def node(self, spec: Any, pointer: str) -> Node:
        if isinstance(spec, dict):
            return self.mapping_or_construct(spec, pointer)
        if isinstance(spec, list):
            return self.array(spec, pointer)
        if spec is None or isinstance(spec, (str, int, float, bool)):
            return lambda ctx: spec
        return self.fail(pointer, f"a template holds JSON values only, got {type(spec).__name__}")

    def mapping_or_construct(self, spec: dict[str, Any], pointer: str) -> Node:
        constructs = [k for k in spec if isinstance(k, str) and k.startswith("$")]
        if not constructs:
            return self.mapping(spec, pointer)
        known = [k for k in constructs if k in _CONSTRUCTS]
        unknown = [k for k in constructs if k not in _CONSTRUCTS and k != "$emit"]
        for key in unknown:
            self.fail(_child(pointer, key), f"unknown construct {key}")
        if unknown and not known:
            return _nothing
        if len(known) != 1:
            what = ", ".join(known) if known else "$emit without $each"
            return self.fail(pointer, f"one construct per mapping, found {what}")
        name = known[0]
        build, allowed = _CONSTRUCTS[name]
        for key in spec:
            if key != name and key not in allowed and key not in unknown:
                self.fail(_child(pointer, key), f"{name} takes no option {key!r}")
        return build(self, spec, pointer)

    def mapping(self, spec: dict[str, Any], pointer: str) -> Node:
        for key in spec:
            if not isinstance(key, str):
                self.fail(_child(pointer, key), "keys must be strings")
        items = [(k, self.node(v, _child(pointer, k))) for k, v in spec.items()]

        def render(ctx: dict[str, Any]) -> dict[str, Any]:
            return {key: value for key, node in items if (value := node(ctx)) is not MISSING}

        return render

    def array(self, spec: list[Any], pointer: str) -> Node:
        nodes = [self.node(v, _child(pointer, i)) for i, v in enumerate(spec)]

        def render(ctx: dict[str, Any]) -> list[Any]:
            return [v for v in (node(ctx) for node in nodes) if v is not MISSING]

        return render

    def condition(self, cond: Any, pointer: str) -> Callable[[Any], bool]:
        if isinstance(cond, str):
            read = self.reader(cond, pointer)
            return lambda ctx: bool(read(ctx))
        if isinstance(cond, dict):
            try:
                test = compile_predicate(cond)
            except (ValueError, KeyError, TypeError) as exc:
                return self.fail(pointer, f"not a predicate: {exc}")
            # What the predicate compiler lets by (a key beside a test), the schema refuses.
            self.problems += section_problems(cond, "predicate", pointer)
            return test
        return self.fail(pointer, f"a condition is a path or a predicate mapping, got {cond!r}")

    def path(self, spec: dict[str, Any], pointer: str) -> Node:
        read = self.reader(spec["$path"], _child(pointer, "$path"))
        if isinstance(spec.get("with"), dict):  # a copy of a mapping, those fields set
            fields, plain = self.node(spec["with"], _child(pointer, "with")), read

            def read(ctx: Any) -> Any:
                value = plain(ctx)
                return {**value, **fields(ctx)} if value.__class__ is dict else value

        elif "with" in spec:
            self.fail(_child(pointer, "with"), "with is a mapping of the fields to set")
        fallback = self.part(spec, "default", pointer)

        def render(ctx: dict[str, Any]) -> Any:
            value = read(ctx)
            return fallback(ctx) if _absent(value) else value

        return render

    def if_(self, spec: dict[str, Any], pointer: str) -> Node:
        if "then" not in spec and "else" not in spec:
            self.fail(pointer, "$if needs then or else")
        test = self.condition(spec["$if"], _child(pointer, "$if"))
        yes, no = self.part(spec, "then", pointer), self.part(spec, "else", pointer)

        def render(ctx: dict[str, Any]) -> Any:
            return (yes if test(ctx) else no)(ctx)

        return render

    def each(self, spec: dict[str, Any], pointer: str) -> Node:
        read = self.reader(spec["$each"], _child(pointer, "$each"))
        name = spec["as"]
        if not isinstance(name, str) or not _NAME.match(name):
            self.fail(_child(pointer, "as"), f"a name, got {name!r}")
        if "$emit" not in spec:
            return self.fail(pointer, "$each needs $emit")
        emit = self.node(spec["$emit"], _child(pointer, "$emit"))

        def render(ctx: dict[str, Any]) -> list[Any]:
            source = read(ctx)
            if _absent(source):
                return []
            if not isinstance(source, list | tuple):  # one value: a list of it
                source = [source]
            rendered = (emit({**ctx, name: element}) for element in source)
            return [value for value in rendered if value is not MISSING]

        return render

    def as_json(self, spec: dict[str, Any], pointer: str) -> Node:
        inner = self.node(spec["$json"], _child(pointer, "$json"))

        def render(ctx: dict[str, Any]) -> Any:
            value = inner(ctx)
            return MISSING if value is MISSING else _dumps(value)

        return render

    def result(self, spec: dict[str, Any], pointer: str) -> Node:
        path = spec["$result"]
        read = self.reader("record" if path is None else path, _child(pointer, "$result"))
        mode = spec["as"]
        if mode not in _RESULT_MODES:
            self.fail(_child(pointer, "as"), f"one of {', '.join(_RESULT_MODES)}")

        def render(ctx: dict[str, Any]) -> Any:
            record = read(ctx)
            return render_result(record, mode) if isinstance(record, dict) else MISSING

        return render

    def echo(self, spec: dict[str, Any], pointer: str) -> Node:
        read = self.reader(spec["$echo"], _child(pointer, "$echo"))
        field = spec.get("list")
        if field is not None and (not isinstance(field, str) or not field):
            self.fail(_child(pointer, "list"), f"a field name, got {field!r}")
            field = None
        keep = self.echo_calls(spec.get("calls"), _child(pointer, "calls"))
        drop = self.condition(spec["drop"], _child(pointer, "drop")) if "drop" in spec else _nothing
        records_read = self.reader(spec["records"], _child(pointer, "records"))
        merge = self.part(spec, "merge", pointer) if "merge" in spec else None
        if merge is not None and "calls" not in spec:
            self.fail(
                _child(pointer, "merge"),
                "merge needs calls: which items are calls, and their id and name, to know the "
                "part each record answers",
            )

        def filtered(items: Any, ctx: dict[str, Any]) -> Any:
            if not isinstance(items, list):
                return items
            items = [item for item in items if not drop(item)]  # a copy, which the caller owns
            if keep is None:
                return items
            records = records_read(ctx)
            pairs, left = keep(items, records if isinstance(records, list) else [])
            if merge is None:
                return [item for item, _ in pairs]
            if left:
                raise ValueError(_unanswered(left))
            return [
                item if record is None else _merged(item, merge, ctx, record)
                for item, record in pairs
            ]

        def render(ctx: dict[str, Any]) -> Any:
            value = read(ctx)
            if _absent(value):
                return MISSING
            if field is None:
                items = filtered(value, ctx)
                return MISSING if items == [] else items
            if not isinstance(value, dict) or field not in value:
                return dict(value) if isinstance(value, dict) else value
            items = filtered(value[field], ctx)  # a list left empty: the field is removed
            out = {**value, field: items}
            return out if items != [] else {k: v for k, v in out.items() if k != field}

        return render

    def echo_calls(self, calls: Any, where_at: str) -> Keep | None:
        """``$echo``'s ``calls``: which items are calls, and where their id and name are."""
        if calls is None:
            return None
        if not isinstance(calls, dict):
            self.fail(where_at, "a mapping with where, id and name")
            return None
        for key in calls:
            if key not in ("where", "id", "name"):
                self.fail(_child(where_at, key), "calls takes where, id and name")
        for key in ("id", "name"):
            if key not in calls:
                self.fail(where_at, f"calls needs {key}")
        is_call = (
            self.condition(calls["where"], _child(where_at, "where")) if "where" in calls else None
        )
        call_id = self.reader(calls.get("id", "id"), _child(where_at, "id"))
        call_name = self.reader(calls.get("name", "name"), _child(where_at, "name"))

        def keep(items: list[Any], records: list[Any]) -> tuple[list[Any], list[Any]]:
            """The items kept, each with the record that answers it (None for an item that
            is no call), and the records that answer no item (those keyed by id first)."""
            # Queues by key: a turn of many calls without ids (Ollama, Gemini) is matched in
            # O(calls), where removing names from a list was quadratic.
            queues: dict[tuple[str, Any], deque[Any]] = {}
            for record in (r for r in records if isinstance(r, dict)):
                key = _answer_key(record.get("tool_call_id"), record.get("name"))
                queues.setdefault(key, deque()).append(record)
            out: list[tuple[Any, Any]] = []
            for item in items:
                if is_call is not None and not is_call(item):
                    out.append((item, None))
                    continue
                queue = queues.get(_answer_key(call_id(item), call_name(item)))
                if queue:
                    out.append((item, queue.popleft()))
            kinds = sorted(queues, key=lambda key: key[0] != "id")
            return out, [r for key in kinds for r in queues[key]]

        return keep


def _merged(item: Any, merge: Node, ctx: dict[str, Any], record: Any) -> Any:
    """A call item with its record's result merged in (``$echo``'s ``merge``, rendered with
    ``record`` and ``item`` bound): the item's own fields stay, the rendered ones are added
    or replace them. A merge that renders no mapping leaves the item as it is."""
    fields = merge({**ctx, "record": record, "item": item})
    return {**item, **fields} if isinstance(item, dict) and isinstance(fields, dict) else item


def _unanswered(records: list[dict[str, Any]]) -> str:
    """The records no call item answers (mappings: ``keep`` queues no other record)."""
    shown = ", ".join(f"{r.get('name')!r} (id {r.get('tool_call_id')!r})" for r in records)
    return (
        f"$echo merge: no call part of the message answers the record of {shown}; a restated "
        "message carries each result in its own call's part"
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def render_result(record: dict[str, Any], mode: str = "text") -> Any:
    """One record's result by the ``$result`` rules (``text`` or ``object``)."""
    error, result = record.get("error"), record.get("result")
    if mode == "text":
        if error is not None:
            return str(error)
        return result if isinstance(result, str) else _dumps(result)
    if error is not None:
        return {"error": str(error)}
    return result if isinstance(result, dict) else {"result": result}


def _answer_key(call_id: Any, name: Any) -> tuple[str, Any]:
    """What matches a call and its record: the call id, or, without one, the tool name (a
    malformed name that is a list or an object, as its repr, still matches only an equal one)."""
    if not _absent(call_id) and call_id != "":
        return ("id", call_id)
    return ("name", name if isinstance(name, Hashable) else repr(name))


_CONSTRUCTS: dict[str, tuple[Callable[[_Compiler, dict[str, Any], str], Node], frozenset[str]]] = {
    "$path": (_Compiler.path, frozenset({"default", "with"})),
    "$if": (_Compiler.if_, frozenset({"then", "else"})),
    "$each": (_Compiler.each, frozenset({"as", "$emit"})),
    "$json": (_Compiler.as_json, frozenset()),
    "$result": (_Compiler.result, frozenset({"as"})),
    "$echo": (_Compiler.echo, frozenset({"list", "calls", "drop", "records", "merge"})),
}
