"""Browser fixtures of the ``arena view`` tests: the system Chromium driven by Playwright (never a
downloaded browser), one per test module, and screenshots of a failed test's open pages.

``browser`` skips the test when Playwright or the system Chromium is missing. ``failure_shots`` is a
list a test adds its Playwright pages to: when the test fails, each page is saved as a full-page
screenshot in the test's ``tmp_path`` by :func:`pytest_runtest_makereport`, and the paths are printed
in the failure report (section "screenshots").
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.support.chromium import CHROMIUM, HEADLESS_ARGS


@pytest.fixture(scope="module")
def browser():
    """The system Chromium launched headless with :data:`tests.support.chromium.HEADLESS_ARGS`."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no system Chromium at {CHROMIUM} (scripts/setup.sh installs it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=HEADLESS_ARGS)
        yield b
        b.close()


@pytest.fixture
def failure_shots(tmp_path) -> list:
    """Pages (``(name, page)`` pairs or pages) to screenshot into ``tmp_path`` if the test fails."""
    return []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's pages of ``failure_shots``, saved while they are still open (before the
    fixtures' teardown), their paths added to the failure report."""
    report = yield
    pages = item.funcargs.get("failure_shots") if hasattr(item, "funcargs") else None
    if report.when == "call" and report.failed and pages:
        folder = item.funcargs["tmp_path"]
        saved = []
        for k, entry in enumerate(pages):
            name, page = entry if isinstance(entry, tuple) else (f"page-{k}", entry)
            path = folder / f"failure-{name}.png"
            with contextlib.suppress(Exception):  # a closed page or browser: nothing to show
                page.screenshot(path=str(path), full_page=True)
                saved.append(f"{path}  ({page.url})")
        text = "\n".join(saved) or "(no page could be saved)"
        report.sections.append(("screenshots", text))
        print(f"\nscreenshots of the failed test:\n{text}")
    return report
