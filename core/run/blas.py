"""BLAS threads around the summary's many small matrix products (``threadpoolctl``).

OpenBLAS splits even small products between threads that then wait for each other, which costs
several times the work itself, and much more on a busy machine. :func:`one_blas_thread` runs a block
with one BLAS thread; :func:`default_threads` (inside it) gives back the threads the libraries had,
for a product whose every bit must be what the threaded library gives (the paired test's float32
products, :mod:`pptarena.run.signflip`). Without ``threadpoolctl`` both do nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_found: list[Any] | None = None
_local = threading.local()


def _libraries() -> list[Any]:
    """The loaded BLAS libraries' controllers (empty without threadpoolctl)."""
    global _found
    with _lock:
        if _found is None:
            try:
                from threadpoolctl import ThreadpoolController

                _found = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            except Exception:  # noqa: BLE001 - no threadpoolctl, or it cannot read this platform's libraries
                _found = []
        return _found


def available() -> bool:
    """True when the BLAS threads can be set here."""
    return bool(_libraries())


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (nested uses keep the outermost default)."""
    libs = _libraries()
    outer = getattr(_local, "default", None)
    before = [lib.get_num_threads() for lib in libs]
    if outer is None:
        _local.default = before
    try:
        for lib in libs:
            lib.set_num_threads(1)
        yield
    finally:
        for lib, n in zip(libs, before, strict=True):
            lib.set_num_threads(n)
        _local.default = outer


@contextmanager
def default_threads() -> Iterator[None]:
    """Inside :func:`one_blas_thread`: the block runs with the threads the libraries had before."""
    libs = _libraries()
    default = getattr(_local, "default", None)
    if default is None:
        yield
        return
    try:
        for lib, n in zip(libs, default, strict=True):
            lib.set_num_threads(n)
        yield
    finally:
        for lib in libs:
            lib.set_num_threads(1)
