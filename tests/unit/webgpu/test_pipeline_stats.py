"""The native runtime counts the pipelines it compiles (`stats()["runtime"]["pipelines"]` and
`["pipeline_ms"]`, as the page's runtime does), and a compiled model's first call compiles every
pipeline it needs: the calls after it compile none (a benchmark times no compile)."""

from __future__ import annotations

import numpy as np

import pyrite
from pyrite.webgpu import WebGpu, stats
from pyrite.webgpu.fusion import Fusion


def _compiled(stack: pyrite.Backend) -> tuple[object, pyrite.Tensor]:
    """A small conv net's inference under pyrite.compile, as `pyrite import-onnx` writes it."""
    from pyrite.nn import Conv2dConfig, LinearConfig
    from pyrite.nn.functional import max_pool2d

    pyrite.seed(0)
    conv = Conv2dConfig(3, 8, (3, 3), padding=1).init(stack)
    head = LinearConfig(8 * 4 * 4, 5).init(stack)

    @pyrite.compile(warn=False, inference=True)
    def forward(x: pyrite.Tensor) -> pyrite.Tensor:
        y = max_pool2d(conv(x, activation="relu"), 2)
        return head(y.reshape([x.shape[0], -1])).softmax(1)

    x = np.random.default_rng(0).normal(size=(2, 3, 8, 8)).astype(np.float32)
    return forward, pyrite.tensor(x, device=stack)


def test_counts_each_new_pipeline_once(gpu: WebGpu) -> None:
    backend = WebGpu()
    before = stats(backend)["runtime"]
    assert before["pipelines"] == 0 and before["pipeline_ms"] == 0.0
    x = pyrite.tensor(np.arange(6, dtype=np.float32), device=backend)
    (x * 2.0).numpy()
    first = stats(backend)["runtime"]
    assert first["pipelines"] >= 1 and first["pipeline_ms"] > 0.0
    (x * 3.0).numpy()  # the same kernel: a scalar is metadata
    again = stats(backend)["runtime"]
    assert again["pipelines"] == first["pipelines"]
    assert again["pipeline_ms"] == first["pipeline_ms"]
    x.exp().numpy()  # a new kernel
    assert stats(backend)["runtime"]["pipelines"] > first["pipelines"]


def test_compiled_model_compiles_nothing_after_its_first_call(gpu: WebGpu) -> None:
    stack = Fusion(WebGpu())
    forward, x = _compiled(stack)
    got = forward(x).numpy()  # type: ignore[operator]
    first = stats(stack)
    assert first["runtime"]["pipelines"] > 0
    for _ in range(3):
        np.testing.assert_allclose(forward(x).numpy(), got, rtol=1e-6)  # type: ignore[operator]
    later = stats(stack)
    assert later["runtime"]["pipelines"] == first["runtime"]["pipelines"], \
        "a call after the first compiled a pipeline"
    assert later["runtime"]["pipeline_ms"] == first["runtime"]["pipeline_ms"]
    # the second call records the program (it runs eagerly), the others replay it: neither
    # compiles a kernel
    assert later["compile"]["captures"] == first["compile"]["captures"] + 1
    assert later["compile"]["replays"] == first["compile"]["replays"] + 2
