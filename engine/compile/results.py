"""Tool results and tool declarations, rendered from a descriptor's templates.

Two descriptor sections, both written in the template language of :mod:`engine.compile.templates`:

``results`` (the native history that answers a turn's calls)::

    results:
      mode: per_call            # per_call: `result` once per record; one_message: `message` once;
                                #   restate: `assistant` only, each result merged into its
                                #   call's part (an $echo with `merge`)
      assistant: <template>     # the assistant turn as the wire needs it back; a mapping is one
                                #   message, a list is spliced in as items (Responses)
      result: <template>        # per_call: context {message, records, record}; a mapping is one
                                #   message, a list is spliced in
      message: <template>       # one_message: context {message, records}
      leak_role: user           # the role that carries results for a call leaked into text
      leak:                     # optional: the leak's shapes where {role, content: str} won't do
        assistant: <template>   #   context {text, records, role, results_text}
        message: <template>

``declarations`` (the request fragment that declares tools): one template, rendered with
``{tools: [{name, description, parameters}]}``; the fragment is merged into the request body
by the caller (``{"tools": [...]}``, ``{"toolConfig": {...}}``). No tools gives ``{}``.

A record in a context is a mapping ``{name, arguments, result, error, tool_call_id, failed}``.
Templates compile once per strategy; the rendered history is a deep copy that shares nothing
with the assembled message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from ..model.fragments import copy_json
from .schema import Located, section_problems, with_defaults
from .templates import (
    MISSING,
    Template,
    TemplateError,
    compile_into,
    render_result,
)

DEFAULT_LEAK_ROLE = "user"  # the schema's `default` of results.leak_role says the same


@dataclass(frozen=True)
class CompiledResults:
    """A results section, compiled. Its mode is which template it holds: ``result`` in
    per_call, ``message`` in one_message, neither in restate (the schema requires a mode's
    template and refuses the others')."""

    assistant: Template | None
    result: Template | None
    message: Template | None
    leak_role: str
    leak_assistant: Template | None
    leak_message: Template | None


@dataclass(frozen=True)
class CompiledSections:
    results: CompiledResults | None
    declarations: Template | None


def compile_sections(descriptor: dict[str, Any]) -> CompiledSections:
    """Check and compile a descriptor's ``results`` and ``declarations`` sections (either may
    be absent). Raises :class:`~engine.compile.templates.TemplateError` (a ``ValueError`` naming the
    JSON pointer of the first bad part) with every problem.

    The descriptor may not have come through the validator (a strategy built from a dict), so
    its ``results`` section is first asked of the schema, which states what the section may
    hold (``$defs/results``, in pointer order, in the schema's own words; its templates are
    typed for editors only: the template compiler reports inside them); the compile then
    trusts it, as after the validator."""
    sections, problems = check_sections(descriptor)
    if (results := descriptor.get("results")) is not None:
        problems = section_problems(results, "results", "/results") or problems
    if problems:
        raise TemplateError(problems)
    return sections


def check_sections(descriptor: dict[str, Any]) -> tuple[CompiledSections, list[Located]]:
    """The compiled ``results`` and ``declarations`` sections and every problem in them, each
    ``(JSON pointer, message, rule)``: what the validator reports, each at its line. The
    ``results`` section is taken as the schema checked it; a section the schema refused
    compiles to what can be read of it (the validator has reported why)."""
    problems: list[Located] = []
    results = _compile_results(with_defaults(descriptor.get("results"), "results"), problems)
    declarations = _template(descriptor.get("declarations"), "/declarations", problems)
    return CompiledSections(results, declarations), problems


def _template(spec: Any, pointer: str, problems: list[Located]) -> Template | None:
    """The template ``spec`` compiled (None when there is none), its problems added."""
    return None if spec is None else compile_into(spec, pointer, problems)


def _compile_results(spec: Any, problems: list[Located]) -> CompiledResults | None:
    """Compile a results section. The schema (``$defs/results``) says which keys it holds,
    the modes and what each takes, and what ``leak_role`` and ``leak`` may be; only what it
    cannot say is checked here: restate's ``$echo`` with ``merge`` (:func:`_has_merging_echo`),
    and every template, by the template compiler."""
    if not isinstance(spec, dict):
        return None
    mode = spec.get("mode")  # restate is never the default mode
    if mode == "restate" and "assistant" in spec and not _has_merging_echo(spec["assistant"]):
        # (what a schema cannot say: that a construct sits somewhere inside a template)
        message = "mode restate puts each result into its call's part: an $echo with calls and "
        message += "merge, and this template has none"
        problems.append(("/results/assistant", message, "template"))
    leak = spec["leak"] if isinstance(spec.get("leak"), dict) else {}
    return CompiledResults(
        assistant=_template(spec.get("assistant"), "/results/assistant", problems),
        result=_template(spec.get("result"), "/results/result", problems),
        message=_template(spec.get("message"), "/results/message", problems),
        leak_role=spec["leak_role"],
        leak_assistant=_template(leak.get("assistant"), "/results/leak/assistant", problems),
        leak_message=_template(leak.get("message"), "/results/leak/message", problems),
    )


def _has_merging_echo(template: Any) -> bool:
    """``mode: restate``: the history is the assistant message sent back with each call's
    result in its own part, so ``assistant`` must merge the results in (an ``$echo`` with
    ``merge``) somewhere inside it."""
    if isinstance(template, dict):
        merging = "$echo" in template and "merge" in template
        return merging or any(_has_merging_echo(value) for value in template.values())
    return isinstance(template, list) and any(_has_merging_echo(value) for value in template)


# --- a strategy's sections --------------------------------------------------------------


def sections_of(strategy: Any) -> CompiledSections:
    """The compiled sections of a strategy: those it compiled with itself (``sections``), so
    that no cache outlives it. Any other object with a ``descriptor`` mapping works too; its
    sections are compiled on each use, as nothing may keep them (or it) alive."""
    compiled = getattr(strategy, "sections", None)
    if compiled.__class__ is CompiledSections:
        return compiled
    return compile_sections(getattr(strategy, "descriptor", None) or {})


def _declared(strategy: Any, section: str) -> Any:
    """The strategy's compiled ``results`` or ``declarations`` section; NotImplementedError
    when its descriptor declares none."""
    compiled = getattr(sections_of(strategy), section)
    if compiled is None:
        name = getattr(strategy, "name", None) or type(strategy).__name__
        raise NotImplementedError(f"format {str(name)!r} declares no {section} section")
    return compiled


# --- records and tools as template data ----------------------------------------------------


def _fields_of(obj: Any) -> Callable[..., Any]:
    """``get(key, default)`` over a mapping's keys or an object's attributes."""
    if isinstance(obj, dict):
        return obj.get
    return lambda key, default=None: getattr(obj, key, default)


def record_view(record: Any, free_form: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """A record as templates see it: ``{name, arguments, result, error, tool_call_id,
    failed, free_form}``. Accepts a :class:`~engine.records.ToolCallRecord`, a mapping, or
    any object with those attributes. ``free_form`` is true for the result of a free-form
    call of the message (its CALL-ID among ``free_form``), so that a wire answers it in its
    own shape."""
    get = _fields_of(record)
    error, call_id = get("error"), get("tool_call_id")
    return {
        "name": get("name"),
        "arguments": get("arguments") or {},
        "result": get("result"),
        "error": None if error is None else str(error),
        "tool_call_id": call_id,
        "failed": error is not None,
        "free_form": call_id is not None and call_id in free_form,
    }


def tool_view(tool: Any) -> dict[str, Any]:
    """A tool as templates see it: ``{name, description, parameters, format}``, the
    parameters a JSON Schema object (an empty object schema when the tool has none), the
    format a free-form tool's input format, or None (``engine.Tool.format``)."""
    get = _fields_of(tool)
    parameters = get("parameters")
    if parameters is None:
        parameters = get("input_schema")
    return {
        "name": get("name"),
        "description": get("description") or "",
        "parameters": parameters or {"type": "object", "properties": {}},
        "format": get("format"),
    }


def _history(rendered: Iterable[Any]) -> list[dict[str, Any]]:
    """Rendered templates as history, a deep copy: what rendered to nothing left out, a list
    spliced in as its items."""
    out: list[Any] = []
    for value in rendered:
        if isinstance(value, list):
            out.extend(value)
        elif value is not MISSING and value is not None:
            out.append(value)
    return cast(list[dict[str, Any]], copy_json(out))


# --- the public functions ------------------------------------------------------------------


def result_messages(strategy: Any, message: Any, records: Iterable[Any]) -> list[dict[str, Any]]:
    """The native history that answers ``records``: the assistant turn as the wire needs it
    back, then the results, as the strategy's ``results`` section declares them. A ``str``
    message is a call that leaked into text, answered as :func:`leak_result_messages` does."""
    if isinstance(message, str):
        return leak_result_messages(strategy, message, records)
    spec: CompiledResults = _declared(strategy, "results")
    ids_of = getattr(strategy, "free_form_ids", None)  # a wire's strategy; a codec has none
    free = frozenset(ids_of(message)) if ids_of is not None else frozenset()
    views = [record_view(r, free) for r in records]
    ctx = {"message": message, "records": views}
    rendered = [] if spec.assistant is None else [spec.assistant.render(ctx, MISSING)]
    if spec.result is not None:  # per_call
        rendered += [spec.result.render({**ctx, "record": view}, MISSING) for view in views]
    elif spec.message is not None and views:  # one_message
        rendered.append(spec.message.render(ctx, MISSING))
    # restate: the assistant message above carries each result in its own call's part.
    return _history(rendered)


def tool_declarations(strategy: Any, tools: Iterable[Any]) -> Any:
    """The request fragment that declares ``tools`` on the strategy's wire (``{}`` for no
    tools), as its ``declarations`` section says."""
    template: Template = _declared(strategy, "declarations")
    views = [tool_view(t) for t in tools]
    return copy_json(template.render({"tools": views}, {})) if views else {}


def results_text(records: Iterable[Any]) -> str:
    """The results of ``records`` as one plain text, one paragraph a call."""
    return "\n\n".join(_result_text(record_view(record)) for record in records)


def _result_text(view: dict[str, Any]) -> str:
    """One record's paragraph: what the tool returned, or how it failed (an error that
    names the tool already is said as it is)."""
    name, error = view["name"], view["error"]
    if not view["failed"]:
        return f"Tool '{name}' returned: {render_result(view, 'text')}"
    if error.startswith(f"Tool '{name}'"):
        return str(error)
    return f"Tool '{name}' failed: {error}"


def text_result_messages(
    text: str, records: Iterable[Any], role: str = DEFAULT_LEAK_ROLE
) -> list[dict[str, Any]]:
    """History for a call that leaked into plain text (it never had a native call id): the
    assistant's text as it was, then every result in one message in ``role``. Never the
    system role: several wires (Anthropic, Bedrock, Gemini) have none in their messages."""
    if role == "system":
        raise ValueError("tool results are never sent in the system role")
    return [
        {"role": "assistant", "content": text},
        {"role": role, "content": results_text(records)},
    ]


def leak_result_messages(strategy: Any, text: str, records: Iterable[Any]) -> list[dict[str, Any]]:
    """:func:`text_result_messages` in the strategy's leak role, and in its own leak shapes
    where its descriptor declares them (``results.leak``)."""
    records = list(records)
    spec = sections_of(strategy).results
    role = DEFAULT_LEAK_ROLE if spec is None else spec.leak_role
    # a text-only turn (no records): the assistant's text alone, answering nothing
    generic = text_result_messages(text, records, role)[: 2 if records else 1]
    if spec is None or (spec.leak_assistant is None and spec.leak_message is None):
        return generic
    ctx = {
        "text": text,
        "records": [record_view(r) for r in records],
        "role": role,
        "results_text": generic[1]["content"] if len(generic) > 1 else "",
    }
    pairs = ((spec.leak_assistant, generic[0]), (spec.leak_message, generic[-1]))
    return _history(
        fallback if template is None else template.render(ctx, MISSING)
        for template, fallback in pairs[: len(generic)]
    )
