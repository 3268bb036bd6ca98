"""The registry of built-in formats: found by name from a scan of the ``formats`` folder.

Descriptors are compiled once, when first asked for, and cached; a strategy is immutable, so
every buffer shares it. What only names a built-in (its name, its order, its end markers, is
it the codec) is read from its file without compiling it, as a lexer mapping names lexers
without importing them: listing the formats, or ending a user's stream with ``[DONE]``,
compiles nothing.

A descriptor file is loaded here too (:func:`load_descriptor`): checking and compiling are one
pass (:func:`engine.language.validate.compile_text`), so an invalid descriptor yields no
strategy, and every problem (schema, paths, references, what the compiler refused) is raised
together as one :class:`~engine.errors.DescriptorError`. A descriptor that ``extends`` another
compiles from the resolved descriptor (:mod:`engine.language.extends`); its strategy's
``descriptor`` is that resolved data, with no ``extends`` left in it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from ..compile.strategy import ExtractionStrategy
from ..errors import DescriptorError, UnknownFormatError
from .builtin_files import BUILTIN_PARSER, builtin_paths, did_you_mean
from .extends import resolve
from .validate import compile_text
from .yamlsource import DescriptorLoader, load

if TYPE_CHECKING:
    from ..text.strategy import TextStrategy


def load_descriptor(
    path: str | Path, parser: type[DescriptorLoader] = DescriptorLoader
) -> ExtractionStrategy:
    """The strategy of the descriptor file at ``path``, compiled by the pass that checks it;
    ``parser`` reads its YAML (a built-in is read with libyaml's)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")  # an unreadable file raises, as open() does
    _, problems, strategy = compile_text(text, str(path), parser)
    if problems or strategy is None:  # (None only beside a problem)
        raise DescriptorError(problems)
    return strategy


@functools.cache
def _compiled(name: str) -> ExtractionStrategy:
    return load_descriptor(builtin_paths()[name], BUILTIN_PARSER)


@functools.cache
def header(name: str) -> dict[str, Any]:
    """A built-in's descriptor as data, ``extends`` resolved, never compiled: what names it."""
    path = builtin_paths()[name]
    written, source = load(path.read_text(encoding="utf-8"), BUILTIN_PARSER)
    data = resolve(written, source, str(path))[0]
    return data if isinstance(data, dict) else {}


def list_formats() -> list[str]:
    """Built-in format names, in their declared order."""
    return sorted(builtin_paths(), key=lambda n: (header(n).get("order", 99), n))


# "mcs_text" is the text codec, typed as the TextStrategy it is; every other built-in name
# is a wire, and so is a descriptor file unless it declares a `codec` of its own (rare):
# typed as the ExtractionStrategy a buffer takes, which a TextStrategy is too, so that
# `LLMStreamBuffer(strategies=[load_format(name)])` checks without a cast.
@overload
def load_format(name_or_path: Literal["mcs_text"]) -> TextStrategy: ...
@overload
def load_format(name_or_path: str | Path) -> ExtractionStrategy: ...


def load_format(name_or_path: str | Path) -> ExtractionStrategy:
    """A built-in format by name, or a descriptor file by path."""
    key = str(name_or_path)
    if key in builtin_paths():
        return _compiled(key)
    path = Path(key)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_descriptor(path)
    known = ", ".join(list_formats())
    raise UnknownFormatError(f"unknown format {key!r}{did_you_mean(key)} Known formats: {known}")


def text_strategy() -> TextStrategy:
    """The built-in text codec strategy (``mcs_text``)."""
    return load_format("mcs_text")


@functools.cache
def end_markers() -> frozenset[str]:
    """Every built-in wire's end markers (``done_sentinels``: ``[DONE]``), read from their
    files."""
    return frozenset(m for n in builtin_paths() for m in header(n).get("done_sentinels", ()))


def wire_strategies() -> list[ExtractionStrategy]:
    """The built-in strategies that reassemble a wire (every format that recognises chunks)."""
    return [s for s in map(_compiled, list_formats()) if s.is_wire]
