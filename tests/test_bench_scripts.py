"""The bench/ scripts stay runnable: each imports what it uses from nettune at the top, so
`--help` fails the moment a module it names is renamed or moved (they print ratios;
running them for real is `sudo bench/NAME`, never part of the tests)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

BENCH = sorted(p for p in (ROOT / "bench").iterdir() if p.is_file() and p.read_text().startswith("#!/usr/bin/env python3"))


def test_there_are_bench_scripts():
    assert {p.name for p in BENCH} >= {"fidelity", "overhead"}


@pytest.mark.parametrize("script", BENCH, ids=lambda p: p.name)
def test_bench_script_imports_and_parses_its_arguments(script):
    p = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "usage:" in p.stdout
