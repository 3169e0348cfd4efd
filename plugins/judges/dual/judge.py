"""The ``dual`` judge: PPTArena's protocol, an instruction-following (IF) and a visual-quality (VQ) score.

* **IF** (0-5): one model call with the instruction, the style target, the structural edits
  original → target and original → prediction, the differences left from prediction to target,
  and compact summaries of the slides those edits touch in the three decks (bounded). Two rules
  are enforced in code, before any call: a prediction with no structural edit scores IF 0 unless
  the target has none either (PPTArena's published code let an unchanged deck earn credit), and a
  prediction structurally identical to the target scores IF 5 (PPTArena's perfect-match short-cut;
  option ``shortcut_identical``).
* **VQ** (0-5): the slides that changed visibly in the prediction or in the target (SSIM on the
  renders, :meth:`Evidence.changed_slides`), most changed first, capped at ``max_images``, shown in
  prediction order in chunks of ``chunk_size`` slides (each followed by the target's version when
  ``reference_images``, unless that version is among the reference slides shown first); one call
  per chunk; chunk scores are combined with ``chunk_aggregate`` (``min`` as PPTArena does, or
  ``mean``).

Every call sends its **task-stable prefix** first: the system prompt, then one user message that is
byte-identical for every prediction of a task, marked ``Message.cache_prefix`` (providers cache
it across the agents judged on the task), then the prediction's user message:

* IF prefix: instruction, style target, the target's edits, and the summaries of the original and
  target slides the target's edits touch. After it: the prediction's edits, the remaining
  differences, the original and target slides only the prediction's edits touch, the prediction's
  slides, and the request for a score. Every slide shown before (the union the two diffs touch) is
  still shown, once.
* VQ prefix: the instruction and, with ``reference_images``, the target slides that changed visibly
  (SSIM original → target, the ``max_images`` most changed, in target order). After it: the chunk's
  prediction slides, each followed by its target version only when that one is not in the prefix.

``score = (IF + VQ) / 10`` (the mean of the two 0-5 scores, scaled to [0, 1]). Answers are parsed
by :mod:`.verdict_parse`; an unreadable answer is retried once, then the judge raises
:class:`JudgeError`. Prompts, chosen images and raw answers go to ``judges/<label>/`` in the task
folder.

Why it is long: it holds both halves of the protocol in one class, sharing the diffs, the evidence
folder and :meth:`DualJudge._ask`'s retry; the VQ half (slide selection by SSIM, reference slides,
chunking: ``_select``, ``_references``, ``_image``, ``_visual_quality``) could move to its own
module (not done yet).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from pptarena.evidence import Evidence
from pptarena.models import ImagePart, Message, ModelRef, split_model_ref
from pptarena.plugins.judges.dual import prompts
from pptarena.plugins.judges.dual.verdict_parse import ScoreParseError, parse_score
from pptarena.types import (
    Component,
    InfraError,
    JudgeError,
    Options,
    PptArenaError,
    Prediction,
    Task,
    Verdict,
)

MAX_RAW_CHARS = 20_000  # raw answer text kept in the evidence files


class DualOptions(Options):
    """Options of the ``dual`` judge."""

    model: ModelRef = Field(description="the judge model, '<backend>/<model>'")
    if_model: ModelRef | None = Field(None, description="model for the IF call (default: model)")
    vq_model: ModelRef | None = Field(None, description="model for the VQ calls (default: model)")
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature of the judge calls")
    max_tokens: int = Field(1024, ge=16, le=32768, description="output-token limit per call")
    max_images: int = Field(
        12,
        ge=1,
        le=200,
        description="most prediction slides judged for VQ (all chunks); most target reference slides",
    )
    chunk_size: int = Field(4, ge=1, le=50, description="prediction slides per VQ call")
    chunk_aggregate: Literal["min", "mean"] = Field("min", description="how chunk VQ scores combine")
    reference_images: bool = Field(True, description="show the target's version of each slide beside it")
    ssim_threshold: float | None = Field(
        None, ge=0, le=1, description="SSIM below which a slide counts as changed (default: pptarena.ssim's)"
    )
    max_image_side: int = Field(1024, ge=64, le=4096, description="images are downscaled to this long edge")
    max_diff_chars: int = Field(12_000, ge=500, le=500_000, description="per diff in the IF prompt")
    max_summary_chars: int = Field(
        10_000, ge=500, le=500_000, description="per deck summary block in the IF prompt"
    )
    shortcut_identical: bool = Field(True, description="IF = 5 without a call when prediction == target")


class DualJudge(Component):
    """PPTArena's IF/VQ model judge (see the module docstring)."""

    fingerprint_modules = (
        prompts,
    )  # its prompts are part of its fingerprint (pptarena.run.folder.fingerprint)

    Options = DualOptions

    # ------------------------------------------------------------------ entry point

    def judge(self, task: Task, prediction: Prediction, evidence: Evidence) -> Verdict:
        """Score IF and VQ; ``score = (IF + VQ) / 10``."""
        opts: DualOptions = self.options  # type: ignore[assignment]
        if prediction.path is None:
            raise JudgeError(f"task {task.id}: the prediction has no deck to judge")
        label = getattr(self.context, "label", "") or "dual"
        has_target = task.target is not None
        try:
            pred_diff = evidence.diff("original", "prediction")
            target_diff = evidence.diff("original", "target") if has_target else None
            remaining = evidence.diff("prediction", "target") if has_target else None
        except InfraError:
            raise
        except PptArenaError as exc:
            raise JudgeError(f"task {task.id}: cannot diff the decks: {exc}") from exc

        if_ref = opts.if_model or opts.model
        vq_ref = opts.vq_model or opts.model
        if_result = self._instruction_following(
            task, evidence, label, pred_diff, target_diff, remaining, if_ref
        )
        vq_result = self._visual_quality(task, evidence, label, pred_diff, remaining, vq_ref)

        if_score, vq_score = if_result["score"], vq_result["score"]
        score = (if_score + vq_score) / 10.0
        backend = split_model_ref(opts.model)[0]
        metrics: dict[str, Any] = {
            "if_score": if_score,
            "vq_score": vq_score,
            "vq_chunks": len(vq_result["chunks"]),
            "vq_slides": len(vq_result["slides"]),
            "if_rule": if_result["rule"] or "model",
            "judge_backend": backend,
            "judge_model": opts.model,
        }
        if opts.if_model or opts.vq_model:
            metrics["if_model"], metrics["vq_model"] = if_ref, vq_ref
        details = {
            "judge": {
                "backend": backend,
                "model": opts.model,
                "if_model": if_ref,
                "vq_model": vq_ref,
                "temperature": opts.temperature,
                "prompt_version": prompts.PROMPT_VERSION,
            },
            "if": {k: if_result[k] for k in ("score", "reason", "rule")},
            "vq": {
                "score": vq_score,
                "aggregate": opts.chunk_aggregate,
                "chunks": [
                    {"slides": c["slides"], "score": c["score"], "reason": c["reason"]}
                    for c in vq_result["chunks"]
                ],
                "selection": vq_result["selection_note"],
            },
        }
        explanation = (
            f"IF {if_score}/5: {if_result['reason']} VQ {vq_score}/5"
            f" ({opts.chunk_aggregate} of {len(vq_result['chunks'])} chunk(s)): "
            + " | ".join(c["reason"] for c in vq_result["chunks"] if c["reason"])
        )
        evidence.write_json(label, "dual.json", {"score": score, "metrics": metrics, "details": details})
        return Verdict(score=score, metrics=metrics, explanation=explanation.strip(), details=details)

    # ------------------------------------------------------------------ IF

    def _instruction_following(
        self,
        task: Task,
        evidence: Evidence,
        label: str,
        pred_diff: Any,
        target_diff: Any,
        remaining: Any,
        ref: str,
    ) -> dict[str, Any]:
        opts: DualOptions = self.options  # type: ignore[assignment]
        record: dict[str, Any] = {
            "model": ref,
            "prediction_edits": pred_diff.edit_count,
            "target_edits": target_diff.edit_count if target_diff is not None else None,
            "remaining_edits": remaining.edit_count if remaining is not None else None,
        }
        paths = {"original": task.original, "target": task.target, "prediction": evidence.path("prediction")}

        def same(diff: Any, a: str, b: str) -> bool:
            # "unchanged" = no structural edit and the same content XML (changes the diff cannot see count)
            return diff is not None and diff.edit_count == 0 and _same_content(paths[a], paths[b])

        target_unchanged = same(target_diff, "original", "target")
        pred_unchanged = same(pred_diff, "original", "prediction")
        record["prediction_unchanged"], record["target_unchanged"] = pred_unchanged, target_unchanged
        if pred_unchanged and not target_unchanged:
            reason = "The prediction makes no structural change to the original deck" + (
                " while the target does."
                if target_diff is not None
                else "; the task has no target, so a change is assumed to be required."
            )
            out = {"score": 0, "reason": reason, "rule": "unchanged_prediction"}
            evidence.write_json(label, "if.json", {**record, **out})
            return out
        if opts.shortcut_identical and same(remaining, "prediction", "target"):
            out = {
                "score": 5,
                "reason": "The prediction is structurally identical to the target.",
                "rule": "identical_to_target",
            }
            evidence.write_json(label, "if.json", {**record, **out})
            return out

        stable_blocks, prediction_blocks = self._summaries(evidence, pred_diff, target_diff)
        stable = prompts.if_stable_prompt(
            task.instruction,
            task.style_target,
            prompts.bounded(target_diff.to_text(), opts.max_diff_chars) if target_diff is not None else None,
            stable_blocks,
        )
        user = prompts.if_prediction_prompt(
            prompts.bounded(pred_diff.to_text(), opts.max_diff_chars),
            prompts.bounded(remaining.to_text(), opts.max_diff_chars) if remaining is not None else None,
            prediction_blocks,
        )
        messages = [
            Message.system(prompts.IF_SYSTEM),
            Message.user(stable, cache_prefix=True),
            Message.user(user),
        ]
        record["prompt"] = {"system": prompts.IF_SYSTEM, "stable": stable, "user": user}
        parsed, attempts = self._ask(evidence, ref, messages, label, "if.json", record, what="IF")
        out = {"score": parsed.score, "reason": parsed.reason, "rule": None}
        evidence.write_json(label, "if.json", {**record, "attempts": attempts, **out})
        return out

    def _summaries(self, evidence: Evidence, pred_diff: Any, target_diff: Any) -> tuple[list[str], list[str]]:
        """Bounded summaries of the slides the two diffs touch, in each deck's numbering.

        Returns ``(stable, prediction)`` blocks. ``stable`` depends on the task alone: the original
        and target slides the target's edits touch. ``prediction``: the original slides only the
        prediction's edits touch and their target versions (when not shown already), then the
        prediction's slides (those its edits touch and its versions of every original slide shown).
        """
        opts: DualOptions = self.options  # type: ignore[assignment]
        limit = opts.max_summary_chars
        p_orig, p_own, p_map = _touched(pred_diff)
        stable: list[str] = []
        t_orig: set[int] = set()
        t_shown: set[int] = set()
        t_map: dict[int, int] = {}
        if target_diff is not None:
            t_orig, t_own, t_map = _touched(target_diff)
            t_shown = t_own | {t_map[a] for a in t_orig if a in t_map}
            stable = [
                prompts.summary_block("ORIGINAL", evidence.summary("original"), t_orig, limit),
                prompts.summary_block("TARGET", evidence.summary("target"), t_shown, limit),
            ]
        more_orig = p_orig - t_orig
        blocks: list[str] = []
        if target_diff is None:
            blocks.append(prompts.summary_block("ORIGINAL", evidence.summary("original"), p_orig, limit))
        elif more_orig:
            more_target = {t_map[a] for a in more_orig if a in t_map} - t_shown
            note = "slides not shown above"
            blocks.append(
                prompts.summary_block("ORIGINAL", evidence.summary("original"), more_orig, limit, note)
            )
            if more_target:
                blocks.append(
                    prompts.summary_block("TARGET", evidence.summary("target"), more_target, limit, note)
                )
        own = p_own | {p_map[a] for a in t_orig | p_orig if a in p_map}
        blocks.append(prompts.summary_block("PREDICTION", evidence.summary("prediction"), own, limit))
        return stable, blocks

    # ------------------------------------------------------------------ VQ

    def _select(
        self, evidence: Evidence, pred_diff: Any, has_target: bool
    ) -> tuple[list[dict[str, Any]], str]:
        """Prediction slides to show: changed (SSIM) in prediction or target, most changed first, capped."""
        opts: DualOptions = self.options  # type: ignore[assignment]
        kw = {"threshold": opts.ssim_threshold} if opts.ssim_threshold is not None else {}
        chosen: dict[int, dict[str, Any]] = {}

        def add(n: int, ssim: float, why: str) -> None:
            row = chosen.setdefault(n, {"prediction": n, "ssim": ssim, "why": []})
            row["ssim"] = min(row["ssim"], ssim)
            row["why"].append(why)

        for r in evidence.changed_slides("original", "prediction", **kw):
            if r.get("b") is not None:
                add(r["b"], float(r.get("ssim", 0.0)), _why(r, "prediction"))
        not_in_prediction: list[int] = []
        if has_target:
            orig_to_pred = {a: b for a, b in pred_diff.slide_matches if a is not None and b is not None}
            for r in evidence.changed_slides("original", "target", **kw):
                a = r.get("a")
                if a is not None and a in orig_to_pred:
                    add(orig_to_pred[a], float(r.get("ssim", 0.0)), _why(r, "target"))
                elif r.get("b") is not None:
                    not_in_prediction.append(r["b"])
        note = f"{len(chosen)} slide(s) changed visibly in the prediction or the target"
        if not_in_prediction:
            note += f"; target slide(s) {not_in_prediction} have no counterpart in the prediction"
        ranked = sorted(chosen.values(), key=lambda row: (row["ssim"], row["prediction"]))
        if len(ranked) > opts.max_images:
            note += f"; capped to the {opts.max_images} most changed"
        picked = sorted(ranked[: opts.max_images], key=lambda row: row["prediction"])
        if not picked:
            count = len(evidence.renders("prediction"))
            picked = [
                {"prediction": n, "ssim": 1.0, "why": ["no visible change: first slides"]}
                for n in range(1, min(opts.chunk_size, count) + 1)
            ]
            note = (
                f"no slide changed visibly; judging the first {len(picked)} slide(s)"
                if picked
                else "the prediction has no slides to judge"
            )
        return picked, note

    def _image(self, path: Path) -> ImagePart:
        from PIL import Image

        side = self.options.max_image_side  # type: ignore[attr-defined]
        try:
            with Image.open(path) as im:
                if max(im.size) <= side and im.format == "PNG":
                    return ImagePart(Path(path).read_bytes(), "image/png")
                small = im.convert("RGB")
                small.thumbnail((side, side), Image.Resampling.LANCZOS)
                buf = io.BytesIO()
                small.save(buf, format="PNG")
                return ImagePart(buf.getvalue(), "image/png")
        except OSError as exc:
            raise InfraError(f"cannot read the render {path}: {exc}") from exc

    def _references(self, evidence: Evidence) -> list[dict[str, Any]]:
        """Target slides for the VQ prefix: changed visibly (SSIM) from the original, most changed first,
        capped at ``max_images``, in target order. Depends on the task alone.
        """
        opts: DualOptions = self.options  # type: ignore[assignment]
        kw = {"threshold": opts.ssim_threshold} if opts.ssim_threshold is not None else {}
        rows = [
            {"target": r["b"], "ssim": float(r.get("ssim", 0.0)), "why": [_why(r, "target")]}
            for r in evidence.changed_slides("original", "target", **kw)
            if r.get("b") is not None
        ]
        ranked = sorted(rows, key=lambda row: (row["ssim"], row["target"]))
        return sorted(ranked[: opts.max_images], key=lambda row: row["target"])

    def _visual_quality(
        self, task: Task, evidence: Evidence, label: str, pred_diff: Any, remaining: Any, ref: str
    ) -> dict[str, Any]:
        opts: DualOptions = self.options  # type: ignore[assignment]
        has_target = task.target is not None
        slides, note = self._select(evidence, pred_diff, has_target)
        pred_images = {img.number: img for img in evidence.renders("prediction")}
        target_images: dict[int, Any] = {}
        pred_to_target: dict[int, int] = {}
        with_reference = opts.reference_images and has_target
        if with_reference:
            target_images = {img.number: img for img in evidence.renders("target")}
            pred_to_target = {a: b for a, b in remaining.slide_matches if a is not None and b is not None}
        chunks = [slides[i : i + opts.chunk_size] for i in range(0, len(slides), opts.chunk_size)]
        if not chunks:  # a deck with no slides shows nothing: no visual quality to credit
            return {"score": 0, "chunks": [], "slides": slides, "selection_note": note}

        # the task-stable prefix: the instruction and the target's visibly changed slides
        references = self._references(evidence) if with_reference else []
        references = [row for row in references if row["target"] in target_images]
        stable_parts: list[str | ImagePart] = [
            prompts.vq_stable_intro(task.instruction, [row["target"] for row in references])
        ]
        stable_shown: list[dict[str, Any]] = []
        for row in references:
            t = row["target"]
            part = self._image(target_images[t].path)
            stable_parts += [prompts.target_label(t), part]
            stable_shown.append({**_image_row("target", t, target_images[t].path, part, row), "stable": True})
        in_prefix = {row["target"] for row in references}
        stable_message = Message.user(*stable_parts, cache_prefix=True)

        results: list[dict[str, Any]] = []
        for k, chunk in enumerate(chunks, 1):
            parts: list[str | ImagePart] = [prompts.vq_chunk_intro(k, len(chunks), chunk, with_reference)]
            shown: list[dict[str, Any]] = []
            for row in chunk:
                img = pred_images.get(row["prediction"])
                if img is None:
                    raise InfraError(f"no render of prediction slide {row['prediction']}")
                t = pred_to_target.get(row["prediction"]) if with_reference else None
                if t is not None and t not in target_images:
                    t = None
                part = self._image(img.path)
                parts += [prompts.vq_prediction_label(row["prediction"], t if t in in_prefix else None), part]
                shown.append(_image_row("prediction", row["prediction"], img.path, part, row))
                if t is not None and t not in in_prefix:
                    tpart = self._image(target_images[t].path)
                    parts += [prompts.target_label(t), tpart]
                    shown.append(_image_row("target", t, target_images[t].path, tpart, None))
            messages = [Message.system(prompts.VQ_SYSTEM), stable_message, Message.user(*parts)]
            record: dict[str, Any] = {
                "model": ref,
                "chunk": k,
                "chunks": len(chunks),
                "selection": note,
                "prompt": {
                    "system": prompts.VQ_SYSTEM,
                    "stable": [p for p in stable_parts if isinstance(p, str)],
                    "user": [p for p in parts if isinstance(p, str)],
                },
                "images": stable_shown + shown,
            }
            name = f"vq-{k:02d}.json"
            parsed, attempts = self._ask(evidence, ref, messages, label, name, record, what=f"VQ chunk {k}")
            evidence.write_json(
                label, name, {**record, "attempts": attempts, "score": parsed.score, "reason": parsed.reason}
            )
            results.append(
                {"slides": [r["prediction"] for r in chunk], "score": parsed.score, "reason": parsed.reason}
            )
        scores = [c["score"] for c in results]
        vq = min(scores) if opts.chunk_aggregate == "min" else round(sum(scores) / len(scores), 4)
        return {"score": vq, "chunks": results, "slides": slides, "selection_note": note}

    # ------------------------------------------------------------------ model calls

    def _ask(
        self,
        evidence: Any,
        ref: str,
        messages: list[Message],
        label: str,
        name: str,
        record: dict[str, Any],
        what: str,
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Call the model; one retry on an unreadable answer, then :class:`JudgeError`."""
        opts: DualOptions = self.options  # type: ignore[assignment]
        client = evidence.model(ref)
        attempts: list[dict[str, Any]] = []
        convo = list(messages)
        problem = ""
        for attempt in (1, 2):
            completion = client.complete(convo, temperature=opts.temperature, max_tokens=opts.max_tokens)
            text = completion.text or ""
            entry: dict[str, Any] = {
                "attempt": attempt,
                "answer": text[:MAX_RAW_CHARS],
                "model": completion.model,
                "usage": completion.usage.as_dict(),
                "cached": completion.cached,
            }
            attempts.append(entry)
            try:
                parsed = parse_score(text)
            except ScoreParseError as exc:
                problem = str(exc)
                entry["parse_error"] = problem
                convo = convo + [
                    Message.assistant(text[:MAX_RAW_CHARS] or "(empty)"),
                    Message.user(prompts.RETRY_TEXT.format(problem=problem[:300])),
                ]
                continue
            entry["parsed"] = {"score": parsed.score, "reason": parsed.reason, "form": parsed.form}
            return parsed, attempts
        evidence.write_json(label, name, {**record, "attempts": attempts, "error": problem})
        raise JudgeError(
            f"{what}: the judge model {ref} gave no readable 0-5 score after one retry ({problem}); "
            f"last answer: {attempts[-1]['answer'][:200]!r}"
        )


def _same_content(a: Path | None, b: Path | None) -> bool:
    """True when two decks' content XML parts are canonically equal (see :mod:`.part_compare`)."""
    from pptarena.plugins.judges.structural.part_compare import canonical_parts

    if a is None or b is None:
        return False
    try:
        return canonical_parts(a) == canonical_parts(b)
    except PptArenaError as exc:
        raise JudgeError(f"cannot compare the XML parts of {Path(a).name} and {Path(b).name}: {exc}") from exc


def _touched(diff: Any) -> tuple[set[int], set[int], dict[int, int]]:
    """What a diff from the original touches: ``(original slides, own slides, original → own numbers)``.

    A removed slide counts in the original's numbering; an edited or added one in the diff's own
    deck, and its original counterpart (when matched) in the original's.
    """
    b_to_a = {b: a for a, b in diff.slide_matches if a is not None and b is not None}
    orig: set[int] = set()
    own: set[int] = set()
    for e in diff.edits:
        n = e.get("slide")
        if n is None:
            continue
        if e.get("kind") == "slide_removed":
            orig.add(n)
            continue
        own.add(n)
        if n in b_to_a:
            orig.add(b_to_a[n])
    return orig, own, {a: b for b, a in b_to_a.items()}


def _why(row: dict[str, Any], role: str) -> str:
    status = row.get("status")
    return f"{'changed' if status == 'matched' else status} in {role}"


def _image_row(
    role: str, number: int, path: Path, part: ImagePart, row: dict[str, Any] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": role,
        "slide": number,
        "path": str(path),
        "bytes": len(part.data),
        "sha256": hashlib.sha256(part.data).hexdigest(),
    }
    if row is not None:
        out["ssim"] = round(row["ssim"], 5)
        out["why"] = row["why"]
    return out
