"""Floor 5: descriptors as data: safe YAML with marks and limits, the schema check, ``extends``,
the registry of built-ins (engine/README.md, "Layout")."""
