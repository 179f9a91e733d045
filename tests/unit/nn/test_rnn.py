"""Lstm, BiLstm and Gru: numbers and gradients against PyTorch's nn.LSTM / nn.GRU (live where
torch is installed, from fixtures/rnn_reference.json everywhere), configs, printing, records,
and every available backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.errors import ShapeError
from pyrite.module import Module, Param
from pyrite.nn import (
    BiLstm,
    BiLstmConfig,
    GateController,
    GateControllerConfig,
    Gru,
    GruConfig,
    Linear,
    Lstm,
    LstmConfig,
    LstmState,
)

AD = "autodiff<numpy>"
FIXTURE = Path(__file__).parent / "fixtures" / "rnn_reference.json"
#: torch's gate order within its stacked weights, as pyrite attribute names
ORDER = {"lstm": ("input_gate", "forget_gate", "cell_gate", "output_gate"),
         "gru": ("reset_gate", "update_gate", "new_gate")}


# ---- torch layout <-> pyrite gates ------------------------------------------------------------
def _gates(kind: str, params: dict[str, Any], suffix: str, device: Any) -> dict[str, Any]:
    """Split torch's stacked weight_ih/weight_hh (gates on dim 0) into GateControllers."""
    w_ih, w_hh = (np.asarray(params[f"weight_{k}_l0{suffix}"]) for k in ("ih", "hh"))
    b_ih, b_hh = (np.asarray(params[f"bias_{k}_l0{suffix}"]) for k in ("ih", "hh"))
    h = w_hh.shape[1]

    def linear(w: Any, b: Any) -> Linear:
        return Linear(Param(pyrite.tensor(w.T, device=device)),
                      Param(pyrite.tensor(b, device=device)))

    return {name: GateController(linear(w_ih[k * h:(k + 1) * h], b_ih[k * h:(k + 1) * h]),
                                 linear(w_hh[k * h:(k + 1) * h], b_hh[k * h:(k + 1) * h]))
            for k, name in enumerate(ORDER[kind])}


def from_torch(kind: str, params: dict[str, Any], bidirectional: bool = False,
               device: Any = AD) -> Module:
    h = np.asarray(params["weight_hh_l0"]).shape[1]
    if kind == "gru":
        return Gru(**_gates(kind, params, "", device), d_hidden=h)
    lstms = [Lstm(**_gates(kind, params, s, device), d_hidden=h) for s in ("", "_reverse")[
        :1 + bidirectional]]
    return BiLstm(*lstms, d_hidden=h) if bidirectional else lstms[0]


def torch_grads(kind: str, module: Module, grads: Any, suffix: str = "") -> dict[str, Any]:
    """The module's param gradients restacked into torch's layout."""
    parts: dict[str, list[Any]] = {}
    for name in ORDER[kind]:
        gate = getattr(module, name)
        for key, lin in (("ih", gate.input_transform), ("hh", gate.hidden_transform)):
            parts.setdefault(f"weight_{key}_l0{suffix}", []).append(
                lin.weight.grad(grads).numpy().T)
            parts.setdefault(f"bias_{key}_l0{suffix}", []).append(lin.bias.grad(grads).numpy())
    return {k: np.concatenate(v) for k, v in parts.items()}


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """pyrite's output, final state and gradients for a fixture-shaped case, loss sum(out^2)/2."""
    kind, bi = case["kind"], case["bidirectional"]
    module = from_torch(kind, case["params"], bi)
    x = pyrite.tensor(np.asarray(case["x"]), device=AD).require_grad()
    h0 = np.asarray(case["h0"])
    got: dict[str, Any] = {}
    if kind == "gru":
        out = module(x, pyrite.tensor(h0[0], device=AD))
        got["hn"] = out.numpy()[:, -1][None]
    else:
        c0 = np.asarray(case["c0"])
        state = LstmState(pyrite.tensor(c0 if bi else c0[0], device=AD),
                          pyrite.tensor(h0 if bi else h0[0], device=AD))
        out, final = module(x, state)
        got["hn"], got["cn"] = (s.numpy() if bi else s.numpy()[None]
                                for s in (final.hidden, final.cell))
    grads = (out * out / 2.0).sum().backward()
    got["output"], got["x_grad"] = out.numpy(), x.grad(grads).numpy()
    if bi:
        got["param_grads"] = {**torch_grads(kind, module.forward_lstm, grads),
                              **torch_grads(kind, module.reverse_lstm, grads, "_reverse")}
    else:
        got["param_grads"] = torch_grads(kind, module, grads)
    return got


def _id(case: dict[str, Any]) -> str:
    return ("bi" if case["bidirectional"] else "") + case["kind"]


CASES = json.loads(FIXTURE.read_text())["cases"]


# ---- numbers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_matches_committed_torch_values(case: dict[str, Any]) -> None:
    got = run_case(case)
    for key in ("output", "x_grad", "hn", *(("cn",) if case["kind"] == "lstm" else ())):
        np.testing.assert_allclose(got[key], case[key], atol=1e-10, err_msg=key)
    for name, want in case["param_grads"].items():
        np.testing.assert_allclose(got["param_grads"][name], want, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("kind, bi", [("lstm", False), ("lstm", True), ("gru", False)])
def test_matches_torch_live(kind: str, bi: bool) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    rng = np.random.default_rng(3)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    layer = cls(4, 5, batch_first=True, bidirectional=bi).double()
    x = torch.tensor(rng.normal(size=(3, 6, 4)), requires_grad=True)
    out, _ = layer(x)
    (out ** 2 / 2).sum().backward()
    params = {n: p.detach().numpy() for n, p in layer.named_parameters()}
    module = from_torch(kind, params, bi)
    px = pyrite.tensor(x.detach().numpy(), device=AD).require_grad()
    got = module(px) if kind == "gru" else module(px)[0]
    grads = (got * got / 2.0).sum().backward()
    np.testing.assert_allclose(got.numpy(), out.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(px.grad(grads).numpy(), x.grad.numpy(), atol=1e-10)
    mine = torch_grads(kind, module.forward_lstm if bi else module, grads)
    if bi:
        mine.update(torch_grads(kind, module.reverse_lstm, grads, "_reverse"))
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(mine[name], p.grad.numpy(), atol=1e-10, err_msg=name)


def test_gru_reset_before(rng: np.random.Generator) -> None:
    """reset_after=False applies r to h before the new gate's hidden Linear (Burn's variant)."""
    gru = GruConfig(3, 2, reset_after=False).init(AD)
    x = rng.normal(size=(2, 4, 3))
    w = {n: (gru.new_gate if n == "n" else getattr(gru, f"{n}_gate")) for n in
         ("update", "reset", "n")}
    lin = {k: {s: (g.input_transform if s == "i" else g.hidden_transform) for s in "ih"}
           for k, g in w.items()}

    def aff(layer: Linear, v: Any) -> Any:
        return v @ layer.weight.val.numpy() + layer.bias.val.numpy()

    h = np.zeros((2, 2))
    want = []
    for t in range(4):
        xt = x[:, t]
        z = 1 / (1 + np.exp(-(aff(lin["update"]["i"], xt) + aff(lin["update"]["h"], h))))
        r = 1 / (1 + np.exp(-(aff(lin["reset"]["i"], xt) + aff(lin["reset"]["h"], h))))
        n = np.tanh(aff(lin["n"]["i"], xt) + aff(lin["n"]["h"], r * h))
        h = (1 - z) * n + z * h
        want.append(h)
    got = gru(pyrite.tensor(x.astype(np.float32), device=AD)).numpy()
    np.testing.assert_allclose(got, np.stack(want, 1), rtol=1e-4, atol=1e-5)


def test_gradients_by_finite_differences(module_gradcheck: Any, f64: Any,
                                         rng: np.random.Generator) -> None:
    x = rng.normal(size=(2, 3, 2))
    module_gradcheck(f64(GruConfig(2, 2, reset_after=False).init()), x)

    class Wrapped(Module):
        def __init__(self, inner: Module) -> None:
            self.inner = inner

        def forward(self, v: pyrite.Tensor) -> pyrite.Tensor:
            return self.inner(v)[0]

    module_gradcheck(f64(Wrapped(BiLstmConfig(2, 2, batch_first=False).init())), x)


# ---- configs, printing, records ---------------------------------------------------------------
CONFIGS = [GateControllerConfig(3, 2, bias=False), LstmConfig(3, 4, batch_first=False),
           BiLstmConfig(3, 4, bias=False), GruConfig(3, 4, reset_after=False)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_config_round_trips_and_records(config: Any, tmp_path: Path) -> None:
    assert type(config).from_json(config.to_json()) == config
    module = config.init()
    saved = module.save_file(tmp_path / "rnn")
    restored = config.init().load_file(saved)
    for (path, p), (path2, q) in zip(module.named_params(), restored.named_params(), strict=True):
        assert path == path2
        np.testing.assert_array_equal(p.val.numpy(), q.val.numpy())


def test_printing_and_params() -> None:
    lstm = LstmConfig(3, 4).init()
    assert lstm.num_params() == 4 * (3 * 4 + 4 * 4 + 2 * 4)
    text = repr(lstm)
    assert text.startswith("Lstm {\n  input_gate: GateController {\n")
    assert "    input_transform: Linear {d_input: 3, d_output: 4, bias: true, params: 16}" in text
    assert text.endswith("  d_hidden: 4\n  batch_first: true\n  params: 144\n}")
    assert "  d_hidden: 4\n  reset_after: false\n  params: 84\n}" in repr(
        GruConfig(3, 4, bias=False, reset_after=False).init())
    bi = BiLstmConfig(3, 4).init()
    assert [p for p, _ in bi.named_params()][0] == "forward_lstm.input_gate.input_transform.weight"
    assert bi.num_params() == 2 * 144


def test_shapes_and_errors() -> None:
    lstm = LstmConfig(3, 4, batch_first=False).init()
    out, state = lstm(pyrite.zeros((5, 2, 3)))
    assert out.shape == (5, 2, 4) and state.cell.shape == (2, 4)
    out, state = BiLstmConfig(3, 4, batch_first=False).init()(pyrite.zeros((5, 2, 3)))
    assert out.shape == (5, 2, 8) and state.hidden.shape == (2, 2, 4)
    with pytest.raises(ShapeError, match="expects input"):
        lstm(pyrite.zeros((2, 5, 4)))
    with pytest.raises(ShapeError, match="hidden state"):
        GruConfig(3, 4).init()(pyrite.zeros((2, 5, 3)), pyrite.zeros((3, 4)))


# ---- backends ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES[:1] + CASES[2:], ids=_id)
def test_runs_on_every_backend(case: dict[str, Any], ad_backend: Any) -> None:
    """float32 on each autodiff<backend> (webgpu included where available) against the fixture."""
    module = from_torch(case["kind"], case["params"], device=ad_backend)
    module = module.map(lambda _, p: p.with_val(p.val.cast("f32")))
    x = pyrite.tensor(np.asarray(case["x"], dtype=np.float32), device=ad_backend).require_grad()
    out = module(x) if case["kind"] == "gru" else module(x)[0]
    grads = (out * out / 2.0).sum().backward()
    h0_free = from_torch(case["kind"], case["params"], device=AD)
    want = h0_free(pyrite.tensor(np.asarray(case["x"]), device=AD))
    want = want if case["kind"] == "gru" else want[0]
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    assert x.grad(grads).shape == x.shape


def test_runs_on_numpy_without_autodiff(backend: Any) -> None:
    out = GruConfig(3, 4).init(backend)(pyrite.zeros((2, 3, 3), device=backend))
    assert out.shape == (2, 3, 4)
