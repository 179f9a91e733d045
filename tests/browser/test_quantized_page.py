"""An int8 export (`pyrite export-web --precision int8`): the page downloads the quantized
MNIST record, predicts with it on WebGPU and says so, and the integer kernels give in the page
what they give natively."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import harness
from .test_embeds import StaticServer

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

HOST = """<!doctype html>
<html><head><meta charset="utf-8"><title>int8</title><link rel="icon" href="data:,"></head>
<body><script type="module">
  import * as pyrite from "./bundle/pyrite.js";
  window.pyrite = pyrite;
  window.loaded = pyrite.load({device: "webgpu", models: ["mnist"]});
</script></body></html>
"""

# the same x and weight natively and in the page: the int8 accumulators must agree exactly
KERNELS = """
import pyrite
from pyrite.quantization import QuantizationScheme, QuantizationType, int_kernels
S, T = QuantizationScheme, QuantizationType
def grid(rows, cols, seed):  # no numpy in the page: values from a small formula
    return [[((i * 7 + j * 13 + seed) % 23 - 11) / 5.0 for j in range(cols)] for i in range(rows)]
x = pyrite.tensor(grid(9, 70, 1), device="webgpu")
w = pyrite.tensor(grid(70, 11, 2), device="webgpu")
xq = x.quantize_dynamic(S.PerTensorSymmetric(T.QInt8))
qw = w.quantize_dynamic(S.PerChannelSymmetric(T.QInt8))
q4 = w.quantize_dynamic(S.PerBlock(T.QInt4, 16))
[int_kernels(x.device).int8_matmul(xq.values, qw).to_list(),
 (x @ q4).to_list(), int_kernels(x.device).dot_product]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--out",
                           str(root / "bundle"), "--model", "mnist", "--precision", "int8"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (root / "index.html").write_text(HOST)
    server = StaticServer(root)
    yield root, server.url
    server.stop()


def test_int8_export_runs_the_quantized_model_in_the_page(
        site: tuple[Path, str], launch_chromium: Any) -> None:
    root, url = site
    manifest = json.loads((root / "bundle" / "manifest.json").read_text())
    assert manifest["models"]["mnist"]["precision"] == "int8"
    shipped = Path(__file__).resolve().parents[2] / "demos" / "mnist" / "mnist.bin"
    record = next((root / "bundle" / "models").glob("mnist*.bin"))
    assert record.stat().st_size < 0.55 * shipped.stat().st_size

    page = launch_chromium().new_page()
    page.set_default_timeout(300_000)
    page.goto(f"{url}/")
    page.evaluate("window.loaded")
    from pyrite.dataset import MnistDataset
    item = MnistDataset.test().get(0)
    assert item is not None
    out = page.evaluate("(pixels) => pyrite.predict('mnist', {pixels})", list(item["image"]))
    assert out["precision"] == "int8"
    assert out["label"] == item["label"]
    assert out["backend"].startswith("webgpu")

    acc, weight_only, dot = page.evaluate(f"pyrite.run({json.dumps(KERNELS)})")
    native: dict[str, Any] = {}
    exec(compile(KERNELS.replace("[int_kernels", "result = [int_kernels"), "kernels", "exec"),
         native)  # noqa: S102 - our code
    want_acc, want_weight_only, _ = native["result"]
    assert acc == want_acc
    import numpy as np
    np.testing.assert_allclose(weight_only, want_weight_only, rtol=1e-5, atol=1e-5)
    assert dot in ("dot4I8Packed", "unpacked (portable)")


def test_int8_squeezenet_export_classifies_like_float(tmp_path: Path,
                                                      launch_chromium: Any) -> None:
    """The classification demo's int8 record in the page: the photo's top class is float's."""
    from pyrite.dataset.download import data_root
    from pyrite.demos import registry
    from pyrite.demos.image_classification import predict as classify
    from pyrite.demos.image_classification.image import photo_pixels
    reason = registry.get("squeezenet").missing()
    if reason is not None:
        pytest.skip(reason)
    photo = data_root() / "samples" / "cat.jpg"
    if not photo.exists():
        pytest.skip(f"no sample photo at {photo}")
    pixels = list(photo_pixels(photo))
    done = subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--out",
                           str(tmp_path / "bundle"), "--model", "squeezenet", "--precision",
                           "int8"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    (tmp_path / "index.html").write_text(HOST.replace('["mnist"]', '["squeezenet"]'))
    server = StaticServer(tmp_path)
    try:
        page = launch_chromium().new_page()
        page.set_default_timeout(600_000)
        page.goto(f"{server.url}/")
        page.evaluate("window.loaded")
        out = page.evaluate("(pixels) => pyrite.predict('squeezenet', {pixels})", pixels)
    finally:
        server.stop()
    native = registry.get("squeezenet").load("numpy")
    want = classify.predict(native, pixels)
    assert out["precision"] == "int8"
    assert out["index"] == want["index"]
