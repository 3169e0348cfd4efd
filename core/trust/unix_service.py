"""A socket server the harness's own child processes reach, and nobody else.

:class:`UnixSocketService` serves a :mod:`socketserver` handler on a Unix socket in a fresh private
(0700) folder and names it to the processes started afterwards in an environment variable
(``unix:/path``). The run's rate limiters (:mod:`pptarena.models.limiter_service`) and its batch
queue (:mod:`pptarena.run.batch_service`) are served this way; each handler reaches its service as
``self.server.service``.
"""

from __future__ import annotations

import contextlib
import os
import socketserver
import tempfile
import threading
from pathlib import Path
from typing import Any


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    service: Any


class UnixSocketService:
    """Serves ``handler`` on ``<private folder>/<name>.sock``; ``env_var`` names it while serving.

    ``start()`` sets ``env_var`` in this process's environment, so child processes started
    afterwards inherit it; ``stop()`` gives the variable back its earlier value (unless something
    else set it meanwhile) and removes the socket and its folder. Also a context manager.
    """

    def __init__(self, env_var: str, name: str, handler: type[socketserver.BaseRequestHandler]):
        self.env_var = env_var
        self._name = name
        self._handler = handler
        self._dir: str | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._previous: str | None = None

    @property
    def address(self) -> str | None:
        """``unix:/path`` while serving."""
        return None if self._dir is None else f"unix:{Path(self._dir) / f'{self._name}.sock'}"

    def start(self) -> Any:
        """Serve on a socket in a new private folder and name it in the environment; returns self."""
        if self._server is not None:
            return self
        self._dir = tempfile.mkdtemp(prefix=f"pptarena-{self._name}-")
        os.chmod(self._dir, 0o700)
        server = _Server(str(Path(self._dir) / f"{self._name}.sock"), self._handler)
        server.service = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"{self._name}-service", daemon=True
        )
        self._thread.start()
        self._previous = os.environ.get(self.env_var)
        os.environ[self.env_var] = self.address or ""
        return self

    def stop(self) -> None:
        """Stop serving, restore the environment and remove the socket and its folder."""
        if self._server is None:
            return
        if os.environ.get(self.env_var) == self.address:
            if self._previous is None:
                os.environ.pop(self.env_var, None)
            else:
                os.environ[self.env_var] = self._previous
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        if self._dir is not None:
            with contextlib.suppress(OSError):
                (Path(self._dir) / f"{self._name}.sock").unlink()
            with contextlib.suppress(OSError):
                os.rmdir(self._dir)
        self._dir = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
