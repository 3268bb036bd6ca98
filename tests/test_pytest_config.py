"""The README's test command, ``python -m pytest -q``: its summary line, and its parallel run.

``-q`` on the command line adds to any ``-q`` in the project's ``addopts``; at ``-qq`` pytest
drops the ``N passed`` line, so a reader (and CI's log) could not tell what ran. The command
runs the suite on xdist workers, and a module marked with an ``xdist_group`` whole on one of
them (its module fixtures built once). Checked on one throwaway test folder run with the
project's own configuration, which keeps it cheap.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

# One worker runs this module (pyproject's --dist loadgroup): the command runs once.
pytestmark = pytest.mark.xdist_group("pytest_config")

TINY = "def test_a():\n    pass\n\ndef test_b():\n    pass\n"
GROUPED = """\
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("n", range(8))
def test_where(n):
    out = Path(__file__).parent / "ran" / f"{n}"
    out.parent.mkdir(exist_ok=True)
    out.write_text(os.environ.get("PYTEST_XDIST_WORKER", "none"))
"""


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """``python -m pytest -q`` once, with the project's configuration, on a throwaway folder
    of two plain tests and eight grouped ones (a pytest run costs an interpreter a worker)."""
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "test_tiny.py").write_text(TINY)
    (folder / "test_grouped.py").write_text(GROUPED)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(folder), str(folder)],
        cwd=folder,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result, folder


def test_the_readme_command_prints_the_summary_line(readme_run):
    assert "python -m pytest -q" in (ROOT / "README.md").read_text(encoding="utf-8")
    result, _ = readme_run
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"10 passed in [\d.]+s", last), result.stdout


def test_the_readme_command_runs_on_workers_and_a_group_on_one(readme_run):
    _, folder = readme_run
    ran = {p.read_text() for p in (folder / "ran").iterdir()}
    assert len(ran) == 1 and re.fullmatch(r"gw\d+", ran.pop()), ran
