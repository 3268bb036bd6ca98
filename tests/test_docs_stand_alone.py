"""Docs that stand alone (issue 19): what the docstrings, the descriptors' comments and the
CHANGELOG cite is in the repository: a README section that exists, a module that imports,
never a document the repository does not hold."""

from __future__ import annotations

import importlib
import importlib.util
import re

from conftest import ROOT

SOURCES = [
    *sorted((ROOT / "engine").rglob("*.py")),
    *sorted((ROOT / "engine").rglob("*.md")),
    *sorted((ROOT / "formats").glob("*")),
]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTIONS = set(re.findall(r"^#+ (.+)$", README, re.MULTILINE))


def test_nothing_cites_a_document_the_repository_does_not_hold():
    outside = ("API.md", "DESIGN.md", "STYLE.md")  # the steering documents, in ../shared
    citing = [
        (str(p.relative_to(ROOT)), name)
        for p in SOURCES
        for name in outside
        if name in p.read_text("utf-8")
    ]
    assert citing == []


def test_every_readme_section_cited_exists():
    cited = {
        (str(p.relative_to(ROOT)), name)
        for p in SOURCES
        for name in re.findall(r'README, "([^"]+)"', p.read_text("utf-8"))
    }
    assert cited, "no citation found: the pattern no longer matches how the code cites"
    assert sorted((f, n) for f, n in cited if n not in SECTIONS) == []


def _is_module(dotted: str) -> bool:
    """``dotted`` names a module, or a name inside one (``engine.compile.results.f``)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            value: object = importlib.import_module(module)
            for name in parts[end:]:
                if not hasattr(value, name):
                    return False
                value = getattr(value, name)
            return True
    return False


def test_every_module_the_changelog_and_docstrings_name_exists():
    texts = [(ROOT / "CHANGELOG.md"), *SOURCES]
    named = {
        (str(p.relative_to(ROOT)), m)
        for p in texts
        for m in re.findall(r"`(engine(?:\.[a-z_]+)+)`", p.read_text("utf-8"))
    }
    assert named
    assert sorted((f, m) for f, m in named if not _is_module(m)) == []
