"""mcs-formats: streaming tool-call wire formats from declarative YAML descriptors."""

from .buffer import LLMStreamBuffer
from .drivers import BaseDriver, DriverResponse, Orchestrator, Tool, ToolCallRecord
from .errors import ChunkError, DescriptorError, Problem, UnknownFormatError
from .events import CallIncomplete
from .records import Skipped
from .registry import list_formats, load_format
from .strategy import ExtractedCall, ExtractionStrategy, Forming
from .validate import validate_descriptor

__all__ = [
    "BaseDriver",
    "CallIncomplete",
    "ChunkError",
    "DescriptorError",
    "DriverResponse",
    "ExtractedCall",
    "ExtractionStrategy",
    "Forming",
    "LLMStreamBuffer",
    "Orchestrator",
    "Problem",
    "Skipped",
    "Tool",
    "ToolCallRecord",
    "UnknownFormatError",
    "list_formats",
    "load_format",
    "validate_descriptor",
]


def __getattr__(name: str) -> str:
    """``engine.__version__``, read when first asked (importing ``engine`` reads no file)."""
    if name == "__version__":
        from .version import version

        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
