"""Shared rendering helpers: PDF → PNG pages, slide files and the content-hash render cache.

Renderers produce ``slide-001.png``, ``slide-002.png``, ... in an output
folder, one per slide in deck order (hidden slides included), and describe
them with :class:`pptarena.types.SlideImage`. The :class:`RenderCache` keeps
finished renders keyed by the deck's bytes, the renderer's name and its
settings, so rendering the same deck again only copies files.

Heavy imports (pypdfium2, Pillow) happen inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .types import InfraError, SlideImage

CACHE_FORMAT = 1  # bump when the cached layout or meaning changes
SLIDE_FILE_RE = re.compile(r"^slide-(\d{3,})\.png$")
MAX_LONG_EDGE = 8192
PNG_COMPRESS_LEVEL = 1  # encoding dominates rendering time; level 1 is the fastest that still compresses well

SlideInfo = tuple[int, "int | None", bool]  # (number, sld_id, hidden), as pptarena.deck.slide_ids

_pdfium_lock = threading.Lock()  # pdfium is not thread-safe


def slide_file_name(number: int) -> str:
    """The file name of slide ``number`` (1-based): ``slide-001.png``."""
    return f"slide-{number:03d}.png"


def clear_slide_files(out_dir: Path) -> None:
    """Remove ``slide-NNN.png`` files left in ``out_dir`` by an earlier render (nothing else)."""
    if not out_dir.is_dir():
        return
    for entry in out_dir.iterdir():
        if SLIDE_FILE_RE.match(entry.name) and entry.is_file():
            entry.unlink()


def deck_slides(deck_path: Path) -> list[SlideInfo]:
    """``(number, sld_id, hidden)`` for each slide, from :func:`pptarena.deck.slide_ids`.

    :raises pptarena.deck.DeckError: when the deck cannot be read (the deck's fault, not the renderer's).
    """
    from .deck import slide_ids

    return [(int(n), sid, bool(h)) for n, sid, h in slide_ids(deck_path)]


def file_digest(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def target_size(width_pt: float, height_pt: float, long_edge: int) -> tuple[int, int]:
    """Pixel size of a page scaled so that its long edge is exactly ``long_edge``."""
    if width_pt <= 0 or height_pt <= 0:
        raise InfraError(f"PDF page has an invalid size {width_pt}x{height_pt}")
    scale = long_edge / max(width_pt, height_pt)
    return max(1, int(width_pt * scale + 0.5)), max(1, int(height_pt * scale + 0.5))  # half rounds up


def pdf_to_pngs(
    pdf_path: Path,
    out_dir: Path,
    *,
    size: int,
    slides: Sequence[SlideInfo],
    threads: int = 2,
) -> list[SlideImage]:
    """Rasterise every page of ``pdf_path`` to ``out_dir/slide-NNN.png`` (long edge ``size`` px).

    ``slides`` describes the deck's slides in order; the PDF must have exactly
    one page per slide (hidden ones included).

    :raises InfraError: when the PDF is unreadable or its page count differs from ``len(slides)``.
    """
    import pypdfium2 as pdfium

    if not 16 <= size <= MAX_LONG_EDGE:
        raise ValueError(f"size must be between 16 and {MAX_LONG_EDGE} px, got {size}")
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_slide_files(out_dir)
    with _pdfium_lock:
        try:
            doc = pdfium.PdfDocument(str(pdf_path))
        except Exception as exc:  # noqa: BLE001 - any pdfium failure means the office wrote a bad PDF
            raise InfraError(f"cannot read the PDF written by the renderer ({pdf_path.name}): {exc}") from exc
        try:
            pages = len(doc)
            if pages != len(slides):
                raise InfraError(
                    f"renderer produced {pages} page(s) for a deck with {len(slides)} slide(s) "
                    f"({pdf_path.name})"
                )
        except InfraError:
            doc.close()
            raise

    def rasterise(index: int) -> Any:
        with _pdfium_lock:
            page = doc[index]
            try:
                width_pt, height_pt = page.get_size()
                w, h = target_size(width_pt, height_pt, size)
                # pdfium rounds the bitmap size up: aim a hair low so it lands on (w, h) exactly
                scale = min(w / width_pt, h / height_pt) * (1 - 1e-7)
                bitmap = page.render(scale=scale)
                try:
                    image = bitmap.to_pil()
                    if image.mode in ("RGBA", "RGBX", "L"):  # PIL shares these with pdfium's buffer
                        image = image.copy()
                finally:
                    bitmap.close()  # freed here, under the lock, not later by the GC in any thread
            finally:
                page.close()
        if image.size != (w, h):
            image = image.resize((w, h))
        return image

    def one(i: int) -> SlideImage:
        number, sld_id, hidden = slides[i]
        image = rasterise(i)
        path = out_dir / slide_file_name(number)
        image.save(path, "PNG", compress_level=PNG_COMPRESS_LEVEL)
        return SlideImage(
            number=number, sld_id=sld_id, path=path, width=image.width, height=image.height, hidden=hidden
        )

    try:
        if threads > 1 and len(slides) > 1:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                return list(pool.map(one, range(len(slides))))
        return [one(i) for i in range(len(slides))]
    finally:
        with _pdfium_lock:
            doc.close()


def deck_output_dirs(decks: Sequence[Path], out_root: Path) -> dict[Path, Path]:
    """One output folder per deck under ``out_root``, named after the deck's stem (``-2``, ... if taken)."""
    used: set[str] = set()
    dirs: dict[Path, Path] = {}
    for deck in decks:
        if deck in dirs:
            continue
        base = deck.stem or "deck"
        name, n = base, 1
        while name.lower() in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name.lower())
        dirs[deck] = out_root / name
    return dirs


# --------------------------------------------------------------------------- cache


class RenderCache:
    """Finished renders keyed by deck content + renderer name + settings.

    Layout: ``root/<key[:2]>/<key>/`` holding the PNGs and ``meta.json``.
    Entries are written to a temporary folder and renamed into place, so a
    crash never leaves a half entry and concurrent writers do not clash.
    """

    def __init__(self, root: Path):
        self.root = Path(root)

    @staticmethod
    def key(deck_path: Path, renderer: str, settings: Mapping[str, Any]) -> str:
        """The cache key: SHA-256 over the deck bytes, the renderer name and its settings."""
        h = hashlib.sha256()
        h.update(
            json.dumps(
                {"format": CACHE_FORMAT, "renderer": renderer, "settings": dict(settings)},
                sort_keys=True,
                default=str,
            ).encode()
        )
        h.update(b"\0")
        h.update(file_digest(deck_path).encode())
        return h.hexdigest()

    def entry(self, key: str) -> Path:
        """The folder of entry ``key``."""
        return self.root / key[:2] / key

    def load(self, key: str, out_dir: Path) -> list[SlideImage] | None:
        """Copy a cached render into ``out_dir``; None when ``key`` is not cached (or is damaged)."""
        entry = self.entry(key)
        try:
            meta = json.loads((entry / "meta.json").read_text())
            slides = meta["slides"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        out_dir.mkdir(parents=True, exist_ok=True)
        clear_slide_files(out_dir)
        images = []
        try:
            for s in slides:
                name = slide_file_name(int(s["number"]))
                shutil.copyfile(entry / name, out_dir / name)
                images.append(
                    SlideImage(
                        number=int(s["number"]),
                        sld_id=s.get("sld_id"),
                        path=out_dir / name,
                        width=int(s["width"]),
                        height=int(s["height"]),
                        hidden=bool(s.get("hidden", False)),
                    )
                )
        except (OSError, KeyError, ValueError, TypeError):
            return None
        return images

    def store(self, key: str, images: Iterable[SlideImage], info: Mapping[str, Any] | None = None) -> None:
        """Save a finished render (best effort: a full disk only costs the cache)."""
        entry = self.entry(key)
        if entry.exists():
            return
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
        except OSError:
            return
        try:
            slides = []
            for img in images:
                name = slide_file_name(img.number)
                shutil.copyfile(img.path, tmp / name)
                slides.append(
                    {
                        "number": img.number,
                        "sld_id": img.sld_id,
                        "width": img.width,
                        "height": img.height,
                        "hidden": img.hidden,
                    }
                )
            (tmp / "meta.json").write_text(
                json.dumps({"slides": slides, "info": dict(info or {})}, default=str)
            )
            os.rename(tmp, entry)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)


def cached_render(
    deck_path: Path,
    out_dir: Path,
    *,
    renderer: str,
    settings: Mapping[str, Any],
    cache: RenderCache | None,
    produce: Callable[[Path, Path], list[SlideImage]],
) -> list[SlideImage]:
    """Render through the cache: a hit copies the stored PNGs, a miss calls ``produce`` and stores.

    ``produce(deck_path, out_dir)`` must write ``slide-NNN.png`` files to ``out_dir``.
    """
    deck_path = Path(deck_path)
    out_dir = Path(out_dir)
    if not deck_path.is_file():
        raise FileNotFoundError(f"deck not found: {deck_path}")
    if cache is None:
        return produce(deck_path, out_dir)
    key = cache.key(deck_path, renderer, settings)
    hit = cache.load(key, out_dir)
    if hit is not None:
        return hit
    images = produce(deck_path, out_dir)
    cache.store(key, images, {"deck": deck_path.name, "renderer": renderer})
    return images
