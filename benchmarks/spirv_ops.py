"""What naga makes of a matmul tile: the SPIR-V that wgpu hands the Vulkan driver, counted by
instruction, for the tile compiled with and without naga's run-time checks.

wgpu-py gives no access to the SPIR-V. This script builds a tiny Vulkan driver
(`spirv_shim/shim.c`, needs `cc`) that forwards every call to lavapipe and writes each shader
module's SPIR-V to a folder, runs one child process per tile with that driver selected
(VK_DRIVER_FILES), disassembles the tile's module with `spirv-dis` (Debian: `apt-get install
spirv-tools`) and counts its instructions: the clamps (`UMin` extended instructions), the
`Fma`s, the loops and branches, the loads, stores and integer arithmetic. The SPIR-V does not
depend on the driver, so what lavapipe is given is what the H100's driver is given.

    python benchmarks/spirv_ops.py --out benchmarks/results/spirv_ops_lavapipe_s6.json
    python benchmarks/spirv_ops.py --configs t64x64x16_4x4_u16_pp_cr,t64x64x16_4x4_u16_pp_cr_nb
    python benchmarks/spirv_ops.py --conv --out benchmarks/results/spirv_ops_conv_lavapipe_s6b.json

`--conv` counts the conv implicit GEMM's modules instead (`webgpu/conv_gemm.py` on its 64x64
tile, a 64-channel 3x3 layer whose GEMMs are whole tiles): each mode (forward, the input
gradient as the flipped forward and as the gather, the weight gradient) with every check
("checked"), with loop bounding only ("nb", what runs natively) and in the INTERIOR form too
("nb_in").
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import write_results

HERE = Path(__file__).resolve().parent
WIDE = "t128x256x16_8x16_u8_pp_cr"
DEFAULT_CONFIGS = [WIDE, WIDE + "_nb", WIDE + "_nl", WIDE + "_nc"]
CONV_MODES = {"fwd": 0, "dgrad": 1, "dgrad_gather": 1, "wgrad": 2}
CONV_FORMS = ("checked", "nb", "nb_in")
CONV_CONFIGS = [f"conv/{mode}/{form}" for mode in CONV_MODES for form in CONV_FORMS]
COUNTED = ("OpLoad", "OpStore", "OpAccessChain", "OpIAdd", "OpIMul", "OpUDiv", "OpUMod",
           "OpULessThan", "OpSelect", "OpLoopMerge", "OpBranchConditional", "OpControlBarrier")
_EXT = re.compile(r"OpExtInst %\w+ %\w+ (\w+)")


def _conv_child(name: str) -> None:
    """Compile one conv GEMM module (`conv/<mode>/<form>`, CONV_CONFIGS) on the (shim) driver."""
    import numpy as np

    from pyrite.data import TensorData
    from pyrite.webgpu import WebGpu, conv_gemm
    from pyrite.webgpu.matmul_config import CONFIGS
    from pyrite.webgpu.unchecked_module import ALL_CHECKS, LOOP_BOUNDING

    _, mode, form = name.split("/")
    conv_gemm.NATIVE_CHECKS = ALL_CHECKS if form == "checked" else LOOP_BOUNDING
    conv_gemm.NATIVE_INTERIOR = form == "nb_in"
    gpu = WebGpu()
    k = gpu.kernels
    xs, ws = (1, 64, 8, 8), (64, 64, 3, 3)  # M, N, K whole 64x64x16 tiles in every mode
    x, w = (gpu.from_data(TensorData(np.ones(s, np.float32))) for s in (xs, ws))
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    cfg = CONFIGS[conv_gemm.WIDE]
    if mode == "wgrad":
        conv_gemm.run(k, cfg, k.empty(ws, x.dtype, "spirv"), x, x, None, xs, *args,
                      conv_gemm.WEIGHT_GRAD)
    else:
        conv_gemm.run(k, cfg, k.empty(xs, x.dtype, "spirv"), x, w, None, xs, *args,
                      CONV_MODES[mode], gather=mode == "dgrad_gather")
    gpu.to_data(x)


def _child(name: str) -> None:
    """Compile tile `name`'s vec4 pipeline on the (shim) driver: its SPIR-V is written out."""
    if name.startswith("conv/"):
        _conv_child(name)
        return
    sys.path.insert(0, str(HERE))
    import webgpu_matmul as wm

    wm.Runner().pipeline(wm.mc.tile(name), True)


def _build_shim(folder: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("spirv_ops.py needs a C compiler (cc) to build spirv_shim/shim.c")
    lib = folder / "libspirv_shim.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(HERE / "spirv_shim" /
                    "shim.c"), "-ldl"], check=True)
    manifest = folder / "spirv_shim.json"
    manifest.write_text(json.dumps({"file_format_version": "1.0.0",
                                    "ICD": {"library_path": str(lib), "api_version": "1.1.0"}}))
    return manifest


def count(text: str) -> dict[str, int]:
    """Instruction counts of a disassembled module (`spirv-dis --raw-id` text)."""
    ops: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        words = line.split()
        op = next((w for w in words if w.startswith("Op")), None)
        if op is None:
            continue
        if op == "OpExtInst":
            found = _EXT.search(line)
            ops["ext:" + (found.group(1) if found else "?")] += 1
        elif op in COUNTED:
            ops[op] += 1
    return dict(sorted(ops.items()))


def dump(name: str, manifest: Path, folder: Path) -> dict[str, object]:
    out = folder / name.replace("/", "_")
    out.mkdir()
    env = dict(os.environ, VK_DRIVER_FILES=str(manifest), SPV_DUMP=str(out))
    env.pop("VK_ICD_FILENAMES", None)
    subprocess.run([sys.executable, __file__, "--child", name], env=env, check=True)
    modules = sorted(out.glob("*.spv"), key=lambda p: p.stat().st_size)
    if not modules:
        raise SystemExit(f"{name}: no SPIR-V was written (is lavapipe at $LVP_LIBRARY?)")
    text = subprocess.run(["spirv-dis", "--raw-id", str(modules[-1])], check=True,
                          capture_output=True, text=True).stdout
    return {"config": name, "spirv_bytes": modules[-1].stat().st_size,
            "instructions": sum(1 for ln in text.splitlines() if " Op" in ln or
                                ln.strip().startswith("Op")),
            "ops": count(text)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--conv", action="store_true",
                    help="count the conv implicit GEMM's modules (CONV_CONFIGS)")
    ap.add_argument("--out", default="")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return 0
    if shutil.which("spirv-dis") is None:
        raise SystemExit("spirv_ops.py needs spirv-dis (apt-get install spirv-tools)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        manifest = _build_shim(folder)
        names = CONV_CONFIGS if args.conv else args.configs.split(",")
        rows = [dump(name, manifest, folder) for name in names]
    for row in rows:
        ops = row["ops"]
        assert isinstance(ops, dict)
        print(f"{row['config']}: {row['instructions']} instructions, UMin {ops.get('ext:UMin', 0)},"
              f" Fma {ops.get('ext:Fma', 0)}, loops {ops.get('OpLoopMerge', 0)}, branches"
              f" {ops.get('OpBranchConditional', 0)}, selects {ops.get('OpSelect', 0)}")
    if args.out:
        result = {"benchmark": "spirv_ops", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "method": ("naga's SPIR-V as handed to lavapipe (spirv_shim); conv GEMM modules"
                             " on the 64x64 tile, x (1, 64, 8, 8), w (64, 64, 3, 3), padding 1"
                             if args.conv else "naga's SPIR-V as handed to lavapipe"
                             " (spirv_shim), vec4 variant, layout nn")
                            + "; counts over the whole module",
                  "modules": rows}
        write_results(Path(args.out), result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
