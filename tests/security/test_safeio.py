"""The safe-file layer (pptarena.trust.safeio) against what an agent can leave in a folder: links (to files
and in place of folders), hard links, FIFOs, sockets, devices, sparse giants, deep trees."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pptarena.trust.safeio import (
    UnsafeFileError,
    copy_regular,
    copy_tree,
    ensure_dir,
    read_regular,
    rewrite_regular,
    walk_tree,
    write_replacing,
)


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A file outside the agent's folder that nothing may read or change through it."""
    path = tmp_path / "host" / "secret.txt"
    path.parent.mkdir()
    path.write_bytes(b"host secret")
    return path


@pytest.fixture
def agent_dir(tmp_path: Path, host: Path) -> Path:
    """A folder as a hostile agent leaves it."""
    root = tmp_path / "pair"
    (root / "cli" / "output").mkdir(parents=True)
    (root / "cli" / "output" / "deck.pptx").write_bytes(b"deck bytes")
    (root / "cli" / "notes.txt").write_text("notes")
    (root / "cli" / "to-host.txt").symlink_to(host)
    (root / "cli" / "to-folder").symlink_to(host.parent, target_is_directory=True)
    os.mkfifo(root / "cli" / "pipe.txt")
    os.link(host, root / "cli" / "hard.txt")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "cli" / "sock"))
    sock.close()
    return root


def test_read_below_a_root_refuses_a_link_in_place_of_any_folder(agent_dir, host):
    root = agent_dir
    assert read_regular(root / "cli" / "output" / "deck.pptx", 100, root=root) == b"deck bytes"
    # cli/to-folder -> the host's folder: without a root only the last component was checked
    assert read_regular(root / "cli" / "to-folder" / "secret.txt", 100) == b"host secret"
    with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
        read_regular(root / "cli" / "to-folder" / "secret.txt", 100, root=root)
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        read_regular(root / "cli" / "to-host.txt", 100, root=root)
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_regular(root / "cli" / "pipe.txt", 100, root=root)  # at once: never blocks
    with pytest.raises(UnsafeFileError, match="not inside"):
        read_regular(host, 100, root=root)
    with pytest.raises(UnsafeFileError, match="over the 3-byte limit"):
        read_regular(root / "cli" / "notes.txt", 3, root=root)


def test_devices_are_refused(tmp_path):
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_regular("/dev/zero", 100, root="/dev")


def test_rewrite_and_write_replace_the_name_never_the_linked_file(agent_dir, host):
    cli = agent_dir / "cli"
    # a hard link: the pair's name gets a new file, the host keeps its bytes
    assert rewrite_regular(cli / "hard.txt", lambda b: b.upper(), 100, root=agent_dir)
    assert (cli / "hard.txt").read_bytes() == b"HOST SECRET" and host.read_bytes() == b"host secret"
    # a symbolic link is refused for rewriting, and replaced (not followed) by a write
    with pytest.raises(UnsafeFileError):
        rewrite_regular(cli / "to-host.txt", lambda b: b"x", 100, root=agent_dir)
    write_replacing(cli / "to-host.txt", b"mine", root=agent_dir)
    assert not (cli / "to-host.txt").is_symlink() and (cli / "to-host.txt").read_bytes() == b"mine"
    assert host.read_bytes() == b"host secret"
    assert not rewrite_regular(cli / "notes.txt", lambda b: b, 100)  # unchanged: not rewritten
    assert sorted(p.name for p in cli.iterdir() if p.name.endswith(".part")) == []  # no temp left


def test_copy_regular_replaces_a_link_at_the_destination(tmp_path, host):
    src = tmp_path / "a.bin"
    src.write_bytes(b"new")
    dst = tmp_path / "dst.bin"
    dst.symlink_to(host)
    assert copy_regular(src, dst, 10) == 3
    assert dst.read_bytes() == b"new" and not dst.is_symlink() and host.read_bytes() == b"host secret"
    with pytest.raises(UnsafeFileError):
        copy_regular(src, dst, 2)
    assert dst.read_bytes() == b"new"  # a refused copy leaves the destination as it was


def test_walk_never_enters_a_linked_folder_and_names_every_kind(agent_dir):
    kinds = {e.rel: e.kind for e in walk_tree(agent_dir)}
    assert kinds == {
        "cli": "dir",
        "cli/hard.txt": "file",
        "cli/notes.txt": "file",
        "cli/output": "dir",
        "cli/output/deck.pptx": "file",
        "cli/pipe.txt": "special",
        "cli/sock": "special",
        "cli/to-folder": "link",
        "cli/to-host.txt": "link",
    }


def test_walk_caps_depth_and_count(tmp_path):
    deep = tmp_path / "t"
    path = deep
    for _ in range(6):
        path = path / "d"
    path.mkdir(parents=True)
    entries = list(walk_tree(deep, max_depth=3))
    assert [e.rel for e in entries if e.kind == "skipped"] == ["d/d/d/d"]
    with pytest.raises(UnsafeFileError, match="more than 2"):
        list(walk_tree(deep, max_entries=2))


def test_copy_tree_copies_regular_files_only_and_reports_the_rest(agent_dir, tmp_path, host):
    out = tmp_path / "copy"
    done = copy_tree(agent_dir / "cli", out)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "hard.txt",
        "notes.txt",
        "output",
        "output/deck.pptx",
    ]
    assert done.files == 3 and done.bytes == len(b"deck bytes") + len(b"notes") + len(b"host secret")
    assert dict(done.skipped) == {
        "pipe.txt": "not a regular file",
        "sock": "not a regular file",
        "to-folder": "a symbolic link",
        "to-host.txt": "a symbolic link",
    }
    assert not os.path.samefile(out / "hard.txt", host)  # a copy, not a link


def test_copy_tree_caps_files_and_bytes_before_reading(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "a-sparse.bin", "wb") as fh:  # 2 GiB that take no disk: refused from its size
        fh.truncate(2 * 1024**3)
    for i in range(5):
        (src / f"f{i}.txt").write_text("x" * 10)
    done = copy_tree(src, tmp_path / "out", max_files=3, max_bytes=1024**2)
    assert done.files == 3 and done.bytes == 30
    reasons = dict(done.skipped)
    assert "over the size limit" in reasons["a-sparse.bin"]
    assert reasons["f3.txt"] == reasons["f4.txt"] == "over the 3-file limit"


def test_copy_tree_never_writes_through_a_link_already_in_the_destination(tmp_path, host):
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.txt").write_text("agent")
    (src / "sub").mkdir()
    (src / "sub" / "y.txt").write_text("agent")
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "x.txt").symlink_to(host)
    (dst / "sub").symlink_to(host.parent, target_is_directory=True)
    done = copy_tree(src, dst)
    assert host.read_bytes() == b"host secret" and sorted(os.listdir(host.parent)) == ["secret.txt"]
    assert (dst / "x.txt").read_text() == "agent"
    assert [rel for rel, _ in done.skipped] == ["sub"]  # the linked folder is not entered


def test_ensure_dir_refuses_a_planted_link(tmp_path, host):
    root = tmp_path / "pair"
    root.mkdir()
    assert ensure_dir(root / "renders" / "prediction", root).is_dir()
    (root / "evil").symlink_to(host.parent, target_is_directory=True)
    with pytest.raises(UnsafeFileError):
        ensure_dir(root / "evil" / "x", root)
    assert not (host.parent / "x").exists()


# ---------------------------------------------------------------- a folder held open (open_folder)


def test_a_held_folder_refuses_a_link_to_a_file_or_in_place_of_a_folder(agent_dir, host):
    from pptarena.trust.safeio import open_folder

    with open_folder(agent_dir / "cli", root=agent_dir) as cli:
        assert cli.read("notes.txt", 100) == b"notes"
        assert cli.read("output/deck.pptx", 100) == b"deck bytes"
        with pytest.raises(UnsafeFileError, match="symbolic link"):
            cli.read("to-host.txt", 100)
        with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
            cli.read("to-folder/secret.txt", 100)
        with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
            cli.folder("to-folder")
        assert cli.lstat("to-host.txt").st_ino != host.stat().st_ino  # the link itself, not its target
        with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
            cli.lstat("to-folder/secret.txt")
    with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
        open_folder(agent_dir / "cli" / "to-folder", root=agent_dir)  # the link itself, held open


def test_a_held_folder_refuses_a_fifo_at_once_and_files_over_the_cap(agent_dir):
    from pptarena.trust.safeio import open_folder

    with open(agent_dir / "cli" / "sparse.bin", "wb") as fh:
        fh.truncate(2 * 1024**3)  # 2 GiB, costs nothing: refused before a byte is read
    with open_folder(agent_dir / "cli", root=agent_dir) as cli:
        with pytest.raises(UnsafeFileError, match="not a regular file"):
            cli.read("pipe.txt", 100)  # at once: never blocks on the FIFO
        with pytest.raises(OSError, match="No such device"):
            cli.open("sock")  # a socket cannot even be opened (ENXIO)
        with pytest.raises(UnsafeFileError, match="over the 1024-byte limit"):
            cli.read("sparse.bin", 1024)
        with pytest.raises(UnsafeFileError, match="not a regular file"):
            cli.open("output")  # a folder is not a file either
        with pytest.raises(FileNotFoundError):
            cli.read("absent.txt", 100)


def test_a_held_folder_never_leaves_itself(agent_dir):
    from pptarena.trust.safeio import open_folder

    with open_folder(agent_dir / "cli", root=agent_dir) as cli:
        for rel in ("../cli/notes.txt", "/etc/passwd", "output/../../x", "", "."):
            with pytest.raises(UnsafeFileError, match="not a path below"):
                cli.open(rel)
    with pytest.raises(UnsafeFileError, match="is not inside"):
        open_folder(agent_dir.parent / "host", root=agent_dir)


def test_a_folder_swapped_for_a_link_after_it_was_held_is_still_the_folder_opened(tmp_path, host):
    from pptarena.trust.safeio import open_folder

    root = tmp_path / "run"
    (root / "tasks" / "pair").mkdir(parents=True)
    (root / "tasks" / "pair" / "log.txt").write_text("own log")
    (host.parent / "log.txt").write_text("host log")
    with open_folder(root / "tasks" / "pair", root=root) as pair:
        # the agent side swaps its folder for a link to the host's between listing and reading
        os.rename(root / "tasks" / "pair", root / "tasks" / "moved")
        (root / "tasks" / "pair").symlink_to(host.parent, target_is_directory=True)
        assert pair.read("log.txt", 100) == b"own log"  # the folder opened, never the link's target
        assert pair.names() == ["log.txt"]
    with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
        open_folder(root / "tasks" / "pair", root=root)  # opened after the swap: refused
    (root / "tasks" / "pair").unlink()
    (root / "tasks").rename(root / "tasks-away")
    (root / "tasks").symlink_to(root / "tasks-away", target_is_directory=True)
    with pytest.raises(UnsafeFileError, match="symbolic link or not a folder"):
        open_folder(root / "tasks" / "moved", root=root)  # a link on the way, not only at the end


def test_a_held_folder_is_closed_by_its_block_even_on_error(agent_dir):
    from pptarena.trust.safeio import open_folder

    with pytest.raises(UnsafeFileError):
        with open_folder(agent_dir / "cli", root=agent_dir) as cli:
            fd = cli.fd
            cli.read("to-host.txt", 100)
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    assert cli.fd == -1
    with pytest.raises(ValueError, match="closed"):
        cli.open("notes.txt")
