"""``arena label export`` / ``arena label import``: labels as CSV, JSON lines and Label Studio JSON.

* ``csv`` (absolute campaigns): the ``arena meta-eval --labels`` format — ``task_id``, ``agent``,
  ``epoch``, ``label`` (instruction following on 0-1, i.e. the 0-4 level / 4) — with one row per
  annotator (``annotator`` column; meta-eval averages an attempt's annotators) and the other
  fields (``if``, ``vq``, ``damage``, ``damage_slide``, ``comment``, ``run``, ``created_at``,
  ``seconds``). Pairwise campaigns get ``agent_b``, ``epoch_b`` and ``choice`` instead of ``label``.
* ``jsonl``: every label **version** (the full history), one JSON object per line.
* ``label-studio``: a JSON list of Label Studio tasks and, beside it, the labelling config
  (``<file>.config.xml``). A task's ``data`` holds the task's instruction, the changed slides
  (``slides``: a caption and an image each — original, prediction(s), target — embedded as
  ``data:image/png;base64,…`` URIs, which Label Studio's ``Image`` tag shows; the config repeats
  an ``Image`` over them with a ``Repeater``) and the campaign's item (``pptarena``); its
  ``annotations`` are the current labels (``choices`` for the scales, ``number`` for
  ``damage_slide``, ``textarea`` for the comment, ``lead_time`` for the seconds spent).
  ``import`` reads such a file (exported from Label Studio after labelling there) and appends its
  annotations as new label versions (one equal to the annotator's current label is not appended
  again): every field exported comes back, on both protocols. Label Studio names an annotator by
  a numeric user id (``completed_by``) or by an object with an ``email``; ids are turned into names
  through the file's own user data (``completed_by`` objects, ``created_username``) or a mapping
  given by the caller (``arena label import --annotator-map 10=alice``); an annotation whose
  annotator has no name is skipped, never filed under a number.

With gold labels (``gold=True``, ``arena label export --gold``; :mod:`pptarena.label.adjudication`):
``csv`` writes, for each item with a gold label, one row of the gold label (annotator ``(gold)``,
``comment`` its note, ``created_at`` when it was recorded, no ``seconds``) **instead of** the rows of
the item's annotators, so ``arena meta-eval --labels`` takes the gold label as the item's value;
items without one keep their annotators' rows. ``jsonl`` keeps every label version and adds every
gold label version (``"kind": "gold"``, ``adjudicator``, ``note``); without ``--gold`` its lines are
as before. ``label-studio`` refuses ``--gold`` (its tasks' annotations go back into the campaign by
``import``, where a gold label is not an annotator's).

Why it is long: it holds both the exports (CSV, JSON lines, Label Studio with its config and slide
images) and the Label Studio import with its annotator-name resolution; the import
(``parse_annotator_map`` to :func:`import_label_studio`) could move to its own module (not done
yet), but it must read back exactly the fields :func:`export_label_studio` writes, which is why it
sits beside it.
"""

from __future__ import annotations

import base64
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
MAX_IMPORT_BYTES = 1024 * 1024 * 1024
"""A Label Studio file read back holds the slides it was exported with (embedded images)."""
ABSOLUTE_FIELDS = ("if", "vq", "damage")
IMAGE_MODES = ("data", "none")
"""``data``: slides embedded as data URIs; ``none``: no slides (captions only)."""
MAX_IMAGE_BYTES = 8 * 1024 * 1024
ROLES = ("original", "prediction", "target")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def export_csv(campaign: Campaign, gold: bool = False) -> str:
    """The current labels as CSV (see the module doc; ``gold``: gold labels replace their items'
    annotators' rows)."""
    from pptarena.label.adjudication import GOLD_ANNOTATOR, current_gold

    buf = io.StringIO()
    pairwise = campaign.protocol == "pairwise"
    head = ["task_id", "agent", "epoch"]
    head += ["agent_b", "epoch_b", "choice"] if pairwise else ["label", "if", "vq", "damage", "damage_slide"]
    head += ["annotator", "comment", "run", "created_at", "seconds"]
    w = csv.writer(buf)
    w.writerow(head)
    settled = current_gold(campaign) if gold else {}
    rows: list[tuple[str, int, dict[str, Any], float, Any, str]] = [
        (GOLD_ANNOTATOR, i, g.fields or {}, g.created_at, None, g.note) for i, g in settled.items()
    ]
    for (annotator, item_id), v in campaign.current().items():
        if item_id not in settled:
            f = v.fields or {}
            rows.append((annotator, item_id, f, v.created_at, v.seconds, f.get("comment", "")))
    for annotator, item_id, f, created_at, seconds, comment in sorted(rows, key=lambda r: (r[1], r[0])):
        it = campaign.items[item_id]
        row: list[Any] = [it.task_id, it.agent, it.epoch]
        if pairwise:
            row += [it.agent_b, it.epoch_b, f.get("choice")]
        else:
            row += [f"{f['if'] / 4:g}", f["if"], f["vq"], f["damage"], f.get("damage_slide", "")]
        row += [annotator, comment, it.run, _iso(created_at), seconds or ""]
        w.writerow(row)
    return buf.getvalue()


def export_jsonl(campaign: Campaign, gold: bool = False) -> str:
    """Every label version, oldest first, one JSON object per line (``gold``: then every gold label
    version, ``"kind": "gold"``)."""
    from pptarena.label.adjudication import gold_history

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
    for g in gold_history(campaign) if gold else []:
        it = campaign.items[g.item]
        record = {
            "kind": "gold",
            "gold_version": g.id,
            "item": g.item,
            "adjudicator": g.adjudicator,
            "fields": g.fields,
            "created_at": _iso(g.created_at),
            "note": g.note,
            "run": it.run,
            "task_id": it.task_id,
            "agent": it.agent,
            "epoch": it.epoch,
            **({"agent_b": it.agent_b, "epoch_b": it.epoch_b} if it.agent_b else {}),
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


SLIDES_VIEW = (
    '<Repeater on="$slides" indexFlag="{{idx}}">'
    '<Text name="caption_{{idx}}" value="$slides[{{idx}}].caption"/>'
    '<Image name="slide_{{idx}}" value="$slides[{{idx}}].image" zoom="true" zoomControl="true"/>'
    "</Repeater>"
)


def label_studio_config(protocol: str) -> str:
    """The Label Studio labelling config matching :func:`export_label_studio`'s tasks: the
    instruction, the slides (a ``Repeater`` of ``Image`` tags) and the campaign's scales."""
    comment = '<TextArea name="comment" toName="instruction"/>'
    head = f'<View><Text name="instruction" value="$instruction"/>{SLIDES_VIEW}'
    if protocol == "pairwise":
        return (
            f"{head}"
            '<Choices name="choice" toName="instruction" choice="single" required="true">'
            '<Choice value="a"/><Choice value="b"/><Choice value="tie"/></Choices>'
            f"{comment}</View>"
        )
    levels = "".join(f'<Choice value="{n}"/>' for n in range(5))
    return (
        f"{head}"
        f'<Choices name="if" toName="instruction" choice="single" required="true">{levels}</Choices>'
        f'<Choices name="vq" toName="instruction" choice="single" required="true">{levels}</Choices>'
        '<Choices name="damage" toName="instruction" choice="single" required="true">'
        '<Choice value="no"/><Choice value="yes"/></Choices>'
        '<Number name="damage_slide" toName="instruction" min="1"/>'
        f"{comment}</View>"
    )


class _RunSources:
    """What the export reads from a campaign's run folders: result rows, the dataset's tasks and
    (when asked) the run's renderer, each loaded once per run."""

    def __init__(self, render: bool):
        self.render = render
        self._rows: dict[str, dict[tuple[str, str, int], Any]] = {}
        self._tasks: dict[str, dict[str, Any]] = {}
        self._budgets: dict[str, Any] = {}

    def rows(self, run: str) -> dict[tuple[str, str, int], Any]:
        """The run's result rows by (task, agent, epoch)."""
        if run not in self._rows:
            from pptarena.run.folder.results import read_results
            from pptarena.run.folder.rundir import RESULTS

            try:
                rows = read_results(Path(run) / RESULTS)
            except Exception:  # noqa: BLE001 - an unreadable run gives tasks without slides
                rows = []
            self._rows[run] = {(r.task_id, r.agent, r.epoch): r for r in rows}
        return self._rows[run]

    def tasks(self, run: str) -> dict[str, Any]:
        """The run dataset's tasks by id (empty when the dataset cannot be loaded)."""
        if run not in self._tasks:
            from pptarena.report.data import tasks_or_problem
            from pptarena.run.configuration.registry import get_registry
            from pptarena.run.folder.manifest_record import Manifest
            from pptarena.run.folder.rundir import MANIFEST

            self._tasks[run], _ = tasks_or_problem(Manifest.read(Path(run) / MANIFEST), get_registry())
        return self._tasks[run]

    def budget(self, run: str) -> Any:
        """The run's renderer behind a render budget, or None (only renders already made)."""
        if not self.render:
            return None
        if run not in self._budgets:
            from pptarena.report.data import run_config
            from pptarena.report.renders import RenderBudget
            from pptarena.run.configuration.registry import get_registry
            from pptarena.run.folder.manifest_record import Manifest
            from pptarena.run.folder.rundir import MANIFEST

            manifest = Manifest.read(Path(run) / MANIFEST)

            def make() -> Any:
                from pptarena.run.configuration.components import Components

                registry = get_registry()
                return Components(run_config(manifest, registry), registry).renderer()

            self._budgets[run] = RenderBudget(make, 10**9)
        return self._budgets[run]

    def view(self, run: str, task_id: str, agent: str, epoch: int) -> Any:
        """The :class:`pptarena.report.renders.PairView` of one attempt (notes when it is gone)."""
        from pptarena.report.renders import PairView, pair_decks, pair_view
        from pptarena.run.folder.rundir import RunDir

        row = self.rows(run).get((task_id, agent, epoch))
        if row is None:
            return PairView(notes=["this attempt is no longer in the run"])
        task = self.tasks(run).get(task_id)
        decks = pair_decks(Path(run), RunDir(Path(run)).attempt(agent, task_id, epoch), row, task)
        return pair_view(decks, self.budget(run))


def _image_value(path: Path, images: str) -> str:
    """What a task's slide entry shows: a ``data:`` URI of the image (``data``), or nothing."""
    if images != "data":
        return ""
    try:
        if path.stat().st_size > MAX_IMAGE_BYTES:
            return ""
        raw = path.read_bytes()
    except OSError:
        return ""
    mime = "image/jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "image/png"
    return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"


def _item_slides(sources: _RunSources, campaign: Campaign, item_id: int, images: str) -> dict[str, Any]:
    """The instruction and the changed slides of a campaign item, for a Label Studio task.

    Absolute items list each changed slide as original, prediction, target; pairwise items list
    the original and target once and both predictions (captions ``A`` and ``B``, the campaign's
    sides). Slides without an image are left out; ``notes`` says why when nothing could be shown.
    """
    it = campaign.items[item_id]
    pairwise = campaign.protocol == "pairwise"
    sides = [("A", it.run, it.agent, it.epoch)]
    if pairwise:
        sides.append(("B", it.run_b or it.run, it.agent_b or "", it.epoch_b or 1))
    slides: list[dict[str, str]] = []
    seen: set[tuple[str, str, int]] = set()
    notes: list[str] = []
    instruction = ""
    for side, run, agent, epoch in sides:
        task = sources.tasks(run).get(it.task_id)
        instruction = instruction or (task.instruction if task is not None else "")
        view = sources.view(run, it.task_id, agent, epoch)
        notes += [n for n in view.notes if n not in notes]
        for row in view.rows:
            where = f"slide {row.original}" if row.original is not None else "new slide"
            for role in ROLES:
                n = getattr(row, role)
                path = view.images.get(role, {}).get(n) if n is not None else None
                key = (side if role == "prediction" else "", role, n if n is not None else -1)
                if path is None or key in seen:
                    continue
                seen.add(key)
                who = f"{side} prediction" if pairwise and role == "prediction" else role
                slides.append(
                    {"caption": f"{where} · {who} slide {n}", "image": _image_value(Path(path), images)}
                )
    if images == "none":
        slides = [{"caption": s["caption"], "image": ""} for s in slides]
    return {"instruction": instruction, "slides": slides, "notes": notes}


def export_label_studio(
    campaign: Campaign,
    instructions: dict[tuple[str, str], str] | None = None,
    *,
    images: str = "data",
    render: bool = True,
) -> str:
    """Label Studio tasks (JSON list) with the instruction, the slides and the current labels.

    ``instructions`` overrides the dataset's instruction per (run, task id); ``images`` is one of
    :data:`IMAGE_MODES`; ``render``: make missing slide renders with the run's renderer (as
    ``arena view`` does), else use only the renders already in the run folder.
    """
    if images not in IMAGE_MODES:
        raise CampaignError(f"images {images!r}: expected one of {', '.join(IMAGE_MODES)}")
    sources = _RunSources(render)
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
            if f.get("damage_slide") is not None:
                result.append(
                    {
                        "from_name": "damage_slide",
                        "to_name": "instruction",
                        "type": "number",
                        "value": {"number": f["damage_slide"]},
                    }
                )
            if f.get("comment"):
                result.append(
                    {
                        "from_name": "comment",
                        "to_name": "instruction",
                        "type": "textarea",
                        "value": {"text": [f["comment"]]},
                    }
                )
            annotation: dict[str, Any] = {
                "completed_by": v.annotator,
                "created_at": _iso(v.created_at),
                "result": result,
            }
            if v.seconds is not None:
                annotation["lead_time"] = v.seconds
            annotations.append(annotation)
        shown = _item_slides(sources, campaign, item_id, images)
        given = (instructions or {}).get((it.run, it.task_id))
        data = {
            "instruction": given if given is not None else shown["instruction"],
            "slides": shown["slides"],
            "notes": "; ".join(shown["notes"]),
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


def export(
    campaign: Campaign, fmt: str, out: Path, *, images: str = "data", render: bool = True, gold: bool = False
) -> list[Path]:
    """Write the labels in ``fmt`` to ``out``; returns the files written (``images`` and ``render``:
    see :func:`export_label_studio`; ``gold``: see the module doc)."""
    if fmt == "csv":
        out.write_text(export_csv(campaign, gold), encoding="utf-8")
        return [out]
    if fmt == "jsonl":
        out.write_text(export_jsonl(campaign, gold), encoding="utf-8")
        return [out]
    if fmt == "label-studio" and gold:
        raise CampaignError("--gold applies to csv and jsonl exports, not label-studio (see the docs)")
    if fmt == "label-studio":
        out.write_text(export_label_studio(campaign, images=images, render=render), encoding="utf-8")
        config = out.with_name(out.name + ".config.xml")
        config.write_text(label_studio_config(campaign.protocol), encoding="utf-8")
        return [out, config]
    raise CampaignError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")


def parse_annotator_map(text: str | None) -> dict[str, str]:
    """``10=alice,11=bob`` as ``{"10": "alice", "11": "bob"}`` (a Label Studio user id, or a name
    found in the file, to the campaign's annotator name).

    :raises CampaignError: for an entry without ``=`` or with an empty side.
    """
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, name = part.partition("=")
        if not sep or not key.strip() or not name.strip():
            raise CampaignError(f"--annotator-map: {part.strip()!r} is not ID=NAME")
        out[key.strip()] = name.strip()
    return out


def _clean_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.@-" else "-" for c in name.strip())[:64]


def _is_id(value: Any) -> bool:
    return (type(value) is int) or (isinstance(value, str) and value.strip().isdigit())


def file_user_names(tasks: list[Any]) -> dict[str, str]:
    """Label Studio user id → name (email, else username, else first and last name) from the
    file's own user data: ``completed_by`` objects and ``created_username`` (``"email, id"``)."""
    names: dict[str, str] = {}
    for task in tasks:
        for ann in (task.get("annotations") or []) if isinstance(task, dict) else []:
            if not isinstance(ann, dict):
                continue
            by = ann.get("completed_by")
            if isinstance(by, dict) and _is_id(by.get("id")):
                full = f"{by.get('first_name') or ''} {by.get('last_name') or ''}".strip()
                name = by.get("email") or by.get("username") or full
                if isinstance(name, str) and name.strip():
                    names[str(by["id"]).strip()] = name.strip()
            created = ann.get("created_username")
            if isinstance(created, str) and "," in created:
                who, _, uid = created.rpartition(",")
                if uid.strip().isdigit() and who.strip():
                    names.setdefault(uid.strip(), who.strip())
    return names


def _annotator_of(completed_by: Any, users: dict[str, str], mapping: dict[str, str]) -> str | None:
    """The campaign name of a Label Studio annotation's annotator, or None when it has none."""
    name: Any = None
    if isinstance(completed_by, dict):
        uid = completed_by.get("id")
        if _is_id(uid) and str(uid).strip() in mapping:
            return _clean_name(mapping[str(uid).strip()]) or None
        name = completed_by.get("email") or completed_by.get("username")
        if not name and _is_id(uid):
            name = users.get(str(uid).strip())
    elif _is_id(completed_by):
        uid = str(completed_by).strip()
        name = mapping.get(uid) or users.get(uid)
    elif isinstance(completed_by, str):
        name = completed_by
    if not isinstance(name, str) or not name.strip():
        return None
    name = mapping.get(name.strip(), name)
    return _clean_name(name) or None


def _fields(result: list[Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for r in result if isinstance(result, list) else []:
        if not isinstance(r, dict):
            continue
        value = r.get("value") or {}
        name = r.get("from_name")
        if not isinstance(value, dict) or not isinstance(name, str):
            continue
        if isinstance(value.get("choices"), list) and value["choices"]:
            got = str(value["choices"][0])
            fields[name] = int(got) if name in ("if", "vq") and got.isdigit() else got
        elif isinstance(value.get("text"), list) and value["text"]:
            fields[name] = str(value["text"][0])
        elif "number" in value:
            number = value["number"]
            if isinstance(number, str) and number.strip().isdigit():
                number = int(number)
            elif isinstance(number, float) and number.is_integer():
                number = int(number)
            fields[name] = number
    return fields


def _seconds(ann: dict[str, Any]) -> float | None:
    t = ann.get("lead_time")
    if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < 86_400 * 7:
        return float(t)
    return None


def import_label_studio(
    campaign: Campaign, path: Path, annotator_map: dict[str, str] | None = None
) -> dict[str, Any]:
    """Append the annotations of a Label Studio export as label versions.

    Tasks are matched by the campaign item they carry (``data.pptarena.item``, which must also name
    the same task); annotators are named as the module doc says (``annotator_map``: Label Studio
    user id or name → campaign name); unknown annotators are added to the campaign (their new
    tokens are returned); an annotation whose annotator has no name is skipped and reported.
    """
    mapping = dict(annotator_map or {})
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise CampaignError(f"{path}: larger than {MAX_IMPORT_BYTES} bytes")
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CampaignError(f"{path}: not a Label Studio JSON export ({exc})") from exc
    if not isinstance(tasks, list):
        raise CampaignError(f"{path}: expected a JSON list of tasks")
    users = file_user_names(tasks)
    added, unchanged, skipped, tokens = 0, 0, [], {}
    for task in tasks:
        info = (((task or {}).get("data") or {}).get("pptarena") or {}) if isinstance(task, dict) else {}
        item = campaign.items.get(info.get("item")) if isinstance(info.get("item"), int) else None
        if item is None or item.task_id != info.get("task_id"):
            skipped.append(
                f"task {task.get('id') if isinstance(task, dict) else '?'}: no matching campaign item"
            )
            continue
        for ann in task.get("annotations") or []:
            if not isinstance(ann, dict) or ann.get("was_cancelled"):
                continue
            by = ann.get("completed_by")
            who = _annotator_of(by, users, mapping)
            if who is None:
                uid = by.get("id") if isinstance(by, dict) else by
                skipped.append(
                    f"item {item.id}: annotator {uid!r} has no name in the file "
                    f"(give --annotator-map {uid if _is_id(uid) else 'ID'}=NAME)"
                )
                continue
            try:
                fields = validate_fields(campaign.protocol, _fields(ann.get("result")))
            except CampaignError as exc:
                skipped.append(f"item {item.id} by {who}: {exc}")
                continue
            if who not in campaign.annotators:
                tokens[who] = secrets.token_urlsafe(24)
                add_annotator(campaign, who, tokens[who])
            add_to_queue(campaign, who, item.id)
            now = campaign.current(who).get((who, item.id))
            if now is not None and now.fields == fields:
                unchanged += 1  # e.g. our own export coming back: nothing new to record
                continue
            campaign.append(who, item.id, fields, _seconds(ann), note="imported from label-studio")
            added += 1
    return {"added": added, "unchanged": unchanged, "skipped": skipped, "new_annotators": tokens}
