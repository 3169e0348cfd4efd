"""The ``powerpoint`` renderer: Microsoft PowerPoint driven through COM (Windows + pywin32).

Each slide (hidden ones included) is exported with ``Slide.Export(path,
"PNG", width, height)`` at the requested long edge. The deck is opened
read-only without a window, closed without saving and PowerPoint is quit
even on error (unless the user has other presentations open in it). A
watchdog kills PowerPoint when a render exceeds ``timeout``.

On other platforms, or without pywin32 (``pip install "pptarena[windows]"``),
building the renderer raises :class:`pptarena.types.ComponentUnavailable`.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

import pptarena
from pptarena.render import (
    RenderCache,
    cached_render,
    clear_slide_files,
    deck_slides,
    slide_file_name,
    target_size,
)
from pptarena.types import Component, ComponentContext, ComponentUnavailable, InfraError, SlideImage
from pptarena.types import Options as OptionsBase

RENDERER_NAME = "powerpoint"
IMPL_VERSION = 1
NEEDS_WINDOWS = (
    "the powerpoint renderer needs Windows with PowerPoint installed and pywin32 "
    '(pip install "pptarena[windows]"); use renderer "libreoffice" elsewhere'
)

MSO_TRUE, MSO_FALSE = -1, 0
PP_ALERTS_NONE = 1


class ComApi(Protocol):
    """The few COM operations the renderer needs (real: pywin32; tests: a fake)."""

    def co_initialize(self) -> None: ...
    def co_uninitialize(self) -> None: ...
    def dispatch(self, prog_id: str) -> Any: ...
    def process_id(self, app: Any) -> int | None: ...
    def kill(self, pid: int) -> None: ...


class Win32Com:
    """:class:`ComApi` backed by pywin32."""

    def __init__(self) -> None:
        if sys.platform != "win32":
            raise ComponentUnavailable(NEEDS_WINDOWS)
        try:
            import pythoncom
            import win32com.client
            import win32process
        except ImportError as exc:
            raise ComponentUnavailable(f"{NEEDS_WINDOWS} (pywin32 is missing: {exc})") from exc
        self._pythoncom: Any = pythoncom
        self._client: Any = win32com.client
        self._process: Any = win32process

    def co_initialize(self) -> None:
        """Initialise COM on this thread."""
        self._pythoncom.CoInitialize()

    def co_uninitialize(self) -> None:
        """Release COM on this thread."""
        self._pythoncom.CoUninitialize()

    def dispatch(self, prog_id: str) -> Any:
        """Start or attach to a COM server."""
        try:
            return self._client.DispatchEx(prog_id)
        except Exception as exc:  # noqa: BLE001 - pywintypes.com_error
            raise ComponentUnavailable(f"{NEEDS_WINDOWS} (cannot start {prog_id}: {exc})") from exc

    def process_id(self, app: Any) -> int | None:
        """PowerPoint's process id (from its main window), for the timeout watchdog."""
        try:
            return int(self._process.GetWindowThreadProcessId(app.HWND)[1])
        except Exception:  # noqa: BLE001
            return None

    def kill(self, pid: int) -> None:
        """Force-kill a process tree."""
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(pid)], capture_output=True, check=False)


class PowerPointRenderer(Component):
    """Render decks with Microsoft PowerPoint (Windows only), one PNG per slide, hidden ones included."""

    class Options(OptionsBase):
        """Options of the ``powerpoint`` renderer."""

        size: int = Field(1280, ge=16, le=8192, description="long edge of every PNG, in pixels")
        timeout: float = Field(300.0, gt=0, description="seconds per deck before PowerPoint is killed")
        cache: bool = Field(True, description="reuse renders of identical decks")
        cache_dir: Path | None = Field(None, description="render cache folder (default <cache_dir>/renders)")

    _lock = threading.Lock()  # one PowerPoint per machine: renders are serialised

    def __init__(
        self, options: PowerPointRenderer.Options, context: ComponentContext, *, com: ComApi | None = None
    ):
        super().__init__(options, context)
        self.options: PowerPointRenderer.Options = options
        self.com: ComApi = com if com is not None else Win32Com()
        cache_root = options.cache_dir or (Path(context.cache_dir) / "renders")
        self.cache = RenderCache(Path(cache_root)) if options.cache else None

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """Render ``deck_path`` to ``out_dir/slide-001.png ...`` (hidden slides included).

        :raises InfraError: PowerPoint failed or exceeded ``timeout`` (it is killed).
        """
        return cached_render(
            Path(deck_path),
            Path(out_dir),
            renderer=RENDERER_NAME,
            settings={"size": self.options.size, "impl": IMPL_VERSION},
            cache=self.cache,
            produce=self._produce,
        )

    def close(self) -> None:
        """Nothing to release: PowerPoint is quit after every render."""

    def _produce(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        slides = deck_slides(deck_path)
        out_dir.mkdir(parents=True, exist_ok=True)
        clear_slide_files(out_dir)
        result: dict[str, Any] = {}
        state: dict[str, Any] = {}
        with self._lock:
            worker = threading.Thread(
                target=self._work, args=(deck_path, out_dir, slides, result, state), daemon=True
            )
            worker.start()
            worker.join(self.options.timeout)
            if worker.is_alive():
                pid = state.get("pid")
                if pid:
                    self.com.kill(pid)
                worker.join(30)
                raise InfraError(
                    f"PowerPoint timed out after {self.options.timeout:g}s rendering {deck_path.name}"
                    + (" (killed)" if pid else " (could not find its process to kill)")
                )
        if "error" in result:
            raise result["error"]
        return list(result["images"])

    def _work(
        self, deck: Path, out_dir: Path, slides: list[Any], result: dict[str, Any], state: dict[str, Any]
    ) -> None:
        try:
            result["images"] = self._export(deck, out_dir, slides, state)
        except InfraError as exc:
            result["error"] = exc
        except Exception as exc:  # noqa: BLE001 - COM errors are infrastructure failures
            result["error"] = InfraError(f"PowerPoint failed rendering {deck.name}: {exc}")

    def _export(
        self, deck: Path, out_dir: Path, slides: list[Any], state: dict[str, Any]
    ) -> list[SlideImage]:
        from PIL import Image

        self.com.co_initialize()
        app = pres = None
        try:
            app = self.com.dispatch("PowerPoint.Application")
            state["pid"] = self.com.process_id(app)
            app.DisplayAlerts = PP_ALERTS_NONE
            pres = app.Presentations.Open(str(deck.resolve()), MSO_TRUE, MSO_FALSE, MSO_FALSE)
            width, height = target_size(
                float(pres.PageSetup.SlideWidth), float(pres.PageSetup.SlideHeight), self.options.size
            )
            count = int(pres.Slides.Count)
            if count != len(slides):
                raise InfraError(
                    f"PowerPoint sees {count} slide(s) in {deck.name}, the deck lists {len(slides)}"
                )
            images = []
            for index, (number, sld_id, hidden) in enumerate(slides, start=1):
                path = out_dir / slide_file_name(number)
                pres.Slides.Item(index).Export(str(path), "PNG", width, height)
                if not path.is_file() or path.stat().st_size == 0:
                    raise InfraError(f"PowerPoint exported no image for slide {index} of {deck.name}")
                with Image.open(path) as im:
                    size = im.size
                    if size != (width, height):  # PowerPoint may round differently
                        im.convert("RGB").resize((width, height)).save(path, "PNG")
                images.append(
                    SlideImage(
                        number=number, sld_id=sld_id, path=path, width=width, height=height, hidden=hidden
                    )
                )
            return images
        finally:
            try:
                if pres is not None:
                    pres.Saved = MSO_TRUE  # never prompt, never save
                    pres.Close()
            finally:
                try:
                    if app is not None and int(app.Presentations.Count) == 0:
                        app.Quit()  # leave a PowerPoint the user is working in alone
                finally:
                    self.com.co_uninitialize()


@pptarena.hookimpl
def register_renderers(register):  # type: ignore[no-untyped-def]
    """Register the ``powerpoint`` renderer."""
    register(RENDERER_NAME, PowerPointRenderer)
