"""The libreoffice renderer against real LibreOffice and real corpus decks (kept few and small)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from pptarena.deck import slide_ids
from pptarena.types import ComponentContext, ComponentUnavailable, InfraError
from tests.support.render_fixtures import HIDDEN_DECK, SMALL_DECK, WIDE_DECK, corpus, needs_soffice

pytestmark = needs_soffice


def make(tmp: Path, **options):
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer

    opts = LibreOfficeRenderer.Options(**options)
    return LibreOfficeRenderer(opts, ComponentContext(cache_dir=tmp / "cache", model=lambda ref: None))


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """One warm renderer shared by this module's tests (LibreOffice starts once)."""
    r = make(tmp_path_factory.mktemp("warm"), workers=1)
    yield r
    r.close()


def gone(pid: int) -> bool:
    """True when no process with this id (or group) exists any more (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def assert_not_blank(path: Path) -> None:
    with Image.open(path) as im:
        extrema = im.convert("L").getextrema()
        spread = ImageStat.Stat(im.convert("L")).stddev[0]
    assert extrema[0] < extrema[1] and spread > 1.0, f"{path} looks blank"


@pytest.mark.slow
def test_hidden_slide_is_rendered_with_its_ids_and_size(warm, tmp_path):
    deck = corpus(HIDDEN_DECK)
    images = warm.render(deck, tmp_path / "out")
    assert [(i.number, i.sld_id, i.hidden) for i in images] == slide_ids(deck)
    assert images[0].hidden is True
    assert images[0].path == tmp_path / "out" / "slide-001.png"
    with Image.open(images[0].path) as im:
        assert im.size == (1280, 960) == (images[0].width, images[0].height)
    assert_not_blank(images[0].path)
    assert warm.mode == "warm"


def test_multi_slide_deck_in_order_and_cached(warm, tmp_path):
    deck = corpus(WIDE_DECK)
    images = warm.render(deck, tmp_path / "a")
    assert [(i.number, i.sld_id, i.hidden) for i in images] == slide_ids(deck)
    assert [p.name for p in sorted((tmp_path / "a").iterdir())] == [f"slide-00{n}.png" for n in range(1, 5)]
    for img in images:
        assert (img.width, img.height) == (1280, 720)
        assert_not_blank(img.path)
    uses = warm._slots[0].office.uses
    again = warm.render(deck, tmp_path / "b")  # cache hit: the office is not asked again
    assert warm._slots[0].office.uses == uses
    assert [(i.number, i.sld_id, i.width, i.height) for i in again] == [
        (i.number, i.sld_id, i.width, i.height) for i in images
    ]
    for x, y in zip(images, again, strict=True):
        assert x.path.read_bytes() == y.path.read_bytes()


def test_one_slide_edit_yields_exactly_that_slide(warm, tmp_path):
    from pptx import Presentation

    from pptarena.ssim import changed_slides, renders_unchanged

    deck = corpus(WIDE_DECK)
    prs = Presentation(str(deck))
    title = next(sh for sh in prs.slides[2].shapes if sh.has_text_frame and sh.text_frame.text.strip())
    title.text_frame.paragraphs[0].runs[0].text = "A different title"
    edited = tmp_path / "edited.pptx"
    prs.save(str(edited))
    before = warm.render(deck, tmp_path / "before")
    after = warm.render(edited, tmp_path / "after")
    changed = changed_slides(before, after)
    assert [(c["a"], c["b"], c["status"]) for c in changed] == [(3, 3, "matched")]
    assert changed[0]["ssim"] < 0.99
    assert not renders_unchanged(before, after)
    assert renders_unchanged(before, warm.render(deck, tmp_path / "before2"))


@pytest.mark.slow
def test_parallel_callers_get_separate_offices_and_profiles(tmp_path):
    r = make(tmp_path, workers=2, cache=False)
    decks = [corpus(SMALL_DECK), corpus(HIDDEN_DECK), corpus(WIDE_DECK)]
    try:
        with ThreadPoolExecutor(3) as pool:  # three callers, two offices: one waits its turn
            results = list(pool.map(lambda d: r.render(d, tmp_path / d.stem), decks))
        assert [len(x) for x in results] == [3, 1, 4]
        assert 1 <= len(r._slots) <= 2
        assert len({slot.profile for slot in r._slots}) == len(r._slots)
    finally:
        r.close()


@pytest.mark.slow
def test_crashed_office_is_replaced(warm, tmp_path):
    deck = corpus(SMALL_DECK)
    if not warm._slots:  # run first or alone: start the office with one render
        warm.render(deck, tmp_path / "warm-up")
    slot = warm._slots[0]
    office_pid = slot.office._office_pid
    os.killpg(office_pid, signal.SIGKILL)
    warm.cache, cache = None, warm.cache
    try:
        images = warm.render(deck, tmp_path / "out")  # first attempt fails, the retry restarts
    finally:
        warm.cache = cache
    assert len(images) == 3
    assert slot.office._office_pid != office_pid


@pytest.mark.slow
def test_warm_office_that_hangs_mid_render_is_killed(tmp_path):
    r = make(tmp_path, cache=False, workers=1, timeout=2.0)
    try:
        r.render(corpus(HIDDEN_DECK), tmp_path / "first")
        office = r._slots[0].office
        pids = [office._office_pid, office._bridge.pid]
        os.killpg(office._office_pid, signal.SIGSTOP)  # a frozen office: the bridge waits forever
        with pytest.raises(InfraError, match="timed out after 2s"):
            r.render(corpus(SMALL_DECK), tmp_path / "second")
        assert all(gone(pid) for pid in pids)
        assert len(r.render(corpus(SMALL_DECK), tmp_path / "third")) == 3  # a fresh office takes over
    finally:
        r.close()


@pytest.mark.slow
def test_oneshot_mode_custom_size_and_render_many(tmp_path):
    r = make(tmp_path, warm=False, size=400, cache=False)
    try:
        other = tmp_path / "copy" / SMALL_DECK
        other.parent.mkdir()
        shutil.copyfile(corpus(SMALL_DECK), other)
        results = r.render_many([corpus(SMALL_DECK), other], tmp_path / "out")
    finally:
        r.close()
    assert r.mode == "oneshot"
    dirs = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert dirs == ["docling_powerpoint_comments", "docling_powerpoint_comments-2"]
    for images in results.values():
        assert [(i.width, i.height) for i in images] == [(400, 300)] * 3


@pytest.mark.slow
def test_close_leaves_no_process(tmp_path):
    r = make(tmp_path, cache=False)
    r.render(corpus(HIDDEN_DECK), tmp_path / "out")
    office = r._slots[0].office
    pids = [office._office_pid, office._bridge.pid]
    r.close()
    for pid in pids:
        assert gone(pid)
    with pytest.raises(InfraError):
        r.render(corpus(HIDDEN_DECK), tmp_path / "out")


def test_missing_soffice_is_component_unavailable(tmp_path):
    with pytest.raises(ComponentUnavailable, match="apt-get install libreoffice"):
        make(tmp_path, soffice=str(tmp_path / "no-such-soffice"))


# --------------------------------------------------------------------------- broken offices


def fake_soffice(tmp: Path, body: str) -> Path:
    """A fake soffice script; it records its pid and its child's pid in ``pids``."""
    script = tmp / "fake-soffice"
    script.write_text(f"#!/bin/sh\necho $$ >> {tmp}/pids\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.mark.slow
def test_hung_office_times_out_as_infra_error_without_orphans(tmp_path, monkeypatch):
    # the fake office writes host pids into tmp_path: it runs outside the office's jail (the jailed
    # office's own hang is test_warm_office_that_hangs_mid_render_is_killed)
    monkeypatch.setenv("PPTARENA_SANDBOX", "off")
    script = fake_soffice(tmp_path, f"sleep 300 &\necho $! >> {tmp_path}/pids\nwait")
    r = make(tmp_path, soffice=str(script), timeout=1.5, start_timeout=1.0, cache=False)
    started = time.monotonic()
    try:
        with pytest.raises(InfraError, match="timed out"):
            r.render(corpus(HIDDEN_DECK), tmp_path / "out")
    finally:
        r.close()
    assert time.monotonic() - started < 30
    assert r.mode == "oneshot"  # the warm start failed first, then one-shot hung
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) >= 3  # warm attempt (shell) + one-shot (shell + sleep)
    deadline = time.monotonic() + 5
    while not all(gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in pids if not gone(p)] == []


def test_crashing_office_is_infra_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PPTARENA_SANDBOX", "off")  # the fake office records its runs in tmp_path
    script = fake_soffice(tmp_path, "kill -SEGV $$")
    r = make(tmp_path, soffice=str(script), warm=False, cache=False, retries=1)
    try:
        with pytest.raises(InfraError, match="exited with code"):
            r.render(corpus(HIDDEN_DECK), tmp_path / "out")
    finally:
        r.close()
    assert len((tmp_path / "pids").read_text().split()) == 2  # tried, then retried once


def test_unreadable_deck_is_not_an_infra_error(warm, tmp_path):
    from pptarena.deck import DeckError

    bad = tmp_path / "bad.pptx"
    bad.write_bytes(b"this is not a zip")
    with pytest.raises(DeckError):
        warm.render(bad, tmp_path / "out")
