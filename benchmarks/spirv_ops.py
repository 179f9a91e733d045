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

HERE = Path(__file__).resolve().parent
WIDE = "t128x256x16_8x16_u8_pp_cr"
DEFAULT_CONFIGS = [WIDE, WIDE + "_nb", WIDE + "_nl", WIDE + "_nc"]
COUNTED = ("OpLoad", "OpStore", "OpAccessChain", "OpIAdd", "OpIMul", "OpUDiv", "OpUMod",
           "OpULessThan", "OpSelect", "OpLoopMerge", "OpBranchConditional", "OpControlBarrier")
_EXT = re.compile(r"OpExtInst %\w+ %\w+ (\w+)")


def _child(name: str) -> None:
    """Compile tile `name`'s vec4 pipeline on the (shim) driver: its SPIR-V is written out."""
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
    out = folder / name
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
        rows = [dump(name, manifest, folder) for name in args.configs.split(",")]
    for row in rows:
        ops = row["ops"]
        assert isinstance(ops, dict)
        print(f"{row['config']}: {row['instructions']} instructions, UMin {ops.get('ext:UMin', 0)},"
              f" Fma {ops.get('ext:Fma', 0)}, loops {ops.get('OpLoopMerge', 0)}, branches"
              f" {ops.get('OpBranchConditional', 0)}, selects {ops.get('OpSelect', 0)}")
    if args.out:
        result = {"benchmark": "spirv_ops", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "method": "naga's SPIR-V as handed to lavapipe (spirv_shim), vec4 variant,"
                            " layout nn; counts over the whole module",
                  "modules": rows}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
