"""YAML read with the safe loader, keeping where every value came from.

Errors must point into the YAML source (``formats/gemini.yaml:14:7: /calls/pth: ...``). PyYAML's
plain loaders drop positions, so this composes the node tree with :class:`yaml.SafeLoader` and
builds the data itself, recording the 1-based line and column of each key and value under its
JSON pointer. Only the safe constructors are ever used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass
class SourceMap:
    """JSON pointer -> (line, col) of the value, and of the key that names it.

    A descriptor that ``extends`` another is checked as one resolved document whose values come
    from several files: ``origins`` names the file (as a label) of every entry inherited from a
    parent; an entry without one was written by the file being checked.
    """

    values: dict[str, tuple[int, int]] = field(default_factory=dict)
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def locate(self, pointer: str, prefer_key: bool = False) -> tuple[int, int]:
        """The closest known position for ``pointer`` (walking up to its parents)."""
        _, line, col = self.find(pointer, prefer_key)
        return line, col

    def find(self, pointer: str, prefer_key: bool = False) -> tuple[str | None, int, int]:
        """Like :meth:`locate`, with the label of the file the position is in (None: this
        file's own)."""
        probe = pointer
        while True:
            table = (self.keys, self.values) if prefer_key else (self.values, self.keys)
            for t in table:
                if probe in t:
                    line, col = t[probe]
                    return self.origins.get(probe), line, col
            if not probe:
                return None, 1, 1
            probe = probe.rsplit("/", 1)[0]

    def inherited_from(self, label: str) -> SourceMap:
        """This map as a parent's: every entry not already inherited now comes from ``label``."""
        origins = {p: label for p in (*self.values, *self.keys)}
        origins.update(self.origins)
        return SourceMap(dict(self.values), dict(self.keys), origins)


class YAMLSourceError(ValueError):
    """YAML that cannot be read: where (1-based), and the JSON pointer when one is known."""

    def __init__(self, message: str, line: int, col: int, pointer: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.col = col
        self.pointer = pointer


class DescriptorLoader(yaml.SafeLoader):
    """The safe loader with YAML 1.2 booleans: only ``true``/``false`` are booleans, so keys
    such as ``on`` (the rule table) and values such as ``no`` stay strings."""


DescriptorLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
DescriptorLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def load(text: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document safely; return the data and its source map."""
    loader = DescriptorLoader(text)
    source = SourceMap()
    try:
        node = loader.get_single_node()
        data = None if node is None else _build(loader, node, "", source)
    except yaml.MarkedYAMLError as exc:  # syntax, and tags the safe loader refuses
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or str(exc)
        if problem.startswith("but ") and exc.context:
            problem = f"{exc.context}, {problem}"
        elif exc.context and exc.context_mark and exc.problem_mark:
            where = exc.context_mark
            problem += f" ({exc.context} from {where.line + 1}:{where.column + 1})"
        raise YAMLSourceError(f"YAML syntax: {problem}", line, col) from None
    finally:
        loader.dispose()
    return data, source


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _build(loader: DescriptorLoader, node: yaml.Node, pointer: str, source: SourceMap) -> Any:
    source.values[pointer] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                key = str(key)
            child = f"{pointer}/{escape(key)}"
            source.keys[child] = _mark(key_node)
            if key in out:
                line, col = _mark(key_node)
                raise YAMLSourceError(f"duplicate key {key!r}", line, col, child)
            out[key] = _build(loader, value_node, child, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(loader, item, f"{pointer}/{i}", source) for i, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)
