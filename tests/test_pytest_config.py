"""The README's test command, ``python -m pytest -q``, prints pytest's summary line.

``-q`` on the command line adds to any ``-q`` in the project's ``addopts``; at ``-qq`` pytest
drops the ``N passed`` line, so a reader (and CI's log) could not tell what ran. Checked on a
throwaway test folder run with the project's own configuration, which keeps it cheap.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT


def test_the_readme_command_prints_the_summary_line(tmp_path):
    assert "python -m pytest -q" in (ROOT / "README.md").read_text(encoding="utf-8")
    (tmp_path / "test_tiny.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"2 passed in [\d.]+s", last), result.stdout
