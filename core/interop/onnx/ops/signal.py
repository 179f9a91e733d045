"""Signal operators: windows, DFT, STFT and mel filter banks."""

from __future__ import annotations

import math
from typing import Any

from ....backend.base import Backend
from ....creation import arange, tensor
from ....tensor import Tensor
from ..registry import op
from ._util import axis as norm
from ._util import dtype_of, pad_dim, scalar, wide_dtype
from .shape import backend


# ---- windows ------------------------------------------------------------------------------------
def _window(size: Any, periodic: int, terms: list[float], output_datatype: int,
            device: Backend | None) -> Tensor:
    """The cosine-sum window sum_k terms[k] * cos(2 pi k n / N) of `size` points."""
    n = int(scalar(size) or 0)
    dev = backend(device)
    span = n if periodic else n - 1
    idx = arange(0, n, device=dev).cast(wide_dtype(dev))
    out = idx * 0.0 + terms[0]
    for k, a in enumerate(terms[1:], 1):
        out = out + (idx * (2.0 * math.pi * k / span)).cos() * a
    return out.cast(dtype_of(output_datatype))


@op("HannWindow", host=(0,))
def hann_window(size: Any, *, output_datatype: int = 1, periodic: int = 1,
                device: Backend | None = None) -> Tensor:
    """The Hann window: 0.5 - 0.5 cos(2 pi n / N)."""
    return _window(size, periodic, [0.5, -0.5], output_datatype, device)


@op("HammingWindow", host=(0,))
def hamming_window(size: Any, *, output_datatype: int = 1, periodic: int = 1,
                   device: Backend | None = None) -> Tensor:
    """The Hamming window: 25/46 - 21/46 cos(2 pi n / N)."""
    return _window(size, periodic, [25 / 46, -21 / 46], output_datatype, device)


@op("BlackmanWindow", host=(0,))
def blackman_window(size: Any, *, output_datatype: int = 1, periodic: int = 1,
                    device: Backend | None = None) -> Tensor:
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _window(size, periodic, [0.42, -0.5, 0.08], output_datatype, device)


# ---- DFT ----------------------------------------------------------------------------------------
def _fit(x: Tensor, length: int) -> Tensor:
    """x cut or zero-padded to `length` along its last dim."""
    d = x.ndim - 1
    if x.shape[d] > length:
        return x.narrow(d, 0, length)
    return pad_dim(x, d, 0, length - x.shape[d]) if x.shape[d] < length else x


def _trig(rows: int, cols: int, length: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """cos and sin of 2 pi j k / length for j < rows, k < cols, built on like's device."""
    j = arange(0, rows, device=like.device).reshape([rows, 1])
    k = arange(0, cols, device=like.device).reshape([1, cols])
    angle = (j * k).rem(length).cast(like.dtype) * (2.0 * math.pi / length)
    return angle.cos(), angle.sin()


def _forward(re: Tensor, im: Tensor | None, length: int, bins: int) -> tuple[Tensor, Tensor]:
    """The first `bins` frequencies of the DFT of re + i im along the last dim."""
    re = _fit(re, length)
    c, s = _trig(length, bins, length, re)
    out_re, out_im = re.matmul(c), re.matmul(s).neg()
    if im is not None:
        im = _fit(im, length)
        out_re, out_im = out_re + im.matmul(s), out_im + im.matmul(c)
    return out_re, out_im


def _inverse(re: Tensor, im: Tensor | None, length: int) -> tuple[Tensor, Tensor]:
    """The inverse DFT (divided by length) of re + i im along the last dim."""
    re = _fit(re, length)
    c, s = _trig(length, length, length, re)
    out_re, out_im = re.matmul(c), re.matmul(s)
    if im is not None:
        im = _fit(im, length)
        out_re, out_im = out_re - im.matmul(s), out_im + im.matmul(c)
    return out_re / float(length), out_im / float(length)


def _inverse_onesided(re: Tensor, im: Tensor | None, length: int) -> Tensor:
    """The real signal of `length` whose one-sided spectrum is re + i im (Hermitian)."""
    bins = length // 2 + 1
    re = _fit(re, bins)
    c, s = _trig(bins, length, length, re)
    k = arange(0, bins, device=re.device).reshape([bins, 1])
    twice = k.greater(0).bool_and(k.mul(2).not_equal_elem(length))
    w = twice.cast(re.dtype) + 1.0
    out = re.matmul(c * w)
    if im is not None:
        out = out - _fit(im, bins).matmul(s * w)
    return out / float(length)


def _parts(x: Tensor, d: int) -> tuple[Tensor, Tensor | None]:
    """The real and imaginary parts of x (last dim 1 or 2), dim d moved last, widened."""
    x = x.cast(wide_dtype(x.device))
    last = x.ndim - 1
    re = x.narrow(last, 0, 1).squeeze_dims([last]).movedim(d, -1)
    if x.shape[last] == 1:
        return re, None
    return re, x.narrow(last, 1, 1).squeeze_dims([last]).movedim(d, -1)


def _spectrum(x: Tensor, d: int, length: int | None, inverse: int, onesided: int) -> Tensor:
    """The DFT of x along dim d, as ONNX lays it out (last dim: real, imaginary)."""
    re, im = _parts(x, d)
    n = re.shape[-1]
    if inverse and onesided:
        size = length or 2 * (n - 1)
        return _inverse_onesided(re, im, size).movedim(-1, d).unsqueeze_dim(-1).cast(x.dtype)
    size = length or n
    if inverse:
        out_re, out_im = _inverse(re, im, size)
    else:
        out_re, out_im = _forward(re, im, size, size // 2 + 1 if onesided else size)
    out = Tensor.stack([out_re.movedim(-1, d), out_im.movedim(-1, d)], -1)
    return out.cast(x.dtype)


@op("DFT", host=(1, 2))
def dft(x: Tensor, dft_length: Any = None, axis_input: Any = None, *, axis: int | None = None,
        inverse: int = 0, onesided: int = 0, opset: int = 20) -> Tensor:
    """Discrete Fourier transform along one axis: forward, inverse, one-sided."""
    if axis_input is not None:
        a = int(scalar(axis_input) or 0)
    else:
        a = axis if axis is not None else (1 if opset < 20 else -2)
    length = scalar(dft_length)
    return _spectrum(x, norm(a, x.ndim), int(length) if length else None, inverse, onesided)


@op("STFT", host=(1, 3))
def stft(signal: Tensor, frame_step: Any, window: Tensor | None = None,
         frame_length: Any = None, *, onesided: int = 1) -> Tensor:
    """Short-time Fourier transform: the DFT of each (windowed) frame of the signal."""
    step = int(scalar(frame_step) or 1)
    length = scalar(frame_length)
    size = int(length) if length else (window.shape[0] if window is not None
                                       else signal.shape[1])
    frames = 1 + (signal.shape[1] - size) // step
    starts = arange(0, frames, device=signal.device).reshape([frames, 1]) * step
    index = (starts + arange(0, size, device=signal.device).reshape([1, size])).reshape([-1])
    framed = signal.select(1, index).reshape([signal.shape[0], frames, size,
                                              signal.shape[2]])
    if window is not None:
        framed = framed * window.cast(framed.dtype).reshape([1, 1, size, 1])
    return _spectrum(framed, 2, size, 0, onesided)


# ---- MelWeightMatrix ----------------------------------------------------------------------------
def _mel_edges(num_mel_bins: int, dft_length: int, sample_rate: int, low: float,
               high: float) -> list[int]:
    """The spectrogram bin of each of the num_mel_bins + 2 mel band edges."""
    lo_mel = 2595 * math.log1p(low / 700) / math.log(10)
    hi_mel = 2595 * math.log1p(high / 700) / math.log(10)
    step = (hi_mel - lo_mel) / (num_mel_bins + 2)
    hz = [700 * math.expm1((i * step + lo_mel) / 2595 * math.log(10))
          for i in range(num_mel_bins + 2)]
    return [int((dft_length + 1) * f // sample_rate) for f in hz]


@op("MelWeightMatrix", host=(0, 1, 2, 3, 4))
def mel_weight_matrix(num_mel_bins: Any, dft_length: Any, sample_rate: Any,
                      lower_edge_hertz: Any, upper_edge_hertz: Any, *,
                      output_datatype: int = 1, device: Backend | None = None) -> Tensor:
    """Triangular mel filters (dft_length // 2 + 1, num_mel_bins) over spectrogram bins."""
    mels = int(scalar(num_mel_bins) or 0)
    length = int(scalar(dft_length) or 0)
    edges = _mel_edges(mels, length, int(scalar(sample_rate) or 1),
                       float(scalar(lower_edge_hertz) or 0.0),
                       float(scalar(upper_edge_hertz) or 0.0))
    bins = length // 2 + 1
    w = [[0.0] * mels for _ in range(bins)]
    for i in range(mels):
        left, mid, right = edges[i:i + 3]
        if mid == left:
            w[mid][i] = 1.0
        for j in range(left, mid + 1 if mid > left else left):
            w[j][i] = (j - left) / (mid - left)
        for j in range(mid, right):
            w[j][i] = (right - j) / (right - mid)
    dev = backend(device)
    out = tensor([v for row in w for v in row], device=dev, dtype=wide_dtype(dev))
    return out.reshape([bins, mels]).cast(dtype_of(output_datatype))

