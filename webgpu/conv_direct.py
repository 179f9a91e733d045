"""The direct conv2d kernel's block: how many output channels and neighbouring pixels of a row
one invocation computes (`shaders/conv2d.wgsl`), and the WGSL statements unrolled for it.

An invocation of the direct kernel holds one vec4 accumulator per pixel and 4 channels. Per
tap it reads one weight vec4 per 4 channels and one input value per pixel, then does
pixels x channels multiply-adds: a block of 1 pixel x 4 channels (the kernel as it was) does
4 multiply-adds per 5 loads, 4 pixels x 16 channels 64 per 20. What a GPU wants is the larger
block, down to where the invocations left no longer fill it (`choose_block`); a page's
software adapter keeps 1 x 4 (`software.py`: measured there, and the block's loops are the
CPU's SIMD lanes already).

Blocks are named "CxP" (channels x pixels): autotune times them as the direct kernel's
variants (`conv.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

_LANES = "xyzw"


@dataclass(frozen=True)
class Block:
    """Output channels (a multiple of 4) and pixels of a row per invocation."""

    channels: int
    pixels: int

    @property
    def name(self) -> str:
        return f"{self.channels}x{self.pixels}"

    @staticmethod
    def parse(name: str) -> Block:
        channels, _, pixels = name.partition("x")
        return Block(int(channels), int(pixels))

    def invocations(self, n: int, c_out: int, groups: int, oh: int, ow: int) -> int:
        """Invocations of a conv of this output shape (channel blocks per group rounded up)."""
        per_group = c_out // groups
        return n * groups * -(-per_group // self.channels) * oh * -(-ow // self.pixels)


PLAIN = Block(4, 1)  # the kernel before blocks: one pixel, 4 channels
BLOCKS = (PLAIN, Block(8, 1), Block(8, 2), Block(16, 1), Block(8, 4), Block(16, 2),
          Block(16, 4))
#: the blocks the heuristic picks from: 4 pixels a row won none of the five MNIST convs
#: timed on the H100 (benchmarks/results/conv_direct_h100_s5.json); autotune times them all
HEURISTIC_PIXELS = 2
#: invocations below which a larger block leaves an H100's multiprocessors short of work, for
#: a reduction of fewer than LONG_TERMS terms per output (MNIST's conv1 at batch 64, 9 terms:
#: 8x2, 21,632 invocations, took 1.2x the time of 8x1, 43,264) and of more (the input gradient
#: of conv2 at 64, 144 terms: 8x2, 21,632 invocations, was the fastest)
MIN_INVOCATIONS = 32768
MIN_INVOCATIONS_LONG = 16384
LONG_TERMS = 64


@lru_cache(maxsize=256)
def choose_block(n: int, c_out: int, groups: int, oh: int, ow: int, terms: int,
                 soft: bool) -> Block:
    """The heuristic's block (autotune off, or its first guess) for a conv whose outputs each
    sum `terms` products (input channels per group x taps): the largest of BLOCKS (at most
    HEURISTIC_PIXELS pixels; of two as large, the one with more pixels) that the group's
    channels fill (no more channels than the group has, rounded up to 4; no more pixels than
    the row) while the conv keeps MIN_INVOCATIONS (MIN_INVOCATIONS_LONG) invocations; PLAIN on
    a software adapter. On the H100 this picked, for each MNIST conv (forward at batches 64
    and 256, conv2's input gradient at 64), a block within 3% of the fastest: 1.1x to 2.9x
    the PLAIN kernel's speed."""
    if soft:
        return PLAIN
    per_group = -(-(c_out // groups) // 4) * 4
    least = MIN_INVOCATIONS_LONG if terms >= LONG_TERMS else MIN_INVOCATIONS
    best = PLAIN
    for block in BLOCKS:
        if block.channels > per_group or block.pixels > min(ow, HEURISTIC_PIXELS):
            continue
        if block.invocations(n, c_out, groups, oh, ow) < least:
            continue
        if (block.channels * block.pixels, block.pixels) > \
                (best.channels * best.pixels, best.pixels):
            best = block
    return best


def candidates(n: int, c_out: int, groups: int, oh: int, ow: int) -> list[Block]:
    """The blocks worth timing for this conv: those the group's channels and the row fill."""
    per_group = -(-(c_out // groups) // 4) * 4
    return [b for b in BLOCKS if b.channels <= max(4, per_group) and b.pixels <= max(1, ow)]


def statements(block: Block) -> dict[str, str | int]:
    """conv2d.wgsl's generated placeholders for `block`."""
    vecs, pixels = block.channels // 4, block.pixels
    ind = "  "
    weights = []
    for b in range(vecs):
        lanes = ", ".join(f"min(co0 + {4 * b + j}, last)" for j in range(4))
        weights.append(f"{ind}let wb{b} = vec4<i32>({lanes}) * ws_o + w_off;")
    zero = [f"{ind}var a{p}_{b} = vec4<f32>(0.0);" for p in range(pixels) for b in range(vecs)]
    ind3 = "        "
    tap = [f"{ind3}let w{b} = vec4<f32>(" + ", ".join(f"w[wb{b}.{c} + t]" for c in _LANES) + ");"
           for b in range(vecs)]
    if pixels == 1:  # a tap in the padding is skipped, as the kernel before blocks did
        tap.insert(0, f"{ind3}if (ix < 0 || ix >= win.w) {{ continue; }}")
        tap.append(f"{ind3}let v0 = x[xrow + ix];")
        tap += [f"{ind3}a0_{b} += v0 * w{b};" for b in range(vecs)]
    for p in range(pixels if pixels > 1 else 0):  # one pixel's tap may be in, another's not
        at = "ix" if p == 0 else f"ix + {p} * win.sw"
        tap.append(f"{ind3}let i{p} = {at};")
        tap.append(f"{ind3}let v{p} = select(0.0, x[xrow + clamp(i{p}, 0, xw)], "
                   f"i{p} >= 0 && i{p} < win.w);")
        tap += [f"{ind3}a{p}_{b} += v{p} * w{b};" for b in range(vecs)]
    ind2 = "    "
    bias = []
    for b in range(vecs):
        lanes = ", ".join(f"bias[min(co0 + {4 * b + j}, last)]" for j in range(4))
        bias.append(f"{ind2}let bb{b} = vec4<f32>({lanes});")
        bias += [f"{ind2}a{p}_{b} += bb{b};" for p in range(pixels)]
    store = [f"{ind}let live = last - co0 + 1;"]
    for p in range(pixels):
        inner = []
        for ch in range(block.channels):
            b, lane = divmod(ch, 4)
            at = f"obase + {p}" + (f" + {ch} * plane" if ch else "")
            line = f"out[{at}] = pyrite_out(a{p}_{b}.{_LANES[lane]}, {at});"
            inner.append(line if ch == 0 else f"if (live > {ch}) {{ {line} }}")
        guard = f"if (ox0 + {p} < win.ow) " if p else ""
        store.append(f"{ind}{guard}{{\n" + "\n".join(f"{ind2}{s}" for s in inner) + f"\n{ind}}}")
    return {"pixels": pixels, "channels": block.channels, "weights": "\n".join(weights),
            "zero": "\n".join(zero), "tap": "\n".join(tap), "bias": "\n".join(bias),
            "store": "\n".join(store)}


__all__ = ["BLOCKS", "PLAIN", "Block", "candidates", "choose_block", "statements"]
