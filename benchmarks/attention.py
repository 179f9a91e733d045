"""Fused attention on pyrite's webgpu backend (flash attention's WGSL kernels,
`webgpu/flash_attention.py`) against the composite (q k^T, softmax, @ v with the score matrix in
memory) and a peer, in the same run.

Peer: PyTorch CUDA `scaled_dot_product_attention` (fp32, TF32 off) when a CUDA GPU is present;
none otherwise (lavapipe runs report pyrite's two variants only).

1. Memory: peak device memory (`pyrite.webgpu.stats(...)["memory"]["peak_bytes"]`, the buffer
   pool's high-water mark) of forward + backward at batch 1, 2 heads, 2048 positions, head dim
   32, for the fused op (`F.attention`) and the composite (`F.attention_weights(q, k) @ v`),
   each on a device of its own so neither peak includes the other. Target: fused <= 12 MB.
2. Time: forward + backward (d sum(out * w) / d q, k, v on autodiff<fusion<webgpu>>) and
   forward only, at batch 8, 8 heads, 1024 positions, head dim 64 (--quick: 1, 2, 256, 32), for
   the fused op, the composite and torch (the same loss, `out.backward(w)` being its gradient).
   Target: fused forward + backward >= 0.5x torch (ratio = torch time / pyrite time).
   `fused_kernels` times the fused kernels alone on the raw backend (forward; the backward's dq
   part; its dk, dv part), to show where the time goes: with the defaults, with the key
   gradients in one launch instead of two (`one_launch`), with the causal flag (`causal`), and
   with each other workgroup size (`rows_N`; the benchmark runs with autotune as configured,
   these force one size).
3. Causal: forward + backward with the op's causal flag (`F.attention(..., causal=True)`: no
   mask tensor, the tiles past the frontier skipped) against torch's `is_causal=True`.

Before timing, the fused op's output and gradients are checked against numpy (float64) on a
small ragged cases (a causal mask; the causal flag); exit status 1 if they differ.
Timing: wall clock; a block is `reps` evaluations then a sync (`device.sync()`, which waits for
the GPU; `torch.cuda.synchronize()`), `reps` chosen so a block takes >= --min-ms; after a warm-up
block, --iters blocks each, the median (and best) per evaluation.

    python benchmarks/attention.py --quick --out benchmarks/results/attention_lavapipe.json
    python benchmarks/attention.py --out benchmarks/results/attention_h100.json   # on a GPU
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import cpu_name, cuda_torch, timed, write_results

import pyrite
import pyrite.webgpu
from pyrite.backend.autodiff import Autodiff
from pyrite.data import TensorData
from pyrite.nn import functional as F
from pyrite.webgpu import WebGpu, flash_attention
from pyrite.webgpu.fusion import Fusion

MB = 1 << 20


def fresh_device() -> Any:
    """autodiff<fusion<webgpu>> on a new WebGPU device (its own buffer pool and peak)."""
    raw = WebGpu()
    raw.kernels  # noqa: B018 - request the adapter now
    return Autodiff(Fusion(raw))


def composite(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
    """The attention op's composite: the weights (the score matrix in memory), then @ v."""
    return F.attention_weights(q, k, mask) @ v


def fused(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
    return F.attention(q, k, v, mask)


def fused_causal(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
    return F.attention(q, k, v, mask, causal=True)


def step(fn: Callable[..., Any], device: Any, arrays: list[np.ndarray], weight: np.ndarray,
         mask: np.ndarray | None = None) -> list[np.ndarray]:
    """Forward and backward of sum(fn(q, k, v) * w); the gradients of q, k and v."""
    q, k, v = (pyrite.tensor(a, device=device).require_grad() for a in arrays)
    m = None if mask is None else pyrite.tensor(mask, device=device)
    grads = (fn(q, k, v, m) * pyrite.tensor(weight, device=device)).sum().backward()
    return [t.grad(grads).numpy() for t in (q, k, v)]


def reference(arrays: list[np.ndarray], weight: np.ndarray,
              mask: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """numpy float64: the output and the gradients of sum(out * w)."""
    q, k, v = (a.astype(np.float64) for a in arrays)
    scale = 1 / np.sqrt(q.shape[-1])
    s = q @ k.swapaxes(-1, -2) * scale + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = p @ v
    dp = weight @ v.swapaxes(-1, -2)
    ds = p * (dp - (weight * out).sum(-1, keepdims=True))
    return out, [ds @ k * scale, ds.swapaxes(-1, -2) @ q * scale, p.swapaxes(-1, -2) @ weight]


def check() -> str | None:
    """The fused op against numpy on ragged causal cases (an explicit mask at head dim 20; the
    causal flag at head dim 64, where the key gradients take two launches); a message when they
    differ."""
    rng = np.random.default_rng(0)
    b, h, n = 2, 3, 77
    for fn, d, explicit in ((fused, 20, True), (fused_causal, 64, False)):
        arrays = [rng.normal(size=(b, h, n, d)).astype(np.float32) for _ in range(3)]
        weight = rng.normal(size=(b, h, n, d)).astype(np.float32)
        mask = np.triu(np.full((n, n), -1e4, np.float32), 1).reshape(1, 1, n, n)
        want_out, want = reference(arrays, weight, mask)
        device = pyrite.device("autodiff<webgpu>")
        t = [pyrite.tensor(a, device=device) for a in arrays]
        given = mask if explicit else None
        out = fn(*t, None if given is None else pyrite.tensor(given, device=device)).numpy()
        got = step(fn, device, arrays, weight, given)
        for name, g, w in zip(("out", "dq", "dk", "dv"), [out, *got], [want_out, *want],
                              strict=True):
            err = float(np.abs(g - w).max())
            if err > 1e-3 * max(1.0, float(np.abs(w).max())):
                return f"{fn.__name__} d={d} {name}: max error {err:.3g}"
    return None


def peak_memory(fn: Callable[..., Any], shape: tuple[int, int, int, int]) -> dict[str, Any]:
    """Peak pool bytes of one forward + backward of `fn` on a fresh device."""
    rng = np.random.default_rng(1)
    device = fresh_device()
    arrays = [rng.normal(size=shape).astype(np.float32) for _ in range(3)]
    step(fn, device, arrays, rng.normal(size=shape).astype(np.float32))
    device.sync()
    peak = pyrite.webgpu.stats(device)["memory"]["peak_bytes"]
    return {"peak_bytes": peak, "peak_mb": round(peak / MB, 3)}


def pyrite_runs(fn: Callable[..., Any], shape: tuple[int, int, int, int]
                ) -> tuple[Callable[[int], None], Callable[[int], None], Callable[[], None]]:
    """(forward + backward, forward only, sync) of `fn` on autodiff<fusion<webgpu>>."""
    rng = np.random.default_rng(2)
    device = pyrite.device("autodiff<webgpu>")
    q, k, v = (pyrite.tensor(rng.normal(size=shape).astype(np.float32),
                             device=device).require_grad() for _ in range(3))
    w = pyrite.tensor(rng.normal(size=shape).astype(np.float32), device=device)
    kept: list[Any] = []

    def both(reps: int) -> None:
        for _ in range(reps):
            grads = (fn(q, k, v) * w).sum().backward()
            kept[:] = [q.grad(grads), k.grad(grads), v.grad(grads)]

    inner = device.inner
    flush = getattr(inner, "flush", lambda: None)  # fusion's stream, so the output is computed
    qi, ki, vi = (pyrite.tensor(rng.normal(size=shape).astype(np.float32), device=inner)
                  for _ in range(3))

    def forward(reps: int) -> None:
        for _ in range(reps):
            kept[:] = [fn(qi, ki, vi)]
            flush()

    return both, forward, device.sync


FAMILIES = ("attention_forward", "attention_query_grads", "attention_key_grads",
            "attention_key_grads_dk", "attention_key_grads_dv")


def kernel_times(shape: tuple[int, int, int, int], min_ms: float,
                 iters: int) -> dict[str, Any]:
    """The fused kernels one at a time on the raw backend: the forward, the backward's dq part
    (row statistics + query_grads) and its dk, dv part (row statistics + key_grads), under
    each variant (see the module's docstring)."""
    rng = np.random.default_rng(3)
    gpu = WebGpu()
    q, k, v, g = (gpu.from_data(TensorData(rng.normal(size=shape).astype(np.float32)))
                  for _ in range(4))
    scale = 1 / np.sqrt(shape[3])
    saved = {}
    for causal in (False, True):
        found = gpu.attention_saving(q, k, v, None, scale, False, causal)
        assert found is not None
        saved[causal] = found
    tuner = gpu.kernels.autotune

    def runs(fn: Callable[[], Any], rows: int | None, split: int) -> Callable[[int], None]:
        def run(reps: int) -> None:
            was = flash_attention.SPLIT_KEY_GRADS
            flash_attention.SPLIT_KEY_GRADS = split
            if rows is not None:
                tuner._forced.update(dict.fromkeys(FAMILIES, rows))
            try:
                for _ in range(reps):
                    fn()
            finally:
                flash_attention.SPLIT_KEY_GRADS = was
                for family in FAMILIES:
                    tuner._forced.pop(family, None)
        return run

    def parts(causal: bool) -> dict[str, Callable[[], Any]]:
        out, lse = saved[causal]
        return {"forward": lambda: gpu.attention_saving(q, k, v, None, scale, False, causal),
                "backward_dq": lambda: gpu.attention_grad(q, k, v, None, out, lse, g, scale,
                                                          False, causal, (True, False, False)),
                "backward_dk_dv": lambda: gpu.attention_grad(q, k, v, None, out, lse, g, scale,
                                                             False, causal,
                                                             (False, True, True))}

    default = flash_attention.SPLIT_KEY_GRADS
    variants: dict[str, tuple[bool, int | None, int]] = {
        "default": (False, None, default), "one_launch": (False, None, 1 << 30),
        "two_launches": (False, None, 0), "causal": (True, None, default),
        **{f"rows_{r}": (False, r, default) for r in (32, 64, 256)}}
    result: dict[str, Any] = {}
    for name, (causal, rows, split) in variants.items():
        chosen = parts(causal)
        if name in ("one_launch", "two_launches"):
            chosen = {"backward_dk_dv": chosen["backward_dk_dv"]}
        result[name] = {part: timed(runs(fn, rows, split), gpu.sync, min_ms, iters)
                        for part, fn in chosen.items()}
    return result


def torch_runs(torch: Any, shape: tuple[int, int, int, int], causal: bool = False
               ) -> tuple[Callable[[int], None], Callable[[int], None], Callable[[], None]]:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    gen = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(shape, device="cuda", generator=gen).requires_grad_()
               for _ in range(3))
    w = torch.randn(shape, device="cuda", generator=gen)

    def both(reps: int) -> None:
        for _ in range(reps):
            q.grad = k.grad = v.grad = None
            sdpa(q, k, v, is_causal=causal).backward(w)

    def forward(reps: int) -> None:
        with torch.no_grad():
            for _ in range(reps):
                sdpa(q, k, v, is_causal=causal)

    return both, forward, torch.cuda.synchronize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true",
                        help="small timing sizes (batch 1, 2 heads, 256 positions, dim 32)")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--min-ms", type=float, default=50.0)
    args = parser.parse_args()

    problem = check()
    result: dict[str, Any] = {
        "benchmark": "attention", "host": platform.node(), "cpu": cpu_name(),
        "adapter": str(pyrite.device("webgpu").adapter), "check": problem or "ok",
    }
    if problem:
        print(f"check failed: {problem}", file=sys.stderr)
        if args.out:
            write_results(args.out, result)
        return 1

    mem_shape = (1, 2, 2048, 32)
    result["memory"] = {
        "shape": list(mem_shape), "target_mb": 12.0,
        "fused": peak_memory(fused, mem_shape),
        "composite": peak_memory(composite, mem_shape),
    }
    print("memory", result["memory"], flush=True)

    shape = (1, 2, 256, 32) if args.quick else (8, 8, 1024, 64)
    timing: dict[str, Any] = {"shape": list(shape), "target_ratio": 0.5}
    runs: dict[str, Any] = {"fused": pyrite_runs(fused, shape),
                            "composite": pyrite_runs(composite, shape),
                            "fused_causal": pyrite_runs(fused_causal, shape)}
    torch = None if os.environ.get("PYRITE_BENCH_NO_TORCH") else cuda_torch()
    if torch is not None:
        runs["torch_sdpa"] = torch_runs(torch, shape)
        runs["torch_sdpa_causal"] = torch_runs(torch, shape, causal=True)
        timing["torch"] = torch.__version__
    for name, (both, forward, sync) in runs.items():
        timing[name] = {"forward_backward": timed(both, sync, args.min_ms, args.iters),
                        "forward": timed(forward, sync, args.min_ms, args.iters)}
        print(name, timing[name], flush=True)
    for ours, peer in (("fused", "composite"), ("fused", "torch_sdpa"),
                       ("fused_causal", "torch_sdpa_causal"), ("fused_causal", "fused")):
        if peer in timing:
            for part in ("forward_backward", "forward"):
                timing[f"{ours}_vs_{peer}_{part}"] = round(
                    timing[peer][part]["median_ms"] / timing[ours][part]["median_ms"], 3)
    timing["fused_kernels"] = kernel_times(shape, args.min_ms, args.iters)
    print("fused kernels", timing["fused_kernels"], flush=True)
    result["time"] = timing
    if args.out:
        write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
