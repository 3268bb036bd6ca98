"""Validation placeholder replaced below."""
from __future__ import annotations

from .yamlsource import load


def validate_text(text, file):
    data, _ = load(text)
    return data, []
