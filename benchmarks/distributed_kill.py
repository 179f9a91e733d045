"""A Ray worker killed mid-epoch: the MNIST guide trained on `--workers` Ray workers twice,
once uninterrupted and once with rank 1's process killed (SIGKILL) right after the checkpoint of
step `--kill-step` is published; the final parameters of the two runs are compared, and the
wall time of each run says what the restart cost.

    python benchmarks/distributed_kill.py --device webgpu --workers 2 --out x.json
    python benchmarks/distributed_kill.py --device numpy --workers 2 --steps 20 --out x.json

Needs Ray (`pip install 'pyrite[distributed]'`) and MNIST in $PYRITE_DATA/mnist (the workers
read it themselves). The model has no dropout, so the two runs must end equal (1e-6 relative).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, write_results

from pyrite.demos.mnist.model import ModelConfig
from pyrite.demos.mnist.training import TrainingConfig, create_artifact_dir, worker_setup
from pyrite.distributed import fit

CONFIG = {"model": {"num_classes": 10, "hidden_size": 64, "dropout": 0.0},
          "optimizer": {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-05,
                        "weight_decay": None, "grad_clipping": None},
          "num_epochs": 1, "num_workers": 0, "seed": 42, "learning_rate": 0.001}


def _run(folder: Path, config: TrainingConfig, args: argparse.Namespace,
         kill: bool) -> dict[str, Any]:
    create_artifact_dir(folder)
    position = folder / "checkpoint/position-1.json"
    index = folder / "checkpoint/checkpoints.json"  # lists the epoch once it is complete
    starts: list[list[int]] = []
    killed_at: list[float] = []

    def on_start(pids: list[int]) -> None:
        starts.append(pids)
        if not kill or len(starts) > 1:
            return

        def watch() -> None:
            deadline = time.monotonic() + 300
            mark = f'"iteration": {args.kill_step}'
            while time.monotonic() < deadline:
                if (position.exists() and mark in position.read_text() and index.exists()
                        and "position-1" in index.read_text()):
                    os.kill(pids[1], signal.SIGKILL)
                    killed_at.append(time.monotonic())
                    return
                time.sleep(0.005)
        threading.Thread(target=watch, daemon=True).start()

    setup = worker_setup(folder, config, limit=args.steps * config.batch_size,
                         checkpoint_every=args.kill_step)
    t0 = time.monotonic()
    record = fit(setup, args.workers, device=args.device, on_start=on_start)
    wall = time.monotonic() - t0
    model = ModelConfig(10, 64, dropout=0.0).init("numpy").load_record(record)
    lines = (folder / "train/epoch-1/Loss.log").read_text().splitlines()
    return {"params": [p.val.numpy() for p in model.params()], "wall_s": round(wall, 2),
            "starts": len(starts), "killed": bool(killed_at), "logged_steps": len(lines)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=["numpy", "webgpu"], default="webgpu")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64, help="global batch")
    parser.add_argument("--kill-step", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pyrite-kill-") as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(dict(CONFIG, batch_size=args.batch)))
        config = TrainingConfig.load(path)
        plain = _run(Path(tmp) / "plain", config, args, kill=False)
        killed = _run(Path(tmp) / "killed", config, args, kill=True)
    diff = max(float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))
               for a, b in zip(plain.pop("params"), killed.pop("params"), strict=True))
    result = {"benchmark": "distributed_kill", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                    time.gmtime()),
              "cpu": cpu_name(), "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
              "device": args.device, "workers": args.workers, "steps": args.steps,
              "global_batch": args.batch, "kill_step": args.kill_step,
              "uninterrupted": plain, "killed_run": killed,
              "max_relative_param_difference": diff, "equal_within_1e-6": diff <= 1e-6}
    write_results(args.out, result)
    print(json.dumps(result, indent=1))
    return 0 if killed["killed"] and killed["starts"] == 2 and diff <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
