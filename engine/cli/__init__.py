"""Floor 8: the ``mcs-formats`` commands and their printers; the library never imports them
(engine/README.md, "Layout"). ``main`` is the console script's entry point."""

from .commands import main

__all__ = ["main"]
