"""mcs-formats: streaming tool-call wire formats from declarative YAML descriptors."""

from .compile.strategy import ExtractionStrategy, Forming
from .drivers.driver import BaseDriver, DriverResponse, Orchestrator, Tool, ToolCallRecord
from .errors import ChunkError, DescriptorError, Problem, TransportError, UnknownFormatError
from .events import (
    ArgumentsDelta,
    CallIncomplete,
    CallReady,
    CallStarted,
    Event,
    ExtractedCall,
    Finished,
    ProviderError,
    ReasoningDelta,
    TextDelta,
)
from .language.registry import list_formats, load_format
from .language.validate import validate_descriptor
from .records import FINISH_REASONS, FinishReason, Skipped, Usage
from .stream.buffer import LLMStreamBuffer
from .stream.transport import aeventstream_chunks, asse_chunks, eventstream_chunks, sse_chunks

__all__ = [
    "ArgumentsDelta",
    "BaseDriver",
    "CallIncomplete",
    "CallReady",
    "CallStarted",
    "ChunkError",
    "DescriptorError",
    "DriverResponse",
    "Event",
    "ExtractedCall",
    "ExtractionStrategy",
    "FINISH_REASONS",
    "FinishReason",
    "Finished",
    "Forming",
    "LLMStreamBuffer",
    "Orchestrator",
    "Problem",
    "ProviderError",
    "ReasoningDelta",
    "Skipped",
    "TextDelta",
    "TransportError",
    "Tool",
    "ToolCallRecord",
    "UnknownFormatError",
    "Usage",
    "aeventstream_chunks",
    "asse_chunks",
    "eventstream_chunks",
    "list_formats",
    "load_format",
    "sse_chunks",
    "validate_descriptor",
]


def __getattr__(name: str) -> str:
    """``engine.__version__``, read when first asked (importing ``engine`` reads no file)."""
    if name == "__version__":
        from .version import version

        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
