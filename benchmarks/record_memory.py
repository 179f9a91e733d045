"""Peak memory of loading a record, against the file's size, for each of pyrite's record
formats: tracemalloc's peak over `recorder.load(path)` of a record of 16 float32 tensors of
1024x1024 (64 MiB; `--quick`: 16 of 256x256, 4 MiB). Not a timing benchmark: memory ratios
are the result (`peak / file size`, and what the loaded record keeps).

    python benchmarks/record_memory.py --out benchmarks/results/record_memory.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, write_results

from pyrite.data import TensorData
from pyrite.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    FileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
)

RECORDERS: dict[str, FileRecorder] = {
    "mpk": NamedMpkFileRecorder(), "mpk.gz": NamedMpkGzFileRecorder(),
    "bin": BinFileRecorder(), "bin.gz": BinGzFileRecorder(),
}


def measure(recorder: FileRecorder, record: dict[str, Any], folder: Path) -> dict[str, float]:
    path = recorder.save(record, folder / "record")
    size = path.stat().st_size
    tracemalloc.start()
    start = time.perf_counter()
    loaded = recorder.load(path)
    took = time.perf_counter() - start
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del loaded
    return {"file_bytes": size, "peak_bytes": peak, "peak_over_file": round(peak / size, 3),
            "kept_over_file": round(kept / size, 3), "load_s": round(took, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the JSON result goes")
    parser.add_argument("--quick", action="store_true", help="4 MiB instead of 64 MiB")
    args = parser.parse_args()
    side = 256 if args.quick else 1024
    rng = np.random.default_rng(0)
    record = {f"layer{i}": {"weight": TensorData(rng.random((side, side), dtype=np.float32))}
              for i in range(16)}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, recorder in RECORDERS.items():
            results[name] = measure(recorder, record, Path(tmp))
            print(f"{name:7s} file {results[name]['file_bytes'] / 2**20:6.1f} MiB  peak "
                  f"{results[name]['peak_over_file']:.2f}x  kept "
                  f"{results[name]['kept_over_file']:.2f}x  {results[name]['load_s']:.2f} s")
    write_results(args.out, {"benchmark": "record_memory", "cpu": cpu_name(),
                             "record": f"16 float32 tensors of {side}x{side}",
                             "formats": results})


if __name__ == "__main__":
    main()
