"""The project's list of Burn ops matches the book's tables, and numpy implements all 162."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pyrite
from pyrite.coverage import BURN_OPS, coverage
from pyrite.info import report_ops

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "burn-tensor-ops.json"


@pytest.mark.skipif(not REFERENCE.exists(), reason=f"{REFERENCE} not present")
def test_list_matches_the_book() -> None:
    book = json.loads(REFERENCE.read_text())
    want = sorted((g, e["name"], e["burn"]) for g, ops in book.items() if g != "quantization"
                  for e in ops)
    have = sorted((e.group, e.name, e.burn) for e in BURN_OPS)
    assert have == want
    assert len(have) == 162


def test_numpy_implements_every_op() -> None:
    cov = coverage(pyrite.device("numpy"))
    assert [e.name for e, _ in cov.missing] == []
    assert len(cov.implemented) == 162


def test_report_prints_counts() -> None:
    text = report_ops(["numpy", "autodiff<numpy>", "nosuch"])
    assert "numpy              162/162" in text
    assert "autodiff<numpy>    162/162" in text
    assert "nosuch" in text and "unavailable" in text
