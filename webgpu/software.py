"""Kernel choices for a software adapter in a page: SwiftShader, Chromium's WebGPU on the CPU.

SwiftShader runs a workgroup on one CPU thread, its invocations as lanes of SIMD loops, and a
workgroup barrier switches between those loops. What a GPU wants (hundreds of small workgroups
to fill its multiprocessors, short K steps between barriers) is what costs most there. Timed in
the /classify page, 14 SqueezeNet conv layers each alone (`benchmarks/page_predict.py
--conv-layers 5`, medians on 2 shared CPUs): the GPU heuristic's kernels (the 32x32 tile,
4x4 per invocation, for nearly every GEMM) took 4.52 s in all, these choices 2.27 s (the
128x128 tile, 8x8 per invocation, 0.22x the 32x32 tile's time on fire4's expand 1x1 and 0.36x
on conv10; the direct kernel 0.47x on conv1's 27-term reduction). So where
`software(adapter)` holds, the heuristics (autotune off or cached, a page's default) take:

- matmul and the conv GEMM: `matmul_config.SOFTWARE_LADDER`'s largest tile that still gives
  `SOFTWARE_MIN_WORKGROUPS` workgroups, K never split (a split adds work and a kernel, and
  parallelism the CPU's few threads do not need);
- a conv whose GEMM reduces fewer than `GEMM_MIN_K` terms (a first layer's 3 x 3 x 3): the
  direct kernel.

Native adapters keep the GPU choices, lavapipe (also a CPU adapter) included: its runs are
the native test suite's, and these choices were measured on SwiftShader only. The bundle's
kernel lists (`wasm/build.py: record_kernels`) are recorded for both kinds of adapter. Products
of one row keep the smallest tile: the naive kernel (no barrier, no padding) took 5x its time
on MNIST's 1 x 1024 @ 1024 x 512 in the page (it reads the transposed weight a column per lane).
"""

from __future__ import annotations

from .runtime import AdapterInfo

#: the backend name `BrowserRuntime` gives its adapters (SwiftShader's type is "CPU"), and
#: the `RecordingRuntime`'s, which stands for a page's adapter of the type it is given
BROWSER_BACKEND = "WebGPU (browser)"
RECORDER_BACKEND = "none"
GEMM_MIN_K = 32  # conv GEMM reduction terms below which the direct kernel wins


def software(adapter: AdapterInfo) -> bool:
    """Whether `adapter` is a page's software adapter (SwiftShader): a CPU adapter behind a
    browser's WebGPU, or the recorder standing for one."""
    return adapter.adapter_type == "CPU" and adapter.backend in (BROWSER_BACKEND,
                                                                 RECORDER_BACKEND)


__all__ = ["BROWSER_BACKEND", "GEMM_MIN_K", "RECORDER_BACKEND", "software"]
