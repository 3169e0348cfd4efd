"""Attacks on the harness through files the agent side leaves behind (issue 23, item 1, and "the
harness never follows what the agent side wrote").

After a pair the harness masks secrets in every text file of the pair's folder. An agent that leaves
a link where the redactor writes its temporary file (``.notes.txt.redact``), a link or hard link in
place of a text file holding a secret, or a FIFO, used to make the harness (root) overwrite a host
file (the dataset cache's ``target.pptx``: a forged answer key for every later run) or hang for
ever. Each test performs the attack; each fails on the redactor of commit 9b36a35.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pptarena.trust.redact import redact_file, redact_tree
from tests.support.config import command_agent, demo_dataset, fake_dataset, use, write_run_config
from tests.support.trust_fixtures import SECRET, arena

STUB_KEY_ENV = {"STUB_KEY": {"env": "STUB_KEY"}}  # the agent's key, passed by name (never literally)


def host_file(tmp_path: Path, data: bytes) -> Path:
    """A file outside the pair's folder (a stand-in for a dataset cache file or a user's file)."""
    host = tmp_path / "host"
    host.mkdir(exist_ok=True)
    path = host / "target.pptx"
    path.write_bytes(data)
    return path


def pair_folder(tmp_path: Path) -> Path:
    """A pair's folder as an agent leaves it: a CLI workspace with a transcript holding the secret."""
    cli = tmp_path / "run" / "tasks" / "cli" / "t1" / "cli"
    cli.mkdir(parents=True)
    (cli / "notes.txt").write_bytes(b"the key is " + SECRET.encode() + b"\n")
    return cli.parent


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("STUB_KEY", SECRET)


def test_a_link_at_the_redactors_temporary_name_never_makes_it_write_a_host_file(tmp_path, secret_env):
    before = b"PK\x03\x04 the cached target deck"
    target = host_file(tmp_path, before)
    folder = pair_folder(tmp_path)
    (folder / "cli" / ".notes.txt.redact").symlink_to(target)
    redact_tree(folder)
    assert target.read_bytes() == before
    notes = folder / "cli" / "notes.txt"
    assert not notes.is_symlink() and notes.read_bytes() == b"the key is ***\n"


def test_a_link_in_place_of_a_text_file_is_not_rewritten(tmp_path, secret_env):
    before = b"host notes: " + SECRET.encode()
    target = host_file(tmp_path, before)
    folder = pair_folder(tmp_path)
    (folder / "cli" / "host.txt").symlink_to(target)
    left = redact_tree(folder)
    assert target.read_bytes() == before  # the host file keeps its bytes (and its inode)
    assert (folder / "cli" / "host.txt").is_symlink()
    assert any(item.startswith("cli/host.txt") for item in left)  # reported, not silently skipped


def test_a_link_in_place_of_a_folder_is_not_entered(tmp_path, secret_env):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keys.txt").write_text(SECRET)
    folder = pair_folder(tmp_path)
    (folder / "cli" / "sub").symlink_to(outside, target_is_directory=True)
    redact_tree(folder)
    assert (outside / "keys.txt").read_text() == SECRET


def test_a_hard_link_to_a_host_file_is_replaced_not_written_in_place(tmp_path, secret_env):
    """A hard link shares its inode with the host file: the pair's name gets a new, masked file and
    the host file (its other name) keeps its bytes."""
    before = b"host: " + SECRET.encode()
    target = host_file(tmp_path, before)
    folder = pair_folder(tmp_path)
    linked = folder / "cli" / "linked.txt"
    os.link(target, linked)
    assert os.stat(target).st_nlink == 2
    redact_tree(folder)
    assert target.read_bytes() == before
    assert linked.read_bytes() == b"host: ***"
    assert os.stat(target).st_nlink == 1 and not os.path.samefile(target, linked)


def test_redact_file_with_a_root_refuses_a_link_planted_in_place_of_a_folder(tmp_path, secret_env):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "out.txt").write_text(SECRET)
    folder = pair_folder(tmp_path)
    (folder / "cli" / "output").symlink_to(outside, target_is_directory=True)
    assert redact_file(folder / "cli" / "output" / "out.txt", root=folder) is False
    assert (outside / "out.txt").read_text() == SECRET
    assert redact_file(folder / "cli" / "notes.txt", root=folder) is True


def redact_in_child(folder: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """redact_tree(folder) in a child process (the secret in its environment), killed after ``timeout``
    seconds: an attack that blocks the redactor must not block the test run too."""
    code = f"from pptarena.trust.redact import redact_tree; print(redact_tree({str(folder)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "STUB_KEY": SECRET},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_fifos_at_the_temporary_name_and_in_place_of_a_text_file_never_block(tmp_path):
    folder = pair_folder(tmp_path)
    os.mkfifo(folder / "cli" / ".notes.txt.redact")  # where the old redactor wrote its copy
    os.mkfifo(folder / "cli" / "transcript.txt")  # a text file name: the old redactor skipped it,
    os.mkfifo(folder / "cli" / "log")  # but nothing may ever open one
    try:
        done = redact_in_child(folder)
    except subprocess.TimeoutExpired:
        pytest.fail("the redactor blocked on a FIFO the agent left")
    assert done.returncode == 0, done.stderr
    assert (folder / "cli" / "notes.txt").read_bytes() == b"the key is ***\n"
    assert "transcript.txt" in done.stdout and "log" in done.stdout  # reported as not checked


# ---------------------------------------------------------------- end to end: the forged answer key

FORGER = """
import os, shutil, sys
src, out = sys.argv[1], sys.argv[2]
shutil.copyfile(src, out)  # the agent does nothing to the deck
# the original deck with the key after its last byte (zip readers ignore what follows the directory)
with open("notes.txt", "wb") as fh:
    fh.write(open(src, "rb").read() + os.environ["STUB_KEY"].encode())
os.symlink({target!r}, ".notes.txt.redact")  # where the redactor writes its masked copy
print("planted")
"""


@pytest.mark.slow
def test_a_do_nothing_cli_agent_cannot_forge_the_cached_target_for_its_next_epoch(tmp_path):
    """The attack of issue 23 through `arena run`: epoch 1 plants the link; had the harness written
    through it, the cached target would become the original deck and epoch 2 would score 1.0."""
    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set

    cache = tmp_path / "cache"
    target = ensure_demo_set(cache) / "qbr-fix-typos" / "target.pptx"
    before = target.read_bytes()
    script = tmp_path / "forger.py"
    script.write_text(FORGER.format(target=str(target)))
    write_run_config(
        tmp_path / "c.toml",
        run={"task_timeout": 60, "jobs": 1, "epochs": 2, "cache_dir": str(cache)},
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[command_agent(sys.executable, script, "{input}", "{output}", env=STUB_KEY_ENV)],
        judges=["structural"],
    )
    out = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert target.read_bytes() == before  # the answer key is byte-identical after the run
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    scores = {r["epoch"]: (r["scores"].get("structural") or {}).get("score") for r in lines}
    assert sorted(scores) == [1, 2], lines
    assert scores[1] is not None and scores[1] < 1.0  # the do-nothing deck is not the answer
    assert scores[2] == scores[1]  # and did not become it
    first = tmp_path / "run" / "tasks" / "cli" / "qbr-fix-typos"
    assert "planted" in (first / "cli.stdout.txt").read_text()  # the attack was made
    planted = tmp_path / "run" / "tasks" / "cli" / "qbr-fix-typos" / "cli" / "notes.txt"
    if planted.exists():  # masked in place, through a new file
        assert SECRET.encode() not in planted.read_bytes()


FIFO_LAYER = """
import os, shutil, sys
shutil.copyfile(sys.argv[1], sys.argv[2])
with open("notes.txt", "w") as fh:
    fh.write("key: " + os.environ["STUB_KEY"])
os.mkfifo(".notes.txt.redact")  # the old redactor opened its temporary file here, for writing: for ever
os.mkfifo("transcript.txt")
print("planted")
"""


def test_fifos_left_by_a_cli_agent_do_not_block_the_run(tmp_path):
    script = tmp_path / "fifos.py"
    script.write_text(FIFO_LAYER)
    write_run_config(
        tmp_path / "c.toml",
        run={"task_timeout": 30, "jobs": 1},
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[command_agent(sys.executable, script, "{input}", "{output}", env=STUB_KEY_ENV)],
        judges=["structural"],
    )
    try:  # a run of one pair with task_timeout = 30 that takes 2 minutes is blocked
        out = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the run blocked on a FIFO the agent left in its folder")
    assert out.returncode == 0, out.stderr[-2000:]
    [line] = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["status"] == "scored", line
    folder = tmp_path / "run" / "tasks" / "cli" / "qbr-fix-typos"
    assert "planted" in (folder / "cli.stdout.txt").read_text()  # the FIFOs were made
    assert (folder / "cli" / "notes.txt").read_text() == "key: ***"


def test_the_harness_json_writes_never_go_through_a_link_at_their_temporary_name(tmp_path):
    """verdicts.json is written into the pair's folder after the agent ran, via a temporary file
    whose name used to be predictable (``.verdicts.json.<pid>.tmp``)."""
    from pptarena.run.folder.results import write_json_atomic

    before = b"PK\x03\x04 the cached target deck"
    target = host_file(tmp_path, before)
    folder = pair_folder(tmp_path)
    (folder / f".verdicts.json.{os.getpid()}.tmp").symlink_to(target)
    (folder / "verdicts.json").symlink_to(target)
    write_json_atomic(folder / "verdicts.json", {"status": "scored"})
    assert target.read_bytes() == before
    assert json.loads((folder / "verdicts.json").read_text()) == {"status": "scored"}
    assert not (folder / "verdicts.json").is_symlink()


LINKER = """
import os
from pathlib import Path

import pptarena
from pptarena.types import Component, Options, Prediction


class Linker(Component):
    '''Hands in a link to the answer key as its prediction.'''

    in_process = True  # the pre-trust-boundary way to run in the harness's process

    class Options(Options):
        answers: Path

    def edit(self, task, workspace):
        n = int(task.id.rsplit("-", 1)[1])
        os.symlink(self.options.answers / f"t{n}" / "target.pptx", workspace.output_deck)
        return Prediction(path=workspace.output_deck)


@pptarena.hookimpl
def register_agents(register):
    register("linker", Linker)
"""


@pytest.mark.parametrize("trusted", ["trusted = true\n", ""])
def test_a_prediction_that_links_to_the_answer_key_is_not_judged(
    tmp_path, fake_plugins, monkeypatch, trusted
):
    """In the harness's process (trusted) the link reaches the runner, which refuses it; jailed, it
    never leaves the jail (the workspace is copied out regular files only)."""
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry, reset_registry
    from pptarena.run.runner import Runner

    (tmp_path / "linkplugin.py").write_text(LINKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins,linkplugin")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    reset_registry()
    data = tmp_path / "data"
    linker = use("linker", **({"trusted": True} if trusted else {}), answers=str(data))
    write_run_config(
        tmp_path / "c.toml", dataset=fake_dataset(1, root=str(data)), agents=[linker], judges=["title"]
    )
    config = load_config(tmp_path / "c.toml", get_registry())
    Runner(config, get_registry(), tmp_path / "out", quiet=True, allow_weak_isolation=True).run()
    [line] = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    row = json.loads(line)
    assert row["status"] == "agent_error" and row["scores"] == {}, row
    if trusted:
        assert "symbolic link" in row["error"]


class WritingRenderer:
    """A renderer that writes a PNG into the folder it is given."""

    def render(self, deck, out_dir):
        from pptarena.types import SlideImage

        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "slide-001.png").write_bytes(b"\x89PNG")
        return [SlideImage(1, None, Path(out_dir) / "slide-001.png", 1, 1)]


def test_judges_never_write_into_a_folder_the_agent_linked_elsewhere(tmp_path):
    """The judges' evidence goes to ``judges/<label>/`` and ``renders/<role>/`` of the pair's folder,
    which the agent wrote first: links planted there point at a host folder."""
    from pptarena.evidence import Evidence
    from pptarena.trust.safeio import UnsafeFileError
    from pptarena.types import Prediction, Task

    host = tmp_path / "host"
    host.mkdir()
    folder = pair_folder(tmp_path)
    (folder / "prediction.pptx").write_bytes(b"deck")
    (folder / "renders").symlink_to(host, target_is_directory=True)
    (folder / "judges").symlink_to(host, target_is_directory=True)
    task = Task(id="t1", instruction="x", original=folder / "prediction.pptx")
    ev = Evidence(task, Prediction(path=folder / "prediction.pptx"), folder, renderer=WritingRenderer())
    with pytest.raises(UnsafeFileError):
        ev.renders("prediction")
    with pytest.raises(UnsafeFileError):
        ev.write_json("rubric", "leaves.json", {"a": 1})
    assert os.listdir(host) == []
    for name in ("renders", "judges"):
        (folder / name).unlink()
    assert ev.write_json("rubric", "leaves.json", {"a": 1}).read_text() == '{\n  "a": 1\n}'
    assert [
        img.number
        for img in Evidence(
            task, Prediction(path=folder / "prediction.pptx"), folder, renderer=WritingRenderer()
        ).renders("prediction")
    ] == [1]


def test_a_vanished_workers_stderr_replaced_by_a_link_is_not_quoted(tmp_path):
    """The error of a worker that died quotes the tail of its stderr file, which the agent can swap
    for a link to any host file before it dies."""
    from pptarena.run.worker import vanished_outcome

    target = host_file(tmp_path, b"host-only line 0451\n")
    folder = pair_folder(tmp_path)
    (folder / "agent.stderr.txt").symlink_to(target)
    assert "0451" not in (vanished_outcome(1, folder / "agent.stderr.txt").error or "")
    (folder / "agent.stderr.txt").unlink()
    (folder / "agent.stderr.txt").write_bytes(b"x" * 10_000 + b"Traceback: boom\n")
    error = vanished_outcome(1, folder / "agent.stderr.txt").error or ""
    assert error.endswith("Traceback: boom\n") and len(error) < 2200


def test_packing_a_task_folder_drops_links_and_specials_and_refuses_a_giant_before_reading(tmp_path):
    """Packing a pair's folder for a remote executor (Ray) walks what the agent wrote: links are
    dropped, not followed; a FIFO never blocks; a 2 GiB sparse file is refused from its size."""
    from pptarena.run.executors import ExecutorError, pack_task_folder, unpack_task_folder

    target = host_file(tmp_path, b"host bytes")
    folder = pair_folder(tmp_path)
    (folder / "cli" / "sub").mkdir()
    (folder / "cli" / "sub" / "a.py").write_text("print(1)\n")
    (folder / "cli" / "to-host.txt").symlink_to(target)
    (folder / "cli" / "dir-link").symlink_to(target.parent, target_is_directory=True)
    os.mkfifo(folder / "cli" / "pipe")
    out = tmp_path / "unpacked"
    unpack_task_folder(pack_task_folder(folder), out)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "cli",
        "cli/notes.txt",
        "cli/sub",
        "cli/sub/a.py",
    ]
    assert (out / "cli" / "sub" / "a.py").read_text() == "print(1)\n"
    with open(folder / "cli" / "sparse.bin", "wb") as fh:
        fh.truncate(3 * 1024**3)
    with pytest.raises(ExecutorError, match="bytes, over"):
        pack_task_folder(folder)


REFERENCE_FORGER = """
import shutil

import pptarena
from pptarena.types import Component, Prediction


class ReferenceForger(Component):
    '''Hands in the input deck unchanged and leaves it as the judges' "re-saved target" too.'''

    in_process = True

    def edit(self, task, workspace):
        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        refs = workspace.dir / "references"
        refs.mkdir()
        shutil.copyfile(workspace.input_deck, refs / "target.pptx")
        shutil.copyfile(workspace.input_deck, refs / "original.pptx")
        return Prediction(path=workspace.output_deck)


@pptarena.hookimpl
def register_agents(register):
    register("refforger", ReferenceForger)
"""


def test_reference_decks_left_in_the_pair_folder_are_not_taken_as_the_target(tmp_path, monkeypatch):
    """Judges compare with the re-saved references in ``references/`` of the pair's folder; only the
    harness may put them there. Any code that can write the pair's folder (an agent in the harness's
    process, a tool a built-in agent runs on the host) could leave its own deck as the target."""
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry, reset_registry
    from pptarena.run.runner import Runner

    (tmp_path / "refplugin.py").write_text(REFERENCE_FORGER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PPTARENA_PLUGINS", "refplugin")
    reset_registry()
    write_run_config(
        tmp_path / "c.toml",
        run={"cache_dir": str(tmp_path / "cache")},
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[use("refforger", trusted=True)],
        judges=["structural"],
    )
    try:
        config = load_config(tmp_path / "c.toml", get_registry())
        Runner(config, get_registry(), tmp_path / "out", quiet=True).run()
    finally:
        reset_registry()
    [line] = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    row = json.loads(line)
    # the judge saw the task's real target (its edits), not the agent's deck posing as the target
    metrics = row["scores"]["structural"]["metrics"]
    assert row["status"] == "scored" and metrics["target_edits"] > 0, row
