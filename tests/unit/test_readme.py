"""The README's tour runs as written, and each `print(...)  # text` prints exactly `text`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_tour_runs_and_prints_what_it_says(markdown_examples: Callable[..., None]) -> None:
    markdown_examples(README, min_blocks=3, every_print_says=False)
