"""mcs-formats: streaming tool-call wire formats from declarative YAML descriptors."""

from .buffer import LLMStreamBuffer
from .errors import ChunkError, DescriptorError, Problem, UnknownFormatError
from .registry import list_formats, load_format
from .strategy import ExtractedCall, ExtractionStrategy, Forming
from .validate import validate_descriptor

__all__ = [
    "ChunkError",
    "DescriptorError",
    "ExtractedCall",
    "ExtractionStrategy",
    "Forming",
    "LLMStreamBuffer",
    "Problem",
    "UnknownFormatError",
    "list_formats",
    "load_format",
    "validate_descriptor",
]
