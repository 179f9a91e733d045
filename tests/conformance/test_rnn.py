"""Lstm, BiLstm and Gru on every backend: outputs and final states against the gate equations
written in numpy, and gradients of the input, the initial state and every param by finite
differences (on autodiff<numpy>, float64) or against autodiff<numpy> (the other backends).

The recurrent layers are ordinary tensor ops unrolled over time, so these cases check that
every backend runs that graph forward and backward; tests/unit/nn/test_rnn.py compares the
layers with PyTorch's nn.LSTM / nn.GRU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.module import Module
from pyrite.nn import BiLstmConfig, GruConfig, LstmConfig, LstmState

D_IN, D_HIDDEN, BATCH, SEQ = 2, 3, 2, 3
EPS = 1e-6
CONFIGS = {"lstm": LstmConfig(D_IN, D_HIDDEN), "bilstm": BiLstmConfig(D_IN, D_HIDDEN),
           "gru": GruConfig(D_IN, D_HIDDEN), "gru-reset-before": GruConfig(
               D_IN, D_HIDDEN, reset_after=False)}
Params = dict[str, np.ndarray]


# ---- the gate equations in numpy ---------------------------------------------------------------
def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def _linear(p: Params, name: str, v: np.ndarray) -> np.ndarray:
    return v @ p[f"{name}.weight"] + p[f"{name}.bias"]


def lstm_ref(p: Params, prefix: str, x: np.ndarray, c: np.ndarray, h: np.ndarray,
             reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(batch, seq, d) -> outputs (batch, seq, hidden), final cell, final hidden."""
    def gate(name: str, xt: np.ndarray, h: np.ndarray) -> np.ndarray:
        return (_linear(p, f"{prefix}{name}.input_transform", xt)
                + _linear(p, f"{prefix}{name}.hidden_transform", h))

    outs = [h] * x.shape[1]
    for t in reversed(range(x.shape[1])) if reverse else range(x.shape[1]):
        xt = x[:, t]
        i, f = _sigmoid(gate("input_gate", xt, h)), _sigmoid(gate("forget_gate", xt, h))
        g, o = np.tanh(gate("cell_gate", xt, h)), _sigmoid(gate("output_gate", xt, h))
        c = f * c + i * g
        h = o * np.tanh(c)
        outs[t] = h
    return np.stack(outs, 1), c, h


def gru_ref(p: Params, x: np.ndarray, h: np.ndarray, reset_after: bool) -> np.ndarray:
    def part(name: str, which: str, v: np.ndarray) -> np.ndarray:
        return _linear(p, f"{name}.{which}_transform", v)

    outs = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        z = _sigmoid(part("update_gate", "input", xt) + part("update_gate", "hidden", h))
        r = _sigmoid(part("reset_gate", "input", xt) + part("reset_gate", "hidden", h))
        if reset_after:
            n = np.tanh(part("new_gate", "input", xt) + r * part("new_gate", "hidden", h))
        else:
            n = np.tanh(part("new_gate", "input", xt) + part("new_gate", "hidden", r * h))
        h = (1 - z) * n + z * h
        outs.append(h)
    return np.stack(outs, 1)


def reference(kind: str, p: Params, x: np.ndarray, c0: np.ndarray,
              h0: np.ndarray) -> list[np.ndarray]:
    """What `run` returns, from the equations."""
    if kind.startswith("gru"):
        return [gru_ref(p, x, h0[0], reset_after=kind == "gru")]
    if kind == "lstm":
        out, c, h = lstm_ref(p, "", x, c0[0], h0[0])
        return [out, c, h]
    fwd, cf, hf = lstm_ref(p, "forward_lstm.", x, c0[0], h0[0])
    rev, cr, hr = lstm_ref(p, "reverse_lstm.", x, c0[1], h0[1], reverse=True)
    return [np.concatenate([fwd, rev], 2), np.stack([cf, cr]), np.stack([hf, hr])]


# ---- running the layers ------------------------------------------------------------------------
def run(kind: str, module: Module, x: pyrite.Tensor, c0: pyrite.Tensor,
        h0: pyrite.Tensor) -> list[pyrite.Tensor]:
    """Outputs and final states; c0, h0 are (2, batch, hidden), the second only for BiLstm."""
    if kind.startswith("gru"):
        return [module(x, h0[0])]
    if kind == "lstm":
        out, state = module(x, LstmState(c0[0], h0[0]))
    else:
        out, state = module(x, LstmState(c0, h0))
    return [out, state.cell, state.hidden]


def _setup(kind: str) -> tuple[Params, list[np.ndarray]]:
    """Fixed params (from the seeded numpy init) and inputs x, c0, h0 in float64."""
    pyrite.seed(7, device="numpy")
    module = CONFIGS[kind].init("numpy")
    params = {path: p.val.numpy().astype(np.float64) for path, p in module.named_params()}
    rng = np.random.default_rng(3)
    x = rng.normal(size=(BATCH, SEQ, D_IN))
    c0, h0 = (rng.normal(scale=0.5, size=(2, BATCH, D_HIDDEN)) for _ in range(2))
    return params, [x, c0, h0]


def _build(kind: str, params: Params, device: pyrite.Backend, dtype: str) -> Module:
    module = CONFIGS[kind].init("numpy")
    return module.map(lambda path, p: p.with_val(pyrite.tensor(params[path], device=device,
                                                               dtype=dtype)))


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_forward_matches_the_gate_equations(backend, kind) -> None:
    params, (x, c0, h0) = _setup(kind)
    module = _build(kind, params, backend, "f32")
    got = run(kind, module, *(pyrite.tensor(a.astype(np.float32), device=backend)
                              for a in (x, c0, h0)))
    for g, want in zip(got, reference(kind, params, x, c0, h0), strict=True):
        assert g.shape == want.shape
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-5)


# ---- gradients ---------------------------------------------------------------------------------
def _loss_weights(kind: str, params: Params, inputs: list[np.ndarray]) -> list[np.ndarray]:
    rng = np.random.default_rng(1234)
    return [rng.uniform(0.5, 1.5, size=r.shape) for r in reference(kind, params, *inputs)]


def _grads(kind: str, params: Params, inputs: list[np.ndarray], device: pyrite.Backend,
           dtype: str) -> dict[str, np.ndarray]:
    """Gradients of sum(output_i * w_i) for the inputs x, c0, h0 and every param."""
    module = _build(kind, params, device, dtype)
    ts = [pyrite.tensor(a, device=device, dtype=dtype).require_grad() for a in inputs]
    outs = run(kind, module, *ts)
    weights = _loss_weights(kind, params, inputs)
    loss = sum((o * pyrite.tensor(w, device=device, dtype=dtype)).sum()
               for o, w in zip(outs, weights, strict=True))
    grads = loss.backward()  # type: ignore[union-attr]
    found = {name: t.grad(grads) for name, t in zip(("x", "c0", "h0"), ts, strict=True)}
    found.update({path: p.grad(grads) for path, p in module.named_params()})
    out: dict[str, np.ndarray] = {}
    for name, g in found.items():
        # gru ignores c0, and a BiLstm/Lstm state's unused half gets no gradient: zeros
        shape = (inputs[("x", "c0", "h0").index(name)] if name in ("x", "c0", "h0")
                 else params[name]).shape
        out[name] = np.zeros(shape) if g is None else g.numpy().astype(np.float64)
    return out


def _finite_differences(kind: str, params: Params,
                        inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    weights = _loss_weights(kind, params, inputs)

    def value(p: Params, ins: list[np.ndarray]) -> float:
        return float(sum((r * w).sum() for r, w in
                         zip(reference(kind, p, *ins), weights, strict=True)))

    def diff(array: np.ndarray, evaluate: Callable[[np.ndarray], float]) -> np.ndarray:
        g = np.zeros_like(array)
        for idx in np.ndindex(array.shape):
            up, down = array.copy(), array.copy()
            up[idx] += EPS
            down[idx] -= EPS
            g[idx] = (evaluate(up) - evaluate(down)) / (2 * EPS)
        return g

    out: dict[str, Any] = {}
    for i, name in enumerate(("x", "c0", "h0")):
        out[name] = diff(inputs[i], lambda a, i=i: value(
            params, [a if j == i else v for j, v in enumerate(inputs)]))
    for path in params:
        out[path] = diff(params[path], lambda a, path=path: value({**params, path: a}, inputs))
    return out


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_gradients_of_inputs_states_and_params(ad_backend, kind) -> None:
    params, inputs = _setup(kind)
    if ad_backend.name == "autodiff<numpy>":
        got = _grads(kind, params, inputs, ad_backend, "f64")
        want = _finite_differences(kind, params, inputs)
        rtol, atol = 1e-5, 1e-6
    else:  # computed in the backend's float dtype: against autodiff<numpy>
        got = _grads(kind, params, inputs, ad_backend, ad_backend.float_dtype.short)
        want = _grads(kind, params, inputs, pyrite.device("autodiff<numpy>"), "f64")
        rtol, atol = 2e-3, 2e-3
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)
