"""Bad data caught up front (issue 33, item 3): every reference deck of a task opens (and renders).

A broken original, target or style deck is reported with its task, role and path; the deck engine's
verdict is cached by file content; the run's skip reasons and the judge-time check label the
problem as the dataset's.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from pptx import Presentation

from pptarena.deck import DeckError
from pptarena.run.configuration import datacheck
from pptarena.run.configuration.datacheck import (
    DeckProblem,
    check_tasks,
    deck_open_problem,
    reference_failure,
    reference_files,
    render_roles,
    run_renders,
    skip_reasons,
)
from pptarena.types import InfraError, Task


def make_deck(path: Path, title: str = "Hello") -> Path:
    """A one-slide deck titled ``title``."""
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = title
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))
    return path


def make_task(tmp_path: Path, name: str, *, style: str | None = None) -> Task:
    """A task with a good original and target of its own."""
    return Task(
        id=name,
        instruction="Retitle",
        original=make_deck(tmp_path / name / "original.pptx", f"Old {name}"),
        target=make_deck(tmp_path / name / "target.pptx", f"New {name}"),
        style_target=style,
    )


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def engine_calls(monkeypatch) -> list[Path]:
    """Every deck the deck engine is asked to open during the test."""
    calls: list[Path] = []
    real = datacheck._open_deck

    def counting(path: Path) -> None:
        calls.append(Path(path))
        real(path)

    monkeypatch.setattr(datacheck, "_open_deck", counting)
    return calls


def test_a_good_set_passes(tmp_path, cache):
    tasks = [make_task(tmp_path, f"t{i}") for i in range(3)]
    report = check_tasks(tasks, render=False, cache_dir=cache)
    assert report.ok and report.problems == [] and report.tasks == 3 and report.files == 6
    assert "no problem found" in report.summary_line()
    assert skip_reasons(report) == {}


@pytest.mark.slow
def test_the_demo_set_passes(cache):
    from pptarena.run.configuration.config import default_cache_dir
    from pptarena.run.configuration.registry import get_registry

    registry = get_registry()
    spec = registry.get("datasets", "demo")
    dataset = spec.factory(spec.options_model.model_validate({}), _context(default_cache_dir()))
    tasks = list(dataset.tasks())
    assert len(tasks) == 12
    report = check_tasks(tasks, render=False, cache_dir=cache)
    assert report.ok, [p.line() for p in report.problems]
    assert report.files == 3 + 12  # three shared originals, one target per task


def _context(cache_dir: Path):
    from pptarena.types import ComponentContext

    def no_model(ref):  # pragma: no cover - the demo dataset calls no model
        raise AssertionError(ref)

    return ComponentContext(cache_dir=cache_dir, model=no_model, name="demo", label="demo")


def test_a_corrupt_target_is_the_targets_problem(tmp_path, cache):
    good, bad = make_task(tmp_path, "good"), make_task(tmp_path, "bad")
    bad.target.write_bytes(b"this is not a deck at all")
    report = check_tasks([good, bad], render=False, cache_dir=cache)
    assert not report.ok and report.bad_tasks() == ["bad"]
    (problem,) = report.problems
    assert (problem.task_id, problem.role, problem.path, problem.stage) == (
        "bad",
        "target",
        str(bad.target),
        "open",
    )
    assert "\n" not in problem.message and "not a zip" in problem.message
    assert problem.reason().startswith(f"dataset error: target deck {bad.target} does not open: ")
    assert skip_reasons(report) == {"bad": problem.reason()}


def test_a_corrupt_original_shared_by_two_tasks_is_reported_for_each(tmp_path, cache, engine_calls):
    shared = make_deck(tmp_path / "_decks" / "shared.pptx")
    tasks = [
        Task(id=f"t{i}", instruction="x", original=shared, target=make_deck(tmp_path / f"t{i}.pptx"))
        for i in range(2)
    ]
    data = shared.read_bytes()
    shared.write_bytes(data[: len(data) // 2])  # truncated: the central directory is gone
    report = check_tasks(tasks, render=False, cache_dir=cache)
    assert [(p.task_id, p.role) for p in report.problems] == [("t0", "original"), ("t1", "original")]
    assert engine_calls.count(shared) == 1  # a file shared by tasks is opened once


def test_a_missing_file_is_reported_without_opening_anything(tmp_path, cache, engine_calls):
    task = make_task(tmp_path, "t")
    task.target.unlink()
    (problem,) = check_tasks([task], render=False, cache_dir=cache).problems
    assert (problem.role, problem.stage) == ("target", "missing")
    assert problem.reason() == f"dataset error: target deck {task.target} is missing: no such file"
    assert task.target not in engine_calls


def test_a_zip_that_is_not_a_pptx(tmp_path, cache):
    task = make_task(tmp_path, "t")
    with zipfile.ZipFile(task.target, "w") as zf:
        zf.writestr("readme.txt", "hello")
    found = deck_open_problem(task.target, cache_dir=cache)
    assert found is not None and found[0] == "open" and "target.pptx" in found[1]


def test_a_zip_bomb_is_a_clear_error_not_a_hang(tmp_path, cache):
    """A member that inflates far beyond the engine's ratio limit is refused before it is read."""
    task = make_task(tmp_path, "t")
    buf = io.BytesIO()
    with zipfile.ZipFile(task.original) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr("ppt/media/image99.png", b"\0" * (16 << 20))  # 16 MiB of zeros: ~1000:1
    task.original.write_bytes(buf.getvalue())
    (problem,) = check_tasks([task], render=False, cache_dir=cache).problems
    assert problem.role == "original" and problem.stage == "open"
    assert "image99.png" in problem.message or "ratio" in problem.message.lower()


def test_a_truncated_real_deck_from_the_corpus(tmp_path, cache, corpus_dir):
    decks = sorted(p for p in corpus_dir.glob("*.pptx") if p.stat().st_size > 20_000)
    if not decks:
        pytest.skip("no corpus deck over 20 kB")
    data = decks[0].read_bytes()
    whole = tmp_path / "whole.pptx"
    whole.write_bytes(data)
    cut = tmp_path / "cut.pptx"
    cut.write_bytes(data[: int(len(data) * 0.7)])
    task = Task(id="corpus", instruction="x", original=whole, target=cut)
    report = check_tasks([task], render=False, cache_dir=cache)
    assert [(p.role, p.stage) for p in report.problems] == [("target", "open")], report.problems


def test_a_style_target_that_is_a_deck_path_is_checked(tmp_path, cache):
    task = make_task(tmp_path, "t", style="style.pptx")  # relative: beside the original
    assert ("style", tmp_path / "t" / "style.pptx") in reference_files(task)
    (problem,) = check_tasks([task], render=False, cache_dir=cache).problems
    assert (problem.role, problem.stage) == ("style", "missing")
    make_deck(tmp_path / "t" / "style.pptx")
    assert check_tasks([task], render=False, cache_dir=cache).ok
    prose = make_task(tmp_path, "p", style="Every title is dark blue.\nNothing else changes.")
    assert [role for role, _ in reference_files(prose)] == ["original", "target"]


def test_each_turn_target_of_a_session_is_checked(tmp_path, cache):
    task = make_task(tmp_path, "s")
    task.metadata["turns"] = [
        {"instruction": "a", "target": str(task.target)},
        {"instruction": "b", "target": str(tmp_path / "gone.pptx")},
    ]
    (problem,) = check_tasks([task], render=False, cache_dir=cache).problems
    assert problem.role == "target (turn 2)" and problem.stage == "missing"


def test_the_cache_makes_a_second_check_skip_the_engine(tmp_path, cache, engine_calls):
    tasks = [make_task(tmp_path, f"t{i}") for i in range(3)]
    tasks[1].target.write_bytes(b"garbage")
    first = check_tasks(tasks, render=False, cache_dir=cache)
    assert len(engine_calls) == 6 and first.opened == 6 and first.cache_hits == 0
    second = check_tasks(tasks, render=False, cache_dir=cache)
    assert len(engine_calls) == 6, "the second check opened decks again"
    assert second.cache_hits == 6 and second.opened == 0
    assert second.problems == first.problems  # a cached failure is still reported


def test_the_cache_is_keyed_by_content_not_path(tmp_path, cache, engine_calls):
    task = make_task(tmp_path, "t")
    assert check_tasks([task], render=False, cache_dir=cache).ok
    task.target.write_bytes(b"broken since the last check")
    report = check_tasks([task], render=False, cache_dir=cache)
    assert [p.role for p in report.problems] == ["target"]
    assert engine_calls.count(task.target) == 2


def test_identical_decks_at_two_paths_are_opened_once(tmp_path, cache, engine_calls):
    one = make_deck(tmp_path / "a" / "deck.pptx", "Same")
    two = tmp_path / "b" / "deck.pptx"
    two.parent.mkdir()
    two.write_bytes(one.read_bytes())
    report = check_tasks(
        [Task(id="t", instruction="x", original=one, target=two)], cache_dir=cache, render=False
    )
    assert report.ok and engine_calls == [one] and report.cache_hits == 1


def test_without_a_cache_folder_every_check_opens_the_decks(tmp_path, engine_calls):
    task = make_task(tmp_path, "t")
    check_tasks([task], render=False)
    check_tasks([task], render=False)
    assert len(engine_calls) == 4


def test_an_os_error_is_not_cached(tmp_path, cache, monkeypatch):
    task = make_task(tmp_path, "t")

    def flaky(path):
        raise OSError("disk hiccup")

    monkeypatch.setattr(datacheck, "_open_deck", flaky)
    assert not check_tasks([task], render=False, cache_dir=cache).ok
    monkeypatch.undo()
    assert check_tasks([task], render=False, cache_dir=cache).ok


class FakeRenderer:
    """Renders every deck but ``refuse`` (which fails with ``error``); records what it was asked."""

    def __init__(self, refuse: Path | None = None, error: Exception | None = None):
        self.refuse, self.error, self.calls = refuse, error, []

    def render(self, deck_path: Path, out_dir: Path):
        self.calls.append(Path(deck_path))
        if Path(deck_path) == self.refuse:
            raise self.error  # type: ignore[misc]
        out_dir.mkdir(parents=True, exist_ok=True)
        return [object()]


@pytest.mark.parametrize("error", [InfraError("soffice crashed on it"), DeckError("x.pptx: too deep")])
def test_a_deck_that_does_not_render_is_reported(tmp_path, cache, error):
    good, bad = make_task(tmp_path, "good"), make_task(tmp_path, "bad")
    renderer = FakeRenderer(refuse=bad.target, error=error)
    steps = []
    report = check_tasks(
        [good, bad],
        render=True,
        renderer=renderer,
        cache_dir=cache,
        progress=lambda done, total, what: steps.append((done, total)),
    )
    assert report.rendered and report.renders == len(renderer.calls) == 4
    (problem,) = report.problems
    assert (problem.task_id, problem.role, problem.stage) == ("bad", "target", "render")
    assert problem.reason().startswith(f"dataset error: target deck {bad.target} does not render: ")
    assert steps[-1] == (8, 8) and [d for d, _ in steps] == list(range(1, 9))


def test_a_renderer_failing_on_every_deck_is_the_tools_error_not_the_datas(tmp_path, cache):
    class Broken:
        def render(self, deck_path, out_dir):
            raise InfraError("soffice is not working")

    tasks = [make_task(tmp_path, "a"), make_task(tmp_path, "b")]
    with pytest.raises(datacheck.DataCheckError, match="failed on every one of the 4 decks"):
        check_tasks(tasks, render=True, renderer=Broken(), cache_dir=cache)


def test_decks_the_engine_refuses_at_render_time_are_the_datas_even_when_all_fail(tmp_path, cache):
    class Refusing:
        def render(self, deck_path, out_dir):
            raise DeckError(f"{Path(deck_path).name}: groups nested too deep")

    report = check_tasks([make_task(tmp_path, "a")], render=True, renderer=Refusing(), cache_dir=cache)
    assert [(p.role, p.stage) for p in report.problems] == [("original", "render"), ("target", "render")]


def test_a_deck_that_does_not_open_is_not_rendered(tmp_path, cache):
    task = make_task(tmp_path, "t")
    task.target.write_bytes(b"garbage")
    renderer = FakeRenderer()
    report = check_tasks([task], render=True, renderer=renderer, cache_dir=cache)
    assert renderer.calls == [task.original]
    assert [p.stage for p in report.problems] == ["open"]


def test_only_the_roles_asked_for_are_rendered(tmp_path, cache):
    tasks = [make_task(tmp_path, "a"), make_task(tmp_path, "b")]
    renderer = FakeRenderer()
    report = check_tasks(tasks, render={"target"}, renderer=renderer, cache_dir=cache)
    assert renderer.calls == [tasks[0].target, tasks[1].target]
    assert report.summary_line() == "2 task(s), 4 file(s) opened, 2 rendered: no problem found"
    renderer = FakeRenderer()
    report = check_tasks(tasks, render=(), renderer=renderer, cache_dir=cache)
    assert renderer.calls == [] and not report.rendered


def test_rendering_without_a_renderer_is_the_checks_error(tmp_path):
    with pytest.raises(datacheck.DataCheckError):
        check_tasks([make_task(tmp_path, "t")], render=True)


def test_skip_reasons_name_the_first_problem_and_count_the_rest(tmp_path, cache):
    task = make_task(tmp_path, "t")
    task.original.write_bytes(b"x")
    task.target.unlink()
    reasons = skip_reasons(check_tasks([task], render=False, cache_dir=cache))
    assert list(reasons) == ["t"]
    assert reasons["t"].startswith(f"dataset error: original deck {task.original} does not open: ")
    assert reasons["t"].endswith("(+ 1 more problem(s))")


def test_reference_failure_labels_a_broken_target_at_judge_time(tmp_path, cache):
    task = make_task(tmp_path, "t")
    assert reference_failure(task, cache_dir=cache) is None
    task.target.write_bytes(b"garbage")
    reason = reference_failure(task, cache_dir=cache)
    assert reason is not None and reason.startswith(f"dataset error: target deck {task.target} does not open")
    assert datacheck.is_dataset_error(reason) and not datacheck.is_dataset_error("judge x: boom")
    assert reference_failure(task, cache_dir=cache, roles=("original",)) is None


def test_a_problem_serialises_with_its_reason():
    problem = DeckProblem("t", "target", "/d/t.pptx", "open", "t.pptx: not a zip package")
    data = problem.to_json()
    assert data["reason"] == "dataset error: target deck /d/t.pptx does not open: t.pptx: not a zip package"
    assert problem.line() == "t: " + data["reason"]


def test_render_roles_follow_the_judges(tmp_path):
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from tests.support.config import run_toml, write_run_config

    registry = get_registry()

    def config(*judges):
        toml = run_toml(dataset={"use": "demo"}, agents=["noop"], judges=list(judges))
        return load_config(write_run_config(tmp_path / "c.toml", toml), registry, require_secrets=False)

    assert render_roles(config("structural")) == frozenset() and run_renders(config("structural")) is False
    assert render_roles(config("structural", "rubric")) == {"original"}
    assert run_renders(config("structural", "rubric")) is True


def test_a_judge_class_declares_what_it_renders():
    from types import SimpleNamespace

    def judge(use, **attrs):
        return SimpleNamespace(use=use, spec=SimpleNamespace(factory=type("J", (), attrs)))

    def roles(*judges):
        return render_roles(SimpleNamespace(judges=list(judges)))  # type: ignore[arg-type]

    assert roles(judge("dual")) == {"original", "target"}
    assert roles(judge("mine", uses_renders=True)) == {"original", "target", "style"}
    assert roles(judge("mine", uses_renders=("target",)), judge("rubric")) == {"original", "target"}
    assert roles(judge("rubric", uses_renders=False), judge("mine")) == frozenset()
