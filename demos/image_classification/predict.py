"""One photo in, the five likeliest ImageNet classes out: what the /classify page, the server's
`/api/predict/squeezenet` and `pyrite infer squeezenet` all call, so the page and the server
run the same Python model code.

Input: the photo as 227x227 RGB bytes (row-major, R, G, B of the top-left pixel first), already
decoded, resized so that its shorter side is 256 and centre-cropped by the caller: the page
with the browser's own image decoding (`page/app.js`), the command with Pillow (`image.py`).
Here, as the Caffe model was trained: the channels go to BGR order and planes (NCHW), the
0..255 scale stays, and the per-channel mean (B 104, G 117, R 123) is subtracted.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyrite
from pyrite import TensorData
from pyrite.module import Module
from pyrite.tensor import Tensor

from .squeezenet import SqueezeNet

SIDE = 227  # the model's input: 227x227
PIXELS = SIDE * SIDE * 3
CLASSES = 1000
MEAN_BGR = (104.0, 117.0, 123.0)
TOP = 5
INPUT_TEXT = (f"{PIXELS} numbers 0..255, a {SIDE}x{SIDE} photo's RGB values, row-major "
              f"(R, G, B of the top-left pixel first)")


@dataclass(frozen=True)
class Label:
    """One line of synset.txt: `n01614925 bald eagle, American eagle, ...`."""

    wnid: str  # the WordNet id
    text: str  # every name of the class, comma-separated

    @property
    def name(self) -> str:
        """The first of the class's names.

        >>> Label("n01614925", "bald eagle, American eagle").name
        'bald eagle'
        """
        return self.text.split(",", 1)[0].strip()


class Labels(tuple[Label, ...]):
    """The class labels in class-index order (a module setting, printed briefly)."""

    @classmethod
    def parse(cls, text: str) -> Labels:
        """synset.txt's lines, one class each: `<wnid> <names>`; ValueError unless there are
        exactly CLASSES of them.

        >>> len(Labels.parse("".join(f"n{i:08} class {i}\\n" for i in range(1000))))
        1000
        """
        labels = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            wnid, _, names = line.strip().partition(" ")
            if not names.strip():
                raise ValueError(f"synset.txt line {number} is {line!r}, not '<wnid> <names>'")
            labels.append(Label(wnid, names.strip()))
        if len(labels) != CLASSES:
            raise ValueError(f"synset.txt holds {len(labels)} labels; the model has "
                             f"{CLASSES} classes")
        return cls(labels)

    def __repr__(self) -> str:
        return f"Labels({len(self)} classes)"


class Classifier(Module):
    """SqueezeNet 1.1 (the module `pyrite import-onnx` generated) with its class labels."""

    def __init__(self, net: SqueezeNet, labels: Labels) -> None:
        self.net = net
        self.labels = labels

    def forward(self, data: Tensor) -> Tensor:
        """[batch, 3, 227, 227] BGR, mean subtracted -> [batch, 1000] probabilities."""
        return self.net(data)  # type: ignore[no-any-return]


def load(device: str | pyrite.Backend | None, record: Path | bytes,
         labels: Path | bytes) -> Classifier:
    """The classifier on `device` from its binary record and synset.txt, each a file or its
    bytes (as a page fetches them)."""
    from pyrite.demos.records import read_bin
    from pyrite.module import init_from_record

    rec, source = read_bin(record)
    # built without initialising the params the record overwrites
    net = init_from_record(lambda: SqueezeNet(device), rec, source=source)
    text = labels.decode() if isinstance(labels, bytes) else labels.read_text()
    return Classifier(net, Labels.parse(text))


def check_pixels(pixels: object) -> bytes:
    """The pixels as PIXELS bytes, or a ValueError that says what a valid input looks like.

    Takes bytes (or a buffer: a page passes the canvas's typed array) or a list of numbers.
    """
    to_bytes = getattr(pixels, "to_bytes", None)  # a JS typed array, in a page
    if isinstance(pixels, (bytes, bytearray, memoryview)):
        data = bytes(pixels)
    elif callable(to_bytes) and not isinstance(pixels, int):
        data = bytes(to_bytes())
    elif isinstance(pixels, Sequence) and not isinstance(pixels, str):
        try:
            if bool in set(map(type, pixels)):  # bytes() would take True and False as 1, 0
                raise TypeError
            data = bytes(pixels)  # ints 0..255: the fast way
        except (TypeError, ValueError):
            for i, p in enumerate(pixels):
                if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 255:
                    raise ValueError(f"squeezenet: pixel value {i} is {p!r}; every value must "
                                     f"be a number in 0..255") from None
            data = bytes(round(p) for p in pixels)
    else:
        raise ValueError(f"squeezenet: 'pixels' must be a list of {INPUT_TEXT}; got "
                         f"{type(pixels).__name__}")
    if len(data) != PIXELS:
        raise ValueError(f"squeezenet: 'pixels' must hold {PIXELS} numbers ({SIDE}x{SIDE} "
                         f"RGB), got {len(data)}")
    return data


def to_input(rgb: bytes, device: pyrite.Backend) -> Tensor:
    """227x227 RGB bytes (or several photos' one after another) -> the model's input
    [n, 3, 227, 227]: BGR planes, mean subtracted."""
    n = len(rgb) // PIXELS
    # B, G, R planes of each photo (byte slicing: fast anywhere)
    planes = b"".join(one[2::3] + one[1::3] + one[0::3]
                      for one in (rgb[i * PIXELS:(i + 1) * PIXELS] for i in range(n)))
    values = struct.pack(f"<{len(planes)}f", *planes)
    x = pyrite.from_data(TensorData(values, shape=(n, 3, SIDE, SIDE), dtype="f32"),
                         device=device)
    mean = pyrite.from_data(TensorData(list(MEAN_BGR), shape=(1, 3, 1, 1), dtype="f32"),
                            device=device)
    return x - mean


def top_classes(probabilities: Sequence[float], labels: Labels, k: int = TOP
                ) -> list[dict[str, object]]:
    """The `k` likeliest classes, likeliest first: index, name, all names, wnid, probability."""
    order = sorted(range(len(probabilities)), key=lambda i: -probabilities[i])[:k]
    return [{"index": i, "label": labels[i].name, "text": labels[i].text,
             "wnid": labels[i].wnid, "probability": probabilities[i]} for i in order]


@pyrite.compile(warn=False)
def _probabilities(model: Classifier, x: pyrite.Tensor) -> pyrite.Tensor:
    """The 1000 class probabilities of one photo (captured, then replayed: pyrite.compile)."""
    out: Tensor = model(x)
    return out.reshape((-1,))


def predict(model: Classifier, pixels: object, k: int = TOP) -> dict[str, object]:
    """`{"index", "label", "probability", "top": [k classes]}` for one 227x227 RGB photo."""
    rgb = check_pixels(pixels)
    x = to_input(rgb, model.devices()[0])
    return _answer(_probabilities(model, x).to_list(), model.labels, k)


def _answer(probabilities: Sequence[float], labels: Labels, k: int) -> dict[str, object]:
    top = top_classes(probabilities, labels, k)
    best = top[0]
    return {"index": best["index"], "label": best["label"], "probability": best["probability"],
            "top": top}


def predict_batch(model: Classifier, photos: Sequence[object], k: int = TOP
                  ) -> list[dict[str, object]]:
    """`predict` for several photos in one forward pass (the server batches its requests)."""
    x = to_input(b"".join(check_pixels(p) for p in photos), model.devices()[0])
    rows: list[list[float]] = model(x).to_list()
    return [_answer(probabilities, model.labels, k) for probabilities in rows]


__all__ = ["CLASSES", "INPUT_TEXT", "MEAN_BGR", "PIXELS", "SIDE", "TOP", "Classifier", "Label",
           "Labels", "check_pixels", "load", "predict", "predict_batch", "to_input",
           "top_classes"]
