"""Every module and loss that Burn's book lists (reference/burn-features.json: the modules_*
groups and losses, 41 names) is a Module class in `pyrite.nn`, under the same name unless the
table below says why pyrite's differs. This is issue 11's "done when" count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pyrite.nn as nn
from pyrite.module import Module

FEATURES = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / \
    "burn-features.json"

#: Burn's name -> pyrite's, only where they legitimately differ (none today: pyrite keeps
#: Burn's names, e.g. `Gelu`, `Prelu`, `SwiGlu`, `RmsNorm`, `BiLstm`)
RENAMED: dict[str, str] = {}
#: modules without settings, built directly (`Relu()`), as in Burn: no config to look for
NO_CONFIG = {"Relu", "Gelu"}


def _book_names() -> list[str]:
    if not FEATURES.exists():
        pytest.skip(f"{FEATURES} is absent: the reference material lives in ../shared, next to "
                    f"the repository")
    features = json.loads(FEATURES.read_text())
    groups = [key for key in features if key.startswith("modules_")] + ["losses"]
    return [name for key in groups for name in features[key]]


def test_the_book_lists_41_modules_and_losses() -> None:
    names = _book_names()
    assert len(names) == len(set(names)) == 41


def test_every_module_and_loss_of_the_book_exists() -> None:
    missing = []
    for name in _book_names():
        found = getattr(nn, RENAMED.get(name, name), None)
        if not (isinstance(found, type) and issubclass(found, Module)):
            missing.append(name)
        elif not isinstance(getattr(nn, f"{RENAMED.get(name, name)}Config", None), type) and \
                name not in NO_CONFIG:
            missing.append(f"{name}Config")
    assert not missing, f"not in pyrite.nn yet: {', '.join(missing)}"
