"""`pyrite infer squeezenet PHOTO...`: the five likeliest ImageNet classes of each photo.

`add_infer(tasks)` adds `squeezenet` to the `infer` command (pyrite.demos.cli makes it). The
photos are decoded natively with Pillow (image.py) and run through the same Python as the page
(predict.py) on `--device`; the model is read from `--models DIR`, else $PYRITE_MODELS.
"""

from __future__ import annotations

import argparse
import json
import time

from pyrite.argtypes import Range, device_arg, device_help, path_arg

from ..models import add_option

TOP = Range(1, 1000, integer=True)  # SqueezeNet's 1,000 ImageNet classes


def _run_infer(args: argparse.Namespace) -> int:
    import pyrite
    from pyrite.errors import DatasetError

    from . import files
    from .image import photo_pixels
    from .predict import load, predict

    for photo in args.photos:  # before the model loads: a typo is reported at once
        if not photo.is_file():
            raise DatasetError(f"{photo}: no such file; check the path" if not photo.exists()
                               else f"{photo} is not a file; give an image file")
    start = time.perf_counter()
    record, labels = files.record_path(args.models_dir), files.labels_path(args.models_dir)
    model = load(pyrite.device(args.device), record, labels)
    loaded_ms = (time.perf_counter() - start) * 1000
    results = []
    for photo in args.photos:
        try:
            pixels = photo_pixels(photo)
        except (OSError, ValueError) as exc:  # named once, by the photo's path
            raise DatasetError(str(exc) if str(photo) in str(exc) else f"{photo}: {exc}") \
                from exc
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
    infer.add_argument("photos", nargs="+", metavar="PHOTO", type=path_arg,
                       help="an image file (one or more)")
    infer.add_argument("--device", default="numpy", type=device_arg, help=device_help("numpy"))
    add_option(infer)
    infer.add_argument("--top", type=TOP.arg, default=5, metavar="K",
                       help="how many classes to print, 1..1000 (default 5)")
    infer.add_argument("--json", action="store_true", help="print the results as JSON "
                       "(default: a table)")
    infer.set_defaults(run=_run_infer)


__all__ = ["add_infer"]
