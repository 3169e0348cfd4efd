"""A campaign's instructions (issue 34, item 4) on a real small run: stored inside the campaign's
SQLite file (the file alone, or a packed copy, carries them), versioned and append-only, replaced or
withdrawn by ``arena label instructions``, refused with a clear error when too large or not text
(before ``arena label new`` writes anything), and rendered with raw HTML shown as text.
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.label.campaign import new_campaign
from pptarena.label.instructions import (
    MAX_INSTRUCTIONS_BYTES,
    current_instructions,
    hidden_names,
    instructions_history,
    read_instructions_file,
    render_markdown,
    set_instructions,
)
from pptarena.label.store import Campaign, CampaignError
from tests.support.paths import ROOT
from tests.support.view_fixtures import small_run

EXAMPLE = ROOT / "examples" / "label-instructions.md"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("instructions-run"))


def test_the_instructions_live_in_the_campaign_file_itself(run, tmp_path):
    c, _ = new_campaign(
        [run], protocol="absolute", annotators=["alice"], out=tmp_path / "c.sqlite",
        instructions="# Read me\n\nBe careful.\n", instructions_source="file rules.md",
    )  # fmt: skip
    c.close()
    # the .sqlite file copied alone (no -wal beside it) holds them: the file is the campaign
    alone = tmp_path / "elsewhere" / "copy.sqlite"
    alone.parent.mkdir()
    shutil.copy(c.path, alone)
    assert not (alone.parent / "copy.sqlite-wal").exists()
    with Campaign.open(alone) as copy:
        ins = current_instructions(copy)
        assert ins is not None and ins.text == "# Read me\n\nBe careful.\n" and ins.source == "file rules.md"
        packed = copy.pack(tmp_path / "packed.sqlite")
    with Campaign.open(packed) as p:
        assert current_instructions(p).text.startswith("# Read me")


def test_versions_are_appended_and_the_latest_wins(run, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice"], out=tmp_path / "c.sqlite")
    assert current_instructions(c) is None and instructions_history(c) == []
    set_instructions(c, "first", source="a.md", by="carol")
    set_instructions(c, "second", source="b.md", by="dan")
    assert current_instructions(c).text == "second"
    set_instructions(c, None, source="cleared", by="dan")
    assert current_instructions(c) is None
    assert [v.text for v in instructions_history(c)] == ["first", "second", None]
    conn = sqlite3.connect(c.path)
    for sql in ("DELETE FROM instructions", "UPDATE instructions SET text='x'"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(sql)
    conn.close()
    with pytest.raises(CampaignError, match="--by"):
        set_instructions(c, "x", source="a.md", by="<script>")
    c.close()


def test_files_that_are_too_large_empty_or_not_text_are_refused_with_a_reason(tmp_path):
    big = tmp_path / "big.md"
    big.write_bytes(b"a" * (MAX_INSTRUCTIONS_BYTES + 1))
    with pytest.raises(CampaignError, match=f"larger than the {MAX_INSTRUCTIONS_BYTES} bytes"):
        read_instructions_file(big)
    binary = tmp_path / "deck.md"
    binary.write_bytes(b"\xff\xfe\x00PK\x03\x04")
    with pytest.raises(CampaignError, match="not UTF-8 text"):
        read_instructions_file(binary)
    nul = tmp_path / "nul.md"
    nul.write_text("text\x00more")
    with pytest.raises(CampaignError, match="NUL"):
        read_instructions_file(nul)
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    with pytest.raises(CampaignError, match="empty"):
        read_instructions_file(empty)
    with pytest.raises(CampaignError, match="not a file"):
        read_instructions_file(tmp_path)
    exact = tmp_path / "exact.md"
    exact.write_bytes(b"\xef\xbb\xbf" + b"b" * (MAX_INSTRUCTIONS_BYTES - 3))  # a BOM is not text
    assert read_instructions_file(exact) == "b" * (MAX_INSTRUCTIONS_BYTES - 3)


def test_rendering_shows_raw_html_as_text_and_loads_nothing_from_elsewhere():
    html = render_markdown(
        "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n"
        "[bad](javascript:alert(1)) [good](https://example.org/guide)\n\n"
        '![remote](https://tracker.example/pixel.png "t") ![local](data:image/png;base64,iVBORw0KGgo=)\n\n'
        "![svg](data:image/svg+xml;base64,PHN2Zz4=)\n\n"
        "- *one*\n- **two** `code`\n\n| level | meaning |\n|---|---|\n| 4 | all done |\n"
    )
    assert "<h1>Title</h1>" in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror" in html
    assert 'href="javascript' not in html
    assert '<a href="https://example.org/guide" target="_blank" rel="noopener noreferrer">good</a>' in html
    # a remote image is a link, never loaded; an embedded PNG is shown; an SVG is not an image here
    assert 'src="https://tracker' not in html and 'href="https://tracker.example/pixel.png"' in html
    assert '<img class="instructions-image" src="data:image/png;base64,iVBORw0KGgo=" alt="local">' in html
    assert 'src="data:image/svg' not in html and 'href="data:image/svg' not in html
    assert "<em>one</em>" in html and "<strong>two</strong>" in html and "<code>code</code>" in html
    assert "<table>" in html and "<td>all done</td>" in html


def test_hidden_names_are_the_agents_and_the_judges_of_the_runs(run, tmp_path):
    c, _ = new_campaign([run], protocol="absolute", annotators=["alice"], out=tmp_path / "c.sqlite")
    names = hidden_names(c)
    assert {"oracle", "noop"} <= set(names)
    assert names == sorted(names, key=lambda n: (-len(n), n))  # longest first: no partial blanking
    c.close()


def test_cli_new_with_instructions_then_replace_show_and_clear(run, tmp_path):
    runner = CliRunner()
    rules = tmp_path / "rules.md"
    rules.write_text("# Rules\n\nLook at every slide.\n")
    out = tmp_path / "c.sqlite"
    got = runner.invoke(cli, ["label", "new", "--run", str(run), "--annotators", "alice,bob",
                              "--out", str(out), "--instructions", str(rules)])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert "Instructions:" in got.output
    got = runner.invoke(cli, ["label", "instructions", str(out)])
    assert got.exit_code == 0 and got.output == "# Rules\n\nLook at every slide.\n"
    newer = tmp_path / "rules2.md"
    newer.write_text("# Rules, second edition\n")
    got = runner.invoke(cli, ["label", "instructions", str(out), str(newer), "--by", "carol"])
    assert got.exit_code == 0, got.output
    assert "version 2" in got.output
    got = runner.invoke(cli, ["label", "instructions", str(out), "--clear"])
    assert got.exit_code == 0 and "withdrawn (version 3)" in got.output
    got = runner.invoke(cli, ["label", "instructions", str(out)])
    assert got.exit_code != 0 and "has no instructions page" in got.output
    got = runner.invoke(cli, ["label", "instructions", str(out), str(newer), "--clear"])
    assert got.exit_code == 2
    with Campaign.open(out) as c:
        assert [v.added_by for v in instructions_history(c)] == ["admin", "carol", "admin"]


def test_cli_new_refuses_a_too_large_file_before_writing_anything(run, tmp_path):
    big = tmp_path / "big.md"
    big.write_bytes(b"# x\n" + b"a" * MAX_INSTRUCTIONS_BYTES)
    out = tmp_path / "c.sqlite"
    got = CliRunner().invoke(cli, ["label", "new", "--run", str(run), "--annotators", "alice",
                                   "--out", str(out), "--instructions", str(big)])  # fmt: skip
    assert got.exit_code == 1 and "larger than the" in got.output
    assert not out.exists()
    missing = tmp_path / "missing.md"
    got = CliRunner().invoke(cli, ["label", "new", "--run", str(run), "--annotators", "alice",
                                   "--out", str(out), "--instructions", str(missing)])  # fmt: skip
    assert got.exit_code == 1 and "not a file" in got.output and not out.exists()


def test_the_shipped_example_is_accepted_and_has_both_worked_examples():
    text = read_instructions_file(EXAMPLE)
    html = render_markdown(text)
    assert "<h2>Worked example 1" in html and "<h2>Worked example 2" in html
    assert "absolute" in text.lower() and "pairwise" in text.lower()
