"""A stand-in for OSWorld's Impress data: its real task files with decks from ../shared/corpus.

OSWorld's decks are not reachable here, so every file a task downloads or expects is made from
the corpus under the name the task expects: input decks are corpus decks saved by python-pptx;
a gold deck (``*_Gold*.pptx``) is its input deck with the first text run made bold, so handing in
the input unchanged fails and handing in the gold passes; other files (pictures, audio, the
expected PNG) are small generated files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from tests.support import osworld_fixtures as fx
from tests.support.osworld_fixtures import CORPUS, text_run

SHARED_OSWORLD = CORPUS.parent / "osworld"
#: Corpus decks that python-pptx reads, that compare equal to themselves under OSWorld's checker
#: and that have a text run on an early slide (small ones first, for speed).
DECKS = [
    "docling_powerpoint_comments.pptx",
    "openxmlsdk_AllSlidesConverterSC_chinese.pptx",
    "poi_OverlappingRelations.pptx",
    "pythonpptx_act-props_hyperlinks.pptx",
    "poi_hello-world-signed.pptx",
    "unstructured_group-shapes-nested.pptx",
]
PICTURE_DECK = "markitdown_ocr_complex_layout.pptx"  # slide 1 holds a picture
#: Decks for checkers that need a particular structure: the master's second-to-last sRGB colour
#: (not red, so the unedited deck fails the page-number check).
DECK_FOR = {
    "check_page_number_colors": "poi_bug64693_sections_cjk.pptx",
    "check_image_stretch_and_center": PICTURE_DECK,
}
#: What the position-probe tasks look at, added to their input and reference decks alike: without
#: it the probe has nothing to check and the unedited deck would pass.
TASK_EDITS: dict[str, Any] = {
    "15aece23-a215-4579-91b4-69eec72e18da": fx.retitle("Product Comparison"),
    "ac1b39ff-ee4d-4483-abce-c117e98942f0": fx.add_table(2),
    "2b94c692-6abb-48ae-ab0b-b3e8a19cb340": fx.add_picture(1),
    "ed43c15f-00cb-4054-9c95-62c880865d68": fx.add_picture(1),
}


def _save_deck(src: Path, dest: Path, bold: bool = False, edit: Any = None) -> None:
    from pptx import Presentation

    prs = Presentation(str(src))
    if edit is not None:
        edit(prs)
    if bold:
        text_run(prs).font.bold = True
    prs.save(str(dest))


def _png(dest: Path, shade: int) -> None:
    from PIL import Image

    Image.new("RGB", (64, 48), (shade % 256, 120, 200)).save(dest)


def build(dest: Path) -> tuple[Path, Path]:
    """``(root, files_dir)``: an ``evaluation_examples`` folder and the downloaded files."""
    root, files = dest / "evaluation_examples", dest / "files"
    examples = root / "examples" / "libreoffice_impress"
    examples.mkdir(parents=True)
    files.mkdir(parents=True)
    index = json.loads((SHARED_OSWORLD / "test_all_impress.json").read_text())
    (root / "test_all.json").write_text(json.dumps(index))
    for n, task_id in enumerate(index["libreoffice_impress"]):
        src = SHARED_OSWORLD / "libreoffice_impress" / f"{task_id}.json"
        shutil.copyfile(src, examples / src.name)
        data: dict[str, Any] = json.loads(src.read_text())
        func = data["evaluator"]["func"]
        deck = CORPUS / DECK_FOR.get(func, DECKS[n % len(DECKS)])
        edit = TASK_EDITS.get(task_id)
        downloads = [
            f for step in data["config"] if step["type"] == "download" for f in step["parameters"]["files"]
        ]
        input_name = None
        for i, entry in enumerate(downloads):
            name = PurePosixPath(entry["path"]).name
            if name.endswith(".pptx"):
                input_name = input_name or name
                _save_deck(deck, files / name, edit=edit)
            elif name.endswith(".png"):
                _png(files / name, 40 * i)
            else:
                (files / name).write_bytes(
                    b"ID3" + bytes(64)
                )  # an audio/video stand-in: only its name matters
        expected = data["evaluator"].get("expected")
        if (
            isinstance(expected, dict)
            and expected.get("type") == "cloud_file"
            and not (files / expected["dest"]).exists()
        ):
            name = expected["dest"]
            if name.endswith(".png"):
                _png(files / name, 7)
            else:
                _save_deck(deck, files / name, bold="_Gold" in name, edit=edit)
    return root, files
