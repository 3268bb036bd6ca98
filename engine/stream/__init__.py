"""Floor 6: one stream: chunk decoding, the buffer (the message, the calls, the display text and
its scan) and its event recorder (engine/README.md, "Layout")."""
