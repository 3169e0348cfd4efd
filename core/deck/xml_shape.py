"""The "shape" of an XML document, equal exactly when PPT-Eval's deep slide comparison says so.

PPT-Eval calls two slides with different bytes "equal" when their ``xmltodict.parse`` results
are equal. That comparison forgets a lot: attribute order, whitespace around text, the relative
order of differently named sibling elements (children are grouped by name), comments and
processing instructions. :func:`xml_shape` builds the same grouping from expat events (the
parser xmltodict uses), so ``xml_shape(a) == xml_shape(b)`` holds exactly when PPT-Eval treats
the two documents as the same slide.

The shape of an element is:

* ``None`` for an element with no attributes, no children and no (non-blank) text;
* its stripped text for an element with text only;
* otherwise a dict: ``"@name"`` per attribute (namespace declarations included, names as
  written, prefixes kept), one key per child name holding the child's shape (or a list of the
  shapes when the name repeats), and ``"#text"`` for the stripped text (all text pieces of the
  element joined, wherever they sit between its children).

The document's shape is ``{root name: root shape}``. Entity declarations are refused.
"""

from __future__ import annotations

from typing import Any
from xml.parsers import expat


class _Builder:
    """Collects the shape while expat reports start tags, end tags and character data."""

    def __init__(self) -> None:
        self.stack: list[tuple[dict[str, Any] | None, list[str]]] = []
        self.current: dict[str, Any] | None = None
        self.text: list[str] = []

    @staticmethod
    def _add(holder: dict[str, Any] | None, key: str, value: Any) -> dict[str, Any]:
        holder = {} if holder is None else holder
        if key not in holder:
            holder[key] = value
        elif isinstance(holder[key], list):
            holder[key].append(value)
        else:
            holder[key] = [holder[key], value]
        return holder

    def start(self, name: str, attrs: list[str]) -> None:
        self.stack.append((self.current, self.text))
        pairs = {"@" + attrs[i]: attrs[i + 1] for i in range(0, len(attrs), 2)}
        self.current = pairs or None
        self.text = []

    def end(self, name: str) -> None:
        text = "".join(self.text).strip() or None
        shape = self.current
        parent, parent_text = self.stack.pop()
        if shape is not None:
            if text:
                shape = self._add(shape, "#text", text)
            value: Any = shape
        else:
            value = text
        self.current = self._add(parent, name, value)
        self.text = parent_text

    def chars(self, data: str) -> None:
        self.text.append(data)


def _no_entities(*_args: Any) -> None:
    raise ValueError("entity declarations are not allowed")


def xml_shape(data: bytes) -> dict[str, Any] | None:
    """The comparison shape of the XML document ``data`` (see the module docstring).

    Raises ``ValueError`` for malformed XML or an entity declaration.
    """
    builder = _Builder()
    parser = expat.ParserCreate(None, None)  # no namespace processing: names stay prefixed
    parser.ordered_attributes = True
    parser.buffer_text = True
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.chars
    parser.EntityDeclHandler = _no_entities
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise ValueError(f"malformed XML: {exc}") from None
    return builder.current
