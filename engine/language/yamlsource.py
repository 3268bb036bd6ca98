"""YAML read with the safe loader, keeping where every value came from.

Errors must point into the YAML source (``formats/gemini.yaml:14:7: /calls/pth: ...``). PyYAML's
plain loaders drop positions, so this composes the node tree with :class:`yaml.SafeLoader` and
builds the data itself, recording the 1-based line and column of each key and value under its
JSON pointer. Only the safe constructors are ever used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import yaml

from ..errors import Problem, escape

EXTENDS = "extends"  # the key by which a descriptor names its parent (language/extends.py)


Position = tuple[int, int]  # a 1-based (line, column) in the YAML text


class Place(NamedTuple):
    """Where the value at one JSON pointer is written: its own (line, col), its key's (None
    for the document and an item of a list), and the label of the file it is in (None: the
    file being checked; another, for a value inherited through ``extends``)."""

    value: Position
    key: Position | None = None
    origin: str | None = None


@dataclass
class SourceMap:
    """Every JSON pointer of a document and its :class:`Place`.

    A descriptor that ``extends`` another is checked as one resolved document whose values come
    from several files: each place says which.
    """

    places: dict[str, Place] = field(default_factory=dict)

    def problem(
        self, file: str, pointer: str, message: str, rule: str, at_key: bool = False
    ) -> Problem:
        """The problem at ``pointer``, at the closest known position (walking up to its
        parents): its value's, or (``at_key``) its key's own line, as an unknown key is said.

        A position inherited from a parent is not this file's: the problem is put at this
        file's ``extends`` and names where the inherited value is written (the fix is usually
        an override here, and a built-in's own file may not even be writable)."""
        origin, line, col = self._find(pointer, at_key)
        if origin is not None:
            message = f"{message} (inherited from {origin}:{line}:{col})"
            _, line, col = self._find(f"/{EXTENDS}", at_key=False)
        return Problem(file, line, col, pointer, message, rule)

    def _find(self, pointer: str, at_key: bool) -> tuple[str | None, int, int]:
        """The closest known position of ``pointer`` (walking up to its parents), with the
        label of the file it is in (None: this file's own)."""
        while (place := self.places.get(pointer)) is None:
            if not pointer:
                return None, 1, 1
            pointer = pointer.rsplit("/", 1)[0]
        return (place.origin, *(place.key or place.value if at_key else place.value))

    def inherited_from(self, label: str) -> SourceMap:
        """This map as a parent's: every place not already inherited now comes from ``label``."""
        places = self.places.items()
        return SourceMap({p: at._replace(origin=at.origin or label) for p, at in places})


class YAMLSourceError(ValueError):
    """YAML that cannot be read: where (1-based), and the JSON pointer when one is known."""

    def __init__(self, message: str, line: int, col: int, pointer: str = "") -> None:
        super().__init__(message)
        self.line, self.col, self.pointer = line, col, pointer


class _Mark(Protocol):
    """A position in the YAML text: PyYAML's pure and C parsers each have a ``Mark`` class."""

    line: int
    column: int


# Bounds on what one descriptor may hold, counted as the YAML is composed, before anything is
# built: aliases share a node, so a few lines of anchors can stand for billions of nodes (the
# "billion laughs") and a deep nest exhausts the recursion of any tree walk. The built-in
# descriptors use no alias, nest at most 12 levels and hold under 400 nodes.
MAX_ALIASES = 100
MAX_DEPTH = 50
MAX_NODES = 20_000


class DescriptorLoader(yaml.SafeLoader):
    """The safe loader with YAML 1.2 booleans: only ``true``/``false`` are booleans, so keys
    such as ``on`` (the rule table) and values such as ``no`` stay strings.

    It also bounds the document (:data:`MAX_ALIASES`, :data:`MAX_DEPTH`, :data:`MAX_NODES`,
    nodes and depth counted with every alias expanded) while composing it, so that an alias
    bomb or a deep nest is refused in time linear in its text, at the alias or node that
    crosses the bound, with its JSON pointer."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._open: list[str] = []  # the pointer of every node being composed, outermost first
        self._shape: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, height)
        self._aliases = self._nodes = 0  # aliases met, nodes composed (aliases expanded)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        pointer = self._pointer_of(index)
        self.check_event()  # peeks (PyYAML's own peek_event is untyped): the next event is
        event: yaml.Event = self.current_event  # current_event, not yet taken
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            assert node is not None, "an alias always composes to its anchored node"
            self._count_alias(event, node, pointer)
            return node
        if len(self._open) >= MAX_DEPTH:
            raise _limit(f"YAML nests deeper than {MAX_DEPTH} levels", event.start_mark, pointer)
        self._count(1, event.start_mark, pointer, "")
        before = self._nodes - 1
        self._open.append(pointer)
        node = super().compose_node(parent, index)
        assert node is not None, "a scalar, sequence or mapping event composes to its node"
        self._open.pop()
        height = 1 + max((self._shape[id(child)][1] for child in _children(node)), default=0)
        self._shape[id(node)] = (self._nodes - before, height)
        return node

    def _pointer_of(self, index: Any) -> str:
        """The JSON pointer of the node about to be composed, from the composer's ``index``:
        a list item's position, or a value's key node; anything else (None, for a key and for
        the document; a key that is not a scalar) takes the pointer of what holds it."""
        base = self._open[-1] if self._open else ""
        if isinstance(index, yaml.ScalarNode):
            return f"{base}/{escape(str(index.value))}"
        return f"{base}/{index}" if isinstance(index, int) else base

    def _count_alias(self, event: yaml.AliasEvent, node: yaml.Node, pointer: str) -> None:
        self._aliases += 1
        if self._aliases > MAX_ALIASES:
            raise _limit(f"YAML holds more than {MAX_ALIASES} aliases", event.start_mark, pointer)
        shape = self._shape.get(id(node))
        if shape is None:
            message = f"YAML alias *{event.anchor} refers to a node that contains it"
            raise _limit(message, event.start_mark, pointer)
        nodes, height = shape
        if len(self._open) + height > MAX_DEPTH:
            message = f"YAML alias *{event.anchor} nests deeper than {MAX_DEPTH} levels expanded"
            raise _limit(message, event.start_mark, pointer)
        self._count(nodes, event.start_mark, pointer, f" (alias *{event.anchor})")

    def _count(self, nodes: int, mark: _Mark | None, pointer: str, what: str) -> None:
        self._nodes += nodes
        if self._nodes > MAX_NODES:
            message = f"YAML expands to more than {MAX_NODES} nodes{what}: an alias bomb?"
            raise _limit(message, mark, pointer)

    def build(
        self, node: yaml.Node, pointer: str, source: SourceMap, key_at: Position | None = None
    ) -> Any:
        """The data of a composed node (at ``pointer``, its key at ``key_at``), every place
        recorded in ``source``; only the safe constructors are used."""
        source.places[pointer] = Place(_at(node.start_mark), key_at)
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = str(self.construct_object(key_node, deep=True))  # a key 1 reads as "1"
                child, at = f"{pointer}/{escape(key)}", _at(key_node.start_mark)
                if key in out:
                    raise YAMLSourceError(f"duplicate key {key!r}", *at, child)
                out[key] = self.build(value_node, child, source, at)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, f"{pointer}/{i}", source) for i, item in enumerate(node.value)]
        return self.construct_object(node, deep=True)


def _children(node: yaml.Node) -> list[yaml.Node]:
    """The nodes a node holds (a mapping's keys and values), each composed before it."""
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _limit(message: str, mark: _Mark | None, pointer: str) -> YAMLSourceError:
    return YAMLSourceError(message, *_at(mark), pointer)


def _at(mark: _Mark | None) -> Position:
    """A mark's 1-based line and column (no mark: the document's start)."""
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


DescriptorLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
DescriptorLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load(text: str, parser: type[DescriptorLoader] = DescriptorLoader) -> tuple[Any, SourceMap]:
    """Parse one YAML document safely; return the data and its source map."""
    loader = parser(text)
    source = SourceMap()
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.build(node, "", source)
    except yaml.MarkedYAMLError as exc:  # syntax, and tags the safe loader refuses
        problem = exc.problem or str(exc)
        if problem.startswith("but ") and exc.context:
            problem = f"{exc.context}, {problem}"
        elif exc.context and exc.context_mark and exc.problem_mark:
            line, col = _at(exc.context_mark)
            problem += f" ({exc.context} from {line}:{col})"
        at = _at(exc.problem_mark or exc.context_mark)
        raise YAMLSourceError(f"YAML syntax: {problem}", *at) from None
    finally:
        loader.dispose()
    return data, source
