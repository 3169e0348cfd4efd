"""Benchmark-only renderer for provider_bench.py: one small PNG per slide, no office.

``blocks`` stands in for a real renderer so that a benchmark of the model-call layer is not
dominated by LibreOffice on a 2-core machine. Each slide's image is a 16x9 grid of grey blocks
drawn from a hash of the slide's XML part, scaled to 160x90 pixels: the same slide always gives
the same image, a changed slide a very different one, so the judges' SSIM comparison of
renders still finds the slides an edit touched (the ``dual`` judge picks its VQ slides by it).
Registered through ``PPTARENA_PLUGINS=provider_bench_plugin`` (the benchmark sets it).
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path
from typing import Any

import pptarena
from pptarena.types import Component, InfraError, Options, SlideImage

WIDTH, HEIGHT = 160, 90
GRID_W, GRID_H = 16, 9

_SLD_ID = re.compile(rb'<p:sldId\b[^>]*?\bid="(\d+)"[^>]*?\br:id="([^"]+)"')
_REL = re.compile(rb'<Relationship\b[^>]*?\bId="([^"]+)"[^>]*?\bTarget="([^"]+)"')
_REL_REVERSED = re.compile(rb'<Relationship\b[^>]*?\bTarget="([^"]+)"[^>]*?\bId="([^"]+)"')


def slide_parts(deck: Path) -> list[tuple[int, bytes]]:
    """``(sldId, slide XML)`` of every slide in presentation order."""
    with zipfile.ZipFile(deck) as z:
        pres = z.read("ppt/presentation.xml")
        rels = z.read("ppt/_rels/presentation.xml.rels")
        targets = {rid: target for rid, target in _REL.findall(rels)}
        targets.update({rid: target for target, rid in _REL_REVERSED.findall(rels)})
        out = []
        for sld_id, rid in _SLD_ID.findall(pres):
            target = targets[rid].decode()
            name = target.lstrip("/") if target.startswith("/") else "ppt/" + target
            out.append((int(sld_id), z.read(name)))
        return out


def block_image(data: bytes) -> Any:
    """A 160x90 greyscale image of 16x9 blocks whose shades come from ``data``'s hash."""
    from PIL import Image

    digest = b""
    counter = 0
    while len(digest) < GRID_W * GRID_H:
        digest += hashlib.sha256(counter.to_bytes(4, "big") + data).digest()
        counter += 1
    small = Image.frombytes("L", (GRID_W, GRID_H), digest[: GRID_W * GRID_H])
    return small.resize((WIDTH, HEIGHT), Image.Resampling.NEAREST)


class BlocksRenderer(Component):
    """Writes ``slide-N.png`` per slide (see the module docstring)."""

    class Options(Options):
        """No options."""

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """One PNG per slide of ``deck_path`` in ``out_dir``."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            slides = slide_parts(Path(deck_path))
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise InfraError(f"blocks renderer cannot read {deck_path}: {exc}") from exc
        images = []
        for number, (sld_id, xml) in enumerate(slides, 1):
            path = out_dir / f"slide-{number}.png"
            block_image(xml).save(path, format="PNG")
            images.append(SlideImage(number, sld_id, path, WIDTH, HEIGHT))
        return images

    def close(self) -> None:
        """Nothing to release."""


@pptarena.hookimpl
def register_renderers(register: Any) -> None:
    """Register the ``blocks`` stand-in renderer."""
    register("blocks", BlocksRenderer)
