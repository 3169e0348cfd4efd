"""The example run configs, shipped as package data (``pptarena.examples``).

The TOML files beside this module are the repository's ``examples/`` folder; the wheel installs
them as ``pptarena/examples/*.toml`` so ``arena init NAME`` can write one into any folder.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["names", "read", "summary"]


def names() -> list[str]:
    """The example names (file stems), sorted; ``demo`` first."""
    found = sorted(
        p.name[: -len(".toml")] for p in resources.files(__name__).iterdir() if p.name.endswith(".toml")
    )
    return sorted(found, key=lambda n: (n != "demo", n))


def read(name: str) -> str:
    """The text of example ``name`` (raises KeyError naming the choices when there is none)."""
    if name not in names():
        raise KeyError(name)
    return resources.files(__name__).joinpath(f"{name}.toml").read_text(encoding="utf-8")


def summary(name: str) -> str:
    """The first sentence of an example's comment header (what it runs)."""
    words: list[str] = []
    for line in read(name).splitlines():
        text = line.lstrip("#").strip()
        if not line.startswith("#") or not text:
            break
        words.append(text)
    sentence = " ".join(words).split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 100 else sentence[:99] + "…"
