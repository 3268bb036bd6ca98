"""The wheel carries every built-in descriptor and schema.

``formats/`` and ``schemas/`` live beside ``engine/`` in the repository and are mapped into the
package as ``engine.formats`` / ``engine.schemas`` by pyproject's ``package-dir``; loading a
format by name from an installed wheel works only if package-data really picked every file up.
An editable install or the source tree would hide a miss, so this builds the wheel, as pip does,
and reads its file list.

Offline and quick: the build runs with ``--no-build-isolation --no-index`` on the setuptools of
the ``test`` extra, in a copy of the project files, so nothing is written into the tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the build reads: pyproject.toml and what it names (readme, licence, the three package dirs).
_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "engine", "formats", "schemas")


def _build_wheel(tmp_path: Path) -> list[str]:
    project = tmp_path / "project"
    project.mkdir()
    for name in _SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, project / name)
    out = tmp_path / "wheel"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["--no-index", "--disable-pip-version-check", "-q", str(project), "-w", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout}\n{done.stderr}"
    (wheel,) = out.glob("mcs_formats-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_wheel_ships_every_format_schema_and_module(tmp_path):
    names = set(_build_wheel(tmp_path))
    expected = {
        f"engine/formats/{p.relative_to(ROOT / 'formats').as_posix()}"
        for p in (ROOT / "formats").rglob("*.yaml")
    }
    expected |= {
        f"engine/schemas/{p.relative_to(ROOT / 'schemas').as_posix()}"
        for p in (ROOT / "schemas").rglob("*.json")
    }
    expected |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "engine").rglob("*.py")}
    expected.add("engine/py.typed")  # PEP 561: a user's type checker reads engine's hints
    assert len(expected) > 10
    missing = sorted(expected - names)
    assert not missing, f"the wheel lacks {missing}: check [tool.setuptools.package-data]"
    entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert entry_points, "the wheel declares no console script"
