"""PPTC's own code from ../shared/pptc, for tests only: its API executor (to make real base and
label decks the way ``main.py --prepare`` does) and its PPTX-Match check (``calc_acc``).

The modules PPTC imports but these functions never use (the OpenAI client, prompt builders,
tokenisers, tqdm) are replaced by empty stand-ins in ``sys.modules`` while loading.
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path
from typing import Any

from tests.support.paths import SHARED

PPTC = SHARED / "pptc"
SETS = {"short": "Create_new_slides", "long": "Edit_PPT_template"}
_STUBS = (
    "src.content_selection",
    "src.openai_api",
    "src.prompt_factor",
    "mosestokenizer",
    "sacremoses",
    "tiktoken",
    "tqdm",
)


def load() -> tuple[Any, Any]:
    """``(ppt_executor, evaluate)`` modules of PPTC."""
    if "src.evaluate" in sys.modules and getattr(sys.modules["src"], "__file__", "").startswith(str(PPTC)):
        return sys.modules["src.ppt_executor"], sys.modules["src.evaluate"]
    for name in _STUBS:
        module = types.ModuleType(name)
        module.MosesTokenizer = object  # type: ignore[attr-defined]
        module.tqdm = lambda x, *a, **k: x  # type: ignore[attr-defined]
        sys.modules.setdefault(name, module)
    sys.path.insert(0, str(PPTC))
    try:
        executor = importlib.import_module("src.ppt_executor")
        evaluate = importlib.import_module("src.evaluate")
    finally:
        sys.path.remove(str(PPTC))
    executor.PIC_PATH = str(PPTC / "test" / "pics")
    return executor, evaluate


def session_turns(set_name: str, k: int) -> list[dict[str, Any]]:
    """The turns of PPTC's session file ``session_<k>.json``."""
    path = PPTC / "PPT_test_input" / SETS[set_name] / f"session_{k}.json"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def api_calls(sequence: str) -> list[str]:
    """``"a();b(1);"`` → ``["a()", "b(1)"]``, as PPTC's ``dataset.load_data`` splits labels."""
    return [c for c in sequence.strip(";").split(";") if c]


def prepare(set_name: str, k: int, out: Path) -> None:
    """Write session k's base and label decks under ``out`` exactly as ``main.py --prepare`` does."""
    executor, _ = load()
    args = types.SimpleNamespace(dataset=set_name, api_lack=False, api_update=False)
    folder = SETS[set_name]
    (out / "PPT_Base_File" / folder).mkdir(parents=True, exist_ok=True)
    (out / "PPT_Label_File" / folder).mkdir(parents=True, exist_ok=True)
    turns = session_turns(set_name, k)
    labels = [api_calls(t["Feasible API sequence"]) for t in turns]

    def start() -> None:
        if set_name == "long":
            executor.set_ppt(str(PPTC / "long_slides" / f"{k}.pptx"))
            executor.set_current_slide(len(executor.get_ppt().slides) - 1)
        else:
            executor.set_ppt(None)
            executor.create_slide()

    for step in range(len(turns)):
        start()
        executor.API_executor([c for ls in labels[:step] for c in ls], test=False, args=args)
        executor.save_ppt(str(out / "PPT_Base_File" / folder / f"{k}_{step}.pptx"))
        executor.API_executor(labels[step], test=False, args=args)
        executor.save_ppt(str(out / "PPT_Label_File" / folder / f"{k}_{step}.pptx"))


def run_calls(start_deck: Path, calls: list[str], out: Path, set_name: str = "short") -> Path:
    """Apply PPTC API calls to a deck in test mode (positions kept), as PPTC runs a model's reply."""
    executor, _ = load()
    args = types.SimpleNamespace(dataset=set_name, api_lack=False, api_update=False)
    executor.set_ppt(str(start_deck))
    executor.set_current_slide(len(executor.get_ppt().slides) - 1)
    executor.API_executor(calls, test=True, args=args)
    executor.save_ppt(str(out))
    return out


def calc_acc(label: Path, pred: Path, instruction: str) -> tuple[int, int, int]:
    """PPTC's own ``(str_correct, pos_total, pos_correct)``."""
    import contextlib
    import io

    _, evaluate = load()
    with contextlib.redirect_stdout(io.StringIO()):
        return evaluate.calc_acc(str(label), str(pred), instruction, [])


def calc_acc_or_raise(label: Path, pred: Path, instruction: str, extra: list[str] | None = None) -> Any:
    """PPTC's ``calc_acc`` verdict, or ``("raises", <exception class name>)`` where it raises
    (its evaluation loop has no ``try``: a run of PPTC stops there)."""
    import contextlib
    import io

    _, evaluate = load()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return tuple(evaluate.calc_acc(str(label), str(pred), instruction, list(extra or [])))
    except Exception as exc:  # noqa: BLE001 - the verdict is the exception's class
        return ("raises", type(exc).__name__)


class _Tokenizer:
    """Stands in for Moses (PPTC's eval counts prompt tokens with it; the count is not a verdict)."""

    def tokenize(self, text: str) -> list[str]:
        """Whitespace tokens."""
        return text.split()


def session_verdict(user_path: Path, k: int, turns: list[dict[str, str]]) -> Any:
    """PPTC's own ``evaluate.eval`` in ``--sess`` mode on one session of ``Create_new_slides``.

    ``turns``: ``{"instruction", "label", "pred"}`` with deck paths relative to ``user_path`` (they
    are written into ``PPT_test_output`` as PPTC's test mode writes them). Returns the
    ``str_correct`` PPTC prints for the session's final turn, or ``("raises", <class name>)``.
    """
    import contextlib
    import io
    import re

    _, evaluate = load()
    evaluate.MosesTokenizer = _Tokenizer
    out = user_path / "PPT_test_output" / SETS["short"]
    out.mkdir(parents=True, exist_ok=True)
    prompt = user_path / "prompt.txt"
    prompt.write_text("a prompt", encoding="utf-8")
    exp = f"exp{k}-"
    lines = [
        json.dumps(
            {
                "Turn": i,
                "User instruction": t["instruction"],
                "Feasible API sequence": "",
                "Reply": "",
                "Pred API sequence": [],
                "Pred File": t["pred"],
                "Label File": t["label"],
                "Prompt File": "prompt.txt",
            }
        )
        for i, t in enumerate(turns)
    ]
    (out / f"{exp}_session_{k}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = types.SimpleNamespace(
        dataset="short", tf=False, sess=True, user_path=f"{user_path}/", exp_name=exp
    )
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            evaluate.eval(args)
    except Exception as exc:  # noqa: BLE001 - PPTC's evaluation aborts: the verdict is the exception
        return ("raises", type(exc).__name__)
    found = re.findall(r"String correct : (\d)", printed.getvalue())
    assert len(found) == 1, printed.getvalue()[-2000:]
    return int(found[0])
