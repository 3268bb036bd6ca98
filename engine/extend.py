"""``extend``: whole parts appended in order of appearance (Gemini, Bedrock tool results).

A wire that sends whole parts (Gemini's ``parts``) assembles them by appending, joining
adjacent parts of one kind (see :mod:`engine.parts`). Some of those parts may instead be a call
streamed over several parts (Gemini 3's ``functionCall {name, willContinue: true}`` followed by
``partialArgs`` pieces): ``continuation`` declares that shape, and the op assembles one whole
call part from it, closed by a part without ``willContinue``, by an empty call part (which is
not kept), by any other part, or by the end of input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .assembly import Assembly
from .jsonscan import COMPLETE
from .model import Fragments, ingest, materialize
from .ops import OPERATIONS, CompileContext, Run, Target, skips_without
from .parts import JoinRule, join_one
from .paths import compile_read

_PATH_TOKEN = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]")


@dataclass(frozen=True)
class Continuation:
    """How a call streamed over several parts is declared."""

    field: str  # the part's call object: functionCall
    flag: str  # the "more follows" flag on it: willContinue
    pieces: str  # the list of path-addressed pieces: partialArgs
    path: str  # a piece's JSON path field: jsonPath
    values: tuple[str, ...]  # a piece's value fields: stringValue, numberValue, ...
    text_value: str  # the value field whose pieces concatenate: stringValue
    args: str  # where the assembled object goes in the call object: args


def op_extend(spec: dict, ctx: CompileContext) -> Run:
    read = compile_read(spec["from"], ctx.choice_alias)
    target = Target(spec["at"], ctx)
    rule = JoinRule.from_spec(spec["join"]) if spec.get("join") else None
    pattern = f"{target.pattern}[*]"
    cont_spec = spec.get("continuation")
    cont = (
        Continuation(
            field=cont_spec["field"],
            flag=cont_spec.get("flag", "willContinue"),
            pieces=cont_spec["pieces"],
            path=cont_spec.get("path", "jsonPath"),
            values=tuple(cont_spec["values"]),
            text_value=cont_spec.get("text_value", cont_spec["values"][0]),
            args=cont_spec.get("args", "args"),
        )
        if cont_spec
        else None
    )
    display_where = _display_where(ctx, target)
    at_root = target.at_root
    last = target.rel[-1]
    text_where = ctx.text_where  # which parts' text is display text (None: all)

    def extend(asm: Assembly, ev: Any, ch: Any) -> None:
        incoming = read(ev, ch)
        if incoming is None:
            return
        if incoming.__class__ is not list:
            incoming = [incoming]
        if at_root:
            parent = asm.root
        else:
            item = target.locate_item(asm, ev, ch, True)
            if item is None:
                return
            parent = target.parent_of_field(item)
        parts = parent.get(last)
        if parts.__class__ is not list:
            parts = parent[last] = []
        for part in incoming:
            if part.__class__ is not dict:
                parts.append(ingest(part))
                continue
            if cont is not None and asm.open_parts and _continue(asm, parts, part, cont):
                continue
            _take(asm, parts, part, rule, pattern, display_where, cont, text_where)

    return skips_without(extend, spec["from"])


def _display_where(ctx: CompileContext, target: Target):
    if ctx.text_pattern is None or not ctx.text_pattern.startswith(f"{target.pattern}[*]."):
        return None
    field = ctx.text_pattern[len(target.pattern) + 4 :]
    return field


def _take(asm, parts, part, rule, pattern, display_field, cont, text_where) -> None:
    before = len(parts)
    if cont is not None and (part.get(cont.field) or {}).get(cont.flag):
        call = {k: v for k, v in part[cont.field].items() if k not in (cont.flag, cont.pieces)}
        stored = {**ingest({k: v for k, v in part.items() if k != cont.field}), cont.field: call}
        parts.append(stored)
        asm.item_added(pattern, stored)
        track = asm.track_of.get(id(stored))
        if track is not None:
            track.args.reset()  # its arguments are still streaming
        asm.open_parts.append((stored, cont, {}, {}))
        _apply_pieces(asm.open_parts[-1], part[cont.field].get(cont.pieces) or [])
        return
    if rule is not None:
        stored = join_one(parts, part, rule)
    else:
        stored = ingest(part)
        parts.append(stored)
    if len(parts) > before:
        asm.item_added(pattern, stored)
    if display_field:
        piece = part.get(display_field)
        if piece.__class__ is str and piece and (text_where is None or text_where(stored)):
            asm.display.append(piece)


def _continue(asm: Assembly, parts: list, part: dict, cont: Continuation) -> bool:
    """Route a part to the call still streaming, if there is one; True when consumed."""
    if not asm.open_parts:
        return False
    state = asm.open_parts[-1]
    call = part.get(cont.field)
    if call.__class__ is dict:
        if not call:
            finish_open_parts(asm)  # the empty call part closes it and is not kept
            return True
        if cont.pieces in call and not call.get("name"):
            _apply_pieces(state, call.get(cont.pieces) or [])
            if not call.get(cont.flag):
                finish_open_parts(asm)
            return True
    finish_open_parts(asm)
    return False


def _apply_pieces(state: tuple, pieces: list) -> None:
    """Set each piece's value at its JSON path. A string piece that continues the previous
    piece of its leaf (that one had the continuation flag) is appended to it: the leaf is kept
    as :class:`Fragments` while it may continue, so a long string streamed in small pieces
    costs O(piece), not a copy of its prefix."""
    _stored, cont, args, continuing = state
    for piece in pieces:
        if piece.__class__ is not dict:
            continue
        path = piece.get(cont.path)
        if path.__class__ is not str:
            continue
        for name in cont.values:
            if name in piece:
                value = piece[name]
                break
        else:
            continue
        more = bool(piece.get(cont.flag))
        if name == cont.text_value and value.__class__ is str:
            prior = _get_leaf(args, path) if continuing.get(path) else None
            if prior.__class__ is Fragments:
                if value:
                    prior.parts.append(value)
            elif prior.__class__ is str:
                _set_leaf(args, path, Fragments(prior + value))
            else:
                _set_leaf(args, path, Fragments(value))
        else:
            _set_leaf(args, path, ingest(value))
        continuing[path] = more


def finish_open_parts(asm: Assembly) -> None:
    """Close every call still streaming over parts: its args become one whole object."""
    while asm.open_parts:
        stored, cont, args, _ = asm.open_parts.pop()
        args = materialize(args)  # continued string leaves become plain strings
        stored[cont.field][cont.args] = args
        track = asm.track_of.get(id(stored))
        if track is not None:
            track.args.set_whole(args)
            track.args.closed = True
            if track.args.state == COMPLETE:
                asm.calls_dirty = True


@lru_cache(maxsize=512)
def _tokens(path: str) -> tuple:
    """``$.a.b[0]`` -> ``("a", "b", 0)``; cached, as every piece of a leaf repeats its path."""
    if not path.startswith("$"):
        raise ValueError(f"a JSON path starts with '$': {path!r}")
    out, pos = [], 1
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if m is None:
            raise ValueError(f"cannot read JSON path {path!r} at offset {pos}")
        name, index, quoted = m.groups()
        out.append(int(index) if index is not None else (name if name is not None else quoted))
        pos = m.end()
    return tuple(out)


def _get_leaf(root: dict, path: str) -> Any:
    node: Any = root
    for token in _tokens(path):
        if isinstance(token, int):
            node = node[token] if isinstance(node, list) and token < len(node) else None
        else:
            node = node.get(token) if isinstance(node, dict) else None
    return node


def _set_leaf(root: dict, path: str, value: Any) -> None:
    tokens = _tokens(path)
    if not tokens:
        return
    node: Any = root
    for token, nxt in zip(tokens, tokens[1:], strict=False):
        empty: Any = [] if isinstance(nxt, int) else {}
        if isinstance(token, int):
            while len(node) <= token:
                node.append(None)
            if node[token] is None:
                node[token] = empty
            node = node[token]
        else:
            if node.get(token) is None:
                node[token] = empty
            node = node[token]
    last = tokens[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value


OPERATIONS["extend"] = op_extend
