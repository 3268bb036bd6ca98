"""Floor 3: what a descriptor compiles to: the one path language, the operation table,
predicates, templates, results and the immutable strategy (engine/README.md, "Layout")."""
