"""A campaign is one file: after the store is closed (or the process ends) the ``.sqlite`` file
alone holds every label, and ``arena label pack`` copies a campaign in use, consistently.

The attacks: labels written as the server writes them (``Campaign.append``), then only the
``.sqlite`` file copied elsewhere — while another connection (a second server, ``arena label
stats``) still has the campaign open, so SQLite's own last-close checkpoint does not run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.label.campaign import new_campaign
from pptarena.label.store import Campaign, CampaignError
from tests.support.view_fixtures import small_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("label-data-run"))


def _new(run, path, **kw):
    kw.setdefault("protocol", "absolute")
    kw.setdefault("annotators", ["alice", "bob"])
    kw.setdefault("overlap", 1.0)
    campaign, _ = new_campaign([run], out=path, **kw)
    return campaign


def _label_all(campaign: Campaign) -> list[int]:
    ids = []
    for who in ("alice", "bob"):
        for k, (item, _) in enumerate(campaign.queue(who)):
            fields = {"if": k % 5, "vq": 3, "damage": "yes", "damage_slide": 1, "comment": f"{who} {k}"}
            ids.append(campaign.append(who, item, fields, 2.5).id)
    return ids


def _ids_in_copy_of_file_alone(path, dest_dir) -> list[int]:
    """Copy only the ``.sqlite`` file (no ``-wal``, no ``-shm``) and read its label ids."""
    dest_dir.mkdir()
    copy = dest_dir / path.name
    shutil.copyfile(path, copy)
    with Campaign.open(copy) as opened:
        return sorted(v.id for v in opened.history())


def test_closing_the_store_puts_every_label_in_the_file(run, tmp_path):
    campaign = _new(run, tmp_path / "c.sqlite")
    reader = Campaign.open(campaign.path)  # another connection keeps the file open meanwhile
    ids = _label_all(campaign)
    assert (tmp_path / "c.sqlite-wal").stat().st_size > 0  # the labels are in the log so far
    assert campaign.close() is True
    assert (tmp_path / "c.sqlite-wal").stat().st_size == 0  # checkpointed and truncated
    assert _ids_in_copy_of_file_alone(tmp_path / "c.sqlite", tmp_path / "elsewhere") == sorted(ids)
    reader.close()
    assert campaign.close() is False  # closing twice does nothing


def test_checkpoint_while_open(run, tmp_path):
    campaign = _new(run, tmp_path / "c.sqlite")
    ids = _label_all(campaign)
    assert campaign.checkpoint() is True
    assert _ids_in_copy_of_file_alone(campaign.path, tmp_path / "elsewhere") == sorted(ids)
    # still usable after a checkpoint
    campaign.append("alice", campaign.queue("alice")[0][0], {"if": 0, "vq": 0, "damage": "no"}, None)
    campaign.close()


SERVER_LIKE = """
import sys
from pathlib import Path
from pptarena.label.store import Campaign

campaign = Campaign.open(Path(sys.argv[1]))  # held, as the view server holds it, never closed
for who in ("alice", "bob"):
    for k, (item, _) in enumerate(campaign.queue(who)):
        campaign.append(who, item, {"if": k % 5, "vq": 2, "damage": "yes", "damage_slide": 2}, 1.0)
print(len(campaign.history()))
"""


def test_a_process_that_stops_without_closing_leaves_every_label_in_the_file(run, tmp_path):
    """A server stopping (normal exit, as uvicorn's after Ctrl-C or SIGTERM) with its campaigns open."""
    campaign = _new(run, tmp_path / "c.sqlite")
    campaign.close()
    reader = Campaign.open(tmp_path / "c.sqlite")  # e.g. `arena label stats` running meanwhile
    out = subprocess.run(
        [sys.executable, "-c", SERVER_LIKE, str(tmp_path / "c.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    written = int(out.stdout.strip())
    assert written == 12
    ids = _ids_in_copy_of_file_alone(tmp_path / "c.sqlite", tmp_path / "elsewhere")
    assert len(ids) == written
    reader.close()


def test_pack_while_another_connection_writes(run, tmp_path):
    campaign = _new(run, tmp_path / "c.sqlite")
    writer = Campaign.open(campaign.path)  # the server, writing all along
    items = [i for i, _ in writer.queue("alice")]
    committed: list[int] = []
    stop = threading.Event()

    def write() -> None:
        k = 0
        while not stop.is_set():
            committed.append(
                writer.append("alice", items[k % len(items)], {"if": k % 5, "vq": 1, "damage": "no"}, 1.0).id
            )
            k += 1

    thread = threading.Thread(target=write)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(committed) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = list(committed)  # every label acknowledged before the pack starts
        packed = campaign.pack(tmp_path / "out" / "packed.sqlite")
        time.sleep(0.05)
    finally:
        stop.set()
        thread.join()
    assert len(before) >= 20 and len(committed) > len(before)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["packed.sqlite"]  # one file
    # the pack, copied alone anywhere, opens and holds every label committed before it started
    got = _ids_in_copy_of_file_alone(packed, tmp_path / "elsewhere")
    assert set(before) <= set(got)
    assert got == sorted(committed)[: len(got)]  # a consistent snapshot: a prefix, no gaps
    with Campaign.open(packed) as copy:
        assert copy.name == campaign.name and len(copy.items) == len(campaign.items)
        assert copy.annotators == campaign.annotators
    with pytest.raises(CampaignError, match="never overwritten"):
        campaign.pack(packed)
    writer.close()
    campaign.close()


def test_cli_pack(run, tmp_path):
    campaign = _new(run, tmp_path / "c.sqlite")
    ids = _label_all(campaign)  # left open: the labels are still in the log
    res = CliRunner().invoke(cli, ["label", "pack", str(campaign.path), str(tmp_path / "p.sqlite")])
    assert res.exit_code == 0, res.output
    assert f"({len(ids)} label version(s))" in res.output
    assert _ids_in_copy_of_file_alone(tmp_path / "p.sqlite", tmp_path / "elsewhere") == sorted(ids)
    again = CliRunner().invoke(cli, ["label", "pack", str(campaign.path), str(tmp_path / "p.sqlite")])
    assert again.exit_code != 0 and "never overwritten" in again.output
    campaign.close()
