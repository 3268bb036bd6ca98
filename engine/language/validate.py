"""Checking a descriptor: every problem, each located in the YAML source.

A descriptor is read with the safe loader, keeping the line and column of every key and value
(:mod:`engine.language.yamlsource`); one that ``extends`` another is first resolved with its parents
(:mod:`engine.language.extends`), positions kept, and the resolved descriptor is what is checked, in
three passes; every problem found is reported, sorted by position, as
``FILE:LINE:COL: /json/pointer: message``:

1. the JSON Schema (``schemas/format.schema.json``, draft 2020-12), all errors collected. The
   schema's custom formats (``read-path``, ``jmespath``, ``presence-path``, ``template-path``,
   ``target-path``, ``item-target``, ``field-target``, ``pattern``, ``call-pattern``,
   ``field-chain``, ``python-regex``) are checked by compiling the value in its form of
   the one path language (:mod:`engine.compile.schema` holds the check and its wording,
   which a strategy built from a dict shares): a path that does not parse (its column
   named), a path of an old dialect (its new form named), a JMESPath that does not compile, a
   ``[*]`` where an operation needs one SLOT, an ``open`` that does not end with a SLOT step,
   ``calls.at`` without ``[*]``, an index where a value is installed at a field, a healing
   pattern that is not a regular expression;
2. what a schema cannot say: ``name`` equals the file's stem, sections in the schema's order
   (as the file writes them), the ``results`` and
   ``declarations`` templates (checked by :mod:`engine.compile.templates`, every problem at its
   pointer; the schema types templates for editors only, and says nothing inside them);
   (the schema's operations are the engine's table: ``tests/test_validate.py`` holds them
   equal, so an operation the schema allows always compiles);
3. the descriptor is compiled (a wire, or the text codec), so that whatever the checks above
   miss is still a reported problem and never a traceback at load; this runs even when they
   found problems, so that every problem is said at once (a compile problem at a place they
   already report, or a compile stopped by a value of the wrong shape, is left out).

A problem's ``rule`` names the check: a schema keyword (``type``, ``required``,
``enum``...), or ``unknown-key``, ``moved`` (a key of before, its new form named),
``operation``, ``path``, ``old-path``, ``jmespath``, ``slot``, ``target``, ``item-target``,
``field-target``, ``pattern``, ``call-pattern``, ``field-chain``, ``regex``, ``name``,
``order``, ``template``, ``yaml``, ``compile``, ``extends``, and for what can be known of
the flow when the descriptor loads, ``args-unwritten`` (``calls.args`` that no operation
writes) and ``slot-key`` (a rule that looks an item up by a slot key no rule opens it by).

A problem in a value the file inherited (through ``extends``) is reported in the file being
checked, at its ``extends`` line, with the pointer into the resolved descriptor, and says where
the inherited value is written: ``... (inherited from formats/openai_chat.yaml:52:7)``. The fix
is usually an override in this file, and a built-in's own file may not even be writable.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..compile.operations import Facts
from ..compile.paths import items_of, pattern
from ..compile.schema import schema, schema_problems
from ..compile.schema import schema_path as schema_path  # the CLI and tests read it here
from ..errors import Problem, escape
from .extends import resolve
from .yamlsource import DescriptorLoader, YAMLSourceError, load

if TYPE_CHECKING:
    from ..compile.strategy import ExtractionStrategy
    from ..text.strategy import TextStrategy

# A problem of the file being checked, placed in it: its SourceMap.problem, the file given.
Where = partial[Problem]

# -- the schema --------------------------------------------------------------------------------


def descriptor_kind(data: Any) -> str:
    """``codec_descriptor`` (a text codec) or ``wire_descriptor``, as the schema's root
    chooses between them."""
    return "codec_descriptor" if isinstance(data, dict) and "codec" in data else "wire_descriptor"


def section_order(kind: str = "wire_descriptor") -> list[str]:
    """Top-level keys in the order a descriptor writes them: the header, then the sections."""
    defs = schema()["$defs"]
    return [*defs["header"]["properties"], *defs[kind]["properties"]]


# -- what the schema cannot say -----------------------------------------------------------------


def _name_problems(data: dict[str, Any], file: str, where: Where) -> list[Problem]:
    name = data.get("name")
    path = Path(file)
    if not isinstance(name, str) or path.suffix not in (".yaml", ".yml") or name == path.stem:
        return []
    return [where("/name", f"name {name!r} must equal the file's stem {path.stem!r}", "name")]


def _order_problems(data: dict[str, Any], where: Where, kind: str) -> list[Problem]:
    """Sections out of order, as the file writes them (a resolved descriptor is reordered)."""
    order = {key: i for i, key in enumerate(section_order(kind))}
    out = []
    latest: str | None = None
    for key in (key for key in data if key in order):  # an unknown key is the schema's
        if latest is not None and order[key] < order[latest]:
            message = f"section {key!r} belongs before {latest!r}"
            out.append(where(f"/{escape(key)}", message, "order", at_key=True))
        else:  # keys are unique: a later key is further on
            latest = key
    return out


def _beside(problem: Problem, by: list[Problem]) -> bool:
    """A flow or compile problem in an object the checks before found at fault (at it, in
    it, or at a key beside it: ``/calls/args`` unwritten because ``/calls/at`` is wrong),
    which is most likely that fault seen again."""
    at, parent = problem.pointer, problem.pointer.rpartition("/")[0]
    near = [p.pointer for p in by]
    return any(p.startswith(at) or at.startswith(p) or p.rpartition("/")[0] == parent for p in near)


# -- what can be known of the flow when the descriptor loads ------------------------------------


def _args_flow(data: dict[str, Any], facts: list[Facts], where: Where) -> list[Problem]:
    """Where the rules write the calls' arguments, against what ``calls`` says of them:

    - ``calls.args`` streams fragments (the default ``args_arrive``) but no operation writes
      there: every call's arguments would stay empty, and no call would ever be runnable;
    - ``args_arrive: whole``, and an ``args`` rule streams them: each call would be ready
      with its whole value (``{}`` when the item came without), then fed again (a fold
      list's ``args`` takes a whole value whole, as Ollama's);
    - a rule writes arguments into a call item at a field that is not its ``args``: the
      engine feeds the call's own arguments whatever the field, so the rule cannot mean it."""
    calls = data.get("calls")
    if not isinstance(calls, dict):
        return []
    also = calls["also"] if isinstance(calls.get("also"), list) else []
    every = [("/calls", calls), *((f"/calls/also/{i}", p) for i, p in enumerate(also))]
    places = [
        (pointer, place)
        for pointer, place in every
        if isinstance(place, dict) and all(isinstance(place.get(k), str) for k in ("at", "args"))
    ]
    writers = [
        (f"{rule.pointer}/at" if rule.name in ("args", "args_final") else rule.pointer, rule, path)
        for rule in facts
        for path in rule.writes_args
    ]
    fields: dict[str, set[str]] = {}
    for _, place in places:
        if "[" not in place["args"]:  # not a field chain: reported as such, not again here
            fields.setdefault(pattern(place["at"]), set()).add(place["args"])
    out = []
    for at, _, path in writers:
        item, _, rest = path.rpartition("[*].")
        args = " or ".join(sorted(fields.get(items_of(item), ())))
        if args and "[" not in rest and rest not in fields[items_of(item)]:
            message = (
                f"the items of {item}[*] are calls, whose arguments are at {args} (calls.args): "
                f"arguments written at {rest} would go into them; write them at {item}[SLOT].{args}"
            )
            out.append(where(at, message, "args-field"))
    written = {path for _, _, path in writers}
    for pointer, place in places:
        wanted = f"{pattern(place['at'])}.{place['args']}"
        slotted = wanted.replace("[*]", "[SLOT]")
        if place.get("args_arrive") == "whole":
            message = (
                f"the calls' arguments arrive whole ({pointer}/args_arrive), and this rule "
                f"streams them at {slotted}: each call would be ready with its whole value, "
                "then fed again; stream them (args_arrive: fragments) or take them whole with "
                "the item"
            )
            out += [
                where(at, message, "args-whole")
                for at, rule, path in writers
                if path == wanted and rule.name == "args"
            ]
        elif wanted not in written:
            message = (
                f"no operation writes the calls' arguments at {slotted} (an args or args_final "
                "there, or a fold list's args): every call would stay without arguments; write "
                "them, or declare args_arrive: whole if they come with the item"
            )
            out.append(where(f"{pointer}/args", message, "args-unwritten"))
    return out


def _slot_keys(facts: list[Facts], where: Where) -> list[Problem]:
    """A rule that addresses an item of a list by a slot key (and ``scope``) with which no
    rule opens that list's items: the items it looks for are opened under another key, so
    every event it handles would be skipped (or start an item apart from them)."""
    opened: dict[str, set[tuple[Any, str]]] = {}
    out = []
    for rule in facts:
        if rule.at is not None and rule.slot_key is None and rule.scope is not None:
            message = f"a scope keys a SLOT, and {rule.at!r} has no slot step to scope"
            out.append(where(f"{rule.pointer}/scope", message, "slot-key"))
        elif rule.slot_key is not None and rule.opens is not None:
            opened.setdefault(rule.slot_key[0], set()).add((rule.scope, rule.slot_key[1]))
    for rule in facts:
        if rule.slot_key is None:
            continue
        list_pattern, key = rule.slot_key[0], (rule.scope, rule.slot_key[1])
        keys = opened.get(list_pattern)
        if not keys or key in keys:
            continue
        shown = ", ".join(sorted(_key_text(k) for k in keys))
        message = (
            f"slot key {_key_text(key)} of {rule.at!r}: no rule opens an item of "
            f"{list_pattern} by it (they open by {shown}); its events would find no item"
        )
        out.append(where(f"{rule.pointer}/at", message, "slot-key"))
    return out


def _key_text(key: tuple[Any, str]) -> str:
    scope, path = key
    return f"[{path}]" if scope is None else f"[{path}] in scope {scope!r}"


def _flow_problems(data: dict[str, Any], facts: list[Facts] | None, where: Where) -> list[Problem]:
    """What the schema cannot see across sections, found before any stream runs, from the
    facts of the rules as they compiled (a rule that did not compile is still there); none
    when the compile stopped before the rules, on a fault the checks before have said (a
    ``calls.at`` that is no path among them: the strategy compiles every place of the calls,
    so with facts, each one parses), or for a codec (no ``events``)."""
    if facts is None or not isinstance(data.get("events"), dict):
        return []
    return _args_flow(data, facts, where) + _slot_keys(facts, where)


def _compile(
    data: dict[str, Any], file: str, where: Where, sections: Any, checked_first: bool
) -> tuple[Any, list[Problem], list[Facts] | None]:
    """The one compile of a checked descriptor: its strategy, every problem the compiler
    found at the pointer of the value at fault (a rule that does not compile, a reasoning
    place no rule streams), which the checks before it cannot see, and its rules' facts for
    the flow checks (None when the compile stopped before its rules). Run even when those
    checks found problems (``checked_first``): every problem is said at once, but a compile
    that stops on a value of the wrong shape says nothing they have not."""
    from ..compile.strategy import ExtractionStrategy, Problems

    found = Problems()
    given: dict[str, Any] = {"sections": sections[0], "problems": found, "source": file}
    try:
        if descriptor_kind(data) == "codec_descriptor":
            from ..text.strategy import TextStrategy

            strategy: Any = TextStrategy(data, **given)
        else:
            strategy = ExtractionStrategy(data, serve=sections[1], **given)
    except Exception as exc:  # noqa: BLE001 - whatever the compiler refuses is a problem
        if checked_first:
            return None, [], None
        message = str(exc) or exc.__class__.__name__
        return None, [where("", f"does not compile: {message}", "compile")], None
    problems = [where(at, f"does not compile: {message}", "compile") for at, message in found]
    return strategy, problems, list(getattr(strategy, "rule_facts", ()))


# -- entry points -------------------------------------------------------------------------------


def validate_text(text: str, file: str) -> tuple[Any, list[Problem]]:
    """Check a descriptor's YAML text; ``file`` names it in the problems (and gives the stem
    that ``name`` must equal, and the folder that ``extends: PATH`` is relative to). Returns
    the data, ``extends`` resolved (None when the YAML does not parse), and every problem,
    sorted by position."""
    data, problems, _ = compile_text(text, file)
    return data, problems


def compile_text(
    text: str, file: str, parser: type[DescriptorLoader] = DescriptorLoader
) -> tuple[Any, list[Problem], ExtractionStrategy | TextStrategy | None]:
    """Check and compile a descriptor's YAML text in one pass: :func:`validate_text`'s data
    and problems, and the strategy compiled on the way (None when there is a problem), so
    that a descriptor that loads is compiled once. ``parser`` reads the YAML (the built-ins
    are read by libyaml's: :data:`engine.language.builtin_files.BUILTIN_PARSER`)."""
    from ..compile.results import check_sections
    from ..compile.serve import check_serve

    try:
        written, source = load(text, parser)
    except YAMLSourceError as exc:
        return None, [Problem(file, exc.line, exc.col, exc.pointer, str(exc), "yaml")], None
    data, source, problems = resolve(written, source, file)
    if problems:
        return written, _unique(problems), None
    if data is not written:
        data = _in_section_order(data)
    where = partial(source.problem, file)
    problems = [where(*said) for said in schema_problems(data)]
    strategy = None
    if isinstance(data, dict):
        problems += _name_problems(data, file, where)
        problems += _order_problems(written, where, descriptor_kind(data))
        # What the schema cannot say of the templates (every problem in them, each at the
        # pointer of its part) and of ``serve`` (a path's ``{name}`` twice), from their
        # compilers, which read only what has the schema's shape; what they compiled, the
        # strategy takes as it is, so that it compiles once.
        sections, templated = check_sections(data)
        serve, served = check_serve(data)
        problems += [where(*problem) for problem in templated + served]
        compiled = (None if templated else sections), serve
        strategy, found, facts = _compile(data, file, where, compiled, bool(problems))
        problems += [p for p in _flow_problems(data, facts, where) if not _beside(p, problems)]
        problems += [p for p in found if not _beside(p, problems)]
    return data, _unique(problems), (None if problems else strategy)


def _unique(problems: list[Problem]) -> list[Problem]:
    """In position order, each problem said once: two schema rules (a ``maxProperties`` and a
    ``not``, say) may report the same message at the same place, which reads as a repeat."""
    unique = {(problem.file, *_position(problem)): problem for problem in problems}
    return sorted(unique.values(), key=_position)


def _position(problem: Problem) -> tuple[Any, ...]:
    return (problem.line, problem.col, problem.pointer, problem.message)


def _in_section_order(data: dict[str, Any]) -> dict[str, Any]:
    """A resolved descriptor's sections in the order a file writes them (a child may add a
    section its parent lacks; ``show`` prints the result)."""
    order = {key: i for i, key in enumerate(section_order(descriptor_kind(data)))}
    return dict(sorted(data.items(), key=lambda item: order.get(item[0], len(order))))


def validate_descriptor(path: str | Path) -> list[Problem]:
    """Every problem of the descriptor file at ``path``; ``[]`` when it is valid.

    ``Problem.file`` is ``path`` as given; a file that cannot be read is one problem.
    """
    return check_file(path)[1]


def check_file(path: str | Path) -> tuple[Any, list[Problem]]:
    """The descriptor file at ``path`` checked and compiled in one pass: its strategy (None
    when there is a problem) and every problem (:func:`validate_descriptor`'s), so that a
    caller who reports the problems and then uses the strategy compiles it once."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(file, 1, 1, "", f"not UTF-8 text: {exc.reason}", "file")]
    except OSError as exc:
        return None, [Problem(file, 1, 1, "", f"cannot read: {exc.strerror or exc}", "file")]
    _, problems, strategy = compile_text(text, file)
    return strategy, problems
