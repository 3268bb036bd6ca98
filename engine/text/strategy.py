"""The text codec seen as an extraction strategy: the same questions asked of plain text.

The codec is not a wire (it reassembles nothing); a wire's display text, or a whole text
message, is what it reads. Wrapping it in the strategy interface lets a driver resolve
``str`` input and leak fall-through through one chain, text last.
"""

from __future__ import annotations

from typing import Any

from ..compile.results import compile_sections, result_messages
from ..compile.strategy import NOT_FORMING, ExtractionStrategy, Forming, Problems
from ..events import ExtractedCall
from .codec import TextCodec

# A plain text stream as the buffer takes it: each piece of text is one event, ``{TEXT: piece}``,
# and the message it builds is ``{TEXT: "all the text"}``, the shape :meth:`TextStrategy._text`
# reads as a whole text message.
TEXT = "content"


class TextStrategy(ExtractionStrategy):
    """``mcs_text``: calls a model wrote into plain text, in this engine's own codec. A kind
    of strategy, so that ``load_format`` types every name soundly; it compiles no wire."""

    def __init__(
        self,
        descriptor: dict[str, Any],
        *,
        sections: Any = None,
        problems: Problems | None = None,
        source: str | None = None,
    ) -> None:
        """Compile ``descriptor``; ``sections`` and ``problems`` as for an
        :class:`~engine.compile.strategy.ExtractionStrategy` (the validator's one pass)."""
        self.descriptor = descriptor
        self.source = source
        # Its results (compiled with it, or by the validating pass): they die with it.
        self.sections = compile_sections(descriptor) if sections is None else sections
        self.name: str = descriptor["name"]
        self.title: str = descriptor.get("title", self.name)
        self.codec = TextCodec(descriptor, problems, source)
        self._plain: ExtractionStrategy | None = None

    is_wire = False
    leaks_into_text = False
    _serve = None  # no serve section: a codec is no provider

    def plain_text_wire(self) -> ExtractionStrategy:
        """The strategy a buffer holding only this codec streams plain text with: a wire
        with one rule, each text chunk appended to the message's text (the display text the
        codec scans), and no DONE (``close()`` ends it). Compiled once, on first use."""
        if self._plain is None:
            self._plain = _PlainTextWire(
                {
                    "name": self.name,
                    "title": self.title,
                    "docs": self.descriptor.get("docs", ""),
                    "recognize": {"chunk": {"field": TEXT, "is": "string"}},
                    "events": {"every": [{"append": {"at": TEXT, "from": TEXT}}]},
                    "message": {},
                    "text": {"at": TEXT},
                },
                self.source,
            )
        return self._plain

    @staticmethod
    def text_chunk(text: str) -> dict[str, Any]:
        """A piece of plain text as the event :meth:`plain_text_wire` takes."""
        return {TEXT: text}

    def __repr__(self) -> str:
        return f"<TextStrategy {self.name}>"

    @staticmethod
    def _text(message: Any) -> str | None:
        content = message.get(TEXT) if isinstance(message, dict) else message
        return content if isinstance(content, str) else None

    def recognizes(self, shape: Any) -> bool:
        """Any plain text, or a message whose content is a string."""
        return self._text(shape) is not None

    def _never(self, chunk: Any) -> bool:
        """Plain text has no chunks of a wire: none is recognized, an error or a DONE."""
        return False

    recognizes_chunk = recognizes_error = is_stream_complete = _never

    def forming(self, message: Any) -> Forming:
        scanner = self.codec.new_scanner()
        scanner.feed(self._text(message) or "")
        forming, name = scanner.forming()
        if forming:
            return Forming(True, name)
        calls = scanner.complete_calls()
        return Forming(True, calls[0].name) if calls else NOT_FORMING

    def _call_items(self, message: Any) -> list[Any]:
        return []  # plain text has no call item of a wire's: no incomplete or free-form call

    def extract(self, message: Any) -> list[ExtractedCall]:
        calls = self.codec.parse_calls(self._text(message) or "")
        return [ExtractedCall(c.name, c.arguments, None, c.end) for c in calls]

    def content_text(self, message: Any) -> str:
        return self._text(message) or ""

    def reasoning_text(self, message: Any) -> str:
        """Always "": plain text has no reasoning field (inline ``<think>`` is display text)."""
        return ""

    def result_messages(self, message: Any, records: list[Any]) -> list[dict[str, Any]]:
        return result_messages(self, self.content_text(message), records)

    def tool_declarations(self, tools: list[Any]) -> Any:
        return self.codec.function_description(tools)


class _PlainTextWire(ExtractionStrategy):
    """The plain-text wire of :meth:`TextStrategy.plain_text_wire`. Its turn goes back into a
    history as the text it is (a driver answers a text call there as it answers one leaked
    into any wire's text: the assistant's text, then the results), since a message
    ``{content: text}`` is no wire's request shape."""

    def answerable(self, message: Any) -> Any:
        return self.content_text(message)
