"""`pyrite quantize MODEL --scheme ... --calibrate N --out FILE`: a demo model's quantized
record, and the measurements behind it (benchmarks/quantization_accuracy.py uses the same code).

MODEL is a demo model (`mnist`, `squeezenet`, `charlm`); `--record` replaces its shipped
weights with a record of the same model (a `.bin` file). Schemes:

| name          | weights                                             |
|---------------|-----------------------------------------------------|
| `int8`        | QInt8, per channel of the output axis (symmetric)   |
| `int8-tensor` | QInt8, per tensor (symmetric), as the book's example |
| `int8-affine` | QInt8, per tensor, affine                           |
| `int4`        | QInt4, blocks of 32 along the input axis (symmetric) |

`--calibrate N` (mnist) also quantizes each Linear's input statically, with params calibrated on
N training images; 0 (the default) leaves activations to dynamic quantization. The record is
written with the binary recorder at half precision: quantized tensors keep their integers and
f32 scales, the few float params left (biases) are stored as f16, as the shipped records are.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyrite
from pyrite.module import Module
from pyrite.quantization import QuantizationScheme, QuantizationType

S, T = QuantizationScheme, QuantizationType
SCHEMES: dict[str, QuantizationScheme] = {
    "int8": S.PerChannelSymmetric(T.QInt8),
    "int8-tensor": S.PerTensorSymmetric(T.QInt8),
    "int8-affine": S.PerTensorAffine(T.QInt8),
    "int4": S.PerBlock(T.QInt4, 32),
}
#: calibration images go through in batches of this size
CALIBRATION_BATCH = 100


def _mnist(device: str, record: Path | None) -> Module:
    from .mnist.predict import SHIPPED, load
    return load(device, record or SHIPPED)


def _squeezenet(device: str, record: Path | None) -> Module:
    from pyrite.record import BinFileRecorder

    from .image_classification.files import record_path
    from .image_classification.squeezenet import SqueezeNet
    return SqueezeNet(device).load_file(record or record_path(), BinFileRecorder())


def _charlm(device: str, record: Path | None) -> Module:
    from .charlm.generate import SHIPPED, load
    return load(device, record or SHIPPED)


MODELS: dict[str, Callable[[str, Path | None], Module]] = {
    "mnist": _mnist, "squeezenet": _squeezenet, "charlm": _charlm}


def scheme_named(name: str) -> QuantizationScheme:
    found = SCHEMES.get(name)
    if found is None:
        raise ValueError(f"--scheme {name!r}: unknown; use one of {', '.join(SCHEMES)}")
    return found


def mnist_calibration(count: int, device: str) -> list[Any]:
    """The first `count` MNIST training images as batches (the activations' calibration)."""
    from pyrite.dataset import MnistDataset

    from .mnist.data import MnistBatcher
    train = MnistDataset.train()
    batcher = MnistBatcher(device)
    items = [item for item in (train.get(j) for j in range(min(count, len(train))))
             if item is not None]
    return [batcher(items[i:i + CALIBRATION_BATCH])
            for i in range(0, len(items), CALIBRATION_BATCH)]


def quantize_demo(name: str, scheme: QuantizationScheme, calibrate: int = 0, *,
                  record: Path | None = None, device: str = "numpy") -> Module:
    """The demo model `name` with its weights quantized by `scheme` (and, with `calibrate`
    images, its Linear inputs statically: mnist only)."""
    from pyrite.quantization.module import Quantizer, quantize_static
    if name not in MODELS:
        raise ValueError(f"quantize: unknown model {name!r}; use one of {', '.join(MODELS)}")
    model = MODELS[name](device, record)
    quantizer = Quantizer(scheme=scheme)
    if calibrate <= 0:
        return model.quantize_weights(quantizer)
    if name != "mnist":
        raise ValueError(f"quantize {name}: --calibrate needs calibration data, which only "
                         f"mnist has here; use --calibrate 0 (dynamic activations)")
    return quantize_static(model, mnist_calibration(calibrate, device), quantizer,
                           forward=lambda m, batch: m(batch.images))


def record_bytes(model: Module) -> bytes:
    """The model's record as the pages download it: binary format, half precision."""
    from pyrite.record import BinBytesRecorder, HalfPrecision
    return BinBytesRecorder(HalfPrecision()).to_bytes(model.into_record(),
                                                      item_type=type(model).__name__)


#: what `pyrite export-web --precision` accepts: the shipped record, or a quantized one
PAGE_PRECISIONS = ("shipped", "int8", "int4")


def page_record(name: str, precision: str, shipped: Path) -> bytes:
    """The record a page downloads for demo model `name` at `precision`: the shipped file for
    "shipped" (mnist and charlm at f16, squeezenet at f32), else the model quantized (weights
    only: activations quantize per batch)."""
    if precision == "shipped":
        return shipped.read_bytes()
    if precision not in PAGE_PRECISIONS:
        raise ValueError(f"--precision {precision!r}: unknown; use one of "
                         f"{', '.join(PAGE_PRECISIONS)}")
    return record_bytes(quantize_demo(name, scheme_named(precision), record=shipped))


def weights_precision(model: Module) -> str:
    """How the model's weights are stored: "int8", "int4", both joined by "+", or the float
    dtype of its params ("f32")."""
    from pyrite.quantization import QuantizedTensor
    found: list[str] = []
    for _, p in model.named_params():
        val = p.val
        name = (f"int{val.scheme.qtype.bits}" if isinstance(val, QuantizedTensor)
                else str(val.dtype))
        if name not in found:
            found.append(name)
    quantized = [f for f in found if f.startswith("int")]
    return "+".join(quantized) if quantized else "+".join(found)


def _run(args: argparse.Namespace) -> int:
    import sys
    try:
        scheme = scheme_named(args.scheme)
        model = quantize_demo(args.model, scheme, args.calibrate,
                              record=Path(args.record) if args.record else None)
    except (ValueError, FileNotFoundError, pyrite.PyriteError) as exc:
        print(f"pyrite quantize: {exc}", file=sys.stderr)
        return 2
    from pyrite.record import atomic_write
    data = record_bytes(model)
    out = Path(args.out)
    atomic_write(out, lambda f: f.write(data))
    print(f"{args.model}: {scheme!r}, {len(data)} bytes -> {out}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `quantize` to the `pyrite` command."""
    parser = subparsers.add_parser("quantize", help="write a demo model's quantized record",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(MODELS), metavar="MODEL",
                        help=f"a demo model: {', '.join(MODELS)}")
    parser.add_argument("--record", help="a record of the model to quantize instead of the "
                        "shipped one")
    parser.add_argument("--scheme", default="int8", help=f"one of {', '.join(SCHEMES)} "
                        "(default int8)")
    parser.add_argument("--calibrate", type=int, default=0, metavar="N",
                        help="calibrate Linear inputs on N training images (static; mnist)")
    parser.add_argument("--out", required=True, help="the record file to write (.bin)")
    parser.set_defaults(run=_run)
