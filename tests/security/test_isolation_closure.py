"""The distributions a sandbox or a jail is shown: a requirement's extras are followed."""

from __future__ import annotations

import importlib.metadata as metadata

import pytest

from pptarena.trust.isolation import distribution_closure, distribution_paths


def _names(dists) -> set[str]:
    return {d.metadata["Name"].lower().replace("_", "-") for d in dists}


def test_a_requirement_with_extras_brings_what_the_extra_needs():
    """The mcp SDK requires ``pyjwt[crypto]``; without following the extra, ``cryptography`` was
    missing in the CLI jail and the deck server could not import."""
    try:
        metadata.distribution("mcp")
        metadata.distribution("cryptography")
    except metadata.PackageNotFoundError:
        pytest.skip("the mcp extra is not installed")
    names = _names(distribution_closure(["mcp"]))
    assert {"mcp", "pyjwt", "cryptography", "pydantic"} <= names
    assert len(names) == len(distribution_closure(["mcp"]))  # each once


def test_plain_requirements_and_missing_names():
    names = _names(distribution_closure(["python-pptx", "no-such-distribution-xyz"]))
    assert {"python-pptx", "lxml", "pillow"} <= names
    assert "no-such-distribution-xyz" not in names
    # extras nobody asked for are not followed: python-pptx has none that pull in pytest
    assert "pytest" not in names


def test_paths_are_top_level_site_entries_of_the_closure():
    paths = distribution_paths(["python-pptx"])
    assert any(p.name == "pptx" for p in paths) and any(p.name == "lxml" for p in paths)
    assert all(p.exists() for p in paths)
