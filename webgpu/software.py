"""Kernel choices for a software adapter in a page: SwiftShader, Chromium's WebGPU on the CPU.

SwiftShader runs a workgroup on one CPU thread, its invocations as lanes of SIMD loops, and a
workgroup barrier switches between those loops. What a GPU wants (hundreds of small workgroups
to fill its multiprocessors, short K steps between barriers) is what costs most there. A page
also compiles every kernel it runs while it loads, and SwiftShader's compile time (its SPIR-V
through LLVM, on the same CPUs) grows with the invocations of a workgroup with barriers: 1-3 s
for a tile of 64, 2.3-6.6 s for one of 256, 30-60 ms for a kernel without barriers
(`benchmarks/page_compile.py`). So where `software(adapter)` holds, the heuristics (autotune
off or cached, a page's default) take:

- products of at most `gemv.MAX_ROWS` rows (a dense layer's small batch): `gemv.py`'s
  kernel, no workgroup memory, no barrier, one pipeline for every layout;
- other products and every conv GEMM: `matmul_config.SOFTWARE_LADDER`, the one 64x64 tile of
  8x8 register blocks, K never split (a split adds work and a kernel, and parallelism the
  CPU's few threads do not need), the conv GEMM even for a first layer's 27-term reduction,
  where it ran as fast as the direct kernel in the page (one pipeline fewer to compile).

Timed in the /classify page, SqueezeNet's 14 conv shapes each alone (`page_predict.py
--conv-layers`, medians on 2 shared CPUs at a 1-minute load of 5): the GPU heuristic's kernels
took 3.9 s in all, session 4's software choices (128x128 and 64x128 tiles of 256 invocations,
the direct kernel below 32 terms) 1.59 s, these 1.54 s.

Native adapters keep the GPU choices, lavapipe (also a CPU adapter) included: its runs are
the native test suite's, and these choices were measured on SwiftShader only. The bundle's
kernel lists (`wasm/build.py: record_kernels`) are recorded for both kinds of adapter.
"""

from __future__ import annotations

from .runtime import AdapterInfo

#: the backend name `BrowserRuntime` gives its adapters (SwiftShader's type is "CPU"), and
#: the `RecordingRuntime`'s, which stands for a page's adapter of the type it is given
BROWSER_BACKEND = "WebGPU (browser)"
RECORDER_BACKEND = "none"


def software(adapter: AdapterInfo) -> bool:
    """Whether `adapter` is a page's software adapter (SwiftShader): a CPU adapter behind a
    browser's WebGPU, or the recorder standing for one."""
    return adapter.adapter_type == "CPU" and adapter.backend in (BROWSER_BACKEND,
                                                                 RECORDER_BACKEND)


__all__ = ["BROWSER_BACKEND", "RECORDER_BACKEND", "software"]
