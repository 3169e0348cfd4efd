"""Label Studio exchange: the export carries each task's instruction and its slides (images Label
Studio shows), export → import round-trips every label field on both protocols, and numeric Label
Studio user ids are named through the file's own user data or ``--annotator-map``, never filed
under a number.
"""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.label.campaign import new_campaign
from pptarena.label.exchange import export, import_label_studio, parse_annotator_map
from pptarena.label.store import CampaignError
from tests.support.view_fixtures import XSS_INSTRUCTION, small_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("label-exchange-run"))


def _campaign(run, path, protocol):
    campaign, _ = new_campaign([run], protocol=protocol, annotators=["alice", "bob"], overlap=1.0, out=path)
    return campaign


def _label(campaign):
    """Every field used: both scales, damage yes with its slide, damage no, comments, seconds."""
    for k, (item, _) in enumerate(campaign.queue("alice")):
        if campaign.protocol == "pairwise":
            campaign.append("alice", item, {"choice": ("a", "b", "tie")[k % 3], "comment": f"p{k}"}, 3.5)
            campaign.append("bob", item, {"choice": "tie"}, None)
        else:
            campaign.append(
                "alice",
                item,
                {"if": k % 5, "vq": 4, "damage": "yes", "damage_slide": k + 1, "comment": f"<i>c{k}</i>"},
                7.25,
            )
            campaign.append("bob", item, {"if": 2, "vq": 1, "damage": "no"}, None)


def _current(campaign):
    return {k: (v.fields, v.seconds) for k, v in campaign.current().items()}


@pytest.mark.parametrize("protocol", ["absolute", "pairwise"])
def test_round_trip_keeps_every_field(run, tmp_path, protocol):
    campaign = _campaign(run, tmp_path / "c.sqlite", protocol)
    _label(campaign)
    files = export(campaign, "label-studio", tmp_path / "ls.json")
    tasks = json.loads(files[0].read_text())
    assert len(tasks) == len(campaign.items)
    # the instruction of the task, and the slides as images Label Studio's Image tag shows
    instructions = {f"Retitle slide 1 to New {i}" for i in (1, 2)} | {XSS_INSTRUCTION}
    for task in tasks:
        assert task["data"]["instruction"] in instructions
        slides = task["data"]["slides"]
        roles = " ".join(s["caption"] for s in slides)
        assert "original" in roles and "target" in roles
        if protocol == "pairwise":
            assert "A prediction" in roles and "B prediction" in roles
        else:
            assert "prediction" in roles
        for s in slides:
            head, _, payload = s["image"].partition(",")
            assert head == "data:image/png;base64" and base64.b64decode(payload).startswith(PNG_MAGIC)
    # the config shows them and holds every field
    config = ET.fromstring(files[1].read_text())
    repeater = config.find("Repeater")
    assert repeater is not None and repeater.get("on") == "$slides"
    assert repeater.find("Image").get("value") == "$slides[{{idx}}].image"
    names = {e.get("name") for e in config.iter() if e.get("toName")}
    assert names == (
        {"choice", "comment"} if protocol == "pairwise" else {"if", "vq", "damage", "damage_slide", "comment"}
    )
    # back into a fresh campaign: every label, every field, the seconds spent
    fresh = _campaign(run, tmp_path / "d.sqlite", protocol)
    got = import_label_studio(fresh, files[0])
    assert got["skipped"] == [] and got["added"] == len(campaign.current())
    assert _current(fresh) == _current(campaign)
    if protocol == "absolute":
        assert all(f["damage_slide"] >= 1 for (who, _), (f, _) in _current(fresh).items() if who == "alice")
    # into the campaign it came from: nothing new
    again = import_label_studio(campaign, files[0])
    assert again["added"] == 0 and again["unchanged"] == len(campaign.current())


def test_export_without_images_or_renders(run, tmp_path):
    campaign = _campaign(run, tmp_path / "c.sqlite", "absolute")
    tasks = json.loads(export(campaign, "label-studio", tmp_path / "ls.json", images="none")[0].read_text())
    assert all(t["data"]["slides"] and all(s["image"] == "" for s in t["data"]["slides"]) for t in tasks)
    assert all(t["data"]["instruction"] for t in tasks)
    with pytest.raises(CampaignError, match="images"):
        export(campaign, "label-studio", tmp_path / "x.json", images="file")


def _ls_annotation(completed_by, if_level=3, **extra):
    return {
        "completed_by": completed_by,
        "result": [
            {"from_name": "if", "type": "choices", "value": {"choices": [str(if_level)]}},
            {"from_name": "vq", "type": "choices", "value": {"choices": ["2"]}},
            {"from_name": "damage", "type": "choices", "value": {"choices": ["yes"]}},
            {"from_name": "damage_slide", "type": "number", "value": {"number": 1}},
        ],
        **extra,
    }


def _file_with(run, tmp_path, annotations):
    campaign = _campaign(run, tmp_path / "c.sqlite", "absolute")
    tasks = json.loads(export(campaign, "label-studio", tmp_path / "ls.json", images="none")[0].read_text())
    tasks[0]["annotations"] = annotations
    (tmp_path / "back.json").write_text(json.dumps(tasks))
    return campaign, tasks[0]["id"], tmp_path / "back.json"


def test_numeric_annotators_are_named_from_the_file(run, tmp_path):
    campaign, item, path = _file_with(
        run,
        tmp_path,
        [
            # Label Studio's export: an id with the user object elsewhere in the file ...
            _ls_annotation(10, if_level=1),
            _ls_annotation({"id": 10, "email": "dana@example.org", "first_name": "Dana"}, if_level=1),
            # ... an id with created_username ("email, id") ...
            _ls_annotation(11, if_level=2, created_username=" erin@example.org, 11"),
            # ... and an id nothing in the file names
            _ls_annotation(12, if_level=4),
        ],
    )
    got = import_label_studio(campaign, path)
    assert set(campaign.annotators) == {"alice", "bob", "dana@example.org", "erin@example.org"}
    assert not any(a.isdigit() for a in campaign.annotators)  # no annotator named "10"
    current = campaign.current()
    assert current[("dana@example.org", item)].fields == {
        "if": 1,
        "vq": 2,
        "damage": "yes",
        "damage_slide": 1,
    }
    assert current[("erin@example.org", item)].fields["if"] == 2
    assert got["added"] == 2 and got["unchanged"] == 1  # dana's two annotations are the same label
    assert len(got["skipped"]) == 1 and "--annotator-map 12=NAME" in got["skipped"][0]


def test_annotator_map_option(run, tmp_path):
    campaign, item, path = _file_with(
        run, tmp_path, [_ls_annotation(12, if_level=4), _ls_annotation({"id": 13, "email": "x@y.z"})]
    )
    campaign.close()
    res = CliRunner().invoke(
        cli,
        ["label", "import", str(tmp_path / "c.sqlite"), str(path), "--annotator-map", "12=bob, x@y.z=frank"],
    )
    assert res.exit_code == 0, res.output
    assert "imported 2 label(s)" in res.output
    from pptarena.label.store import Campaign

    with Campaign.open(tmp_path / "c.sqlite") as reopened:
        current = reopened.current()
        assert current[("bob", item)].fields["if"] == 4  # id 12 is the campaign's bob
        assert ("frank", item) in current and "x@y.z" not in reopened.annotators
    bad = CliRunner().invoke(
        cli, ["label", "import", str(tmp_path / "c.sqlite"), str(path), "--annotator-map", "12"]
    )
    assert bad.exit_code != 0 and "ID=NAME" in bad.output
    assert parse_annotator_map(" 1=a ,, 2=b ") == {"1": "a", "2": "b"}
