"""Floor 7: drivers, the rounds they run, sync and async (engine/README.md, "Layout")."""
