"""Floor 4: the text codec: its scanner of display text, its prompt and its strategy
(engine/README.md, "Layout")."""
