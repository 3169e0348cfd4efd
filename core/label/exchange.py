"""``arena label export`` / ``arena label import``: labels as CSV, JSON lines and Label Studio JSON.

* ``csv`` (absolute campaigns): the ``arena meta-eval --labels`` format — ``task_id``, ``agent``,
  ``epoch``, ``label`` (instruction following on 0-1, i.e. the 0-4 level / 4) — with one row per
  annotator (``annotator`` column; meta-eval averages an attempt's annotators) and the other
  fields (``if``, ``vq``, ``damage``, ``damage_slide``, ``comment``, ``run``, ``created_at``,
  ``seconds``). Pairwise campaigns get ``agent_b``, ``epoch_b`` and ``choice`` instead of ``label``.
* ``jsonl``: every label **version** (the full history), one JSON object per line.
* ``label-studio``: a JSON list of Label Studio tasks (``data`` holds the instruction and the
  campaign's item; ``annotations`` the current labels as ``choices`` results) and, beside it, the
  labelling config (``<file>.config.xml``). ``import`` reads such a file (exported from Label
  Studio after labelling there) and appends its annotations as new label versions (one equal to the
  annotator's current label is not appended again).
"""

from __future__ import annotations

import csv
import io
import json
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pptarena.label.scales import validate_fields
from pptarena.label.store import Campaign, CampaignError, add_annotator, add_to_queue

FORMATS = ("csv", "jsonl", "label-studio")
MAX_IMPORT_BYTES = 64 * 1024 * 1024
ABSOLUTE_FIELDS = ("if", "vq", "damage")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def export_csv(campaign: Campaign) -> str:
    """The current labels as CSV (see the module doc)."""
    buf = io.StringIO()
    pairwise = campaign.protocol == "pairwise"
    head = ["task_id", "agent", "epoch"]
    head += ["agent_b", "epoch_b", "choice"] if pairwise else ["label", "if", "vq", "damage", "damage_slide"]
    head += ["annotator", "comment", "run", "created_at", "seconds"]
    w = csv.writer(buf)
    w.writerow(head)
    for (annotator, item_id), v in sorted(campaign.current().items(), key=lambda kv: (kv[0][1], kv[0][0])):
        it, f = campaign.items[item_id], v.fields or {}
        row: list[Any] = [it.task_id, it.agent, it.epoch]
        if pairwise:
            row += [it.agent_b, it.epoch_b, f.get("choice")]
        else:
            row += [f"{f['if'] / 4:g}", f["if"], f["vq"], f["damage"], f.get("damage_slide", "")]
        row += [annotator, f.get("comment", ""), it.run, _iso(v.created_at), v.seconds or ""]
        w.writerow(row)
    return buf.getvalue()


def export_jsonl(campaign: Campaign) -> str:
    """Every label version, oldest first, one JSON object per line."""
    lines = []
    for v in campaign.history():
        it = campaign.items[v.item]
        lines.append(
            json.dumps(
                {
                    "version": v.id,
                    "item": v.item,
                    "annotator": v.annotator,
                    "fields": v.fields,
                    "created_at": _iso(v.created_at),
                    "seconds": v.seconds,
                    "note": v.note,
                    "run": it.run,
                    "task_id": it.task_id,
                    "agent": it.agent,
                    "epoch": it.epoch,
                    **({"agent_b": it.agent_b, "epoch_b": it.epoch_b} if it.agent_b else {}),
                },
                ensure_ascii=False,
            )
        )
    return "".join(line + "\n" for line in lines)


def label_studio_config(protocol: str) -> str:
    """The Label Studio labelling config matching :func:`export_label_studio`'s tasks."""
    if protocol == "pairwise":
        return (
            '<View><Text name="instruction" value="$instruction"/>'
            '<Choices name="choice" toName="instruction" choice="single" required="true">'
            '<Choice value="a"/><Choice value="b"/><Choice value="tie"/></Choices></View>'
        )
    levels = "".join(f'<Choice value="{n}"/>' for n in range(5))
    return (
        '<View><Text name="instruction" value="$instruction"/>'
        f'<Choices name="if" toName="instruction" choice="single" required="true">{levels}</Choices>'
        f'<Choices name="vq" toName="instruction" choice="single" required="true">{levels}</Choices>'
        '<Choices name="damage" toName="instruction" choice="single" required="true">'
        '<Choice value="no"/><Choice value="yes"/></Choices>'
        '<TextArea name="comment" toName="instruction"/></View>'
    )


def export_label_studio(campaign: Campaign, instructions: dict[tuple[str, str], str] | None = None) -> str:
    """Label Studio tasks (JSON list) with the current labels as annotations."""
    by_item: dict[int, list[Any]] = {}
    for (_, item_id), v in campaign.current().items():
        by_item.setdefault(item_id, []).append(v)
    tasks = []
    for item_id, it in campaign.items.items():
        annotations = []
        for v in sorted(by_item.get(item_id, []), key=lambda x: x.annotator):
            f = v.fields or {}
            keys = ("choice",) if campaign.protocol == "pairwise" else ABSOLUTE_FIELDS
            result: list[dict[str, Any]] = [
                {
                    "from_name": k,
                    "to_name": "instruction",
                    "type": "choices",
                    "value": {"choices": [str(f[k])]},
                }
                for k in keys
                if k in f
            ]
            if f.get("comment"):
                result.append(
                    {
                        "from_name": "comment",
                        "to_name": "instruction",
                        "type": "textarea",
                        "value": {"text": [f["comment"]]},
                    }
                )
            annotations.append(
                {"completed_by": v.annotator, "created_at": _iso(v.created_at), "result": result}
            )
        data = {
            "instruction": (instructions or {}).get((it.run, it.task_id), ""),
            "pptarena": {
                "campaign": campaign.name,
                "item": item_id,
                "run": it.run,
                "task_id": it.task_id,
                "agent": it.agent,
                "epoch": it.epoch,
                "agent_b": it.agent_b,
                "epoch_b": it.epoch_b,
            },
        }
        tasks.append({"id": item_id, "data": data, "annotations": annotations})
    return json.dumps(tasks, ensure_ascii=False, indent=1)


def export(campaign: Campaign, fmt: str, out: Path) -> list[Path]:
    """Write the labels in ``fmt`` to ``out``; returns the files written."""
    if fmt == "csv":
        out.write_text(export_csv(campaign), encoding="utf-8")
        return [out]
    if fmt == "jsonl":
        out.write_text(export_jsonl(campaign), encoding="utf-8")
        return [out]
    if fmt == "label-studio":
        out.write_text(export_label_studio(campaign), encoding="utf-8")
        config = out.with_name(out.name + ".config.xml")
        config.write_text(label_studio_config(campaign.protocol), encoding="utf-8")
        return [out, config]
    raise CampaignError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")


def _annotator_of(completed_by: Any) -> str:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("email") or completed_by.get("username") or completed_by.get("id")
    name = str(completed_by if completed_by is not None else "label-studio").strip()
    return "".join(c if c.isalnum() or c in "_.@-" else "-" for c in name)[:64] or "label-studio"


def _fields(result: list[Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for r in result if isinstance(result, list) else []:
        if not isinstance(r, dict):
            continue
        value = r.get("value") or {}
        name = r.get("from_name")
        if isinstance(value.get("choices"), list) and value["choices"]:
            got = str(value["choices"][0])
            fields[name] = int(got) if name in ("if", "vq") and got.isdigit() else got
        elif isinstance(value.get("text"), list) and value["text"]:
            fields[name] = str(value["text"][0])
    return fields


def import_label_studio(campaign: Campaign, path: Path) -> dict[str, Any]:
    """Append the annotations of a Label Studio export as label versions.

    Tasks are matched by the campaign item they carry (``data.pptarena.item``, which must also name
    the same task); unknown annotators are added to the campaign (their new tokens are returned).
    """
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise CampaignError(f"{path}: larger than {MAX_IMPORT_BYTES} bytes")
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CampaignError(f"{path}: not a Label Studio JSON export ({exc})") from exc
    if not isinstance(tasks, list):
        raise CampaignError(f"{path}: expected a JSON list of tasks")
    added, unchanged, skipped, tokens = 0, 0, [], {}
    for task in tasks:
        info = ((task or {}).get("data") or {}).get("pptarena") or {}
        item = campaign.items.get(info.get("item")) if isinstance(info.get("item"), int) else None
        if item is None or item.task_id != info.get("task_id"):
            skipped.append(
                f"task {task.get('id') if isinstance(task, dict) else '?'}: no matching campaign item"
            )
            continue
        for ann in task.get("annotations") or []:
            if not isinstance(ann, dict) or ann.get("was_cancelled"):
                continue
            who = _annotator_of(ann.get("completed_by"))
            if who not in campaign.annotators:
                tokens[who] = secrets.token_urlsafe(24)
                add_annotator(campaign, who, tokens[who])
            add_to_queue(campaign, who, item.id)
            try:
                fields = validate_fields(campaign.protocol, _fields(ann.get("result")))
                now = campaign.current(who).get((who, item.id))
                if now is not None and now.fields == fields:
                    unchanged += 1  # e.g. our own export coming back: nothing new to record
                    continue
                campaign.append(who, item.id, fields, None, note="imported from label-studio")
                added += 1
            except CampaignError as exc:
                skipped.append(f"item {item.id} by {who}: {exc}")
    return {"added": added, "unchanged": unchanged, "skipped": skipped, "new_annotators": tokens}
