"""Argument checks and option resolution shared by the functional module ops."""

from __future__ import annotations

from collections.abc import Sequence

from ...dtype import Kind, promote
from ...errors import DeviceError, KindError, ShapeError
from ...tensor import Tensor

IntOrSeq = int | Sequence[int]
Padding = str | int | Sequence[int] | Sequence[Sequence[int]]

_FLOAT = frozenset({Kind.FLOAT})


# ---- validation helpers -------------------------------------------------------------------------
def _tensor(op: str, name: str, value: object, kind: Kind = Kind.FLOAT) -> Tensor:
    if not isinstance(value, Tensor):
        raise KindError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if value.kind is not kind:
        fix = ".float()" if kind is Kind.FLOAT else ".int()"
        article = "an" if kind is Kind.INT else "a"
        raise KindError(f"{op}: {name} must be {article} {kind.value} tensor, got "
                        f"{value.kind.value} (dtype {value.dtype}); convert it with {fix}")
    return value


def _rank(op: str, name: str, x: Tensor, rank: int, layout: str) -> None:
    if x.ndim != rank:
        raise ShapeError(f"{op}: {name} must have rank {rank} ({layout}), got shape {x.shape}")


def _same_device(op: str, x: Tensor, *others: Tensor | None) -> None:
    for other in others:
        if other is not None and other.device != x.device:
            raise DeviceError(f"{op}: input is on {x.device.name}, a weight on "
                              f"{other.device.name}; move the module with .to_device(...)")


def _match_dtype(x: Tensor, *others: Tensor | None) -> list[Tensor | None]:
    """The tensors cast to one float dtype (the widest), as binary ops promote."""
    dt = x.dtype
    for t in others:
        if t is not None:
            dt = promote(dt, t.dtype)
    return [None if t is None else (t if t.dtype is dt else t.cast(dt)) for t in (x, *others)]


def tuple_of(op: str, name: str, value: IntOrSeq, n: int, *, minimum: int = 1) -> tuple[int, ...]:
    """An int or a sequence of n ints, as n ints >= minimum."""
    vals = (value,) * n if isinstance(value, int) else tuple(value)
    if len(vals) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        raise ShapeError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in vals):
        raise ShapeError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return vals


def resolve_padding(op: str, padding: Padding, kernel: tuple[int, ...],
                    dilation: tuple[int, ...], stride: tuple[int, ...]) -> tuple[
                        tuple[int, int], ...]:
    """Padding as one (before, after) pair per spatial dim.

    "valid" is no padding; "same" keeps the size (stride 1 only; an even kernel pads one more
    after than before, as PyTorch and Burn do); an int or one int per dim pads both sides;
    one (before, after) pair per dim is used as given.

    >>> resolve_padding("conv2d", "same", (4, 3), (1, 1), (1, 1))
    ((1, 2), (1, 1))
    """
    n = len(kernel)
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            return ((0, 0),) * n
        if mode == "same":
            if any(s != 1 for s in stride):
                raise ShapeError(f"{op}: padding='same' needs stride 1, got stride {stride}; "
                                 f"give explicit padding instead")
            pads = []
            for k, d in zip(kernel, dilation, strict=True):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        raise ShapeError(f"{op}: padding {padding!r} is not 'valid' or 'same'")
    if isinstance(padding, int) or (isinstance(padding, Sequence) and all(
            isinstance(p, int) for p in padding)):
        each = tuple_of(op, "padding", padding, n, minimum=0)  # type: ignore[arg-type]
        return tuple((p, p) for p in each)
    pairs = tuple(tuple(p) for p in padding)  # type: ignore[arg-type]
    if len(pairs) != n or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ShapeError(f"{op}: padding must be 'valid', 'same', an int, {n} ints or {n} "
                         f"(before, after) pairs of ints >= 0, got {padding!r}")
    return pairs  # type: ignore[return-value]


def pairs_1d(padding: Padding, dims: int) -> Padding:
    """In 1-D, a (before, after) pair of ints means one pair, not one int per dim."""
    if dims == 1 and not isinstance(padding, (str, int)) and len(padding) == 2 and all(
            isinstance(p, int) for p in padding):
        return ((int(padding[0]), int(padding[1])),)  # type: ignore[arg-type]
    return padding


def _check_out(op: str, x: Tensor, size: tuple[int, ...], pads: tuple[tuple[int, int], ...],
               kernel: tuple[int, ...], stride: tuple[int, ...],
               dilation: tuple[int, ...]) -> None:
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads, strict=True))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    if any(p < s for p, s in zip(padded, span, strict=True)):
        raise ShapeError(f"{op}: the window (kernel {kernel}, dilation {dilation}, spanning "
                         f"{span}) is larger than the padded input {padded} (input shape "
                         f"{x.shape}); use a smaller kernel or more padding")


def _window_pads(op: str, padding: Padding, kernel: tuple[int, ...], dilation: tuple[int, ...],
                 stride: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    pads = resolve_padding(op, padding, kernel, dilation, stride)
    for (lo, hi), k in zip(pads, kernel, strict=True):
        if max(lo, hi) > k // 2 and not isinstance(padding, str):
            raise ShapeError(f"{op}: padding {padding!r} is more than half the kernel "
                             f"{kernel}; a window could see only padding")
    return pads
