"""The pre-initialised office profile (renderers/libreoffice/office_profile.py), with real LibreOffice."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pptarena.types import ComponentContext
from tests.support.render_fixtures import SMALL_DECK, WIDE_DECK, corpus, needs_soffice

pytestmark = [needs_soffice, pytest.mark.slow]


def make(cache: Path, **options):
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer

    opts = LibreOfficeRenderer.Options(**{"cache": False, "workers": 1, **options})
    return LibreOfficeRenderer(opts, ComponentContext(cache_dir=cache, model=lambda ref: None))


def render_once(cache: Path, deck: Path, out: Path, **options):
    """Render ``deck`` with a new renderer; returns (images, the slot's template, its profile's version)."""
    from pptarena.plugins.renderers.libreoffice import office_profile

    r = make(cache, **options)
    try:
        images = r.render(deck, out)
        assert r.mode == "warm"
        slot = r._slots[0]
        return images, slot.seeded_from, office_profile.recorded_version(slot.profile)
    finally:
        r.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache folder whose template was built by a first render."""
    cache = tmp_path_factory.mktemp("cache")
    images, template, _ = render_once(cache, corpus(SMALL_DECK), cache.parent / "first")
    assert template is not None and len(images) == 3
    return cache, template


def test_template_is_built_once_and_records_the_office_version(built):
    from pptarena.plugins.renderers.libreoffice import office_profile
    from pptarena.plugins.renderers.libreoffice import soffice as office

    cache, template = built
    soffice = office.find_soffice()
    assert template == office_profile.template_dir(cache / "office-profiles", soffice)
    assert office_profile.is_valid(template, soffice)
    stamp = json.loads((template / office_profile.STAMP_NAME).read_text())
    assert stamp["office"] == office.office_version(soffice)
    assert stamp["version"] == office_profile.recorded_version(template / "profile")
    assert stamp["version"].split(".")[0].isdigit()  # e.g. "7.4"
    assert Path(stamp["uno_python"]).is_file()
    leftovers = [p.name for p in template.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no half-built or trashed folders


def test_cached_template_is_reused_and_the_copy_skips_first_start_work(built, tmp_path):
    from pptarena.plugins.renderers.libreoffice import office_profile

    cache, template = built
    inode = (template / office_profile.STAMP_NAME).stat().st_ino
    seen: dict[str, object] = {}

    def render_and_look():
        r = make(cache)
        try:
            r.render(corpus(SMALL_DECK), tmp_path / "out")
            slot = r._slots[0]
            seen["seeded_from"] = slot.seeded_from
            log = slot.profile / "user" / "GraphicsRenderTests.log"
            seen["log_mtime"] = log.stat().st_mtime_ns if log.exists() else None
            seen["version"] = office_profile.recorded_version(slot.profile)
        finally:
            r.close()

    render_and_look()
    assert seen["seeded_from"] == template
    assert (template / office_profile.STAMP_NAME).stat().st_ino == inode  # not rebuilt
    assert seen["version"] == office_profile.recorded_version(template / "profile")
    # the office believed it had started before: it did not run (and rewrite) its graphics self-tests
    template_log = template / "profile" / "user" / "GraphicsRenderTests.log"
    if template_log.exists():
        assert seen["log_mtime"] == template_log.stat().st_mtime_ns


@pytest.mark.parametrize("damage", ["truncated-xcu", "no-stamp", "other-office", "garbage-stamp"])
def test_damaged_or_stale_template_is_detected_and_rebuilt(tmp_path, damage):
    from pptarena.plugins.renderers.libreoffice import office_profile
    from pptarena.plugins.renderers.libreoffice import soffice as office

    cache = tmp_path / "cache"
    _, template, _ = render_once(cache, corpus(SMALL_DECK), tmp_path / "a")
    soffice = office.find_soffice()
    xcu = template / "profile" / "user" / "registrymodifications.xcu"
    stamp = template / office_profile.STAMP_NAME
    if damage == "truncated-xcu":
        xcu.write_bytes(xcu.read_bytes()[:100])
    elif damage == "no-stamp":
        stamp.unlink()
    elif damage == "other-office":
        data = json.loads(stamp.read_text())
        stamp.write_text(json.dumps({**data, "office": "some other LibreOffice build"}))
    else:
        stamp.write_text("{not json")
    assert not office_profile.is_valid(template, soffice)
    images, again, version = render_once(cache, corpus(SMALL_DECK), tmp_path / "b")
    assert again == template and office_profile.is_valid(template, soffice)
    assert version is not None and version == office_profile.recorded_version(template / "profile")
    assert len(images) == 3
    assert [p.name for p in template.parent.iterdir() if p.name.startswith(".")] == []


def test_concurrent_builds_install_one_valid_template(tmp_path):
    from pptarena.plugins.renderers.libreoffice import office_profile
    from pptarena.plugins.renderers.libreoffice import soffice as office

    soffice = office.find_soffice()
    uno_python = office.find_uno_python()
    if uno_python is None:
        pytest.skip("no Python with uno")
    root = tmp_path / "office-profiles"
    template = office_profile.template_dir(root, soffice)
    # two builders racing past the in-process lock, as two commands would: the first rename wins
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: office_profile.build(template, soffice, uno_python, 60.0), range(2)))
    assert office_profile.is_valid(template, soffice)
    assert sorted(p.name for p in root.iterdir()) == [template.name]  # no .build-* or .trash-* left
    dest = tmp_path / "copy"
    assert office_profile.install(template, dest)
    assert office_profile.recorded_version(dest) == office_profile.recorded_version(template / "profile")


def test_a_copy_of_a_vanished_template_is_refused(tmp_path):
    from pptarena.plugins.renderers.libreoffice import office_profile

    broken = tmp_path / "template"
    (broken / "profile" / "user").mkdir(parents=True)
    (broken / "profile" / "user" / "registrymodifications.xcu").write_text("<oor:items")
    assert not office_profile.install(broken, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
    assert not office_profile.install(tmp_path / "missing", tmp_path / "dest2")


def test_renders_are_identical_with_and_without_the_template(built, tmp_path):
    cache, template = built
    deck = corpus(WIDE_DECK)
    seeded, used, _ = render_once(cache, deck, tmp_path / "seeded")
    plain, unused, _ = render_once(cache, deck, tmp_path / "plain", profile_template=False)
    assert used == template and unused is None
    assert len(seeded) == len(plain) == 4
    for a, b in zip(seeded, plain, strict=True):
        assert (a.number, a.width, a.height) == (b.number, b.width, b.height)
        assert a.path.read_bytes() == b.path.read_bytes()


def test_oneshot_mode_uses_an_existing_template_but_never_builds_one(built, tmp_path):
    cache, template = built
    images, used = _oneshot(cache, tmp_path / "a")
    assert used == template and len(images) == 3
    empty = tmp_path / "empty-cache"
    images, used = _oneshot(empty, tmp_path / "b")
    assert used is None and len(images) == 3
    assert not (empty / "office-profiles").exists()


def _oneshot(cache: Path, out: Path):
    r = make(cache, warm=False)
    try:
        images = r.render(corpus(SMALL_DECK), out)
        assert r.mode == "oneshot"
        return images, r._slots[0].seeded_from
    finally:
        r.close()


def test_office_failing_on_a_copied_profile_discards_the_template_and_starts_blank(
    built, tmp_path, monkeypatch
):
    """An undetectable defect in the template: the office dies on the copy (simulated: start fails once)."""
    from pptarena.plugins.renderers.libreoffice import office_profile
    from pptarena.plugins.renderers.libreoffice import soffice as office
    from pptarena.types import InfraError

    cache, _ = built
    cache2 = tmp_path / "cache"
    shutil.copytree(cache / "office-profiles", cache2 / "office-profiles")
    real_start = office.WarmOffice.start
    starts: list[str | None] = []

    def start(self):
        starts.append(office_profile.recorded_version(self.profile))
        if len(starts) == 1:
            raise InfraError("warm LibreOffice failed to start: soffice exited with code 134 while starting")
        real_start(self)

    monkeypatch.setattr(office.WarmOffice, "start", start)
    r = make(cache2)
    try:
        images = r.render(corpus(SMALL_DECK), tmp_path / "out")
        assert r.mode == "warm" and len(images) == 3
        assert r._slots[0].seeded_from is None
    finally:
        r.close()
    assert starts[0] is not None and starts[1] is None  # the copy, then a blank profile
    assert list((cache2 / "office-profiles").iterdir()) == []  # discarded, rebuilt by the next command
