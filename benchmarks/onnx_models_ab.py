"""SqueezeNet (benchmarks/onnx_models.py) with one or more of session 7's native choices
switched off, to tell which of them a slower run comes from; run from benchmarks/:

    python onnx_models_ab.py CONFIG [onnx_models.py's arguments]

CONFIG names what is off, joined by `_` (`base`: nothing): `nospin` the readback's spin
(native_readback.SPIN_S), `nogeom` the conv GEMM's constant geometry (conv_geometry.CONSTANT),
`nochan` the channel-block conv (conv_channels), `nonarrow` the narrow matmul (matmul_narrow).
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: onnx_models_ab.py CONFIG [onnx_models.py arguments]; CONFIG: "
                         "base, or nospin / nogeom / nochan / nonarrow joined by _")
    which = sys.argv[1]
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    from pyrite.webgpu import conv_channels, conv_geometry, matmul_narrow, native_readback

    def never(*args: Any, **kwargs: Any) -> None:
        return None

    if "nospin" in which:
        native_readback.SPIN_S = 0.0
    if "nogeom" in which:
        conv_geometry.CONSTANT = False
    if "nochan" in which:
        conv_channels.choose = never  # type: ignore[assignment]
    if "nonarrow" in which:
        matmul_narrow.takes = lambda *args, **kwargs: False  # type: ignore[assignment]
    print("config", which, flush=True)
    sys.path.insert(0, os.getcwd())
    runpy.run_path("onnx_models.py", run_name="__main__")


if __name__ == "__main__":
    main()
