"""End to end on webgpu: the MNIST guide model trains a few steps with autodiff<webgpu> as it
does with autodiff<numpy>, and records move between the backends. Dropout is off (each backend
draws its own masks); everything else is the guide model, batch 16 to stay quick on lavapipe."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.optim import AdamConfig

STEPS, BATCH, LR = 3, 16, 1e-3


def _batches(device: pyrite.Backend) -> list[MnistBatch]:
    """The same random batch STEPS times: its loss must fall."""
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (BATCH, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, BATCH).astype(np.int32)
    batch = MnistBatch(pyrite.tensor((pixels / 255 - 0.1307) / 0.3081, device=device),
                       pyrite.tensor(labels, device=device))
    return [batch] * STEPS


def _params(model: object) -> dict[str, np.ndarray]:
    return {path: p.val.numpy() for path, p in model.named_params()}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def start() -> object:
    pyrite.seed(0)
    return ModelConfig(10, 512, dropout=0.0).init("autodiff<numpy>")


def test_training_tracks_autodiff_numpy(gpu, start) -> None:
    config = ModelConfig(10, 512, dropout=0.0)
    runs = []
    for device in (pyrite.device("autodiff<numpy>"), Autodiff(gpu)):
        model = config.init(device).load_record(start.into_record())
        optim, losses = AdamConfig().init(), []
        for batch in _batches(device):
            out = model.train_step(batch)
            losses.append(float(out.item.loss.numpy()[0]))
            model = optim.step(LR, model, out.grads)
        runs.append((losses, _params(model)))
    (np_losses, np_params), (gpu_losses, gpu_params) = runs
    np.testing.assert_allclose(gpu_losses, np_losses, rtol=1e-4)
    assert np_losses[-1] < np_losses[0]  # it did train
    for path, want in np_params.items():
        moved = np.abs(want - _params(start)[path]).max()
        # Adam moves every weight by about LR a step; the backends agree far closer than that
        np.testing.assert_allclose(gpu_params[path], want, atol=LR * 0.05, err_msg=path)
        assert moved > LR * 0.5, path


def test_records_load_across_backends(gpu, start, tmp_path) -> None:
    images = _batches(pyrite.device("numpy"))[0].images
    numpy_model = start.valid()
    config = ModelConfig(10, 512, dropout=0.0)
    path = numpy_model.save_file(tmp_path / "from_numpy")
    gpu_model = config.init(gpu).load_file(path)
    want = numpy_model.forward(images).numpy()
    got = gpu_model.forward(images.to_device(gpu)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    back = config.init("numpy").load_file(gpu_model.save_file(tmp_path / "from_webgpu"))
    np.testing.assert_array_equal(back.forward(images).numpy(), want)


@pytest.mark.parametrize("fused", [False, True], ids=["webgpu", "fusion"])
def test_training_step_makes_no_dense_copies(gpu, start, fused) -> None:
    # The backward pass reads its transposed operands in place: x.T @ g and g @ w.T of both
    # linear layers (tiled matmuls at batch 64) and the flipped, transposed conv kernel of
    # conv2's input gradient. Before, each was copied dense first: 5 copies a step.
    from pyrite.webgpu.fusion import Fusion
    device = Autodiff(Fusion(gpu) if fused else gpu)
    model = ModelConfig(10, 512, dropout=0.0).init(device).load_record(start.into_record())
    rng = np.random.default_rng(1)
    batch = MnistBatch(pyrite.tensor(rng.normal(size=(64, 28, 28)).astype(np.float32),
                                     device=device),
                       pyrite.tensor(rng.integers(0, 10, 64).astype(np.int32), device=device))
    optim = AdamConfig().init()
    for step in range(2):  # the second step runs with every plan and pipeline made
        before = gpu.kernels.copies
        out = model.train_step(batch)
        model = optim.step(LR, model, out.grads)
        float(out.item.loss.numpy()[0])
        assert gpu.kernels.copies == before, f"step {step}"
