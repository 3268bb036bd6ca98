"""Loading a descriptor file: read safely, validate fully, then compile.

An invalid descriptor never compiles: every problem is collected (schema, paths, references)
and raised together as one :class:`~engine.errors.DescriptorError`. A descriptor that
``extends`` another compiles from the resolved descriptor (:mod:`engine.inherit`); its
strategy's ``descriptor`` is that resolved data, with no ``extends`` left in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import DescriptorError
from .strategy import ExtractionStrategy
from .validate import validate_text

if TYPE_CHECKING:
    from .textstrategy import TextStrategy


def load_descriptor(path: str | Path) -> ExtractionStrategy | TextStrategy:
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data, problems = validate_text(text, str(path))
    if problems:
        raise DescriptorError(problems)
    if "codec" in data:
        from .textstrategy import TextStrategy

        return TextStrategy(data, source=str(path))
    return ExtractionStrategy(data, source=str(path))
