"""examples/custom_kernel.py: both ops equal their composites (outputs and gradients) on numpy,
fused and unfused webgpu, and finite differences in f64; the kernel really runs on webgpu (its
launch, its dispatch and its pipeline key), inside a Fusion stream, and under pyrite.compile."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.optim import AdamConfig
from pyrite.webgpu import WebGpu, fusion
from pyrite.webgpu import custom as webgpu_custom
from pyrite.webgpu.fusion import Fusion

EXAMPLE = Path(__file__).parents[3] / "examples" / "custom_kernel.py"


def _load() -> ModuleType:
    found = sys.modules.get("custom_kernel_example")
    if found is not None:
        return found
    spec = importlib.util.spec_from_file_location("custom_kernel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = _load()
DEVICES = ["numpy", "webgpu", "webgpu-unfused"]


@pytest.mark.parametrize("name", DEVICES)
def test_ops_equal_their_composites(name: str,
                                    device_named: Callable[[str], pyrite.Backend]) -> None:
    found = ex.check(Autodiff(device_named(name)))
    assert set(found) == {f"{op} {what}" for op in ("fused", "tiled") for what in (
        "forward", "grad lhs", "grad rhs", "grad bias")} | {"softplus forward", "softplus grad"}
    for what, value in found.items():
        assert value <= 1e-5, (what, value)


def _finite_difference(f: Callable[[np.ndarray], float], x: np.ndarray) -> np.ndarray:
    grad = np.zeros_like(x)
    eps = 1e-6
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def test_gradients_equal_finite_differences_in_f64() -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5)), rng.normal(size=(5,)),
              rng.normal(size=(2, 3, 5))]
    ad = pyrite.device("autodiff<numpy>")
    lhs, rhs, bias, weight = (pyrite.tensor(a, device=ad, dtype="f64") for a in arrays)
    tracked = [t.require_grad() for t in (lhs, rhs, bias)]
    grads = (ex.fused_matmul_add_relu(*tracked) * weight).sum().backward()
    for i, t in enumerate(tracked):
        def f(v: np.ndarray, i: int = i) -> float:
            args = [a.copy() for a in arrays[:3]]
            args[i] = v
            out = np.maximum(args[0] @ args[1] + args[2], 0.0)
            return float((out * arrays[3]).sum())
        np.testing.assert_allclose(t.grad(grads).numpy(), _finite_difference(f, arrays[i]),
                                   rtol=1e-5, atol=1e-7)
    x_data = rng.normal(size=(3, 4)) * 3
    x = pyrite.tensor(x_data, device=ad, dtype="f64").require_grad()
    beta = pyrite.tensor([[1.5]], device=ad, dtype="f64").require_grad()
    out = ex.scaled_softplus(x, beta)
    grads = (out * out).sum().backward()

    def g(v: np.ndarray, b: float = 1.5) -> float:
        return float(((np.logaddexp(0.0, b * v) / b) ** 2).sum())
    np.testing.assert_allclose(x.grad(grads).numpy(), _finite_difference(g, x_data), rtol=1e-5,
                               atol=1e-7)
    dbeta = _finite_difference(lambda b: g(x_data, float(b[0, 0])), np.array([[1.5]]))
    np.testing.assert_allclose(beta.grad(grads).numpy(), dbeta, rtol=1e-5)


def _runtime_dispatches(device: pyrite.Backend) -> float:
    return float(pyrite.webgpu.stats(device)["runtime"]["dispatches"])


def test_the_kernel_runs_on_webgpu(device_named: Callable[[str], pyrite.Backend]) -> None:
    gpu = device_named("webgpu-unfused")
    assert isinstance(gpu, WebGpu)
    lhs, rhs, bias = (pyrite.tensor(np.ones(s, np.float32), device=gpu)
                      for s in ((4, 8), (8, 3), (3,)))
    launches = webgpu_custom.LAUNCHES.get("fused_matmul_add_relu", 0)
    dispatches = _runtime_dispatches(gpu)
    out = ex.fused_matmul_add_relu(lhs, rhs, bias)
    assert _runtime_dispatches(gpu) - dispatches == 1  # no copy of the broadcast bias
    assert webgpu_custom.LAUNCHES["fused_matmul_add_relu"] == launches + 1
    assert pyrite.webgpu.stats(gpu)["custom_kernels"]["fused_matmul_add_relu"] == launches + 1
    keys = [key for key, _ in gpu.kernels._sources
            if isinstance(key, webgpu_custom.CustomKernelKey)]
    assert any(k.kernel == "custom" and k.op == "fused_matmul_add_relu" for k in keys)
    np.testing.assert_allclose(out.numpy(), np.full((4, 3), 9.0))


def test_fusion_flushes_for_the_kernel_and_keeps_recording(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    dev = device_named("webgpu")
    assert isinstance(dev, Fusion)
    rng = np.random.default_rng(1)
    a, w, b = (rng.normal(size=s).astype(np.float32) for s in ((5, 6), (6, 4), (4,)))
    x, wt, bt = (pyrite.tensor(v, device=dev) for v in (a, w, b))
    launches = webgpu_custom.LAUNCHES.get("fused_matmul_add_relu", 0)
    with fusion.inspect() as seen:
        y = ex.fused_matmul_add_relu(x * 2.0 + 1.0, wt, bt)  # flushes the pending x * 2 + 1
        z = ex.scaled_softplus(y * 3.0 - 1.0, 2.0).exp()  # recorded after the kernel
        got = z.numpy()
    assert webgpu_custom.LAUNCHES["fused_matmul_add_relu"] == launches + 1
    assert seen.kernels == 2, seen.groups  # before the kernel, and one group after it
    assert seen.flushes == 2
    ref = np.maximum((a * 2 + 1) @ w + b, 0) * 3 - 1
    np.testing.assert_allclose(got, np.exp(np.logaddexp(0, 2 * ref) / 2), rtol=1e-5)


def test_the_elementwise_op_is_one_registry_entry_fused_with_its_neighbours(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    dev = device_named("webgpu")
    x = pyrite.tensor([[-30.0, -1.0, 0.0, 2.0, 40.0]], device=dev)
    with fusion.inspect() as seen:
        got = (ex.scaled_softplus(x * 0.5, 2.0) + 1.0).numpy()
    assert seen.kernels == 1
    assert pyrite.REGISTRY["scaled_softplus"] is ex.scaled_softplus.entry
    v = np.array([[-30.0, -1.0, 0.0, 2.0, 40.0]]) * 0.5
    np.testing.assert_allclose(got, np.logaddexp(0, 2 * v) / 2 + 1, rtol=1e-6, atol=1e-6)


def test_a_compiled_training_step_replays_the_kernel() -> None:
    def train(compiled: bool) -> list[float]:
        device = Autodiff(Fusion(WebGpu(seed=3)))
        device.seed(3)
        model = ex.RingNetConfig(8).init(device)
        optim = AdamConfig().init()
        x, y = ex.rings(32, 0, device)
        loss_fn = ex.CrossEntropyLossConfig().init()

        def step(model: object, lr: float) -> tuple[object, pyrite.Tensor]:
            loss = loss_fn(model.forward(x), y)  # type: ignore[attr-defined]
            return optim.step(lr, model, loss.backward()), loss

        run = pyrite.compile(step, enabled=compiled)
        losses = []
        for _ in range(6):
            model, loss = run(model, 2e-2)
            losses.append(loss.into_scalar())
        if compiled:
            assert run.replays >= 3 and run.fallbacks == 0, (run.captures, run.replays)
        return losses

    launches = webgpu_custom.LAUNCHES.get("fused_matmul_add_relu", 0)
    eager = train(False)
    eager_launches = webgpu_custom.LAUNCHES["fused_matmul_add_relu"] - launches
    compiled = train(True)
    compiled_launches = webgpu_custom.LAUNCHES["fused_matmul_add_relu"] - launches - eager_launches
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    # replays launch no Python: the kernel ran only in the captured (eager) calls
    assert 0 < compiled_launches < eager_launches


def test_a_model_using_the_op_round_trips_through_a_record(
        tmp_path: Path, device_named: Callable[[str], pyrite.Backend]) -> None:
    _, _, model = ex.train("autodiff<numpy>", 3)
    path = model.save_file(tmp_path / "ringnet")
    gpu = device_named("webgpu")
    loaded = ex.RingNetConfig().init(gpu).load_file(path)
    x, _ = ex.rings(8, 1, gpu)
    got = loaded.forward(x).numpy()
    want = model.valid().forward(pyrite.tensor(x.numpy(), device="numpy")).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
