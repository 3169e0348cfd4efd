"""Files of a run as HTTP responses, with content types that can never run a script."""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse, Response

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}
TEXT_TYPES = (".json", ".jsonl", ".txt", ".log", ".toml", ".xml", ".csv")


def file_response(path: Path) -> Response:
    """``path`` with a safe content type: images as images, text as plain text, anything else
    (HTML, SVG...) as a download."""
    suffix = path.suffix.lower()
    if suffix in IMAGE_TYPES:
        return FileResponse(path, media_type=IMAGE_TYPES[suffix])
    if suffix in TEXT_TYPES:
        return FileResponse(path, media_type="text/plain; charset=utf-8")
    return FileResponse(
        path, media_type="application/octet-stream", headers={"Content-Disposition": "attachment"}
    )
