"""Floor 2: the message under assembly: fragments, slotted lists, the incremental JSON scanner
and partial reader, part joining, and the per-stream assembly (engine/README.md, "Layout")."""
