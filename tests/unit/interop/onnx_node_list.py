"""Refresh onnx_node_expected.json: the node tests that pass now, on numpy and on webgpu.

    .venv/bin/python tests/unit/interop/onnx_node_list.py

Run it after adding or fixing an operator, and review the diff: a test leaving the list is a
regression unless its reason says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyrite.interop.onnx.node_tests import score


def main() -> None:
    expected = {}
    for device in ("numpy", "webgpu"):
        board = score(device)
        expected[device] = sorted(r.name for r in board.results if r.status == "pass")
        print(f"{device}: {len(expected[device])} of {len(board.results)} pass")
    path = Path(__file__).with_name("onnx_node_expected.json")
    path.write_text(json.dumps(expected, indent=0) + "\n")


if __name__ == "__main__":
    main()
