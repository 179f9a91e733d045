"""Full MNIST training runs of the guide model through the Learner on one device: the test
accuracy reached after `--epochs`, the wall time and images/s (the whole run: loading, training
and validation each epoch), as JSON; the Learner prints its per-epoch summary table. Run it per
device to compare backends (numpy here, webgpu on a GPU machine) at the same settings.

    python benchmarks/train_mnist_accuracy.py --device "autodiff<numpy>" --epochs 5 \\
        --out benchmarks/results/train_mnist_accuracy_numpy.json

MNIST is read from $PYRITE_DATA/mnist (../shared/data here).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import tempfile
import time
from pathlib import Path

from common import write_results

import pyrite
from pyrite.demos.mnist.inference import evaluate
from pyrite.demos.mnist.predict import CONFIG
from pyrite.demos.mnist.training import TrainingConfig, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="autodiff<numpy>")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if "webgpu" in args.device:  # registers the device where no entry point does (a bare copy)
        importlib.import_module("pyrite.webgpu")
    config = TrainingConfig.load(CONFIG).with_num_epochs(args.epochs)
    with tempfile.TemporaryDirectory() as artifacts:
        start = time.perf_counter()
        model = train(artifacts, config, args.device)
        took = time.perf_counter() - start
        accuracy = evaluate(model.valid())
    backend = pyrite.device(args.device)
    adapter = getattr(getattr(backend, "inner", backend), "adapter", None)
    result = {
        "benchmark": "train_mnist_accuracy", "device": args.device,
        "adapter": str(adapter) if adapter is not None else platform.processor() or "cpu",
        "epochs": args.epochs, "batch_size": config.batch_size,
        "learning_rate": config.learning_rate, "seed": config.seed,
        "test_accuracy_percent": round(accuracy, 2), "wall_s": round(took, 1),
        "train_images_per_s": round(60_000 * args.epochs / took, 1),
    }
    print(json.dumps(result, indent=2))
    write_results(args.out, result)


if __name__ == "__main__":
    main()
