"""docs/quantization.md's examples run in order as written, and each `print(...)  # text`
prints exactly `text`."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "quantization.md"


def test_examples_run_and_print_what_they_say() -> None:
    namespace: dict[str, object] = {}
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 4
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - our docs
        printed = out.getvalue().splitlines()
        prints = [ln for ln in block.splitlines() if re.match(r"\s*print\(", ln)]
        assert len(printed) == len(prints), printed
        for line, got in zip(prints, printed, strict=True):
            said = re.search(r"\)\s+# (.*)$", line)
            assert said, f"docs: {line!r} says nothing to check"
            assert got == said.group(1).strip(), f"docs: {line!r} printed {got!r}"
