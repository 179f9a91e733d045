"""What the peers of `browser.py` load: the MNIST guide model's trained weights (pyrite's shipped
record `demos/mnist/mnist.bin`) as a TF.js weight file and as an ONNX model built with the `onnx`
package's helper API (benchmark-only: `pip install -r benchmarks/browser/requirements.txt`),
plus real MNIST test digits and pyrite's numpy-backend probabilities for them.

The model: conv 1->8 3x3, conv 8->16 3x3, ReLU, average pooling 24x24 -> 8x8 (exactly 3x3,
stride 3, which is what adaptive pooling does here), flatten channel-major (NCHW), linear
1024->512, ReLU, linear 512->10, softmax; dropout is inactive at inference. The input is 784 grey
levels 0..255, normalised `(x / 255 - 0.1307) / 0.3081` inside each peer's predict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

MEAN, STD = 0.1307, 0.3081


def load_weights() -> dict[str, np.ndarray]:
    """The shipped record's parameters in pyrite's layouts: conv (out, in, kh, kw), linear
    (d_input, d_output) as in Burn."""
    from pyrite.demos import registry

    demo = registry.get("mnist")
    model = demo.load("numpy", demo.record)
    out = {}
    for layer in ("conv1", "conv2", "linear1", "linear2"):
        module = getattr(model, layer)
        out[f"{layer}.weight"] = module.weight.val.numpy().astype(np.float32)
        out[f"{layer}.bias"] = module.bias.val.numpy().astype(np.float32)
    return out


def write_tfjs_weights(weights: dict[str, np.ndarray], folder: Path) -> None:
    """`tfjs.bin` (float32, little-endian) and `tfjs.json` (the manifest: name, shape, offset in
    floats) in the order of the page's `tf.sequential` layers, in TF.js layouts: conv kernels
    (kh, kw, in, out); linear1's rows reordered from pyrite's channel-major flatten (c, h, w)
    to TF.js's NHWC flatten (h, w, c)."""
    w1 = weights["linear1.weight"].reshape(16, 8, 8, 512).transpose(1, 2, 0, 3).reshape(1024, 512)
    tensors = [
        ("conv1.kernel", weights["conv1.weight"].transpose(2, 3, 1, 0)),
        ("conv1.bias", weights["conv1.bias"]),
        ("conv2.kernel", weights["conv2.weight"].transpose(2, 3, 1, 0)),
        ("conv2.bias", weights["conv2.bias"]),
        ("dense1.kernel", w1),
        ("dense1.bias", weights["linear1.bias"]),
        ("dense2.kernel", weights["linear2.weight"]),
        ("dense2.bias", weights["linear2.bias"]),
    ]
    manifest, chunks, offset = [], [], 0
    for name, array in tensors:
        array = np.ascontiguousarray(array, dtype="<f4")
        manifest.append({"name": name, "shape": list(array.shape), "offset": offset})
        chunks.append(array.tobytes())
        offset += array.size
    (folder / "tfjs.bin").write_bytes(b"".join(chunks))
    (folder / "tfjs.json").write_text(json.dumps(manifest, indent=1))


def write_onnx(weights: dict[str, np.ndarray], path: Path) -> None:
    """The same network as one ONNX graph (opset 17): input `pixels` (1, 1, 28, 28) grey levels
    0..255, output `probabilities` (1, 10); normalisation and softmax are in the graph."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in {
        **weights, "c255": np.array(255.0), "mean": np.array(MEAN), "std": np.array(STD)}.items()]
    conv: dict[str, Any] = {"kernel_shape": [3, 3], "pads": [0, 0, 0, 0], "strides": [1, 1]}
    nodes = [
        helper.make_node("Div", ["pixels", "c255"], ["scaled"]),
        helper.make_node("Sub", ["scaled", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "std"], ["x0"]),
        helper.make_node("Conv", ["x0", "conv1.weight", "conv1.bias"], ["x1"], **conv),
        helper.make_node("Conv", ["x1", "conv2.weight", "conv2.bias"], ["x2"], **conv),
        helper.make_node("Relu", ["x2"], ["x3"]),
        helper.make_node("AveragePool", ["x3"], ["x4"], kernel_shape=[3, 3], strides=[3, 3]),
        helper.make_node("Flatten", ["x4"], ["x5"], axis=1),
        helper.make_node("Gemm", ["x5", "linear1.weight", "linear1.bias"], ["x6"]),
        helper.make_node("Relu", ["x6"], ["x7"]),
        helper.make_node("Gemm", ["x7", "linear2.weight", "linear2.bias"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "mnist_guide",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pyrite-benchmarks")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())


def test_digits(count: int) -> list[list[int]]:
    """The first `count` MNIST test images as lists of 784 grey levels (PYRITE_DATA's copy, or
    /work/shared/data's)."""
    from pyrite.dataset import MnistDataset

    try:
        dataset = MnistDataset("test", download=False)
    except Exception:  # noqa: BLE001 - any failure: try the shared copy
        dataset = MnistDataset("test", root="/work/shared/data", download=False)
    images, _ = dataset.arrays()
    return [images[i].reshape(-1).astype(int).tolist() for i in range(count)]


def noise_image() -> list[int]:
    """Uniform random grey levels (seed 0): the model is unsure of it (top probability 0.17),
    so its probabilities show errors that a confidently classified digit's (~1.0) hide."""
    return np.random.default_rng(0).integers(0, 256, 784).tolist()


def reference(digits: list[list[int]]) -> list[list[float]]:
    """pyrite's numpy-backend probabilities for each digit (the demo's own predict)."""
    from pyrite.demos import registry

    demo = registry.get("mnist")
    model = demo.load("numpy", demo.record)
    out: list[Any] = [demo.predict(model, {"pixels": d})["probabilities"] for d in digits]
    return out
