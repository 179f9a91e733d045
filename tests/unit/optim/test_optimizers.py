"""Each optimizer's updates match a hand-written numpy reference over several steps (and
torch.optim when torch is installed); clipping, weight decay and momentum variants included."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import pyrite
from pyrite.module import Module, Param
from pyrite.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsParams,
    MomentumConfig,
    Optimizer,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

DEVICE = "autodiff<numpy>"


class TwoParams(Module):
    def __init__(self, weight: np.ndarray, bias: np.ndarray) -> None:
        self.weight = Param(pyrite.tensor(weight, device=DEVICE))
        self.bias = Param(pyrite.tensor(bias, device=DEVICE))


def step_pyrite(optim: Optimizer, lr: float, start: dict[str, np.ndarray],
                grads: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    model = TwoParams(start["weight"], start["bias"])
    inner = pyrite.device("numpy")
    for g in grads:
        gp = GradientsParams()
        gp.register(model.weight.id, pyrite.tensor(g["weight"], device=inner))
        gp.register(model.bias.id, pyrite.tensor(g["bias"], device=inner))
        model = optim.step(lr, model, gp)
    assert model.weight.val.device.name == DEVICE
    assert model.weight.val.is_require_grad()
    return {"weight": model.weight.val.numpy(), "bias": model.bias.val.numpy()}


# ---- numpy references ---------------------------------------------------------------------------
Array = np.ndarray
Step = Callable[[float, Array, Array, dict], Array]


Array = np.ndarray
Step = Callable[[float, Array, Array, dict], Array]


def sgd(weight_decay: float = 0.0, momentum: float = 0.0, dampening: float = 0.0,
        nesterov: bool = False) -> Step:
    def step(lr: float, p: Array, g: Array, s: dict) -> Array:
        if weight_decay:
            g = g + p * np.float32(weight_decay)
        if momentum:
            buf = g if "buf" not in s else s["buf"] * np.float32(momentum) + g * np.float32(
                1 - dampening)
            s["buf"] = buf
            g = g + buf * np.float32(momentum) if nesterov else buf
        return p - g * np.float32(lr)
    return step


def adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-5, weight_decay: float = 0.0,
         decoupled: float = 0.0) -> Step:
    def step(lr: float, p: Array, g: Array, s: dict) -> Array:
        if weight_decay:
            g = g + p * np.float32(weight_decay)
        m = s.get("m", np.zeros_like(p)) * np.float32(b1) + g * np.float32(1 - b1)
        v = s.get("v", np.zeros_like(p)) * np.float32(b2) + g * g * np.float32(1 - b2)
        t = s.get("t", 0) + 1
        s.update(m=m, v=v, t=t)
        m_hat = m / np.float32(1 - b1 ** t)
        v_hat = v / np.float32(1 - b2 ** t)
        if decoupled:
            p = p * np.float32(1 - lr * decoupled)
        return p - m_hat / (np.sqrt(v_hat) + np.float32(eps)) * np.float32(lr)
    return step


def adagrad(lr_decay: float = 0.0, eps: float = 1e-5, weight_decay: float = 0.0) -> Step:
    def step(lr: float, p: Array, g: Array, s: dict) -> Array:
        if weight_decay:
            g = g + p * np.float32(weight_decay)
        t = s.get("t", 0) + 1
        total = s.get("sum", np.zeros_like(p)) + g * g
        s.update(t=t, sum=total)
        clr = lr / (1 + (t - 1) * lr_decay)
        return p - g / (np.sqrt(total) + np.float32(eps)) * np.float32(clr)
    return step


def rmsprop(alpha: float = 0.99, eps: float = 1e-5, centered: bool = False,
            momentum: float = 0.0, weight_decay: float = 0.0) -> Step:
    def step(lr: float, p: Array, g: Array, s: dict) -> Array:
        if weight_decay:
            g = g + p * np.float32(weight_decay)
        sq = s.get("sq", np.zeros_like(p)) * np.float32(alpha) + g * g * np.float32(1 - alpha)
        s["sq"] = sq
        avg = sq
        if centered:
            ga = s.get("ga", np.zeros_like(p)) * np.float32(alpha) + g * np.float32(1 - alpha)
            s["ga"] = ga
            avg = sq - ga * ga
        d = g / (np.sqrt(avg) + np.float32(eps))
        if momentum:
            d = s["buf"] * np.float32(momentum) + d if "buf" in s else d
            s["buf"] = d
        return p - d * np.float32(lr)
    return step


def run(step: Step, lr: float, start: dict[str, Array], grads: list[dict[str, Array]],
        clip: Callable[[Array], Array] | None = None) -> dict[str, Array]:
    """Apply `step` to each param over the gradient sequence; the params after the last step."""
    params = {k: v.copy() for k, v in start.items()}
    states: dict[str, dict] = {k: {} for k in start}
    for g in grads:
        for k in params:
            gk = g[k] if clip is None else clip(g[k])
            params[k] = step(lr, params[k], gk, states[k]).astype(np.float32)
    return params


def clip_norm(threshold: float) -> Callable[[Array], Array]:
    def clip(g: Array) -> Array:
        norm = float(np.sqrt((g.astype(np.float64) ** 2).sum()))
        return g * np.float32(threshold / (norm + 1e-6)) if norm > threshold else g
    return clip


def clip_value(threshold: float) -> Callable[[Array], Array]:
    return lambda g: np.clip(g, -threshold, threshold)


CASES = [
    ("sgd", SgdConfig(), sgd(), 0.1),
    ("sgd-decay", SgdConfig(weight_decay=WeightDecayConfig(0.05)), sgd(weight_decay=0.05), 0.1),
    ("sgd-momentum", SgdConfig(momentum=MomentumConfig()), sgd(momentum=0.9, dampening=0.1), 0.1),
    ("sgd-nesterov", SgdConfig(momentum=MomentumConfig(0.8, dampening=0.0, nesterov=True),
                               weight_decay=WeightDecayConfig(0.01)),
     sgd(momentum=0.8, nesterov=True, weight_decay=0.01), 0.05),
    ("adam", AdamConfig(), adam(), 0.01),
    ("adam-decay", AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-7,
                              weight_decay=WeightDecayConfig(0.1)),
     adam(b1=0.8, b2=0.99, eps=1e-7, weight_decay=0.1), 0.01),
    ("adamw", AdamWConfig(), adam(decoupled=1e-4), 0.01),
    ("adamw-strong", AdamWConfig(weight_decay=0.5), adam(decoupled=0.5), 0.1),
    ("adagrad", AdaGradConfig(), adagrad(), 0.1),
    ("adagrad-decay", AdaGradConfig(lr_decay=0.5, weight_decay=WeightDecayConfig(0.1)),
     adagrad(lr_decay=0.5, weight_decay=0.1), 0.1),
    ("rmsprop", RmsPropConfig(), rmsprop(), 0.01),
    ("rmsprop-centered-momentum", RmsPropConfig(alpha=0.9, centered=True, momentum=0.5,
                                                weight_decay=WeightDecayConfig(0.01)),
     rmsprop(alpha=0.9, centered=True, momentum=0.5, weight_decay=0.01), 0.01),
]


@pytest.mark.parametrize(("name", "config", "reference", "lr"), CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_reference(name: str, config: object, reference: Step, lr: float,
                                 start: dict, grad_steps: list) -> None:
    got = step_pyrite(config.init(), lr, start, grad_steps)  # type: ignore[attr-defined]
    want = run(reference, lr, start, grad_steps)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6)
        assert not np.allclose(got[key], start[key])  # the params did move


@pytest.mark.parametrize(("clipping", "clip"), [
    (GradientClippingConfig.norm(0.5), clip_norm(0.5)),
    (GradientClippingConfig.value(0.3), clip_value(0.3)),
], ids=["norm", "value"])
def test_gradient_clipping(clipping: GradientClippingConfig, clip: Callable,
                           start: dict, grad_steps: list) -> None:
    got = step_pyrite(SgdConfig().with_grad_clipping(clipping).init(), 0.1, start, grad_steps)
    want = run(sgd(), 0.1, start, grad_steps, clip=clip)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6)


def test_clip_norm_keeps_small_gradients_exactly() -> None:
    g = pyrite.tensor([0.3, -0.4], device="numpy")  # norm 0.5
    assert GradientClippingConfig.norm(1.0).init().clip(g).to_list() == g.to_list()
    clipped = GradientClippingConfig.norm(0.1).init().clip(g).numpy()
    assert np.linalg.norm(clipped) == pytest.approx(0.1, rel=1e-4)


def test_params_without_gradient_or_frozen_are_untouched(start: dict) -> None:
    model = TwoParams(start["weight"], start["bias"])
    model.bias = model.bias.set_require_grad(False)
    grads = GradientsParams()
    grads.register(model.bias.id, pyrite.tensor(np.ones(3, np.float32), device="numpy"))
    optim = AdamConfig().init()
    out = optim.step(0.1, model, grads)
    assert out.weight is model.weight and out.bias is model.bias
    assert optim.num_states() == 0


def test_adam_leaves_the_old_values_alone(start: dict) -> None:
    """numpy's Adam updates its moments in place, never a parameter's old value or a moment
    handed out before the step."""
    model = TwoParams(start["weight"], start["bias"])
    optim = AdamConfig().init()
    grads = GradientsParams()
    grads.register(model.weight.id, pyrite.tensor(np.ones((2, 3), np.float32), device="numpy"))
    model = optim.step(0.1, model, grads)
    before = model.weight.val.numpy().copy()
    moment = optim._states[model.weight.id]["moment_1"].numpy().copy()
    kept = model.weight.val
    grads = GradientsParams()
    grads.register(model.weight.id, pyrite.tensor(np.ones((2, 3), np.float32), device="numpy"))
    out = optim.step(0.1, model, grads)
    np.testing.assert_array_equal(kept.numpy(), before)
    assert not np.allclose(out.weight.val.numpy(), before)
    # m = 0.9 m + 0.1 g with g = 1
    np.testing.assert_allclose(optim._states[model.weight.id]["moment_1"].numpy(),
                               0.9 * moment + 0.1, rtol=1e-6)


# ---- torch, when it is installed ----------------------------------------------------------------
TORCH_CASES = [
    ("sgd-momentum", SgdConfig(momentum=MomentumConfig(0.9, dampening=0.1),
                               weight_decay=WeightDecayConfig(0.01)),
     "SGD", dict(momentum=0.9, dampening=0.1, weight_decay=0.01), 0.1),
    ("sgd-nesterov", SgdConfig(momentum=MomentumConfig(0.9, dampening=0.0, nesterov=True)),
     "SGD", dict(momentum=0.9, nesterov=True), 0.1),
    ("adam", AdamConfig(epsilon=1e-8, weight_decay=WeightDecayConfig(0.01)),
     "Adam", dict(eps=1e-8, weight_decay=0.01), 0.01),
    ("adam-plain", AdamConfig(epsilon=1e-8), "Adam", dict(eps=1e-8), 0.01),  # numpy in place
    ("adamw", AdamWConfig(epsilon=1e-8, weight_decay=0.1), "AdamW",
     dict(eps=1e-8, weight_decay=0.1), 0.01),
    ("adagrad", AdaGradConfig(lr_decay=0.1, epsilon=1e-10), "Adagrad",
     dict(lr_decay=0.1, eps=1e-10), 0.1),
    ("rmsprop", RmsPropConfig(alpha=0.9, epsilon=1e-8, centered=True, momentum=0.5), "RMSprop",
     dict(alpha=0.9, eps=1e-8, centered=True, momentum=0.5), 0.01),
]


@pytest.mark.parametrize(("name", "config", "torch_name", "torch_kwargs", "lr"), TORCH_CASES,
                         ids=[c[0] for c in TORCH_CASES])
def test_matches_torch(name: str, config: object, torch_name: str, torch_kwargs: dict,
                       lr: float, start: dict, grad_steps: list) -> None:
    torch = pytest.importorskip("torch")
    params = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in start.items()}
    topt = getattr(torch.optim, torch_name)(list(params.values()), lr=lr, **torch_kwargs)
    for g in grad_steps:
        for k, p in params.items():
            p.grad = torch.tensor(g[k])
        topt.step()
    got = step_pyrite(config.init(), lr, start, grad_steps)  # type: ignore[attr-defined]
    for k, p in params.items():
        np.testing.assert_allclose(got[k], p.detach().numpy(), rtol=1e-5, atol=1e-6)
