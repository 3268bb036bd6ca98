"""Loading a descriptor file: read safely, validate fully, compiling on the way.

Checking and compiling are one pass (:func:`engine.language.validate.compile_text`): an invalid
descriptor yields no strategy, and every problem (schema, paths, references, what the
compiler refused) is raised together as one :class:`~engine.errors.DescriptorError`. A
descriptor that ``extends`` another compiles from the resolved descriptor
(:mod:`engine.language.extends`); its strategy's ``descriptor`` is that resolved data, with no
``extends`` left in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DescriptorError
from .validate import compile_text
from .yamlsource import DescriptorLoader

if TYPE_CHECKING:
    from ..compile.strategy import ExtractionStrategy


def load_descriptor(
    path: str | Path, parser: type[DescriptorLoader] = DescriptorLoader
) -> ExtractionStrategy:
    """The strategy of the descriptor file at ``path``, compiled by the pass that checks it;
    ``parser`` reads its YAML (the registry reads a built-in with libyaml's)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")  # an unreadable file raises, as open() does
    _, problems, strategy = compile_text(text, str(path), parser)
    if problems or strategy is None:  # (None only beside a problem)
        raise DescriptorError(problems)
    return strategy
