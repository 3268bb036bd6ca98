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

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What the build reads: pyproject.toml and what it names (readme, licence, the package dirs).
_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "engine", "formats", "schemas",
            "tests/golden")
TOYS = sorted(p for p in (ROOT / "tests" / "golden").iterdir() if (p / f"{p.name}.yaml").is_file())

# One worker runs this module (pyproject's --dist loadgroup), so the wheel is built once.
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once for the module's tests (each only reads it)."""
    return _wheel(tmp_path_factory.mktemp("build"))


def _wheel(tmp_path: Path) -> Path:
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
    return wheel


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_wheel_ships_every_format_schema_and_module(wheel):
    names = set(_wheel_names(wheel))
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


def test_the_wheel_alone_carries_the_toy_wires_and_the_authors_guide(wheel, tmp_path):
    """With only the wheel installed (unpacked onto an empty path: a pure wheel's install),
    `examples` lists every toy, writes one out with its streams, and prints the guide."""
    names = set(_wheel_names(wheel))
    toy_files = {
        f"engine/examples/{p.relative_to(ROOT / 'tests' / 'golden').as_posix()}"
        for toy in TOYS for p in toy.iterdir() if p.is_file()
    }
    assert len(TOYS) >= 7 and not sorted(toy_files - names)
    assert "engine/formats/README.md" in names
    recorded = [n for n in names if n.startswith("engine/examples/openai_chat/")]
    assert not recorded  # the built-ins' recorded streams stay in the repository

    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONIOENCODING="utf-8")

    def mcs(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "engine", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, encoding="utf-8", timeout=120)

    where = subprocess.run(
        [sys.executable, "-c", "import engine; print(engine.__file__)"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(site / "engine" / "__init__.py")  # the wheel's, alone
    listed = mcs("examples")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [t.name for t in TOYS]
    toy = TOYS[0]
    written = mcs("examples", toy.name, "--dir", "ex")
    assert written.returncode == 0, written.stderr
    streams = sorted(p.name for p in toy.glob("*.jsonl"))
    assert sorted(p.name for p in (tmp_path / "ex/tests/golden" / toy.name).glob("*.jsonl")) == (
        streams
    )
    assert mcs("test", "ex", "--update").returncode == 0
    guide = mcs("examples", "--guide")
    assert guide.stdout == (ROOT / "formats" / "README.md").read_text(encoding="utf-8")
