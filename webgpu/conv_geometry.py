"""The conv GEMM's geometry (`shaders/conv2d_gemm.wgsl`'s `cm` words) read at run time or
compiled into the module as constants.

The implicit GEMM's gathers turn every K index into (channel, ky, kx) and every column into
(image, y, x) with integer divisions by the kernel's taps and width and by the pixel plane and
its width, for each vec4 of A and B loaded at every K step. Read from a storage buffer those are
divisions by run-time values, dozens of instructions each; as module constants the driver's
compiler turns each into a multiply and a shift. Natively (`CONSTANT`) a GEMM therefore bakes
words 0-15 (extents, kernel, stride, padding, dilation, channels) into its module: one pipeline
per conv geometry and mode instead of one per mode, the price being a compile per distinct layer
shape. Word 16 (the bias's end, which depends on the launch's K slices) stays a run-time read of
binding 4, which every module keeps. A page keeps the run-time form (its modules are checked and
few), and so do words holding a traced number (a compiled step's replay rewrites them) and CPU
adapters (lavapipe): there a module took about 1.8 s to compile cold, against a GPU gain that
does not apply.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..capture import traced

# Natively, compile the geometry into the GEMM's module (conv_gemm.run's default; the sweep
# times `rt`, the run-time form, beside it).
CONSTANT = True
WORDS = 16  # words 0-15 of `cm`: everything but the bias's end

_RUNTIME = ("@group(0) @binding(4) var<storage, read> cm: array<i32>;\n"
            "fn bias_end() -> i32 { return cm[16]; }")


def applies(adapter_type: str, native: bool) -> bool:
    """Whether a GEMM on this adapter compiles its geometry in by default: natively, on a GPU
    (not a CPU adapter such as lavapipe), where `CONSTANT`."""
    return CONSTANT and native and adapter_type != "CPU"


def constant_words(words: Sequence[object]) -> tuple[int, ...] | None:
    """The words a module may compile in (all but the last), or None where one is traced."""
    if any(isinstance(w, traced.Traced) for w in words):
        return None
    return tuple(int(w) for w in words[:WORDS])  # type: ignore[call-overload]  # plain ints


def source(words: tuple[int, ...] | None) -> str:
    """conv2d_gemm.wgsl's `{{ geometry }}`: `cm` as binding 4 (None), or as a module constant
    of `words` with binding 4 read for the bias's end only."""
    if words is None:
        return _RUNTIME
    if len(words) != WORDS:
        raise ValueError(f"a conv GEMM's constant geometry takes {WORDS} words, got "
                         f"{len(words)}: pass conv2d_gemm.wgsl's cm words 0-15")
    values = ", ".join(f"{w}i" for w in words)
    return ("@group(0) @binding(4) var<storage, read> cm_words: array<i32>;\n"
            "fn bias_end() -> i32 { return cm_words[16]; }\n"
            f"const cm = array<i32, {WORDS}>({values});")


__all__ = ["CONSTANT", "WORDS", "applies", "constant_words", "source"]
