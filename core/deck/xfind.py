"""Fast child look-ups for the deck engine's hot paths.

lxml's ``find()`` goes through ElementPath (compiling, caching and a generator per call, about
3 µs a call); walking the children and comparing tags does the same job three times faster.
These helpers return exactly what ``el.find(...)`` returns for a plain tag or a path of tags.
"""

from __future__ import annotations

from lxml import etree


def find_child(el: etree._Element, tag: str) -> etree._Element | None:
    """The first direct child of ``el`` with ``tag`` (Clark notation), like ``el.find(tag)``."""
    for c in el:
        if c.tag == tag:
            return c
    return None


def find_path(el: etree._Element, *tags: str) -> etree._Element | None:
    """Like ``el.find("t1/t2/...")``: the first ``tN`` reached through any chain of matching children."""
    first, rest = tags[0], tags[1:]
    for c in el:
        if c.tag == first:
            if not rest:
                return c
            found = find_path(c, *rest)
            if found is not None:
                return found
    return None
