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
object. Every piece of a chunk is checked before any part of the chunk is taken: a path that cannot
be read, or that cannot be placed (a list index that would leave a hole, a member of something that
is not an object, a value over an object already built), raises a ``ValueError`` naming the path,
and the buffer turns it into a ``ChunkError`` with the chunk's index; nothing of that chunk has
been applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.assembly import Assembly
from ..model.fragments import Fragments, grow, ingest, materialize
from ..model.journal import count, put, put_attr, trim
from ..model.jsonpath import Token, normalized, set_at, singular_path
from ..model.jsonscan import COMPLETE
from ..model.parts import JoinRule, join_one
from .ops import (
    CompileContext,
    RuleProblem,
    Run,
    Target,
    fragments_reader,
    reasoning_inside,
)
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
    """The declared shape, read as the schema requires it: every field name the op needs is
    the descriptor's (formats/gemini.yaml names Gemini's), none is a default here. Only
    ``null_value`` is optional: without it, no value field means null."""
    if not spec:
        return None
    if spec["text_value"] not in spec["values"]:
        raise RuleProblem(
            ("continuation", "text_value"),
            f"{spec['text_value']!r} is not one of the value fields "
            f"({', '.join(map(str, spec['values']))}): the value field whose pieces concatenate "
            "must be one a piece is read from",
        )
    return Continuation(
        field=spec["field"],
        flag=spec["flag"],
        pieces=spec["pieces"],
        path=spec["path"],
        values=tuple(spec["values"]),
        text_value=spec["text_value"],
        args=spec["args"],
        opens=spec["opens"],
        null_value=spec.get("null_value"),
    )


def op_extend(spec: dict[str, Any], ctx: CompileContext) -> Run:
    read = compile_read(spec["from"], ctx.choice_alias)
    target = Target(spec["at"], ctx)
    rule = JoinRule.from_spec(spec["join"], spec["at"]) if spec.get("join") else None
    pattern = items_of(target.pattern)
    cont = _continuation(spec.get("continuation"))
    display_where = _display_where(ctx, target)
    at_root = target.at_root
    last = target.rel[-1]
    text_where = ctx.text_where  # which parts' text is display text (None: all)
    reasoning = _reasoning_readers(ctx, target)
    if cont is not None and finish_open_parts not in ctx.at_end:
        ctx.at_end.append(finish_open_parts)  # calls still open over parts close at the end

    def extend(asm: Assembly, ev: Any, ch: Any) -> None:
        incoming = read(ev, ch)
        if incoming is None:
            return
        if incoming.__class__ is not list:
            incoming = [incoming]
        if cont is not None:
            for part in incoming:  # only a chunk with a call part has pieces to check
                if part.__class__ is dict and cont.field in part:
                    _check_pieces(asm, incoming, cont)  # raises before anything changes
                    break
        parent = asm.root if at_root else target.field_parent(asm, ev, ch, "extend")
        if parent is None:
            return
        parts = parent.get(last)
        if parts.__class__ is not list:
            parts = put(asm.journal, parent, last, [])
        for part in incoming:
            if part.__class__ is not dict:
                trim(asm.journal, parts)
                parts.append(ingest(part))
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
            _take(asm, parts, part, rule, pattern, display_where, text_where, reasoning)

    return extend


def _display_where(ctx: CompileContext, target: Target) -> str | None:
    if ctx.text_pattern is None or not ctx.text_pattern.startswith(f"{target.pattern}[*]."):
        return None
    field = ctx.text_pattern[len(target.pattern) + 4 :]
    return field


def _reasoning_readers(ctx: CompileContext, target: Target) -> tuple[Any, ...]:
    """Readers of the reasoning inside an incoming part (Gemini's thought text)."""
    inside = reasoning_inside(ctx, target.pattern)
    return tuple(fragments_reader(rel, where) for rel, where in inside)


def _take(
    asm: Assembly,
    parts: list[Any],
    part: dict[str, Any],
    rule: JoinRule | None,
    pattern: str,
    display_field: str | None,
    text_where: Any,
    reasoning: tuple[Any, ...],
) -> None:
    before = len(parts)
    if rule is not None:
        stored = join_one(asm.journal, parts, part, rule)
    else:
        stored = ingest(part)
        trim(asm.journal, parts)
        parts.append(stored)
    if len(parts) > before:
        asm.item_added(pattern, stored, len(parts) - 1)
    if display_field:
        piece = part.get(display_field)
        if piece.__class__ is str and piece and (text_where is None or text_where(stored)):
            asm.display.append(piece)
            return
    for read in reasoning:  # never display text: a display piece returned above
        read(part, asm.reasoning)


def _open(
    asm: Assembly,
    parts: list[Any],
    part: dict[str, Any],
    call: dict[str, Any],
    cont: Continuation,
    pattern: str,
) -> None:
    """A call part with the flag: the call's arguments stream in the parts that follow."""
    kept = {k: v for k, v in call.items() if k not in (cont.flag, cont.pieces)}
    stored = {**ingest({k: v for k, v in part.items() if k != cont.field}), cont.field: kept}
    trim(asm.journal, parts)
    parts.append(stored)
    asm.item_added(pattern, stored, len(parts) - 1)
    track = asm.track_of.get(id(stored))
    if track is not None:
        track.args.reset()  # its arguments are still streaming
    sink = track.args.sink if track is not None else None
    state: tuple[dict[str, Any], Continuation, dict[str, Any], dict[str, Any], Any] = (
        stored,
        cont,
        {},
        {},
        sink,
    )
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
    """Set each piece's value at its JSON path (checked by :func:`_check_pieces`). A string
    piece that continues the previous piece of its leaf (that one had the flag) is appended to
    it: the leaf is kept as :class:`Fragments`, and ``leaves`` (every path set so far) holds
    it while it may continue, so a long string streamed in small pieces costs O(piece), not
    a copy of its prefix nor a walk down to its leaf."""
    if not pieces:
        return
    _stored, cont, args, leaves, sink = state
    for piece in pieces:
        for name in cont.values:  # the first value field that holds a value
            value = piece.get(name)
            if value is not None:
                break
        else:
            if cont.null_value is None or cont.null_value not in piece:
                count(asm.journal, asm.unknown, f"{cont.pieces} piece without a value")
                continue
            name, value = cont.null_value, None
        tokens = singular_path(piece[cont.path])
        more = piece.get(cont.flag)
        if sink is not None:  # a buffer with events: the call's ``partial`` takes the piece
            sink.path(piece[cont.path], value, bool(more) and name == cont.text_value)
        journal = asm.journal
        if name == cont.text_value and value.__class__ is str:
            prior = leaves.get(tokens)
            if prior is not None:  # the piece before at this leaf said more would follow
                if value:
                    grow(journal, prior, value)
            else:
                prior = Fragments(value)
                set_at(journal, args, tokens, prior)
            put(journal, leaves, tokens, prior if more else None)
        else:
            set_at(journal, args, tokens, ingest(value))
            put(journal, leaves, tokens, None)


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


# -- checking a chunk's pieces before any is applied ---------------------------------------


def _check_pieces(asm: Assembly, incoming: list[Any], cont: Continuation) -> None:
    """Follow the chunk's parts as ``extend`` will route them, and check every argument piece
    against the arguments as the pieces before it leave them: a ValueError naming the path
    before anything changes. Parts that carry no call object cost one look-up; a piece that
    sets a leaf set before (a string streamed in pieces) costs a set look-up."""
    field, flag, opens, pieces_field = cont.field, cont.flag, cont.opens, cont.pieces
    if asm.open_parts:
        state = asm.open_parts[-1]
        root, leaves = state[2], state[3]  # the open call's arguments and the leaves set
    else:
        root = leaves = None
    shadow: _Shadow | None = None
    for part in incoming:
        if part.__class__ is not dict:
            continue
        call = part.get(field)
        if call.__class__ is not dict:
            root = None
            continue
        if root is None or call.get(opens):
            if not call.get(flag):
                root = None  # a whole call (or another part): nothing streams
                continue
            root, leaves, shadow = {}, {}, None
        pieces = call.get(pieces_field)
        if pieces:
            if pieces.__class__ is not list:
                raise ValueError(f"{pieces_field} must be a list, got {type(pieces).__name__}")
            for n, piece in enumerate(pieces):
                path = piece.get(cont.path) if piece.__class__ is dict else None
                if path.__class__ is not str:
                    raise _malformed(cont, n, piece)
                tokens = singular_path(path)
                if tokens not in leaves:  # a leaf set before takes a value again
                    if shadow is None or shadow.root is not root:
                        shadow = _Shadow(root, leaves)
                    shadow.place(tokens, path)
        if not call.get(flag):
            root = None


def _malformed(cont: Continuation, n: int, piece: Any) -> ValueError:
    if piece.__class__ is not dict:
        return ValueError(f"{cont.pieces}[{n}] must be an object")
    return ValueError(f"{cont.pieces}[{n}] has no {cont.path} (a JSON path string)")


_OBJECT, _LIST, _VALUE = "an object", "a list", "a value"


def _shape_of(node: Any) -> tuple[str, int] | None:
    if node is _ABSENT:
        return None
    if node.__class__ is dict:
        return (_OBJECT, 0)
    if node.__class__ is list:
        return (_LIST, len(node))
    return (_VALUE, 0)


class _Shadow:
    """The arguments of one call as a chunk's pieces will leave them: the real tree, read
    only, plus what the chunk's earlier pieces create (by path prefix). ``leaves`` are the
    paths a piece has set already (the call's ``continuing``): a value there always fits, as
    no piece ever turns a value into a container or back."""

    __slots__ = ("root", "leaves", "made")

    def __init__(self, root: dict[str, Any], leaves: dict[str, Any]) -> None:
        self.root = root
        self.leaves = leaves
        self.made: dict[tuple[Any, ...], tuple[str, int]] = {}

    def place(self, tokens: tuple[Token, ...], path: str) -> None:
        """Would setting a value at ``tokens`` fit? A ValueError naming the path if not."""
        if not tokens:
            raise ValueError(f"JSON path {path!r} is the arguments object, not a place in it")
        made = self.made
        node: Any = self.root
        kind, length = _OBJECT, 0
        last = len(tokens) - 1
        for i, token in enumerate(tokens):
            if token.__class__ is int:
                if kind is not _LIST:
                    raise _misfit(path, tokens[:i], kind, "a list")
                if token > length:
                    raise ValueError(
                        f"JSON path {path!r}: index {token} would leave a hole in "
                        f"{normalized(tokens[:i])}, which holds {length} item(s)"
                    )
                if token == length:
                    made[tokens[:i]] = (_LIST, length + 1)
                child = node[token] if node.__class__ is list and token < len(node) else _ABSENT
            else:
                if kind is not _OBJECT:
                    raise _misfit(path, tokens[:i], kind, "an object")
                child = node.get(token, _ABSENT) if node.__class__ is dict else _ABSENT
            prefix = tokens[: i + 1]
            shape = made.get(prefix) if made else None
            if shape is None:
                shape = _shape_of(child)
            if i == last:
                if shape is not None and shape[0] is not _VALUE:
                    raise _misfit(path, prefix, shape[0], "a value")
                made[prefix] = (_VALUE, 0)
                return
            need = _LIST if tokens[i + 1].__class__ is int else _OBJECT
            if shape is None:
                shape = made[prefix] = (need, 0)
            elif shape[0] is not need:
                raise _misfit(path, prefix, shape[0], need)
            kind, length = shape
            node = child


def _misfit(path: str, prefix: tuple[Any, ...], found: str, wanted: str) -> ValueError:
    return ValueError(
        f"JSON path {path!r}: {normalized(prefix)} is {found} in the arguments so far; "
        f"the path needs {wanted} there"
    )
