"""Pictures for the demo decks, drawn with Pillow (deterministic, no files, no network).

Each function returns PNG bytes of a small flat illustration.
"""

from __future__ import annotations

import io

PICTURE_SIZE = (480, 360)


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _vertical_gradient(size: tuple[int, int], top: tuple[int, int, int], bottom: tuple[int, int, int]):
    from PIL import Image

    width, height = size
    image = Image.new("RGB", size)
    pixels = image.load()
    assert pixels is not None
    for y in range(height):
        t = y / max(1, height - 1)
        colour = tuple(round(a + (b - a) * t) for a, b in zip(top, bottom, strict=True))
        for x in range(width):
            pixels[x, y] = colour
    return image


def bird_picture(
    body: tuple[int, int, int],
    wing: tuple[int, int, int],
    beak: tuple[int, int, int],
    *,
    long_legs: bool = False,
    crest: bool = False,
) -> bytes:
    """A stylised shorebird standing on a beach under a pale sky."""
    from PIL import ImageDraw

    width, height = PICTURE_SIZE
    image = _vertical_gradient(PICTURE_SIZE, (196, 226, 245), (238, 246, 252))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 250, width, 290], fill=(92, 155, 196))  # sea
    draw.rectangle([0, 290, width, height], fill=(233, 214, 170))  # sand
    leg_top, leg_bottom = (228, 300) if long_legs else (236, 296)
    for x in (228, 252):
        draw.line([(x, leg_top), (x - 6, leg_bottom)], fill=(70, 60, 50), width=5)
    draw.ellipse([150, 150, 320, 240], fill=body)  # body
    draw.polygon([(180, 170), (300, 160), (330, 205), (210, 215)], fill=wing)  # wing
    draw.ellipse([290, 110, 350, 165], fill=body)  # head
    draw.ellipse([318, 126, 328, 136], fill=(20, 20, 20))  # eye
    draw.polygon([(346, 132), (392, 142), (346, 150)], fill=beak)  # beak
    if crest:
        draw.polygon([(292, 122), (270, 100), (318, 112)], fill=(30, 30, 30))
    draw.polygon([(150, 190), (110, 180), (152, 212)], fill=wing)  # tail
    return _png(image)


def product_picture(colour: tuple[int, int, int], kind: str) -> bytes:
    """A flat product shot: ``kind`` is ``"backpack"``, ``"tent"`` or ``"boots"``."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", PICTURE_SIZE, (244, 241, 234))
    draw = ImageDraw.Draw(image)
    draw.ellipse([90, 300, 390, 340], fill=(220, 214, 202))  # shadow
    dark = tuple(max(0, c - 60) for c in colour)
    if kind == "backpack":
        draw.rounded_rectangle([160, 80, 320, 320], radius=40, fill=colour)
        draw.rounded_rectangle([185, 190, 295, 290], radius=18, fill=dark)
        draw.arc([200, 40, 280, 120], start=180, end=360, fill=dark, width=10)
    elif kind == "tent":
        draw.polygon([(80, 320), (240, 90), (400, 320)], fill=colour)
        draw.polygon([(200, 320), (240, 200), (280, 320)], fill=dark)
        draw.line([(240, 90), (240, 60)], fill=(90, 80, 70), width=6)
    else:  # boots
        for dx in (0, 150):
            draw.rectangle([110 + dx, 120, 190 + dx, 280], fill=colour)
            draw.rounded_rectangle([110 + dx, 250, 250 + dx, 310], radius=20, fill=colour)
            draw.rectangle([110 + dx, 300, 250 + dx, 315], fill=dark)
    return _png(image)


def logo_picture() -> bytes:
    """A round 'Lumen Labs' style logo mark on a transparent background."""
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (240, 240), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.ellipse([10, 10, 230, 230], fill=(255, 196, 61, 255))
    draw.ellipse([60, 60, 180, 180], fill=(255, 255, 255, 255))
    draw.pieslice([60, 60, 180, 180], start=200, end=340, fill=(0, 121, 140, 255))
    return _png(image)
