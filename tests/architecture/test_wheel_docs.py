"""A wheel user reaches the docs: the pages and their images ship in the wheel, the metadata names
where the project lives, and ``arena docs`` finds the installed pages (not this checkout's)."""

from __future__ import annotations

import re
import zipfile

import pytest

from tests.support.wheel_env import build_log, clean_env, fresh_venv, run, wheel_path


@pytest.mark.slow
def test_the_wheel_carries_the_docs(tmp_path_factory):
    base = tmp_path_factory.getbasetemp() / "wheel-env"
    venv = fresh_venv(base)
    docs = base / "source" / "docs"  # the checkout's docs/ as the wheel was built from it
    assert "is absent from the `packages` configuration" not in build_log()
    wheel = zipfile.ZipFile(wheel_path())
    names = set(wheel.namelist())
    pages = sorted(docs.glob("*.md"))
    assert pages and {f"pptarena/docs/{p.name}" for p in pages} <= names
    images = {i for p in pages for i in re.findall(r"\]\((img/[^)\s#]+)\)", p.read_text())}
    assert images and {f"pptarena/docs/{i}" for i in images} <= names
    for page in pages:  # byte for byte the checkout's page
        assert wheel.read(f"pptarena/docs/{page.name}") == page.read_bytes()

    python = str(venv / "bin" / "python")
    call = "import sys; from pptarena.cli.docs import docs_command; docs_command(sys.argv[1:])"
    env = clean_env()
    where = run([python, "-c", call, "docs/backends.md", "--path"], cwd=venv, env=env)
    assert where.returncode == 0, where.stderr
    installed = where.stdout.strip()
    assert installed.startswith(str(venv)) and installed.endswith("pptarena/docs/backends.md"), installed
    shown = run([python, "-c", call, "backends"], cwd=venv, env=env)  # not a terminal: printed whole
    assert shown.returncode == 0 and shown.stdout == (docs / "backends.md").read_text(encoding="utf-8")
    listed = run([python, "-c", call, "--list"], cwd=venv, env=env)
    assert [line.split()[0] for line in listed.stdout.splitlines()] == sorted(p.stem for p in pages)
