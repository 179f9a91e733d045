"""Losses: CrossEntropyLoss, MseLoss, HuberLoss, BinaryCrossEntropyLoss and their configs.

Losses are modules without params, called as `loss(output, targets)`. CrossEntropyLoss and
BinaryCrossEntropyLoss return the mean as a tensor of shape (1,), as Burn; MseLoss and HuberLoss
take `reduction="mean" | "sum" | "none"`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY

from .. import activation as act
from ..backend.base import Backend
from ..dtype import Kind
from ..errors import ConfigError, KindError, ShapeError
from ..module import Config, Module
from ..tensor import Tensor, from_data

Device = Backend | str | None
REDUCTIONS = ("mean", "sum", "none")


def _reduce(op: str, loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ConfigError(f"{op}: reduction must be one of {', '.join(REDUCTIONS)}, "
                      f"got {reduction!r}")


def _same_shape(op: str, pred: Tensor, target: Tensor) -> None:
    if pred.shape != target.shape:
        raise ShapeError(f"{op}: predictions {pred.shape} and targets {target.shape} must have "
                         f"the same shape")


def _float_targets(op: str, targets: Tensor, like: Tensor) -> Tensor:
    if targets.kind is Kind.BOOL:
        targets = targets.int()
    return targets.cast(like.dtype) if targets.dtype is not like.dtype else targets


# ---- cross entropy -------------------------------------------------------------------------------
class CrossEntropyLossConfig(Config):
    """`CrossEntropyLossConfig().init()`, with options:

    - `pad_tokens`: target classes to ignore (their samples add nothing and are not counted);
    - `weights`: one weight per class; the mean is then weighted (divided by the sum of the
      targets' weights, as PyTorch);
    - `smoothing`: label smoothing alpha in [0, 1]: the target distribution becomes
      (1 - alpha) * one_hot + alpha / C;
    - `logits`: False when the inputs are already probabilities.
    """

    _: KW_ONLY
    pad_tokens: tuple[int, ...] | None = None
    weights: tuple[float, ...] | None = None
    smoothing: float | None = None
    logits: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise ConfigError(f"CrossEntropyLossConfig: smoothing must be in [0, 1], got "
                              f"{self.smoothing}")
        if self.weights is not None and any(w < 0 for w in self.weights):
            raise ConfigError("CrossEntropyLossConfig: weights must be >= 0")

    def init(self, device: Device = None) -> CrossEntropyLoss:
        return CrossEntropyLoss(pad_tokens=self.pad_tokens, weights=self.weights,
                                smoothing=self.smoothing, logits=self.logits)


class CrossEntropyLoss(Module):
    """Mean negative log-likelihood of the target classes.

    Shapes: outputs (N, C) float, targets (N,) Int -> (1,).
    """

    def __init__(self, *, pad_tokens: tuple[int, ...] | None = None,
                 weights: tuple[float, ...] | None = None, smoothing: float | None = None,
                 logits: bool = True) -> None:
        self.pad_tokens = None if pad_tokens is None else tuple(pad_tokens)
        self.weights = None if weights is None else tuple(float(w) for w in weights)
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, outputs: Tensor, targets: Tensor) -> Tensor:
        op = "CrossEntropyLoss"
        if outputs.kind is not Kind.FLOAT or outputs.ndim != 2:
            raise ShapeError(f"{op}: outputs must be a Float tensor (N, C), got "
                             f"{outputs.kind.value} {outputs.shape}")
        if targets.kind is not Kind.INT:
            raise KindError(f"{op}: targets must be an Int tensor of class indices, got "
                            f"{targets.kind.value}; use .int()")
        n, c = outputs.shape
        if targets.shape != (n,):
            raise ShapeError(f"{op}: targets must have shape ({n},) for outputs {outputs.shape}, "
                             f"got {targets.shape}")
        if self.weights is not None and len(self.weights) != c:
            raise ShapeError(f"{op}: {len(self.weights)} class weights for {c} classes")
        logp = outputs.log_softmax(1) if self.logits else outputs.log().clamp_min(-100.0)
        index = targets.reshape([n, 1])
        nll = -logp.gather(1, index).reshape([n])  # checks the targets' range
        dev = outputs.device
        if self.weights is not None:
            w = from_data(list(self.weights), device=dev, dtype=outputs.dtype)
            w_t = w.select(0, targets)
        else:
            w, w_t = None, None
        loss = nll if w_t is None else nll * w_t
        alpha = self.smoothing or 0.0
        if alpha:
            spread = -(logp if w is None else logp * w.reshape([1, c])).sum_dim(1).reshape([n])
            loss = loss * (1.0 - alpha) + spread * (alpha / c)
        count = w_t if w_t is not None else loss.ones_like()
        if self.pad_tokens:
            keep = targets.not_equal_elem(self.pad_tokens[0])
            for pad in self.pad_tokens[1:]:
                keep = keep.bool_and(targets.not_equal_elem(pad))
            loss = loss.mask_fill(keep.bool_not(), 0.0)
            count = count.mask_fill(keep.bool_not(), 0.0)
        return loss.sum() / count.sum()


# ---- regression losses ---------------------------------------------------------------------------
class MseLoss(Module):
    """Mean squared error: `MseLoss()(pred, target, reduction="mean")`. Shapes: equal."""

    def forward(self, pred: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
        _same_shape("MseLoss", pred, target)
        diff = pred - _float_targets("MseLoss", target, pred)
        return _reduce("MseLoss", diff * diff, reduction)


class MseLossConfig(Config):
    """`MseLossConfig().init()` (MseLoss has no options; the config keeps configs uniform)."""

    def init(self, device: Device = None) -> MseLoss:
        return MseLoss()


class HuberLossConfig(Config):
    """`HuberLossConfig(1.0).init()`: quadratic within `delta` of the target, linear beyond."""

    delta: float

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.delta > 0:
            raise ConfigError(f"HuberLossConfig: delta must be > 0, got {self.delta}")

    def init(self, device: Device = None) -> HuberLoss:
        return HuberLoss(self.delta)


class HuberLoss(Module):
    """0.5 r^2 where |r| <= delta, delta * (|r| - 0.5 delta) elsewhere; r = pred - target."""

    def __init__(self, delta: float) -> None:
        self.delta = delta

    def forward(self, pred: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
        _same_shape("HuberLoss", pred, target)
        r = pred - _float_targets("HuberLoss", target, pred)
        a = r.abs()
        quadratic = r * r * 0.5
        linear = (a - 0.5 * self.delta) * self.delta
        return _reduce("HuberLoss", quadratic.mask_where(a.greater_elem(self.delta), linear),
                       reduction)


# ---- binary cross entropy -----------------------------------------------------------------------
class BinaryCrossEntropyLossConfig(Config):
    """`BinaryCrossEntropyLossConfig(logits=True).init()`.

    - `weights`: one weight per class for multi-label targets (N, C);
    - `smoothing`: targets become y * (1 - alpha) + alpha / 2;
    - `logits`: True when the inputs are raw scores (more stable than probabilities).
    """

    _: KW_ONLY
    weights: tuple[float, ...] | None = None
    smoothing: float | None = None
    logits: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise ConfigError(f"BinaryCrossEntropyLossConfig: smoothing must be in [0, 1], "
                              f"got {self.smoothing}")

    def init(self, device: Device = None) -> BinaryCrossEntropyLoss:
        return BinaryCrossEntropyLoss(weights=self.weights, smoothing=self.smoothing,
                                      logits=self.logits)


class BinaryCrossEntropyLoss(Module):
    """Mean of -(y log p + (1 - y) log(1 - p)). Shapes: (N,) or (N, C), targets the same
    (Int 0/1 or Float in [0, 1]) -> (1,). log p is clamped at -100, as PyTorch does."""

    def __init__(self, *, weights: tuple[float, ...] | None = None,
                 smoothing: float | None = None, logits: bool = False) -> None:
        self.weights = None if weights is None else tuple(float(w) for w in weights)
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, outputs: Tensor, targets: Tensor) -> Tensor:
        op = "BinaryCrossEntropyLoss"
        _same_shape(op, outputs, targets)
        y = _float_targets(op, targets, outputs)
        if self.smoothing:
            y = y * (1.0 - self.smoothing) + self.smoothing / 2.0
        if self.logits:
            log_p, log_q = act.log_sigmoid(outputs), act.log_sigmoid(-outputs)
        else:
            log_p = outputs.log().clamp_min(-100.0)
            log_q = (1.0 - outputs).log().clamp_min(-100.0)
        loss = -(y * log_p + (1.0 - y) * log_q)
        if self.weights is not None:
            c = outputs.shape[-1]
            if outputs.ndim != 2 or len(self.weights) != c:
                raise ShapeError(f"{op}: {len(self.weights)} class weights need outputs "
                                 f"(N, {len(self.weights)}), got {outputs.shape}")
            loss = loss * from_data(list(self.weights), device=outputs.device,
                                    dtype=outputs.dtype).reshape([1, c])
        return loss.mean()
