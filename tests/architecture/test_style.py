"""The house style is part of the suite: ruff's lint rules and its formatter (line length 110) on all code."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT

CODE = ["core", "plugins", "tests", "benchmarks"]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_lint_rules_pass_line_length_included():
    out = ruff("check", "--no-cache", *CODE)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_code_is_formatted():
    out = ruff("format", "--check", "--no-cache", *CODE)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
