"""The README's tour runs as written, and each `print(...)  # text` prints exactly `text`."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_tour_runs_and_prints_what_it_says() -> None:
    namespace: dict[str, object] = {}
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our README
        printed = out.getvalue().splitlines()
        prints = [ln for ln in block.splitlines() if re.match(r"\s*print\(", ln)]
        assert len(printed) == len(prints), printed
        for line, got in zip(prints, printed, strict=True):
            said = re.search(r"\)\s+# (.*)$", line)
            if said:
                assert got == said.group(1).strip(), f"README: {line!r} printed {got!r}"
