"""Model-side parts of the ``rubric`` judge: ``llm`` scorer leaves and the explanations of parents.

Both run in the judge process (no untrusted code is involved).

* :func:`score_llm_leaf` follows ai-rubric's ``LLMScorer``: the prompts are ``str.format``-ed
  with the context when it is non-empty, sent as a system + user chat at temperature 0.3, and
  the reply is parsed with :func:`parse_llm_score` (first ```json block, else the first ```
  block, else the whole reply, as a JSON object with ``score`` and ``reason``; else
  ``score:`` / ``reason:`` lines; else the last number that looks like a score). A system prompt
  with no replacement field is the same for every prediction of the task, so it is marked
  ``cache_prefix`` (the prompts themselves are the rubric's and are sent unchanged: ai-rubric's
  one system + one user message; a user prompt is never split).
* :func:`deterministic_reason` and :func:`model_reason` explain a parent from its children:
  reasons bubble up the tree, leaves first.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from typing import Any

from pptarena.plugins.judges.rubric.tree import LLMScorer

_FENCE_JSON = re.compile(r"```json\s*(.*?)```", re.S)
_FENCE_ANY = re.compile(r"```\s*(.*?)```", re.S)
_SCORE_TOKEN = re.compile(r"\b0\.\d+\b|\b1\.0+\b|\b[01]\b")
LLM_SCORER_TEMPERATURE = 0.3
EXPLAIN_TEMPERATURE = 0.3
MAX_CHILD_REASON_CHARS = 600


def parse_llm_score(text: str) -> tuple[float, str]:
    """``(score, reason)`` from an ``llm`` scorer's reply, as ai-rubric parses it.

    :raises ValueError: ``"LLM scoring failed: ..."`` when no score in [0, 1] can be found.
    """
    match = _FENCE_JSON.search(text) or _FENCE_ANY.search(text)
    body = match.group(1) if match else text
    try:
        data = json.loads(body.strip())
        if not isinstance(data, dict) or "score" not in data or "reason" not in data:
            raise ValueError("expected a JSON object with 'score' and 'reason'")
        score = float(data["score"])
        if not 0 <= score <= 1:
            raise ValueError(f"score {score} is outside [0, 1]")
        return score, str(data["reason"])
    except (ValueError, TypeError):
        pass
    found: float | None = None
    reasons: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        low = stripped.lower()
        if low.startswith("score:"):
            try:
                found = float(stripped.split(":", 1)[1].strip())
            except ValueError:
                pass
        elif low.startswith("reason:"):
            reasons.append(stripped.split(":", 1)[1].strip())
        elif stripped:
            reasons.append(stripped)
    if found is None:
        tokens = _SCORE_TOKEN.findall(text)
        if tokens:
            found = float(tokens[-1])
    if found is None or not 0 <= found <= 1:
        raise ValueError(f"LLM scoring failed: no score in [0, 1] in the reply {text[:300]!r}")
    return found, " ".join(reasons)


MAX_FORMAT_WIDTH_DIGITS = 4  # a format spec may pad to at most 9999 characters


class _RubricFormatter(string.Formatter):
    """``str.format`` for rubric prompts (untrusted text run in the judge process).

    Plain names and attribute / index access work as in ``str.format``, but no segment may
    start with ``_`` (so ``{llm_call.__globals__[...]}`` cannot walk to modules and the
    environment), and format-spec widths are bounded (no ``{x:>999999999}`` memory bomb).
    """

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        segments = re.split(r"[.\[\]]", field_name)
        if any(seg.strip().startswith("_") for seg in segments if seg):
            raise ValueError(f"rubric prompt field {{{field_name}}} reaches a private attribute")
        return super().get_field(field_name, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> Any:
        if any(len(run) > MAX_FORMAT_WIDTH_DIGITS for run in re.findall(r"\d+", format_spec)):
            raise ValueError(f"rubric prompt format spec {format_spec!r} is too wide")
        return super().format_field(value, format_spec)


def format_prompt(template: str, context: dict[str, Any]) -> str:
    """``template.format(**context)`` as ai-rubric does it, made safe for untrusted templates."""
    return _RubricFormatter().vformat(template, (), context) if context else template


def static_template(template: str) -> bool:
    """True when ``template`` has no replacement field, so formatting cannot make it depend on the
    prediction (``{{`` / ``}}`` escapes are fine; an unparsable template is not static).
    """
    try:
        return all(field is None for _, field, _, _ in string.Formatter().parse(template))
    except ValueError:
        return False


def score_llm_leaf(
    scorer: LLMScorer, context: dict[str, Any], client: Any | None
) -> tuple[float, str, list[dict[str, Any]]]:
    """Score one ``llm`` leaf; returns ``(score, reason, calls)``.

    :raises Exception: any failure (formatting, no model, backend error, unparseable reply);
        the caller records it as the leaf's error.
    """
    from pptarena.models import Message

    if client is None:
        raise RuntimeError("llm scorer: no model is configured for the rubric judge (set its 'model' option)")
    system = format_prompt(scorer.system_prompt, context)
    user = format_prompt(scorer.user_prompt, context)
    call: dict[str, Any] = {
        "kind": "llm_scorer",
        "system": system,
        "prompt": user,
        "params": {"temperature": LLM_SCORER_TEMPERATURE},
    }
    try:
        # a static system prompt is the task-stable prefix (the context names mostly depend on the
        # prediction, and even the original's screenshot paths lie in the pair's folder)
        stable = static_template(scorer.system_prompt)
        completion = client.complete(
            [Message.system(system, cache_prefix=stable), Message.user(user)],
            temperature=LLM_SCORER_TEMPERATURE,
        )
    except Exception as exc:
        call["error"] = f"{type(exc).__name__}: {exc}"
        exc.rubric_calls = [call]  # type: ignore[attr-defined]
        raise
    call["reply"] = completion.text
    score, reason = parse_llm_score(completion.text)
    return score, reason, [call]


# --------------------------------------------------------------------------- explanations


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def deterministic_reason(score: float, children: Sequence[dict[str, Any]]) -> str:
    """A parent's reason from its scored children (dicts with name, is_critical, score, reason).

    Lists the children that are not fully met with their own reasons, critical ones first.
    """
    met = [c for c in children if c["score"] >= 1.0]
    unmet = sorted(
        (c for c in children if c["score"] < 1.0), key=lambda c: (not c["is_critical"], c["score"])
    )
    head = f"Score {score:.2f}: {len(met)}/{len(children)} sub-criteria fully met."
    if not unmet:
        return head
    parts = [
        f"{c['name']} ({'critical' if c['is_critical'] else 'non-critical'}, {c['score']:.2f}): "
        f"{_short(c.get('reason') or '', 240)}"
        for c in unmet
    ]
    return head + " Not met: " + "; ".join(parts)


def explain_prompt(
    node: dict[str, Any], children: Sequence[dict[str, Any]], strategy: str, lam: float
) -> str:
    """The prompt asking a model to explain a parent's score (the content ai-rubric sends)."""
    if strategy == "default":
        rule = (
            "When a criterion has both critical and non-critical sub-criteria, its score is the mean of the "
            f"critical ones minus {lam} times (1 - the mean of the non-critical ones), floored at 0; "
            "otherwise it is the plain mean."
        )
    else:
        rule = (
            "If any critical sub-criterion scores 0 the criterion scores 0; "
            "if all critical ones score 1 it is the mean of the non-critical ones; "
            "otherwise it is the mean of all sub-criteria."
        )
    lines = [
        f"Criterion: {node['name']}",
        f"Description: {node['description']}",
        f"Overall score: {node['score']:.2f}",
        f"Scoring rule: {rule}",
        "",
        "Sub-criteria:",
    ]
    for c in children:
        flag = "CRITICAL" if c["is_critical"] else "NON-CRITICAL"
        lines.append(
            f"- {c['name']} [{flag}] score {c['score']:.2f}. Description: {_short(c['description'], 400)}. "
            f"Reason: {_short(c.get('reason') or '', MAX_CHILD_REASON_CHARS)}"
        )
    lines += [
        "",
        "Explain in 1 to 5 sentences, in plain language and without quoting numbers, why this criterion "
        "received its score. Reply with the explanation only.",
    ]
    return "\n".join(lines)


def model_reason(
    client: Any, node: dict[str, Any], children: Sequence[dict[str, Any]], strategy: str, lam: float
) -> tuple[str, dict[str, Any]]:
    """``(reason, call_record)`` written by the model; raises when the call fails or returns nothing."""
    from pptarena.models import Message

    prompt = explain_prompt(node, children, strategy, lam)
    completion = client.complete([Message.user(prompt)], temperature=EXPLAIN_TEMPERATURE)
    text = completion.text.strip()
    if not text:
        raise ValueError("the model returned an empty explanation")
    return text, {"kind": "explain", "node": node["node_id"], "prompt": prompt, "reply": text}
