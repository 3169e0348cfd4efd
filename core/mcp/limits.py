"""The caps every ``arena mcp`` session works within (:class:`ToolLimits`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolLimits:
    """Caps on what one deck session's tools may cost the host and return to the client.

    A call over a cap fails with a message naming the cap; nothing is half done.
    """

    max_summary_chars: int = (
        60_000  # deck_summary / deck_diff / validate text; past it: truncated with a note
    )
    max_calls: int = 5_000  # tool calls per session, all tools together
    max_renders: int = 200  # render_slides / validate-with-render calls per session
    max_slides_per_render: int = 8  # slides one render_slides call may ask for
    max_image_edge: int = 1280  # long edge of a returned slide image, pixels (downscaled to fit)
    max_image_bytes: int = 1_500_000  # one returned PNG (downscaled further until it fits)
    max_call_image_bytes: int = 6_000_000  # all PNGs of one render_slides call
    max_part_bytes: int = 4_000_000  # one part read by read_part or written by write_part
    max_list_parts: int = 5_000  # names listed by list_parts
    max_program_chars: int = 200_000  # one run_python program
    max_output_chars: int = 8_000  # run_python stdout and stderr each (the end is kept)
    run_python_seconds: float = 60.0  # run_python wall clock
    run_python_memory_mb: int = 2048  # run_python address space
    max_deck_bytes: int = 300 << 20  # the working copy (an edit making it larger is refused)
