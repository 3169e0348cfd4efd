"""report.html on real runs: renders side by side, rubric trees, plots, offline links; opened in
headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from pptarena.report.html import write_report
from tests.support.report_fixtures import copy_run

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def demo(tmp_path_factory, tmp_path, demo_run):
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")
    return copy_run(demo_run, tmp_path / "demo-run")


def _image_sources(html: str) -> list[str]:
    return re.findall(r'<img[^>]* src="([^"]+)"', html)


def test_demo_report_content_and_images(demo):
    path = write_report(demo)
    assert path == demo / "report.html"
    html = path.read_text()
    # instruction from the dataset, edits as text, both judges' verdicts, the rubric drawn as a tree
    assert "On slide 3, align the three bird pictures" in html
    assert "Edits original → prediction" in html and "move" in html
    assert html.count('<ul class="tree root">') >= 6  # 3 tasks × 2 agents, rubric judge
    assert re.search(r'class="node-score (ok|part|bad)">\d\.\d\d</span>', html)
    assert html.count("<svg") >= 2 and "score distribution" in html
    # every slide image is a relative link to a file inside the run folder (works offline)
    sources = _image_sources(html)
    assert len(sources) >= 12
    for src in sources:
        assert not src.startswith(("http:", "https:", "/", "file:")), src
        assert (demo / unquote(src)).is_file(), src
    assert not re.search(r'(src|href)="https?:', html)
    # the changed slide of the align task: original, prediction and target shown side by side
    assert "tasks/oracle/birds-align-pictures/renders/prediction/slide-003.png" in sources
    assert "tasks/oracle/birds-align-pictures/renders/target/slide-003.png" in sources
    assert "tasks/oracle/birds-align-pictures/renders/original/slide-003.png" in sources


def test_report_escapes_untrusted_text(demo):
    vpath = demo / "tasks" / "noop" / "birds-title-colour" / "verdicts.json"
    verdicts = json.loads(vpath.read_text())
    verdicts["verdicts"]["structural"]["explanation"] = "<script>alert('x')</script> & <b>bold</b>"
    vpath.write_text(json.dumps(verdicts))
    (demo / "tasks" / "noop" / "birds-title-colour" / "agent.log.jsonl").write_text(
        json.dumps({"t": 1.0, "event": "model_call", "prompt": "<img src=x onerror=alert(1)>"})
        + "\nnot json\n"
    )
    html = write_report(demo, render=False).read_text()
    assert (
        "<script>alert" not in html
        and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;b&gt;" in html
    )
    assert "<img src=x" not in html and "Agent log (2 events)" in html and "(unreadable line)" in html


def test_fake_run_report_says_rendering_is_impossible(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    html = write_report(run_dir).read_text()
    assert "rendering is impossible here: InfraError: dummy renderer cannot render" in html
    assert "agent_error" in html and "RuntimeError: agent bug" in html
    assert "Change the title to &#x27;New 0&#x27;" in html


def test_report_without_the_dataset_still_works(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    shutil.rmtree(tmp_path / "data")
    (tmp_path / "fake.toml").unlink()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["config"]["dataset"]["count"] = "many"  # no longer validates
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    html = write_report(run_dir, render=False).read_text()
    assert "could not be loaded" in html and "The instruction is unavailable" in html
    assert "task-00" in html


def _screenshot(html_path: Path, png: Path, profile: Path) -> None:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--screenshot={png}",
        "--window-size=1400,3000",
        html_path.resolve().as_uri(),
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)


def test_report_screenshot_in_headless_chromium(demo, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed")
    import numpy as np
    from PIL import Image, ImageStat

    html_path = write_report(demo)
    png = tmp_path / "report.png"
    _screenshot(html_path, png, tmp_path / "profile")
    assert png.is_file(), "chromium wrote no screenshot"
    img = Image.open(png).convert("RGB")
    assert img.size == (1400, 3000)
    small = img.resize((350, 750))
    colours = small.getcolors(maxcolors=1_000_000)
    assert (
        colours is not None and len(colours) > 200
    )  # text, tables, plots and slide images, not a blank page
    background = np.array(max(colours)[1])
    share_drawn = float((np.asarray(small) != background).any(axis=2).mean())
    assert share_drawn > 0.2, share_drawn
    assert max(ImageStat.Stat(small).stddev) > 30
    # the dark page header is at the top
    assert np.asarray(img.crop((0, 0, 1400, 40)).convert("L")).mean() < 100
