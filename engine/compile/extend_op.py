"""``extend``: whole parts appended in order of appearance (Gemini, Bedrock tool results).

A wire that sends whole parts (Gemini's ``parts``) assembles them by appending, joining
adjacent parts of one kind (see :mod:`engine.model.parts`). Some of those parts may instead be
a call streamed over several parts (Vertex AI's ``functionCall {name, willContinue: true}``,
then parts ``functionCall {partialArgs: [...], willContinue}``): ``continuation`` declares that
shape, and the op assembles one whole call part from it. A part whose call object lacks the
opening field (``name``) continues the open call, with argument pieces or without (a bare
``{willContinue: true}`` between two items of an array); the call closes on a continuing part
without the flag (an empty call object ``{}`` is such a part, and is not kept), on any other
part, or at the wire's DONE; a call still continuing when the input ends without DONE, or
at a DONE that is a length cut, is cut: incomplete, never a call.

Each piece sets one value at an RFC 9535 JSON path (:mod:`engine.model.jsonpath`) of the arguments
object. A path that cannot be read, or that cannot be placed (a list index that would leave a hole,
a member of something that is not an object, a value over an object already built), raises a
``ValueError`` naming the path where the piece is written, and the buffer turns it into a
``ChunkError`` with the chunk's index. Nothing of that chunk is taken: every write goes through the
undo journal (:mod:`engine.model.journal`), and a chunk that raises is taken back whole, so no
pre-check walks the pieces twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.assembly import Assembly
from ..model.fragments import Fragments, grow, ingest, materialize
from ..model.journal import count, put, put_attr, trim
from ..model.jsonpath import Token, normalized, set_item, singular_path
from ..model.jsonscan import COMPLETE
from ..model.parts import JoinRule, join_one
from .ops import CompileContext, RuleProblem, Run, Target, reasoning_inside
from .paths import compile_read, items_of

_ABSENT = object()


@dataclass(frozen=True)
class Continuation:
    """How a call streamed over several parts is declared."""

    field: str  # the part's call object: functionCall
    flag: str  # the "more follows" flag on it and on a piece: willContinue
    pieces: str  # the list of path-addressed pieces: partialArgs
    path: str  # a piece's JSON path field: jsonPath
    values: tuple[str, ...]  # a piece's value fields: stringValue, numberValue, boolValue
    text_value: str  # the value field whose pieces concatenate: stringValue
    args: str  # where the assembled object goes in the call object: args
    opens: str  # the call object's field that only the opening part carries: name
    null_value: str | None  # the value field that means null whatever it holds: nullValue


def _continuation(spec: dict[str, Any] | None) -> Continuation | None:
    """The declared shape, read as the schema requires it (its keys are the fields): every
    field name the op needs is the descriptor's (formats/gemini.yaml names Gemini's), none
    is a default here. Only ``null_value`` is optional: without it, no value field means
    null."""
    if not spec:
        return None
    if spec["text_value"] not in spec["values"]:
        raise RuleProblem(
            ("continuation", "text_value"),
            f"{spec['text_value']!r} is not one of the value fields "
            f"({', '.join(map(str, spec['values']))}): the value field whose pieces concatenate "
            "must be one a piece is read from",
        )
    return Continuation(**{"null_value": None, **spec, "values": tuple(spec["values"])})


def op_extend(spec: dict[str, Any], ctx: CompileContext) -> Run:
    read = compile_read(spec["from"], ctx.choice_alias)
    target = Target(spec, ctx)
    rule = JoinRule.from_spec(spec["join"], spec["at"]) if spec.get("join") else None
    pattern = items_of(target.pattern)
    cont = _continuation(spec.get("continuation"))
    inner = f"{target.pattern}[*]."  # the field of an incoming part that is display text
    text = ctx.wire.text.pattern or ""
    display = text[len(inner) :] if text.startswith(inner) else None
    at_root = target.at_root
    last = target.rel[-1]
    text_where = ctx.wire.text.where  # which parts' text is display text (None: all)
    reasoning = reasoning_inside(ctx, target.pattern)  # inside a part: Gemini's thought text
    if cont is not None and finish_open_parts not in ctx.at_end:
        ctx.at_end.append(finish_open_parts)  # calls still open over parts close at the end

    def extend(asm: Assembly, ev: Any, ch: Any) -> None:
        incoming = read(ev, ch)
        if incoming is None:
            return
        if incoming.__class__ is not list:
            incoming = [incoming]
        parent = asm.root if at_root else target.field_parent(asm, ev, ch, "extend")
        if parent is None:
            return
        parts = parent.get(last)
        if parts.__class__ is not list:
            parts = put(asm.journal, parent, last, [])
        for part in incoming:
            if part.__class__ is not dict:
                _append(asm, parts, ingest(part), None)
                continue
            if cont is not None:
                call = part.get(cont.field)
                if asm.open_parts:
                    if call.__class__ is dict and not call.get(cont.opens):  # it continues
                        _continue(asm, part, call, cont)
                        continue
                    finish_open_parts(asm)
                if call.__class__ is dict and call.get(cont.flag):
                    _open(asm, parts, part, call, cont, pattern)
                    continue
            # A whole part: appended (or joined to the part before), its text shown.
            if rule is None:
                stored = _append(asm, parts, ingest(part), pattern)
            else:
                before = len(parts)
                stored = join_one(asm.journal, parts, part, rule)
                if len(parts) > before:
                    asm.item_added(pattern, stored, before)
            if display:
                piece = part.get(display)
                if piece.__class__ is str and piece and (text_where is None or text_where(stored)):
                    asm.journal.append(asm.display)
                    asm.display.append(piece)
                    continue
            if reasoning is not None:  # never display text: a display piece went on above
                reasoning(asm, part)

    return extend


def _append(asm: Assembly, parts: list[Any], stored: Any, pattern: str | None) -> Any:
    """Append ``stored`` to ``parts`` (journaled), told to the assembly as an item of
    ``pattern`` (None: a value that is no part object, never an item)."""
    trim(asm.journal, parts)
    parts.append(stored)
    if pattern is not None:
        asm.item_added(pattern, stored, len(parts) - 1)
    return stored


def _open(
    asm: Assembly, parts: list[Any], part: Any, call: Any, cont: Continuation, pattern: str
) -> None:
    """A call part with the flag: the call's arguments stream in the parts that follow."""
    kept = {k: v for k, v in call.items() if k not in (cont.flag, cont.pieces)}
    whole = {**ingest({k: v for k, v in part.items() if k != cont.field}), cont.field: kept}
    stored = _append(asm, parts, whole, pattern)
    track = asm.track_of.get(id(stored))
    if track is not None:
        track.args.reset()  # its arguments are still streaming
    state: tuple[Any, ...] = (stored, cont, {}, {}, track.args.sink if track else None)
    trim(asm.journal, asm.open_parts)
    asm.open_parts.append(state)
    _apply_pieces(asm, state, call.get(cont.pieces))


def _continue(
    asm: Assembly, part: dict[str, Any], call: dict[str, Any], cont: Continuation
) -> None:
    """A part of the open call: its pieces, any field it brings first (set once), and the end
    of the call when it lacks the flag. The part itself is not kept: it is the call's."""
    state = asm.open_parts[-1]
    stored = state[0]
    _apply_pieces(asm, state, call.get(cont.pieces))
    if len(call) > (cont.flag in call) + (cont.pieces in call):  # it brings more than pieces
        kept = stored[cont.field]
        for key, value in call.items():
            if key not in (cont.flag, cont.pieces) and kept.get(key) is None:
                put(asm.journal, kept, key, ingest(value))
    if len(part) > 1:
        for key, value in part.items():
            if key != cont.field and stored.get(key) is None:
                put(asm.journal, stored, key, ingest(value))
    if not call.get(cont.flag):
        finish_open_parts(asm)


def _apply_pieces(asm: Assembly, state: tuple[Any, ...], pieces: Any) -> None:
    """Set each piece's value at its JSON path. A string piece that continues the previous
    piece of its leaf (that one had the flag) is appended to it: the leaf is kept as
    :class:`Fragments`, and ``leaves`` (by path) holds it while it may continue,
    so a long string streamed in small pieces costs O(piece), not a copy of its prefix nor a
    walk down to its leaf. A malformed piece raises a ValueError where it is met: what the
    chunk wrote before it is undone with the chunk (the journal), so nothing of it is taken."""
    if not pieces:
        return
    _stored, cont, args, leaves, sink = state
    if pieces.__class__ is not list:
        raise ValueError(f"{cont.pieces} must be a list, got {type(pieces).__name__}")
    journal = asm.journal
    for n, piece in enumerate(pieces):
        if piece.__class__ is not dict:
            raise ValueError(f"{cont.pieces}[{n}] must be an object")
        path = piece.get(cont.path)
        if path.__class__ is not str:
            raise ValueError(f"{cont.pieces}[{n}] has no {cont.path} (a JSON path string)")
        tokens = singular_path(path)
        value: Any = None
        for name in cont.values:  # the first value field that holds a value
            value = piece.get(name)
            if value is not None:
                break
        else:
            if cont.null_value is None or cont.null_value not in piece:
                count(journal, asm.unknown, f"{cont.pieces} piece without a value")
                continue
            name, value = cont.null_value, None
        more = piece.get(cont.flag)
        text = name == cont.text_value and value.__class__ is str
        prior = leaves.get(tokens) if text else None
        if prior is None:
            prior = Fragments(value, journal) if text else ingest(value)
            _set_leaf(journal, args, tokens, prior, path)
        elif value:  # the piece before at this leaf said more would follow
            grow(journal, prior, value)
        keep = prior if text and more else None
        if leaves.get(tokens) is not keep:  # (a text piece that continues: already there)
            put(journal, leaves, tokens, keep)
        if sink is not None:  # a buffer with events: the call's ``partial`` takes the piece
            sink.path(path, value, bool(more) and name == cont.text_value)


def finish_open_parts(asm: Assembly, cut: bool = False) -> None:
    """Close every call still streaming over parts: its args become one whole object.

    Closed normally (a part without the flag, another part, or the wire's DONE without a
    length cut), that object is the call's arguments. ``cut`` (input ended without DONE, or
    a length stop): the pieces so far are only a prefix of the arguments, so the call is
    incomplete, never a call; the message keeps them and the flag the wire sent last (the
    call "will continue"), so that a reader of the message does not take them for a call."""
    journal = asm.journal
    while asm.open_parts:
        state = asm.open_parts.pop()
        journal.append((asm.open_parts.append, state))
        stored, cont, args, _, _ = state
        args = materialize(args)  # continued string leaves become plain strings
        call = stored[cont.field]
        put(journal, call, cont.args, args)
        track = asm.track_of.get(id(stored))
        if cut:
            put(journal, call, cont.flag, True)
            if track is not None:
                track.args.cut_whole(args)
            continue
        if track is not None:
            track.args.set_whole(args)
            put_attr(journal, track.args, "closed", True)
            if track.args.state == COMPLETE:
                asm.calls_dirty = True


# -- writing the arguments tree ---------------------------------------------------------------


def _set_leaf(
    journal: list[Any], root: dict[str, Any], tokens: tuple[Token, ...], value: Any, path: str
) -> None:
    """Set ``value`` at ``tokens``, creating the containers on the way (journaled). A path
    that cannot be placed (a list index that would leave a hole, a member of something that
    is not an object, a value over an object or a list) raises a ValueError naming ``path``
    before this write; the containers made on the way are undone with the chunk."""
    if not tokens:
        raise ValueError(f"JSON path {path!r} is the arguments object, not a place in it")
    node: Any = root
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if token.__class__ is int:
            if node.__class__ is not list:
                raise _misfit(path, tokens[:i], node, "a list")
            if token > len(node):
                raise ValueError(
                    f"JSON path {path!r}: index {token} would leave a hole in "
                    f"{normalized(tokens[:i])}, which holds {len(node)} item(s)"
                )
            child = node[token] if token < len(node) else _ABSENT
        else:
            if node.__class__ is not dict:
                raise _misfit(path, tokens[:i], node, "an object")
            child = node.get(token, _ABSENT)
        if i == last:
            if child.__class__ in (dict, list):
                raise _misfit(path, tokens, child, "a value")
            set_item(journal, node, token, value)
            return
        if child is _ABSENT:
            child = [] if tokens[i + 1].__class__ is int else {}
            set_item(journal, node, token, child)
        node = child


def _misfit(path: str, prefix: tuple[Any, ...], found: Any, wanted: str) -> ValueError:
    kind = {dict: "an object", list: "a list"}.get(found.__class__, "a value")
    return ValueError(
        f"JSON path {path!r}: {normalized(prefix)} is {kind} in the arguments so far; "
        f"the path needs {wanted} there"
    )
