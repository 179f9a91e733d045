"""`pyrite infer squeezenet PHOTO...`: the five likeliest ImageNet classes of each photo.

`add_infer(tasks)` adds `squeezenet` to the `infer` command (pyrite.demos.cli makes it). The
photos are decoded natively with Pillow (image.py) and run through the same Python as the page
(predict.py) on `--device`; the model is read from `--models DIR`, else $PYRITE_MODELS.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..models import ModelMissing, add_option


def _run_infer(args: argparse.Namespace) -> int:
    import pyrite

    from . import files
    from .image import photo_pixels
    from .predict import load, predict

    try:
        start = time.perf_counter()
        record, labels = files.record_path(args.models_dir), files.labels_path(args.models_dir)
        model = load(pyrite.device(args.device), record, labels)
        loaded_ms = (time.perf_counter() - start) * 1000
    except ModelMissing as exc:
        print(f"pyrite infer squeezenet: {exc}", file=sys.stderr)
        return 2
    results = []
    for photo in args.photos:
        try:
            pixels = photo_pixels(photo)
        except (OSError, ValueError) as exc:
            print(f"pyrite infer squeezenet: {photo}: {exc}", file=sys.stderr)
            return 2
        start = time.perf_counter()
        out = predict(model, pixels, args.top)
        ms = (time.perf_counter() - start) * 1000
        results.append({"photo": str(photo), "device": args.device, "ms": ms, **out})
        if not args.json:
            print(f"{photo} ({args.device}, {ms:.0f} ms):")
            for item in out["top"]:  # type: ignore[attr-defined]
                print(f"  {100 * item['probability']:6.2f} %  {item['label']}  "
                      f"({item['wnid']}: {item['text']})")
    if args.json:
        print(json.dumps({"load_ms": loaded_ms, "results": results}, indent=1))
    return 0


def add_infer(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `squeezenet` to `pyrite infer`'s models."""
    from . import files

    infer = tasks.add_parser(
        "squeezenet", help="classify photos with SqueezeNet 1.1 (ImageNet)",
        description=f"Print the likeliest ImageNet classes of each photo (JPEG, PNG, WebP, "
        f"...), with SqueezeNet 1.1 imported from ONNX. The model is read from "
        f"DIR/{files.FOLDER}/ ({files.ONNX} and {files.LABELS}), DIR being --models or "
        f"$PYRITE_MODELS.")
    infer.add_argument("photos", nargs="+", metavar="PHOTO", help="an image file")
    infer.add_argument("--device", default="numpy", help="numpy (default), webgpu, ...")
    add_option(infer)
    infer.add_argument("--top", type=int, default=5, metavar="K",
                       help="how many classes to print (default 5)")
    infer.add_argument("--json", action="store_true", help="print the results as JSON")
    infer.set_defaults(run=_run_infer)


__all__ = ["add_infer"]
