"""Pooling as WGSL kernels: max pooling with indices (`shaders/max_pool2d.wgsl`) and its
gradient (`max_pool2d_grad.wgsl`), average pooling and its gradient (`avg_pool2d.wgsl`),
adaptive average pooling and its gradient (`adaptive_avg_pool2d.wgsl`).

Each runs one invocation per element it writes over (N*C) planes of a dense f32 NCHW tensor,
with the window geometry in run-time metadata; gradients gather over the windows that hold an
input pixel instead of scattering into it, so none needs atomics. Padding is never
materialised. The backend sends other dtypes to the composites of `pyrite.backend.module_ops`.
"""

from __future__ import annotations

from ..backend.module_ops import Pads, Pair, conv_out_size
from ..dtype import DType
from .codegen import WORKGROUP, KernelKey, header, render, window_words
from .kernels import Kernels
from .tensor import GpuTensor

#: adaptive pooling's windows vary with the output: its window words other than the sizes are 0
_NO_PADDING = ((0, 0), (0, 0))


def _run(k: Kernels, template: str, entry: str, words: list[int],
         tensors: list[GpuTensor]) -> None:
    """Launch `entry` of `template` over info[0] invocations: metadata, then the buffers."""
    key = KernelKey(template, entry, (DType.F32, DType.F32), 0, (WORKGROUP,))
    # max_pool2d spells -inf with the header's pyrite_bits
    values = {"enable": header(())} if template == "max_pool2d" else {}
    pipeline = k.cached(key, entry) or k.pipeline(
        key, render(f"{template}.wgsl", workgroup=WORKGROUP, **values), entry)
    k.launch(pipeline, [k.meta(words)] + [t.block.buffer for t in tensors],
             k.grid(-(-words[0] // WORKGROUP)))


def _out_size(x: GpuTensor, kernel: Pair, stride: Pair, padding: Pads,
              dilation: Pair) -> tuple[int, int]:
    h, w = x.shape[2:]
    return conv_out_size((h + sum(padding[0]), w + sum(padding[1])), kernel, stride, dilation)


def max_pool2d_with_indices(k: Kernels, x: GpuTensor, kernel: Pair, stride: Pair,
                            padding: Pads, dilation: Pair) -> tuple[GpuTensor, GpuTensor]:
    """Max over each window, and its flat index into H*W (i32)."""
    x = k.dense(x)
    n, c, h, w = x.shape
    oh, ow = _out_size(x, kernel, stride, padding, dilation)
    out = k.empty((n, c, oh, ow), DType.F32, "max_pool2d")
    index = k.empty((n, c, oh, ow), DType.I32, "max_pool2d")
    if out.numel:
        words = [out.numel, *window_words((h, w), (oh, ow), kernel, stride, padding, dilation)]
        _run(k, "max_pool2d", "main", words, [x, out, index])
    return out, index


def max_pool2d_grad(k: Kernels, grad: GpuTensor, index: GpuTensor,
                    input_shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pads,
                    dilation: Pair) -> GpuTensor:
    """d max_pool2d / d x: each output's gradient back to the input pixel its index names."""
    grad, index = k.dense(grad), k.dense(index)
    _, _, h, w = input_shape
    oh, ow = grad.shape[2:]
    out = k.empty(tuple(input_shape), DType.F32, "max_pool2d_grad")
    if out.numel:
        words = [out.numel, *window_words((h, w), (oh, ow), kernel, stride, padding, dilation)]
        _run(k, "max_pool2d_grad", "main", words, [grad, index, out])
    return out


def avg_pool2d(k: Kernels, x: GpuTensor, kernel: Pair, stride: Pair, padding: Pads,
               count_include_pad: bool) -> GpuTensor:
    """Mean over each window (padded zeros count when `count_include_pad`)."""
    x = k.dense(x)
    n, c, h, w = x.shape
    oh, ow = _out_size(x, kernel, stride, padding, (1, 1))
    out = k.empty((n, c, oh, ow), DType.F32, "avg_pool2d")
    if out.numel:
        window = window_words((h, w), (oh, ow), kernel, stride, padding, (1, 1))
        _run(k, "avg_pool2d", "forward", [out.numel, *window, int(count_include_pad)], [x, out])
    return out


def avg_pool2d_grad(k: Kernels, grad: GpuTensor, input_shape: tuple[int, ...], kernel: Pair,
                    stride: Pair, padding: Pads, count_include_pad: bool) -> GpuTensor:
    """d avg_pool2d / d x: each output's gradient shared by its window's pixels."""
    grad = k.dense(grad)
    _, _, h, w = input_shape
    oh, ow = grad.shape[2:]
    out = k.empty(tuple(input_shape), DType.F32, "avg_pool2d_grad")
    if out.numel:
        window = window_words((h, w), (oh, ow), kernel, stride, padding, (1, 1))
        _run(k, "avg_pool2d", "backward", [out.numel, *window, int(count_include_pad)],
             [grad, out])
    return out


def adaptive_avg_pool2d(k: Kernels, x: GpuTensor, output_size: Pair) -> GpuTensor:
    """Mean over PyTorch's adaptive windows."""
    x = k.dense(x)
    n, c, h, w = x.shape
    out = k.empty((n, c, *output_size), DType.F32, "adaptive_avg_pool2d")
    if out.numel:
        window = window_words((h, w), output_size, (0, 0), (0, 0), _NO_PADDING, (0, 0))
        _run(k, "adaptive_avg_pool2d", "forward", [out.numel, *window], [x, out])
    return out


def adaptive_avg_pool2d_grad(k: Kernels, grad: GpuTensor,
                             input_shape: tuple[int, ...]) -> GpuTensor:
    """d adaptive_avg_pool2d / d x."""
    grad = k.dense(grad)
    _, _, h, w = input_shape
    out = k.empty(tuple(input_shape), DType.F32, "adaptive_avg_pool2d_grad")
    if out.numel:
        window = window_words((h, w), grad.shape[2:], (0, 0), (0, 0), _NO_PADDING, (0, 0))
        _run(k, "adaptive_avg_pool2d", "backward", [out.numel, *window], [grad, out])
    return out
