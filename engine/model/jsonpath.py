"""RFC 9535 JSON paths that address one value: how a streamed argument piece says where it goes.

Vertex AI streams a call's arguments as pieces, each naming its place by a JSON path
(``PartialArg.jsonPath``, "A JSON Path (RFC 9535) to the argument being streamed"). A piece sets
one value, so only a *singular* path means anything: the root ``$`` followed by child segments
that each select one member or one item:

- member-name shorthand ``.name``: a first character that is a letter, ``_`` or any character
  from U+0080 on (``$.名前``), then those or digits (RFC 9535 2.5.1.1); ``$`` and ``-`` are
  also taken inside a name, as the first version of this reader did;
- a bracketed name ``['a b']`` or ``["x"]``, with the string-literal escapes of RFC 9535
  2.3.1.1 (``\\b \\f \\n \\r \\t \\/ \\\\``, the quote that delimits the name, ``\\uXXXX`` with
  surrogate pairs), blank space allowed inside the brackets;
- an index ``[0]`` (no leading zeros, at most 2^53-1).

Everything else (wildcards, slices, filters, ``..``, several selectors in one segment) is
refused with a :class:`ValueError` that names the path and the offset; so is a negative index,
which names no place in a list still being built, unless the caller counts from the end
(``negative=True``: :class:`engine.model.partial.PartialJSON` sets values in lists it holds).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from .fragments import json_kind
from .journal import put, trim

_NAME_CHARS = "A-Za-z_$\u0080-\ud7ff\ue000-\U0010ffff"
_SHORTHAND = re.compile(f"[{_NAME_CHARS}][{_NAME_CHARS}0-9-]*")
_INDEX = re.compile(r"-?[0-9]+")
# A quoted name, up to the quote that closes it (an escaped character never does).
_QUOTED = {quote: re.compile(rf"{quote}((?:[^{quote}\\]|\\.)*){quote}", re.S) for quote in "'\""}
# A single-quoted name's pieces: an escape, a ", or a run of other characters.
_SINGLE_QUOTED = re.compile(r'\\.|"|[^\\"]+', re.S)
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_BLANK = " \t\n\r"
_MAX_INDEX = 2**53 - 1

Token = str | int


def _bad(path: str, pos: int, what: str) -> ValueError:
    return ValueError(f"JSON path {path!r} at offset {pos}: {what}")


@lru_cache(maxsize=1024)
def singular_path(path: str, negative: bool = False) -> tuple[Token, ...]:
    """``$.a['b c'][0]`` -> ``("a", "b c", 0)``. Cached: every piece of a leaf repeats its path.
    ``negative``: an index may count from the end (``[-1]``)."""
    if path[:1] != "$":
        raise _bad(path, 0, "a JSON path starts with '$'")
    out: list[Token] = []
    pos, end = 1, len(path)
    while pos < end:
        char = path[pos]
        if char == "[":
            token, pos = _selector(path, _skip_blank(path, pos + 1), negative)
            pos = _skip_blank(path, pos)
            if path[pos : pos + 1] != "]":
                more = " (one selector per segment)" if path[pos : pos + 1] == "," else ""
                raise _bad(path, pos, f"expected ']'{more}")
            pos += 1
        elif char == ".":
            if path.startswith("..", pos):
                raise _bad(path, pos, "'..' selects descendants, not one place")
            match = _SHORTHAND.match(path, pos + 1)
            if match is None:
                raise _bad(path, pos + 1, "expected a member name after '.'")
            token, pos = match.group(), match.end()
        else:
            raise _bad(path, pos, f"expected '.' or '[', got {char!r}")
        out.append(token)
    return tuple(out)


def normalized(tokens: tuple[Token, ...]) -> str:
    """The RFC 9535 normalized path of ``tokens`` (``$['a'][0]``), for messages."""
    steps = (
        f"[{token}]" if token.__class__ is int else f"['{str(token).translate(_NORMAL_ESCAPES)}']"
        for token in tokens
    )
    return "$" + "".join(steps)


# How a name's characters are escaped in a normalized path (RFC 9535 2.7): these by name, the
# other control characters as ``\\u00XX``, every other character as itself.
_NORMAL_ESCAPES = str.maketrans(
    {chr(code): f"\\u{code:04x}" for code in range(0x20)}
    | {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "'": "\\'", "\\": "\\\\"}
)


def _skip_blank(path: str, pos: int) -> int:
    return len(path) - len(path[pos:].lstrip(_BLANK))  # (a path is short, and read once)


def _selector(path: str, pos: int, negative: bool) -> tuple[Token, int]:
    char = path[pos : pos + 1]
    if char in ("'", '"'):
        return _name(path, pos)
    match = _INDEX.match(path, pos)
    if match is not None:
        text = match.group()
        if path[match.end() : match.end() + 1] == ":":
            raise _bad(path, pos, "a slice selects a range, not one place")
        if text != "0" and text.lstrip("-")[0] == "0":  # (-0 too: RFC 9535 has no -0)
            raise _bad(path, pos, f"index {text} has a leading zero")
        index = int(text)
        if abs(index) > _MAX_INDEX:
            raise _bad(path, pos, f"index {text} is out of range")
        if index < 0 and not negative:
            raise _bad(path, pos, f"a negative index ({text}) names no place in a list being built")
        return index, match.end()
    what = {"*": "a wildcard selects every child", "?": "a filter selects many children"}
    raise _bad(path, pos, what.get(char, "expected a quoted member name or an index"))


def _name(path: str, pos: int) -> tuple[str, int]:
    """A quoted member name from ``path[pos]`` (its quote) on: the name and the offset past it.

    Its escapes are JSON's (RFC 9535 2.3.1.1), with the quote that delimits the name escaped
    and the other one not: read as the JSON string they make, by ``json.loads``, which also
    refuses control characters and joins a surrogate pair; a surrogate left alone is refused."""
    quote = path[pos]
    match = _QUOTED[quote].match(path, pos)
    if match is None:
        raise _bad(path, pos, f"the name is not closed by {quote}")
    body = match.group(1)
    if quote == "'":  # the same name between double quotes (_SWAPPED)
        body = "".join(_SWAPPED.get(piece, piece) for piece in _SINGLE_QUOTED.findall(body))
    try:
        name: str = json.loads(f'"{body}"')
    except json.JSONDecodeError as bad:
        what = bad.msg.removesuffix(" at")  # ("Invalid control character at": where is ours)
        raise _bad(path, pos, f"the quoted name is not a JSON string: {what}") from None
    if _SURROGATE.search(name):
        raise _bad(path, pos, "a lone surrogate is not a character")
    return name, match.end()


# The quotes' parts swapped: an escaped ' is the quote itself, " is escaped, and \" (which
# only a double-quoted name may hold) the \' that JSON refuses as it refuses \" here.
_SWAPPED = {"\\'": "'", '"': '\\"', '\\"': "\\'"}


def place_at(journal: list[Any], root: Any, path: str) -> tuple[tuple[Token, ...], Any, Token]:
    """Where the value at the JSON path ``path`` goes under ``root``: its steps (read by
    :func:`singular_path`, negative indexes counting from the end), its container and its
    key there.

    The partial reader's way down a path (``set_path``), which takes any place a path can
    name: the containers on the way made where absent or null, a list padded with null up to
    the index (a negative index counts from the end), each write journaled. A ValueError,
    naming the place, where the path meets a value of another kind or an index before a
    list's start. (The extend operation refuses more: engine.compile.extend_op._set_leaf.)"""
    tokens = singular_path(path, negative=True)
    node: Any = root
    for depth, token in enumerate(tokens):
        held: type = node.__class__  # (compared as a name of its own: ``node`` stays Any)
        if held is not (list if token.__class__ is int else dict):
            kind = "an array" if token.__class__ is int else "an object"
            where = normalized(tokens[:depth])
            raise ValueError(f"JSON path {path!r}: {where} holds {json_kind(node)}, not {kind}")
        if isinstance(token, int):
            token += len(node) if token < 0 else 0  # (a negative index counts from the end)
            if token < 0:
                where = normalized(tokens[: depth + 1])
                where += ": the index is before the array's start"
                raise ValueError(f"JSON path {path!r}: {where}")
            while len(node) <= token:
                trim(journal, node)
                node.append(None)
        if depth == len(tokens) - 1:
            return tokens, node, token
        child: Any = node[token] if isinstance(token, int) else node.get(token)
        if child is None:
            child = [] if tokens[depth + 1].__class__ is int else {}
            set_item(journal, node, token, child)
        node = child
    raise ValueError(f"JSON path {path!r}: it names the whole value, not a member of it")


def set_item(journal: list[Any], node: Any, key: Token, value: Any) -> None:
    """``node[key] = value``, journaled, on an object or a list (an index at its length
    appends): the one write at a path's last step, for ``place_at`` and the extend operation."""
    if node.__class__ is dict:
        put(journal, node, key, value)
    elif key == len(node):
        trim(journal, node)
        node.append(value)
    else:
        journal.append((node.__setitem__, key, node[key]))
        node[key] = value
