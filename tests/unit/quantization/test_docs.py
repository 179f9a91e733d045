"""docs/quantization.md's examples run in order as written, and each `print(...)  # text`
prints exactly `text`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "quantization.md"


def test_examples_run_and_print_what_they_say(markdown_examples: Callable[..., None]) -> None:
    markdown_examples(DOC, min_blocks=4, every_print_says=True)
