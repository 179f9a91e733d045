"""The repeat visit's wheel step, measured under Node with the real Pyodide
(`wheels_restored.mjs`): the mnist bundle's wheels (pyrite's and micropip's, 411 files)
installed into a Python restored from a snapshot of the page's Python, by wasm/wheels.js as it
is (each file's MEMFS node made and given its bytes) against FS.writeFile for every file (as
until session 8), in turns on fresh restores. Node's timings are not the browser's (the page's
worker on SwiftShader was 2-4x slower), but the two ways are measured in the same process.

    python benchmarks/wheels_restored.py [--rounds 8] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import write_results

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out", default=str(HERE / "results" / "wheels_restored.json"))
    args = parser.parse_args()
    from pyrite.wasm.snapshot import _node

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="wheels-") as tmp:
        bundle = Path(tmp) / "bundle"
        subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--out", str(bundle),
                        "--model", "mnist"], check=True, capture_output=True, cwd=tmp)
        done = subprocess.run([*_node(), str(HERE / "wheels_restored.mjs"), str(bundle),
                               str(args.rounds)], check=True, capture_output=True, text=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    medians = got["median_ms"]
    result = {"benchmark": "wheels_restored", "where": "Node, Pyodide from wasm/node_modules",
              "rounds": args.rounds, "files": got["files"],
              "load_average_1min": {"start": load_before, "end": os.getloadavg()[0]},
              "median_ms": medians, "ratio_nodes_to_write_file":
                  medians["nodes"] / medians["write_file"], "runs_ms": got["runs_ms"]}
    print(json.dumps({k: result[k] for k in ("files", "median_ms", "ratio_nodes_to_write_file")}))
    write_results(Path(args.out), result)


if __name__ == "__main__":
    main()
