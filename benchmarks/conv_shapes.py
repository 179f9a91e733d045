"""The conv layers conv_layers.py times: every conv of the MNIST guide model and of SqueezeNet
1.1 with the input shape each sees, and their output shapes and FLOPs."""

from __future__ import annotations

from typing import Any

import pyrite

Layer = dict[str, Any]


def _pads(padding: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    if padding == "valid":
        return ((0, 0), (0, 0))
    (t, b), (left, r) = padding
    return ((int(t), int(b)), (int(left), int(r)))


def squeezenet_layers(batch: int) -> list[Layer]:
    """SqueezeNet 1.1's convs with the input shape each sees (traced on numpy, 227x227)."""
    from pyrite.demos.image_classification.squeezenet import SqueezeNet
    from pyrite.nn.conv import Conv2d

    model = SqueezeNet("numpy")
    names = {id(m): name for name, m in vars(model).items() if isinstance(m, Conv2d)}
    seen: list[Layer] = []
    forward = Conv2d.forward

    def traced(self: Conv2d, x: Any, **options: Any) -> Any:
        c_out, cg, kh, kw = self.weight.val.shape
        seen.append({"name": "squeezenet." + names[id(self)],
                     "x": (batch, *x.shape[1:]), "w": (c_out, cg, kh, kw),
                     "stride": tuple(self.stride), "padding": _pads(self.padding),
                     "dilation": tuple(self.dilation), "groups": self.groups})
        return forward(self, x, **options)

    Conv2d.forward = traced  # type: ignore[method-assign]
    try:
        model.forward(pyrite.zeros((1, 3, 227, 227), device="numpy"))
    finally:
        Conv2d.forward = forward  # type: ignore[method-assign]
    return seen


def mnist_layers(batch: int) -> list[Layer]:
    base = {"stride": (1, 1), "padding": ((0, 0), (0, 0)), "dilation": (1, 1), "groups": 1}
    return [{"name": "mnist.conv1", "x": (batch, 1, 28, 28), "w": (8, 1, 3, 3), **base},
            {"name": "mnist.conv2", "x": (batch, 8, 26, 26), "w": (16, 8, 3, 3), **base}]


def out_shape(layer: Layer) -> tuple[int, int, int, int]:
    n, _, h, w = layer["x"]
    c_out, _, kh, kw = layer["w"]
    (pt, pb), (pl, pr) = layer["padding"]
    (sh, sw), (dh, dw) = layer["stride"], layer["dilation"]
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    return n, c_out, oh, ow


def flop(layer: Layer) -> int:
    n, c_out, oh, ow = out_shape(layer)
    _, cg, kh, kw = layer["w"]
    return 2 * n * c_out * oh * ow * cg * kh * kw
