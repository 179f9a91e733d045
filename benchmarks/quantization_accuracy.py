"""Accuracy and size of the demo models quantized (pyrite.quantization), float in the same run.

- MNIST guide model (the shipped record), the 10,000 test images: accuracy of float, int8
  static (per-channel QInt8 weights, Linear inputs per-tensor affine, calibrated on
  --calibrate training images), int8 dynamic (same weights, activations quantized per batch)
  and int4 weight-only (QInt4 in blocks of 32). Targets: int8 static within 0.3 points of
  float, int4 within 1 point.
- SqueezeNet 1.1 (the ONNX import's record), the sample photos in $PYRITE_DATA/samples:
  top-1 of int8 (dynamic, conv weights per output channel) against float, and the overlap of
  the top-5 sets. Skipped when the model or Pillow is missing.
- charlm: the validation loss (nats/char) of int8 against float, on the validation windows
  of its training config.
- Sizes: each model's record as the pages download it (binary format, half precision): f16
  (today's shipped record), int8 and int4.

    PYRITE_DATA=... PYRITE_MODELS=... python benchmarks/quantization_accuracy.py \
        --out benchmarks/results/quantization_accuracy.json
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from common import cpu_name, write_results

import pyrite
from pyrite.demos.quantize import MODELS, SCHEMES, quantize_demo, record_bytes


def mnist(device: str, calibrate: int) -> dict[str, Any]:
    from pyrite.dataset import MnistDataset
    from pyrite.demos.mnist.data import MnistBatcher
    test = MnistDataset.test()
    batcher = MnistBatcher(device)
    batches = [batcher([test.get(j) for j in range(i, min(len(test), i + 500))])
               for i in range(0, len(test), 500)]

    def accuracy(model: Any) -> float:
        right = 0
        for batch in batches:
            guess = model(batch.images).argmax(1).reshape((-1,))
            right += int((guess == batch.targets).int().sum().item())
        return 100.0 * right / len(test)
    variants = {
        "float": MODELS["mnist"](device, None),
        "int8_static": quantize_demo("mnist", SCHEMES["int8"], calibrate, device=device),
        "int8_dynamic": quantize_demo("mnist", SCHEMES["int8"], device=device),
        "int4_weight_only": quantize_demo("mnist", SCHEMES["int4"], device=device),
    }
    out: dict[str, Any] = {"test_images": len(test), "calibration_images": calibrate}
    for name, model in variants.items():
        start = time.perf_counter()
        out[name] = {"accuracy": accuracy(model), "seconds": time.perf_counter() - start}
    for name in ("int8_static", "int8_dynamic", "int4_weight_only"):
        out[name]["points_below_float"] = out["float"]["accuracy"] - out[name]["accuracy"]
    out["int8_static"]["target_met"] = out["int8_static"]["points_below_float"] <= 0.3
    out["int4_weight_only"]["target_met"] = out["int4_weight_only"]["points_below_float"] <= 1.0
    return out


def squeezenet(device: str) -> dict[str, Any]:
    from pyrite.demos.image_classification.image import photo_pixels
    from pyrite.demos.image_classification.predict import to_input
    folder = Path(os.environ.get("PYRITE_DATA", "")) / "samples"
    photos = sorted(p for p in folder.glob("*") if p.suffix in (".jpg", ".jpeg", ".png"))
    float_model = MODELS["squeezenet"](device, None)
    int8 = quantize_demo("squeezenet", SCHEMES["int8"], device=device)
    rows = []
    for photo in photos:
        x = to_input(photo_pixels(photo), pyrite.device(device))
        tops = []
        for model in (float_model, int8):
            probs = model(x).reshape((-1,)).to_list()
            tops.append(sorted(range(len(probs)), key=lambda i: -probs[i])[:5])
        rows.append({"photo": photo.name, "float_top5": tops[0], "int8_top5": tops[1],
                     "top1_equal": tops[0][0] == tops[1][0],
                     "top5_overlap": len(set(tops[0]) & set(tops[1]))})
    return {"photos": rows, "top1_equal": sum(r["top1_equal"] for r in rows),
            "of": len(rows), "mean_top5_overlap": sum(r["top5_overlap"] for r in rows)
            / max(1, len(rows))}


def charlm(device: str) -> dict[str, Any]:
    from pyrite.demos.charlm.generate import CONFIG
    from pyrite.demos.charlm.training import TrainingConfig, loaders
    config = TrainingConfig.load(CONFIG)
    _, valid = loaders(config, pyrite.device(device))
    windows = list(valid)

    def loss(model: Any) -> float:
        losses = [model.loss(batch).loss.item() for batch in windows]
        return sum(losses) / len(losses)
    float_loss = loss(MODELS["charlm"](device, None))
    int8_loss = loss(quantize_demo("charlm", SCHEMES["int8"], device=device))
    return {"valid_batches": len(windows), "float_nats_per_char": float_loss,
            "int8_nats_per_char": int8_loss, "difference": int8_loss - float_loss,
            "target_met": int8_loss - float_loss <= 0.05}


def sizes(device: str, calibrate: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in MODELS:
        try:
            f16 = len(record_bytes(MODELS[name](device, None)))
        except (FileNotFoundError, pyrite.PyriteError, ImportError) as exc:
            out[name] = {"skipped": str(exc)}
            continue
        entry = {"f16": f16}
        for scheme in ("int8", "int4"):
            model = quantize_demo(name, SCHEMES[scheme], calibrate if name == "mnist" and
                                  scheme == "int8" else 0, device=device)
            entry[scheme] = len(record_bytes(model))
            entry[f"{scheme}_vs_f16"] = entry[scheme] / f16
        out[name] = entry
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="numpy")
    parser.add_argument("--calibrate", type=int, default=1000)
    args = parser.parse_args()
    start = time.perf_counter()
    result: dict[str, Any] = {"benchmark": "quantization_accuracy", "device": args.device,
                              "host": {"cpu": cpu_name(), "cores": os.cpu_count()}}
    result["mnist"] = mnist(args.device, args.calibrate)
    print("mnist", result["mnist"], flush=True)
    result["sizes"] = sizes(args.device, args.calibrate)
    print("sizes", result["sizes"], flush=True)
    try:
        result["squeezenet"] = squeezenet(args.device)
    except (FileNotFoundError, ImportError, pyrite.PyriteError) as exc:
        result["squeezenet"] = {"skipped": str(exc)}
    print("squeezenet", result["squeezenet"], flush=True)
    result["charlm"] = charlm(args.device)
    print("charlm", result["charlm"], flush=True)
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
