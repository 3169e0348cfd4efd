"""MCP tool results as :class:`~pptarena.models.ToolResult` parts, within limits.

A server's answer is untrusted (issue 36 item 4 runs anyone's server): text is cut to
``max_chars``, at most ``max_images`` images are kept (each a PNG, JPEG, GIF or WebP of at most
:data:`MAX_IMAGE_BYTES` whose base64 decodes), and content the models cannot take (audio,
resource links, binary resources) becomes a one-line note. A result without content but with
structured content shows that as JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pptarena.models import ImagePart, ToolResult

MAX_IMAGE_BYTES = 8 * 1024 * 1024
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _image(block: Any) -> tuple[ImagePart | None, str]:
    """An image block → ``(image, "")`` or ``(None, why it was dropped)``."""
    media = str(getattr(block, "mime_type", "") or "").lower()
    if media not in IMAGE_TYPES:
        return None, f"[an image of type {media or 'unknown'} was dropped: only PNG, JPEG, GIF, WebP]"
    data = str(getattr(block, "data", "") or "")
    if len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        return None, f"[an image over {MAX_IMAGE_BYTES // (1024 * 1024)} MB was dropped]"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None, "[an image whose data is not base64 was dropped]"
    return ImagePart(raw, media), ""


def _resource_text(block: Any) -> str:
    resource = getattr(block, "resource", None)
    text = getattr(resource, "text", None)
    uri = str(getattr(resource, "uri", "") or "")
    if isinstance(text, str):
        return f"[resource {uri}]\n{text}" if uri else text
    return f"[a binary resource {uri} was dropped]"


def to_tool_result(call_id: str, result: Any, *, max_chars: int, max_images: int) -> ToolResult:
    """An MCP ``CallToolResult`` → a :class:`ToolResult` answering ``call_id``."""
    texts: list[str] = []
    images: list[ImagePart] = []
    dropped = 0
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(str(getattr(block, "text", "")))
        elif kind == "image":
            if len(images) >= max_images:
                dropped += 1
                continue
            image, why = _image(block)
            if image is not None:
                images.append(image)
            else:
                texts.append(why)
        elif kind == "resource":
            texts.append(_resource_text(block))
        elif kind == "resource_link":
            texts.append(f"[resource link {getattr(block, 'uri', '')}]")
        else:
            texts.append(f"[{kind or 'unknown'} content dropped: not text or an image]")
    structured = getattr(result, "structured_content", None)
    if not texts and not images and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False, default=str))
    if dropped:
        texts.append(f"[{dropped} more image(s) dropped: at most {max_images} per result]")
    text = "\n".join(t for t in texts if t)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[cut: {len(text) - max_chars} more characters]"
    is_error = bool(getattr(result, "is_error", False))
    content: tuple[str | ImagePart, ...] = ((text,) if text else ()) + tuple(images)
    return ToolResult(call_id, content or ("(no output)",), is_error=is_error)


def error_result(call_id: str, message: str) -> ToolResult:
    """A failed call's answer to the model: the message, marked as an error."""
    return ToolResult(call_id, (message,), is_error=True)
