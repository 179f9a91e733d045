"""What several benchmarks share: the machine's CPU name, writing results, timing blocks of
evaluations, PyTorch CUDA as a peer (TF32 off), and the Burn guide's MNIST model in PyTorch,
layer for layer as `pyrite.demos.mnist.Model` (torch is imported here or by the caller, never
by pyrite)."""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def write_results(path: Path, result: dict[str, Any]) -> None:
    """`result` as JSON at `path`, written whole or not at all (a temp file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)


def npm_versions(node_modules: Path, names: list[str]) -> dict[str, str]:
    """The installed version of each npm package in `names` under `node_modules` (those
    present), for a result's record of the peers it ran."""
    out = {}
    for name in names:
        manifest = node_modules / name / "package.json"
        if manifest.exists():
            out[name] = json.loads(manifest.read_text())["version"]
    return out


def calibrate(run: Callable[[int], None], sync: Callable[[], None], min_ms: float,
              warm: int = 1, most: int = 1 << 12) -> int:
    """Evaluations per block: after `warm` warm-up evaluations, doubled from 1 until a block
    (`run(reps)` then `sync()`, which waits for the device) takes >= `min_ms`, or `most`."""
    run(warm)
    sync()
    reps = 1
    while True:
        start = time.perf_counter()
        run(reps)
        sync()
        took = time.perf_counter() - start
        if took * 1e3 >= min_ms or reps >= most:
            return reps
        reps *= 2


def timed(run: Callable[[int], None], sync: Callable[[], None], min_ms: float,
          iters: int) -> dict[str, float]:
    """Milliseconds per evaluation: median and best of `iters` blocks of `calibrate`'s
    `reps` evaluations."""
    reps = calibrate(run, sync, min_ms)
    per = []
    for _ in range(iters):
        start = time.perf_counter()
        run(reps)
        sync()
        per.append((time.perf_counter() - start) / reps)
    return {"median_ms": statistics.median(per) * 1e3, "best_ms": min(per) * 1e3, "reps": reps}


def cuda_torch() -> Any:
    """torch with fp32 matmul and convolution kept in fp32 (TF32 off), or None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def guide_model(torch: Any) -> Any:
    """A fresh guide model (seeded with 0), on the CPU."""
    nn = torch.nn

    class Model(nn.Module):  # type: ignore[misc, name-defined]  # torch is the caller's
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3)
            self.conv2 = nn.Conv2d(8, 16, 3)
            self.pool = nn.AdaptiveAvgPool2d((8, 8))
            self.dropout = nn.Dropout(0.5)
            self.linear1 = nn.Linear(1024, 512)
            self.linear2 = nn.Linear(512, 10)
            self.activation = nn.ReLU()

        def forward(self, images: Any) -> Any:
            b, h, w = images.shape
            x = images.reshape(b, 1, h, w)
            x = self.dropout(self.conv1(x))
            x = self.activation(self.dropout(self.conv2(x)))
            x = self.pool(x).reshape(b, 16 * 8 * 8)
            x = self.activation(self.dropout(self.linear1(x)))
            return self.linear2(x)

    torch.manual_seed(0)
    return Model()


def pin_threads(n: int, torch: Any = None) -> None:
    """Both sides of a CPU comparison on `n` threads: pyrite's BLAS (`PYRITE_BLAS_THREADS`,
    applied now if numpy is already in use) and PyTorch's intra-op pool when given."""
    import os

    os.environ["PYRITE_BLAS_THREADS"] = str(n)
    try:
        from pyrite.backend.blas_threads import set_blas_threads
    except ImportError:  # a pyrite from before the setting: OPENBLAS_NUM_THREADS must say
        pass
    else:
        set_blas_threads(n)
    if torch is not None:
        torch.set_num_threads(n)


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (benchmarks on a shared machine say what
    else was running)."""
    import os

    return [round(v, 2) for v in os.getloadavg()]
