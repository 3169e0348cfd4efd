"""The default renderer: LibreOffice (headless) → PDF → PNG with pypdfium2.

Registered as ``"libreoffice"`` by :mod:`.plugin`. It keeps warm office instances (one per
worker, each with its own user profile) driven over UNO by a small bridge
script, and falls back to one-shot ``soffice --convert-to`` when no Python
with ``uno`` is available. Each new profile is a copy of a pre-initialised
one cached per LibreOffice build (see :mod:`.office_profile`), so an office starts
in a fraction of a first start. Hidden slides are exported. Renders are
cached by deck content + settings (see :mod:`pptarena.render`).

Thread-safe: up to ``workers`` renders run at once, further callers wait.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import threading
import uuid
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import Field

from pptarena.render import RenderCache, cached_render, deck_output_dirs, deck_slides, pdf_to_pngs
from pptarena.trust import safeio
from pptarena.types import Component, ComponentContext, InfraError, SlideImage
from pptarena.types import Options as OptionsBase

from . import office_profile, soffice

log = logging.getLogger(__name__)

RENDERER_NAME = "libreoffice"
MAX_PDF_BYTES = 1 << 30
IMPL_VERSION = 3  # part of the cache key: bump when the output of this renderer changes (3: issue 23
# guard and jail; renders cached by 2 may show host pictures a hostile deck linked)


class _Slot:
    """One worker: a private profile folder, a scratch folder and maybe a warm office."""

    def __init__(self, index: int, profile: Path, scratch: Path):
        self.index = index
        self.profile = profile
        self.scratch = scratch
        self.office: soffice.WarmOffice | None = None
        self.seeded_from: Path | None = None  # the template the profile was copied from

    def close(self) -> None:
        if self.office is not None:
            self.office.close()
            self.office = None


def _cleanup(slots: list[_Slot], roots: list[Path]) -> None:
    for slot in slots:
        slot.close()
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)


class LibreOfficeRenderer(Component):
    """Render decks with LibreOffice: one PNG per slide, hidden slides included, in deck order."""

    class Options(OptionsBase):
        """Options of the ``libreoffice`` renderer."""

        size: int = Field(1280, ge=16, le=8192, description="long edge of every PNG, in pixels")
        timeout: float = Field(
            180.0, gt=0, description="seconds allowed per deck before the office is killed"
        )
        warm: bool = Field(
            True, description="keep LibreOffice running between renders (needs a Python with uno)"
        )
        workers: int = Field(
            2, ge=1, le=32, description="office instances (started on demand); more callers wait"
        )
        cache: bool = Field(True, description="reuse renders of identical decks")
        cache_dir: Path | None = Field(None, description="render cache folder (default <cache_dir>/renders)")
        soffice: str | None = Field(None, description="soffice executable (default: $PPTARENA_SOFFICE, PATH)")
        uno_python: str | None = Field(None, description="Python with the uno module (default: auto-detect)")
        retries: int = Field(
            1, ge=0, le=5, description="fresh-office retries after a crash (not after a timeout)"
        )
        max_uses: int = Field(200, ge=1, description="restart a warm office after this many decks")
        start_timeout: float = Field(60.0, gt=0, description="seconds allowed for a warm office to start")
        profile_root: Path | None = Field(
            None, description="where per-worker profiles go (default: temp dir)"
        )
        png_threads: int = Field(2, ge=1, le=32, description="threads encoding PNGs of one deck")
        profile_template: bool = Field(
            True,
            description="copy each new office profile from a pre-initialised one, built once per "
            "LibreOffice build under <cache_dir>/office-profiles (false: every office initialises "
            "its own)",
        )

    def __init__(self, options: LibreOfficeRenderer.Options, context: ComponentContext):
        super().__init__(options, context)
        self.options: LibreOfficeRenderer.Options = options
        self.soffice = soffice.find_soffice(options.soffice)
        cache_root = options.cache_dir or (Path(context.cache_dir) / "renders")
        self.cache = RenderCache(Path(cache_root)) if options.cache else None
        self._settings = {
            "size": options.size,
            "impl": IMPL_VERSION,
            "office": soffice.office_version(self.soffice),
        }
        self._uno_python: str | None = None
        self._template_root = Path(context.cache_dir) / "office-profiles"
        self._template_broken: str | None = None if options.profile_template else "disabled"
        self._warm_broken: str | None = None if options.warm else "disabled by the warm option"
        self._lock = threading.Lock()
        self._free: queue.Queue[_Slot] = queue.Queue()
        self._slots: list[_Slot] = []
        self._roots: list[Path] = []
        self._closed = False
        self._finalizer = weakref.finalize(self, _cleanup, self._slots, self._roots)

    # ------------------------------------------------------------------ public API

    @property
    def mode(self) -> str:
        """``"warm"`` or ``"oneshot"`` (what the next render will use, as far as known)."""
        return "oneshot" if self._warm_broken else "warm"

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """Render ``deck_path`` to ``out_dir/slide-001.png ...``; one image per slide, hidden included.

        :raises pptarena.deck.DeckError: the deck cannot be read (its own fault).
        :raises InfraError: LibreOffice crashed, hung (killed after ``timeout``) or produced a wrong PDF.
        """
        if self._closed:
            raise InfraError("the libreoffice renderer was closed")
        return cached_render(
            Path(deck_path),
            Path(out_dir),
            renderer=RENDERER_NAME,
            settings=self._settings,
            cache=self.cache,
            produce=self._produce,
        )

    def render_many(self, deck_paths: Iterable[Path], out_root: Path) -> dict[Path, list[SlideImage]]:
        """Render several decks into ``out_root/<deck stem>/`` (stems made unique), ``workers`` at a time.

        Returns a dict keyed by the given deck paths. If any deck fails, the first error is
        raised after every deck has been tried.
        """
        decks = [Path(p) for p in deck_paths]
        dirs = deck_output_dirs(decks, Path(out_root))
        # largest first: the longest conversion starts at once instead of last (shorter makespan)
        order = sorted(dict.fromkeys(decks), key=_deck_size, reverse=True)
        results: dict[Path, list[SlideImage]] = {}
        errors: list[BaseException] = []

        def one(deck: Path) -> None:
            try:
                results[deck] = self.render(deck, dirs[deck])
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        with ThreadPoolExecutor(max_workers=max(1, min(self.options.workers, len(decks)))) as pool:
            list(pool.map(one, order))
        if errors:
            raise errors[0]
        return {deck: results[deck] for deck in decks}

    def close(self) -> None:
        """Stop every office instance and delete the private profiles."""
        self._closed = True
        self._finalizer()

    def __enter__(self) -> LibreOfficeRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _acquire(self) -> _Slot:
        with self._lock:
            if self._free.empty() and len(self._slots) < self.options.workers:
                root = soffice.new_profile_dir(self.options.profile_root)
                self._roots.append(root)
                slot = _Slot(len(self._slots), root / "profile", root / "work")
                slot.scratch.mkdir(parents=True)
                self._slots.append(slot)
                return slot
        return self._free.get()

    def _produce(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        from pptarena.trust.render_guard import render_copy

        slides = deck_slides(deck_path)  # DeckError for unreadable decks, before the office is bothered
        with render_copy(deck_path) as safe:  # external links removed, bomb-deep nesting refused
            slot = self._acquire()
            try:
                pdf = self._to_pdf(slot, safe)
                tmp_pdf = slot.scratch.parent / f"{uuid.uuid4().hex}.pdf"
                # out of the office's folder without following a link it could have left there
                # (safeio), which also frees the slot's scratch folder for the next deck
                safeio.copy_regular(pdf, tmp_pdf, MAX_PDF_BYTES, root=slot.scratch.parent)
                pdf.unlink()
            except safeio.UnsafeFileError as exc:
                slot.close()  # an office that swaps its output for a link is not reused
                raise InfraError(f"rendering {deck_path} failed: the office's PDF {exc}") from None
            finally:
                self._free.put(slot)
        try:
            return pdf_to_pngs(
                tmp_pdf, out_dir, size=self.options.size, slides=slides, threads=self.options.png_threads
            )
        finally:
            tmp_pdf.unlink(missing_ok=True)

    def _seed_profile(self, slot: _Slot) -> None:
        """Give a slot without a profile yet a copy of the pre-initialised template (best effort).

        Only warm mode builds a missing template (it starts an office over UNO once); one-shot
        conversion uses one that is already there.
        """
        if self._template_broken or slot.profile.exists():
            return
        if self._warm_broken:
            template = office_profile.template_dir(self._template_root, self.soffice)
            valid = office_profile.is_valid(template, self.soffice)
            if valid and office_profile.install(template, slot.profile):
                slot.seeded_from = template
            return
        if not self._find_uno_python():
            return
        assert self._uno_python is not None
        try:
            template = office_profile.ensure(
                self._template_root, self.soffice, self._uno_python, self.options.start_timeout
            )
        except (InfraError, OSError) as exc:
            self._template_broken = str(exc)
            log.warning("libreoffice renderer: no pre-initialised profile (%s); offices start slower", exc)
            return
        if office_profile.install(template, slot.profile):
            slot.seeded_from = template

    def _find_uno_python(self) -> bool:
        """Find a Python with ``uno`` once: the one recorded with the profile template, else probe."""
        if self._uno_python is None:
            if not (
                self._template_broken or self.options.uno_python or os.environ.get("PPTARENA_UNO_PYTHON")
            ):
                self._uno_python = office_profile.recorded_uno_python(self._template_root, self.soffice)
            if self._uno_python is None:
                self._uno_python = soffice.find_uno_python(self.options.uno_python)
        return self._uno_python is not None

    def _to_pdf(self, slot: _Slot, deck_path: Path) -> Path:
        """Convert in the slot's scratch folder (a private copy of the deck under a plain name)."""
        for old in slot.scratch.iterdir():
            old.unlink()
        suffix = deck_path.suffix.lower() if deck_path.suffix.lower() in _SUFFIXES else ".pptx"
        src = slot.scratch / f"deck{suffix}"
        shutil.copyfile(deck_path, src)
        attempts = self.options.retries + 1
        self._seed_profile(slot)
        for attempt in range(attempts):
            try:
                if self._use_warm(slot):
                    assert slot.office is not None
                    return slot.office.convert(src, slot.scratch / "deck.pdf", self.options.timeout)
                return soffice.convert_oneshot(
                    self.soffice, src, slot.scratch, slot.profile, self.options.timeout
                )
            except InfraError as exc:
                slot.close()
                if isinstance(exc, soffice.RenderTimeout) or attempt == attempts - 1:
                    raise InfraError(f"rendering {deck_path} failed: {exc}") from exc
                log.warning(
                    "LibreOffice failed on %s (%s); retrying with a fresh office", deck_path.name, exc
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def _use_warm(self, slot: _Slot) -> bool:
        """Make sure the slot has a running warm office; False means use one-shot conversion."""
        if self._warm_broken:
            return False
        if slot.office is not None and (not slot.office.alive or slot.office.uses >= self.options.max_uses):
            slot.close()
        if slot.office is None:
            if not self._find_uno_python():
                self._warm_broken = "no Python with the uno module was found (install python3-uno)"
                log.warning("libreoffice renderer: %s; using one-shot soffice", self._warm_broken)
                return False
            assert self._uno_python is not None
            try:
                slot.office = self._start_office(slot, self._uno_python)
            except InfraError as exc:
                self._warm_broken = str(exc)
                log.warning("libreoffice renderer: %s; using one-shot soffice", exc)
                return False
        return True

    def _start_office(self, slot: _Slot, uno_python: str) -> soffice.WarmOffice:
        """Start a warm office on the slot's profile; a copied profile that fails gives way to a blank one."""
        office = soffice.WarmOffice(
            self.soffice, uno_python, slot.profile, self.options.start_timeout, folders=(slot.scratch,)
        )
        try:
            office.start()
            return office
        except InfraError as exc:
            template, slot.seeded_from = slot.seeded_from, None
            if template is None:
                raise
            log.warning(
                "LibreOffice did not start on the pre-initialised profile (%s); discarding it and "
                "starting on a blank profile",
                exc,
            )
            self._template_broken = f"an office failed to start on it: {exc}"
            office_profile.discard(template)
            shutil.rmtree(slot.profile, ignore_errors=True)
        office = soffice.WarmOffice(
            self.soffice, uno_python, slot.profile, self.options.start_timeout, folders=(slot.scratch,)
        )
        office.start()
        return office


def _deck_size(deck: Path) -> int:
    try:
        return deck.stat().st_size
    except OSError:
        return 0


_SUFFIXES = {".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".potm", ".ppt", ".pps", ".pot", ".odp"}
