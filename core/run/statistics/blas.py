"""BLAS threads around the summary's many small matrix products (``threadpoolctl``).

OpenBLAS splits even small products between threads that then wait for each other, which costs
several times the work itself, and much more on a busy machine. :func:`one_blas_thread` runs a block
with one BLAS thread; :func:`default_threads` (inside it) gives back the threads the libraries had,
for a product whose every bit must be what the threaded library gives (the paired test's float32
products, :mod:`pptarena.run.statistics.signflip`). Without ``threadpoolctl`` both do nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.RLock()
_found: list[Any] | None = None
_defaults: list[int] = []  # each library's threads when first seen (before any limit of ours)
_users = 0  # blocks inside one_blas_thread, over all threads


def _libraries() -> list[Any]:
    """The loaded BLAS libraries' controllers (empty without threadpoolctl)."""
    global _found
    with _lock:
        if _found is None:
            try:
                from threadpoolctl import ThreadpoolController

                _found = list(ThreadpoolController().select(user_api="blas").lib_controllers)
                _defaults[:] = [lib.get_num_threads() for lib in _found]
            except Exception:  # noqa: BLE001 - no threadpoolctl, or it cannot read this platform's libraries
                _found = []
        return _found


def available() -> bool:
    """True when the BLAS threads can be set here."""
    return bool(_libraries())


def _set(counts: list[int]) -> None:
    for lib, n in zip(_libraries(), counts, strict=True):
        lib.set_num_threads(n)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (from any number of threads at once: the libraries get
    their own threads back when the last block ends)."""
    global _users
    libs = _libraries()
    with _lock:
        _users += 1
        if _users == 1:
            _set([1] * len(libs))
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _set(_defaults)


@contextmanager
def default_threads() -> Iterator[None]:
    """The block runs with the threads the libraries had before any :func:`one_blas_thread` (one such
    block at a time)."""
    libs = _libraries()
    with _lock:
        _set(_defaults)
        try:
            yield
        finally:
            if _users:
                _set([1] * len(libs))
