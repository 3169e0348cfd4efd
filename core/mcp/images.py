"""Slide PNGs made small enough to hand a client: downscaled to a long edge and a byte cap."""

from __future__ import annotations

import io
from pathlib import Path

MIN_EDGE = 64


def fit_png(path: Path, max_edge: int, max_bytes: int) -> tuple[bytes, int, int]:
    """The PNG at ``path`` as PNG bytes of at most ``max_bytes``, long edge at most ``max_edge``.

    Returns (bytes, width, height). The image is shrunk by a quarter at a time until it fits.

    :raises ValueError: it does not fit even at :data:`MIN_EDGE` pixels.
    """
    from PIL import Image

    with Image.open(path) as img:
        img.load()
        image = img.convert("RGB") if img.mode not in ("RGB", "L") else img.copy()
    edge = min(max_edge, max(image.size))
    while True:
        scale = edge / max(image.size)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        shown = image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        shown.save(buf, format="PNG")
        data = buf.getvalue()
        if len(data) <= max_bytes:
            return data, shown.width, shown.height
        if edge <= MIN_EDGE:
            raise ValueError(f"a slide image does not fit in {max_bytes} bytes even at {edge} pixels")
        edge = max(MIN_EDGE, int(edge * 0.75))
