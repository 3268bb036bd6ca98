"""The README's test command, ``python -m pytest -q``: its summary line, and its parallel run.

``-q`` on the command line adds to any ``-q`` in the project's ``addopts``; at ``-qq`` pytest
drops the ``N passed`` line, so a reader (and CI's log) could not tell what ran. The command
runs the suite on xdist workers, and a module marked with an ``xdist_group`` whole on one of
them (its module fixtures built once). Checked on throwaway test folders run with the
project's own configuration, which keeps it cheap.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT


def _readme_command(tmp_path) -> subprocess.CompletedProcess:
    """``python -m pytest -q`` on the folder ``tmp_path``, with the project's configuration."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_readme_command_prints_the_summary_line(tmp_path):
    assert "python -m pytest -q" in (ROOT / "README.md").read_text(encoding="utf-8")
    (tmp_path / "test_tiny.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    result = _readme_command(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"2 passed in [\d.]+s", last), result.stdout


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


def test_the_readme_command_runs_on_workers_and_a_group_on_one(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    result = _readme_command(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("8 passed"), result.stdout
    ran = {p.read_text() for p in (tmp_path / "ran").iterdir()}
    assert len(ran) == 1 and re.fullmatch(r"gw\d+", ran.pop()), ran
