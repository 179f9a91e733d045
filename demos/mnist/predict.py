"""One drawn digit in, ten probabilities out: what the drawing page, `/api/predict/mnist` and
the tests all call, so the page and the server run the same Python model code.

Input: 784 grey levels (0..255, row-major 28x28, white digit on black as in MNIST), already
cropped, scaled and centred by the page (`demos/mnist/page/app.js`). They are normalised
exactly as in training (`MnistBatcher`'s MEAN and STD).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

import pyrite
from pyrite import DType, TensorData

from .data import MEAN, SIDE, STD
from .model import Model, ModelConfig

PIXELS = SIDE * SIDE
#: the committed record (`pyrite train mnist --export`, half precision, 99.13 %) and the
#: training config that made it (its `model` part builds the model)
SHIPPED = Path(__file__).with_name("mnist.bin")
CONFIG = Path(__file__).with_name("config.json")


def model_config() -> ModelConfig:
    """The shipped record's model config (the `model` part of config.json)."""
    return ModelConfig.from_dict(json.loads(CONFIG.read_text())["model"])


def load(device: str | pyrite.Backend | None = None,
         record: Path | bytes = SHIPPED) -> Model:
    """The guide model on `device` with a binary record's weights (a file, or its bytes, as a
    page fetches them); by default the shipped one. Loads only what inference needs."""
    from pyrite.demos.records import read_bin
    from pyrite.module import init_from_record
    from pyrite.quantization.module import static_inputs_for

    rec, source = read_bin(record)
    # built without initialising the params the record overwrites; a statically quantized
    # record (pyrite quantize --calibrate) adds input params to Linears
    return init_from_record(lambda: static_inputs_for(model_config().init(device), rec), rec,
                            source=source)


def check_pixels(pixels: object) -> list[float]:
    """The pixels as floats, or a ValueError that says what a valid input looks like."""
    if not isinstance(pixels, Sequence) or isinstance(pixels, (str, bytes)):
        raise ValueError(f"mnist: 'pixels' must be a list of {PIXELS} numbers (28x28 grey "
                         f"levels 0..255, row-major), got {type(pixels).__name__}")
    if len(pixels) != PIXELS:
        raise ValueError(f"mnist: 'pixels' must hold {PIXELS} numbers (28x28), got "
                         f"{len(pixels)}")
    out: list[float] = []
    for i, p in enumerate(pixels):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 255:
            raise ValueError(f"mnist: pixel {i} is {p!r}; every pixel must be a number in "
                             f"0..255")
        out.append(float(p))
    return out


def _normalised(images: list[list[float]]) -> TensorData:
    """Checked images (check_pixels: 784 numbers in 0..255 each) as f32 data of shape
    (N, 28, 28), normalised as MnistBatcher does on the device. Done here, in Python: 784
    numbers cost less than three kernel launches (which is what a page waits for). Packed
    directly: the values are finite and small, so TensorData's per-value range check of a
    list (22 of 198 ms in a profile of a page's first prediction, busy machine) has nothing
    to find."""
    values = [(p / 255.0 - MEAN) / STD for image in images for p in image]
    return TensorData.raw(struct.pack(f"<{len(values)}f", *values), (len(images), SIDE, SIDE),
                          DType.F32)


@pyrite.compile(warn=False)
def _probabilities(model: Model, x: pyrite.Tensor) -> pyrite.Tensor:
    """The ten class probabilities of one image (captured, then replayed: pyrite.compile)."""
    return model.forward(x).softmax(1).reshape((-1,))


def predict(model: Model, pixels: Sequence[float]) -> dict[str, object]:
    """`{"label": int, "probabilities": [10 floats]}` for one 28x28 image.

    >>> out = predict(load(), [0.0] * 784)
    >>> len(out["probabilities"]), 0 <= out["label"] <= 9
    (10, True)
    """
    device = model.devices()[0]
    x = pyrite.from_data(_normalised([check_pixels(pixels)]), device=device)
    probs = _probabilities(model, x).to_list()
    label = max(range(len(probs)), key=probs.__getitem__)
    return {"label": label, "probabilities": probs}


def predict_batch(model: Model, images: Sequence[Sequence[float]]) -> list[dict[str, object]]:
    """`predict` for several images in one forward pass (the server batches its requests);
    each answer equals `predict`'s for that image alone.

    >>> model = load()
    >>> [r["label"] for r in predict_batch(model, [[0.0] * 784] * 2)] == \\
    ...     [predict(model, [0.0] * 784)["label"]] * 2
    True
    """
    device = model.devices()[0]
    x = pyrite.from_data(_normalised([check_pixels(image) for image in images]),
                         device=device)
    rows = model.forward(x).softmax(1).to_list()
    return [{"label": max(range(len(row)), key=row.__getitem__), "probabilities": row}
            for row in rows]


__all__ = ["CONFIG", "PIXELS", "SHIPPED", "check_pixels", "load", "model_config", "predict",
           "predict_batch"]
