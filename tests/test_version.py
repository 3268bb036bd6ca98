"""``engine.__version__``: the running checkout's pyproject.toml, else the installed metadata."""

from __future__ import annotations

import tomllib
from importlib import metadata

import pytest
from conftest import ROOT

import engine
from engine import version as version_module


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The module as if it ran from ``tmp_path/engine`` (no checkout around it yet)."""
    (tmp_path / "engine").mkdir()
    monkeypatch.setattr(version_module, "__file__", str(tmp_path / "engine" / "version.py"))
    return tmp_path


def test_a_checkout_reports_its_pyproject_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert engine.__version__ == project["version"]
    assert isinstance(engine.__version__, str)


def _missing(name):
    raise metadata.PackageNotFoundError(name)


def test_only_this_distributions_pyproject_counts(elsewhere, monkeypatch):
    monkeypatch.setattr(metadata, "version", _missing)
    read = version_module.version.__wrapped__  # uncached
    assert read() == version_module.UNKNOWN
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9"\n')
    assert read() == version_module.UNKNOWN
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "mcs-formats"\nversion = "2.5"\n')
    assert read() == "2.5"
    (elsewhere / "pyproject.toml").write_text("not [toml")
    assert read() == version_module.UNKNOWN


def test_without_a_checkout_the_installed_metadata_answers(elsewhere, monkeypatch):
    monkeypatch.setattr(metadata, "version", lambda name: {"mcs-formats": "3.1"}[name])
    read = version_module.version.__wrapped__
    assert read() == "3.1"
    monkeypatch.setattr(metadata, "version", _missing)
    assert read() == version_module.UNKNOWN
