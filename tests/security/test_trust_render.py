"""Attacks on rendering by hostile decks (issue 14, rows 5 and 6): linked files and URLs, nesting bombs."""

from __future__ import annotations

import http.server
import io
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from PIL import Image

pytestmark = pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed"
)

RED = (255, 0, 0)


def red_png(path: Path) -> Path:
    Image.new("RGB", (300, 300), RED).save(path)
    return path


def deck_with_picture(path: Path, image: Path, *, link: str | None) -> Path:
    """A one-slide deck with a big picture: embedded, or (``link``) its blip pointing at an
    external target.
    """
    from pptx import Presentation
    from pptx.opc.constants import RELATIONSHIP_TYPE as RT
    from pptx.oxml.ns import qn
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    pic = slide.shapes.add_picture(str(image), Inches(0), Inches(0), prs.slide_width, prs.slide_height)
    if link is not None:
        blip = pic._element.blipFill.find(qn("a:blip"))
        del blip.attrib[qn("r:embed")]
        blip.set(qn("r:link"), slide.part.relate_to(link, RT.IMAGE, is_external=True))
    prs.save(str(path))
    return path


def red_share(png: Path) -> float:
    import numpy as np

    a = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return float(((a[..., 0] > 200) & (a[..., 1] < 60) & (a[..., 2] < 60)).mean())


class Listener:
    """A loopback HTTP server counting the requests it gets."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                outer.hits.append(self.path)
                buf = io.BytesIO()
                Image.new("RGB", (300, 300), RED).save(buf, "PNG")
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()
                self.wfile.write(buf.getvalue())

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/pixel.png"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def renderer(tmp_path):
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer
    from pptarena.types import ComponentContext

    r = LibreOfficeRenderer(
        LibreOfficeRenderer.Options(cache=False), ComponentContext(cache_dir=tmp_path / "cache", model=None)
    )  # type: ignore[arg-type]
    yield r
    r.close()


def test_row5_linked_file_and_url_are_neither_read_nor_fetched(tmp_path, renderer):
    secret = red_png(tmp_path / "secret.png")
    # control: the same picture embedded renders red, so the measure can see it
    embedded = renderer.render(
        deck_with_picture(tmp_path / "embedded.pptx", secret, link=None), tmp_path / "r0"
    )
    assert red_share(embedded[0].path) > 0.5
    blank = red_png(tmp_path / "blank.png")
    Image.new("RGB", (300, 300), (255, 255, 255)).save(blank)
    listener = Listener()
    try:
        by_file = renderer.render(
            deck_with_picture(tmp_path / "file.pptx", blank, link=secret.as_uri()), tmp_path / "r1"
        )
        by_url = renderer.render(
            deck_with_picture(tmp_path / "url.pptx", blank, link=listener.url), tmp_path / "r2"
        )
    finally:
        listener.close()
    assert red_share(by_file[0].path) < 0.01
    assert red_share(by_url[0].path) < 0.01
    assert listener.hits == []


def test_row5_the_office_runs_without_network_and_under_a_memory_cap(tmp_path):
    from pptarena.plugins.renderers.libreoffice import office_jail

    if not office_jail.network_isolated():
        pytest.skip("bubblewrap is not usable here: the office keeps the network (links are still stripped)")
    listener = Listener()
    try:
        probe = (
            "import urllib.request, sys\ntry:\n    urllib.request.urlopen(sys.argv[1], timeout=3)\n"
            "    print('FETCHED')\nexcept OSError as e:\n    print('BLOCKED', e)\n"
        )
        inside = [*office_jail.office_prefix(), "/usr/bin/python3", "-c", probe, listener.url]
        out = subprocess.run(
            office_jail.jail_command(inside, writable=[]), capture_output=True, text=True, timeout=60
        )
        limits = subprocess.run(
            office_jail.jail_command([*office_jail.office_prefix(), "cat", "/proc/self/limits"], writable=[]),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        listener.close()
    assert out.stdout.startswith("BLOCKED") and listener.hits == []
    (line,) = [ln for ln in limits.stdout.splitlines() if ln.startswith("Max address space")]
    assert str(office_jail.memory_mb() * 1024 * 1024) in line


def nested_deck(path: Path, depth: int) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    shapes = slide.shapes
    for _ in range(depth):
        shapes = shapes.add_group_shape().shapes
    shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1)).text_frame.text = "deep"
    prs.save(str(path))
    return path


def test_row6_nesting_bomb_fails_fast_as_the_decks_fault(tmp_path, renderer):
    from pptarena.deck import DeckError

    bomb = nested_deck(tmp_path / "bomb.pptx", 120)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(DeckError, match="nests groups"):
        renderer.render(bomb, tmp_path / "out")
    assert not any((tmp_path / "out").glob("*.png")) if (tmp_path / "out").exists() else True
    # a modest nesting still renders
    assert len(renderer.render(nested_deck(tmp_path / "ok.pptx", 5), tmp_path / "ok")) == 1
    # handed in by an agent, the bomb is the agent's error and the run goes on
    from pptarena.run.blame import deck_problem

    assert "nests groups" in (deck_problem(bomb) or "")


# --------------------------------------------------------------------------- issue 23, item 5


def rewrite_member(deck: Path, edit: dict[str, object]) -> Path:
    """Rewrite ``deck`` in place: ``edit`` maps a member name to new bytes or to a ``bytes -> bytes``
    function of its old bytes; names not in the package are added."""
    import zipfile

    tmp = deck.with_suffix(".tmp")
    with zipfile.ZipFile(deck) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            change = edit.get(info.filename)
            if change is not None:
                data = change(data) if callable(change) else change  # type: ignore[operator]
            zout.writestr(info.filename, data)
        for name, change in edit.items():
            if name not in zin.namelist():
                zout.writestr(name, change)  # type: ignore[arg-type]
    tmp.replace(deck)
    return deck


def lowercase_external_deck(path: Path, secret: Path, blank: Path) -> Path:
    """The picture's relationship says ``TargetMode="external"`` with a relative target climbing to the
    host file: python-pptx (exact "External") takes it as internal and resolves the target to a zip
    member (``..`` stops at the package root), which the deck also holds, so the deck engine loads it;
    LibreOffice takes any mode but "Internal" as external and resolves it next to the deck file."""
    target = "../" * 16 + str(secret).lstrip("/")
    deck_with_picture(path, blank, link=target)
    return rewrite_member(
        path,
        {
            "ppt/slides/_rels/slide1.xml.rels": lambda d: d.replace(
                b'TargetMode="External"', b'TargetMode="external"'
            ),
            str(secret).lstrip("/"): blank.read_bytes(),
        },
    )


def svg_picture_deck(path: Path, secret: Path, blank: Path) -> Path:
    """An embedded SVG picture whose ``<image>`` names a host file."""
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'width="300" height="300" viewBox="0 0 300 300">'
        f'<image x="0" y="0" width="300" height="300" xlink:href="{secret.as_uri()}"/></svg>'
    ).encode()
    deck_with_picture(path, blank, link=None)
    return rewrite_member(
        path,
        {
            "ppt/slides/_rels/slide1.xml.rels": lambda d: d.replace(b"media/image1.png", b"media/image1.svg"),
            "[Content_Types].xml": lambda d: d.replace(
                b"<Default Extension=",
                b'<Default Extension="svg" ContentType="image/svg+xml"/><Default Extension=',
                1,
            ),
            "ppt/media/image1.svg": svg,
        },
    )


def test_issue23_lowercase_external_mode_does_not_draw_a_host_picture(tmp_path, renderer):
    from pptarena.run.blame import deck_problem

    secret = red_png(tmp_path / "host-secret.png")
    blank = tmp_path / "blank.png"
    Image.new("RGB", (300, 300), (255, 255, 255)).save(blank)
    deck = lowercase_external_deck(tmp_path / "lower.pptx", secret, blank)
    assert deck_problem(deck) is None  # the deck engine accepts it (so a prediction would be judged)
    slides = renderer.render(deck, tmp_path / "r")
    assert red_share(slides[0].path) < 0.01


def test_issue23_svg_image_href_to_a_host_file_is_not_drawn(tmp_path, renderer):
    secret = red_png(tmp_path / "host-secret.png")
    blank = tmp_path / "blank.png"
    Image.new("RGB", (300, 300), (255, 255, 255)).save(blank)
    # control: an SVG whose image is inline (data:) is drawn, so the measure can see a drawn picture
    import base64

    inline = "data:image/png;base64," + base64.b64encode(secret.read_bytes()).decode()
    control = svg_picture_deck(tmp_path / "inline.pptx", secret, blank)
    rewrite_member(
        control, {"ppt/media/image1.svg": lambda d: d.replace(secret.as_uri().encode(), inline.encode())}
    )
    assert red_share(renderer.render(control, tmp_path / "r0")[0].path) > 0.3
    deck = svg_picture_deck(tmp_path / "svg.pptx", secret, blank)
    assert red_share(renderer.render(deck, tmp_path / "r1")[0].path) < 0.01


def test_issue23_the_office_sees_only_the_deck_copy_and_its_profile(tmp_path, renderer, monkeypatch):
    """A linked picture that got past the guard (the guard is switched off here, standing in for a
    trick it does not know) still draws nothing: the host file is not in the office's file system."""
    import contextlib
    import os

    from pptarena.plugins.renderers.libreoffice import office_jail
    from pptarena.trust import render_guard

    if not office_jail.filesystem_isolated():
        pytest.skip("bubblewrap is not usable here: the office sees the host file system")
    cache = tmp_path / "cache" / "datasets" / "demo"  # stands in for the dataset cache
    cache.mkdir(parents=True)
    secret = red_png(cache / "target-preview.png")
    blank = tmp_path / "blank.png"
    Image.new("RGB", (300, 300), (255, 255, 255)).save(blank)
    monkeypatch.setattr(render_guard, "render_copy", lambda deck: contextlib.nullcontext(deck))
    slides = renderer.render(
        deck_with_picture(tmp_path / "linked.pptx", blank, link=secret.as_uri()), tmp_path / "r"
    )
    assert red_share(slides[0].path) < 0.01
    # the office's own view, read from the host: none of the host's private folders
    office = renderer._slots[0].office
    pid = office._office_pid if office is not None else None
    if pid is None:
        pytest.skip("one-shot mode: no office left running to look at")
    root = Path(f"/proc/{pid}/root")
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "soffice.bin"
    assert (root / "usr" / "lib").is_dir()  # the view is there, and it is not the host's
    for hidden in (secret, tmp_path / "cache", Path.home(), Path("/root"), Path("/work")):
        assert not (root / str(hidden).lstrip("/")).exists() or not os.listdir(
            root / str(hidden).lstrip("/")
        ), hidden
    slot_root = Path(renderer._slots[0].scratch).parent  # <tmp>/pptarena-lo-*/{work,profile}
    assert sorted(os.listdir(root / str(slot_root).lstrip("/"))) == ["profile", "work"]
    assert Path(tmp_path).parts[2] not in os.listdir(root / "tmp")  # pytest's folders: not there


def test_issue23_a_pdf_the_office_swapped_for_a_link_is_not_followed(tmp_path, renderer, monkeypatch):
    """The PDF comes out of the office's folder through safeio: a link the office (or a program it was
    tricked into running) left in its place, to a host PDF, is refused, not rasterised."""
    from pptarena.errors import InfraError

    host_pdf = tmp_path / "host-secret.pdf"
    Image.new("RGB", (300, 300), RED).save(host_pdf)

    def swapped(slot, deck):
        link = slot.scratch / "deck.pdf"
        link.symlink_to(host_pdf)
        return link

    monkeypatch.setattr(renderer, "_to_pdf", swapped)
    deck = deck_with_picture(tmp_path / "d.pptx", red_png(tmp_path / "p.png"), link=None)
    with pytest.raises(InfraError, match="symbolic link"):
        renderer.render(deck, tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.png")) if (tmp_path / "out").exists() else True
