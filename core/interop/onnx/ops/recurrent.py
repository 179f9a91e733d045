"""Recurrent layers: RNN, GRU and LSTM, unrolled over time with tensor ops.

Each direction runs one step per time index; autodiff sees an ordinary graph of matmuls and
activations, so the layers train like any other. The input projection of every step is one
matmul up front; only the recurrent part runs step by step. With `sequence_lens`, a batch entry
past its length keeps its state and writes zeros to Y (a reverse pass starts at its last valid
step, since the steps after it leave the state untouched).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ....creation import arange, stack, zeros
from ....tensor import Tensor
from ..registry import op
from . import activation as A
from . import elementwise as E

Act = Callable[[Tensor], Tensor]
State = list[Tensor]
Step = Callable[[Tensor, State, int], State]

#: activations that read alpha / beta, with their defaults
_ALPHA = {"affine": 1.0, "leakyrelu": 0.01, "thresholdedrelu": 1.0, "scaledtanh": 1.0,
          "hardsigmoid": 0.2, "elu": 1.0}
_BETA = {"affine": 0.0, "scaledtanh": 1.0, "hardsigmoid": 0.5}


def _act(name: str, alpha: float, beta: float) -> Act:
    """The activation function an RNN's `activations` attribute names."""
    key = name.lower()
    simple: dict[str, Act] = {"relu": A.relu, "tanh": E.tanh, "sigmoid": A.sigmoid,
                              "softsign": A.softsign, "softplus": A.softplus}
    if key in simple:
        return simple[key]
    table: dict[str, Act] = {
        "affine": lambda x: x * alpha + beta,
        "leakyrelu": lambda x: A.leaky_relu(x, alpha=alpha),
        "thresholdedrelu": lambda x: A.thresholded_relu(x, alpha=alpha),
        "scaledtanh": lambda x: (x * beta).tanh() * alpha,
        "hardsigmoid": lambda x: A.hard_sigmoid(x, alpha=alpha, beta=beta),
        "elu": lambda x: A.elu(x, alpha=alpha),
    }
    if key not in table:
        raise ValueError(f"recurrent activation {name!r} is not supported")
    return table[key]


def _acts(names: Sequence[str] | None, default: Sequence[str], dirs: int,
          alpha: Sequence[float] | None, beta: Sequence[float] | None) -> list[list[Act]]:
    """The activations of each direction; alpha/beta go in order to those that use them."""
    given = list(names) if names else list(default) * dirs
    if len(given) == len(default) and dirs == 2:
        given = given * 2
    alphas, betas = list(alpha or []), list(beta or [])
    out: list[Act] = []
    for name in given:
        key = name.lower()
        a = alphas.pop(0) if key in _ALPHA and alphas else _ALPHA.get(key, 0.0)
        b = betas.pop(0) if key in _BETA and betas else _BETA.get(key, 0.0)
        out.append(_act(name, a, b))
    n = len(default)
    return [out[d * n:(d + 1) * n] for d in range(dirs)]


def _clipper(clip: float | None) -> Act:
    """Clamp gate inputs to [-clip, clip] (identity without clip)."""
    if clip is None:
        return lambda x: x
    return lambda x: x.clamp(-clip, clip)


def _part(x: Tensor, k: int, size: int) -> Tensor:
    """The k-th block of `size` entries along the last dim."""
    return x.narrow(-1, k * size, size)


def _valid(lens: Tensor | None, steps: int, batch: int) -> list[Tensor] | None:
    """Per step, a (batch, 1) bool mask of the entries still inside their sequence."""
    if lens is None:
        return None
    t = arange(0, steps, device=lens.device).reshape([steps, 1])
    inside = t.lower(lens.reshape([1, batch]).cast(t.dtype))
    return [inside.narrow(0, s, 1).reshape([batch, 1]) for s in range(steps)]


def _unroll(xw: Tensor, state: State, step: Step, reverse: bool,
            valid: list[Tensor] | None) -> tuple[Tensor, State]:
    """Run `step` over the precomputed input projections xw (T, B, G); Y is (T, B, H)."""
    steps = xw.shape[0]
    ys: list[Tensor] = [state[0]] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        new = step(xw.narrow(0, t, 1).squeeze_dims([0]), state, t)
        if valid is None:
            state, ys[t] = new, new[0]
            continue
        keep = valid[t].expand(new[0].shape)
        state = [old.mask_where(keep, n) for old, n in zip(state, new, strict=True)]
        ys[t] = new[0].mask_fill(keep.bool_not(), 0)
    return (stack(ys, 0) if steps else zeros([0] + list(state[0].shape), device=xw.device,
                                           dtype=xw.dtype)), state


def _project(x: Tensor, w: Tensor, wb: Tensor | None) -> Tensor:
    """x (T, B, I) times w (G, I) transposed, plus the input bias: (T, B, G)."""
    steps, batch, width = x.shape
    y = x.reshape([steps * batch, width]).matmul(w.transpose())
    if wb is not None:
        y = y + wb
    return y.reshape([steps, batch, w.shape[0]])


class _Layer:
    """What every recurrent op shares: inputs in time-major layout, per-direction slices."""

    def __init__(self, x: Tensor, w: Tensor, b: Tensor | None, gates: int, direction: str,
                 layout: int, hidden_size: int | None, r: Tensor) -> None:
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ValueError(f"direction {direction!r} is not forward, reverse or bidirectional")
        self.x = x.swap_dims(0, 1) if layout else x
        self.layout, self.direction = layout, direction
        self.dirs = 2 if direction == "bidirectional" else 1
        self.hidden = hidden_size or r.shape[-1]
        self.w, self.b, self.gates = w, b, gates
        self.steps, self.batch = self.x.shape[0], self.x.shape[1]

    def bias(self, d: int) -> tuple[Tensor | None, Tensor | None]:
        """Direction d's input and recurrent biases (None without B)."""
        if self.b is None:
            return None, None
        row = self.b.narrow(0, d, 1).reshape([-1])
        n = self.gates * self.hidden
        return row.narrow(0, 0, n), row.narrow(0, n, n)

    def initial(self, given: Tensor | None, d: int) -> Tensor:
        """Direction d's starting state (zeros without one)."""
        if given is None:
            return zeros([self.batch, self.hidden], device=self.x.device, dtype=self.x.dtype)
        if self.layout:
            given = given.swap_dims(0, 1)
        return given.narrow(0, d, 1).squeeze_dims([0])

    def run(self, d: int, state: State, step: Step, lens: Tensor | None
            ) -> tuple[Tensor, State]:
        """Direction d over the whole sequence: its Y (T, B, H) and final state."""
        wb, _ = self.bias(d)
        w = self.w.narrow(0, d, 1).squeeze_dims([0])
        xw = _project(self.x, w, wb)
        reverse = self.direction == "reverse" or d == 1
        return _unroll(xw, state, step, reverse, _valid(lens, self.steps, self.batch))

    def finish(self, ys: list[Tensor], finals: list[list[Tensor]], outputs: int
               ) -> tuple[Tensor, ...]:
        """Y (T, D, B, H) and the final states (D, B, H), in the node's layout."""
        y = stack(ys, 1)
        states = [stack([f[k] for f in finals], 0) for k in range(len(finals[0]))]
        if self.layout:
            y = y.permute([2, 0, 1, 3])
            states = [s.swap_dims(0, 1) for s in states]
        return tuple([y] + states)[:max(outputs, 1)]


def _recurrent(h: Tensor, rt: Tensor, rb: Tensor | None) -> Tensor:
    """h (B, H) times the transposed recurrent weights rt (H, G), plus the recurrent bias."""
    y = h.matmul(rt)
    return y if rb is None else y + rb


def _weights(r: Tensor, p: Tensor | None, d: int) -> tuple[Tensor, Tensor | None]:
    """Direction d's recurrent weights and peepholes."""
    rd = r.narrow(0, d, 1).squeeze_dims([0])
    return rd, None if p is None else p.narrow(0, d, 1).reshape([-1])


@op("RNN")
def rnn(x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        sequence_lens: Tensor | None = None, initial_h: Tensor | None = None, *,
        activation_alpha: Sequence[float] | None = None,
        activation_beta: Sequence[float] | None = None,
        activations: Sequence[str] | None = None, clip: float | None = None,
        direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        output_sequence: int = 0, outputs: int = 2) -> tuple[Tensor, ...]:
    """Elman RNN: H = f(X W^T + H R^T + Wb + Rb); outputs Y and Y_h."""
    layer = _Layer(x, w, b, 1, direction, layout, hidden_size, r)
    fns = _acts(activations, ["Tanh"], layer.dirs, activation_alpha, activation_beta)
    cut = _clipper(clip)
    ys, finals = [], []
    for d in range(layer.dirs):
        rt = _weights(r, None, d)[0].transpose()
        rb = layer.bias(d)[1]
        f = fns[d][0]

        def step(xw: Tensor, s: State, t: int, rt: Tensor = rt, rb: Any = rb,
                 f: Act = f) -> State:
            return [f(cut(xw + _recurrent(s[0], rt, rb)))]

        y, fin = layer.run(d, [layer.initial(initial_h, d)], step, sequence_lens)
        ys.append(y)
        finals.append(fin)
    return layer.finish(ys, finals, outputs)


def _gru_step(rd: Tensor, rb: Tensor | None, fns: list[Act], cut: Act, hidden: int,
              before: bool) -> Step:
    """One GRU step (gates z, r, h) for one direction's weights."""
    f, g = fns
    rzr = rd.narrow(0, 0, 2 * hidden).transpose()
    rh = rd.narrow(0, 2 * hidden, hidden).transpose()
    bzr = None if rb is None else rb.narrow(0, 0, 2 * hidden)
    bh = None if rb is None else rb.narrow(0, 2 * hidden, hidden)

    def step(xw: Tensor, s: State, t: int) -> State:
        h = s[0]
        zr = xw.narrow(-1, 0, 2 * hidden) + h.matmul(rzr)
        if bzr is not None:
            zr = zr + bzr
        z = f(cut(_part(zr, 0, hidden)))
        reset = f(cut(_part(zr, 1, hidden)))
        if before:
            inner = h.matmul(rh)
            inner = reset * (inner if bh is None else inner + bh)
        else:
            inner = (reset * h).matmul(rh)
            inner = inner if bh is None else inner + bh
        cand = g(cut(_part(xw, 2, hidden) + inner))
        return [cand + z * (h - cand)]

    return step


@op("GRU")
def gru(x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        sequence_lens: Tensor | None = None, initial_h: Tensor | None = None, *,
        activation_alpha: Sequence[float] | None = None,
        activation_beta: Sequence[float] | None = None,
        activations: Sequence[str] | None = None, clip: float | None = None,
        direction: str = "forward", hidden_size: int | None = None, layout: int = 0,
        linear_before_reset: int = 0, output_sequence: int = 0,
        outputs: int = 2) -> tuple[Tensor, ...]:
    """Gated recurrent unit with update, reset and candidate gates; outputs Y and Y_h."""
    layer = _Layer(x, w, b, 3, direction, layout, hidden_size, r)
    fns = _acts(activations, ["Sigmoid", "Tanh"], layer.dirs, activation_alpha,
                activation_beta)
    ys, finals = [], []
    for d in range(layer.dirs):
        rd, _ = _weights(r, None, d)
        step = _gru_step(rd, layer.bias(d)[1], fns[d], _clipper(clip), layer.hidden,
                         bool(linear_before_reset))
        y, fin = layer.run(d, [layer.initial(initial_h, d)], step, sequence_lens)
        ys.append(y)
        finals.append(fin)
    return layer.finish(ys, finals, outputs)


def _lstm_step(rd: Tensor, rb: Tensor | None, p: Tensor | None, fns: list[Act], cut: Act,
               hidden: int, coupled: bool) -> Step:
    """One LSTM step (gates i, o, f, c; peepholes i, o, f) for one direction's weights."""
    f, g, act_h = fns
    rt = rd.transpose()  # (H, 4H), transposed once for every step
    peep = [None, None, None] if p is None else [_part(p, k, hidden) for k in range(3)]

    def gate(pre: Tensor, k: int, c: Tensor) -> Tensor:
        pk = peep[k]
        return f(cut(pre if pk is None else pre + pk * c))

    def step(xw: Tensor, s: State, t: int) -> State:
        h, c = s
        pre = xw + _recurrent(h, rt, rb)
        i = gate(_part(pre, 0, hidden), 0, c)
        forget = 1.0 - i if coupled else gate(_part(pre, 2, hidden), 2, c)
        c_new = forget * c + i * g(cut(_part(pre, 3, hidden)))
        o = gate(_part(pre, 1, hidden), 1, c_new)
        return [o * act_h(c_new), c_new]

    return step


@op("LSTM")
def lstm(x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
         sequence_lens: Tensor | None = None, initial_h: Tensor | None = None,
         initial_c: Tensor | None = None, p: Tensor | None = None, *,
         activation_alpha: Sequence[float] | None = None,
         activation_beta: Sequence[float] | None = None,
         activations: Sequence[str] | None = None, clip: float | None = None,
         direction: str = "forward", hidden_size: int | None = None, input_forget: int = 0,
         layout: int = 0, output_sequence: int = 0, outputs: int = 3) -> tuple[Tensor, ...]:
    """Long short-term memory with optional peepholes; outputs Y, Y_h and Y_c."""
    layer = _Layer(x, w, b, 4, direction, layout, hidden_size, r)
    fns = _acts(activations, ["Sigmoid", "Tanh", "Tanh"], layer.dirs, activation_alpha,
                activation_beta)
    ys, finals = [], []
    for d in range(layer.dirs):
        rd, pd = _weights(r, p, d)
        step = _lstm_step(rd, layer.bias(d)[1], pd, fns[d], _clipper(clip), layer.hidden,
                          bool(input_forget))
        start = [layer.initial(initial_h, d), layer.initial(initial_c, d)]
        y, fin = layer.run(d, start, step, sequence_lens)
        ys.append(y)
        finals.append(fin)
    return layer.finish(ys, finals, outputs)


__all__ = ["gru", "lstm", "rnn"]
