"""The sum of split-K partial products (`shaders/matmul_split_sum.wgsl`, through
`matmul_variants.add_partials`): each element's slices spread over lanes
(`matmul_config.sum_lanes`) and added in the documented order, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from pyrite.dtype import DType
from pyrite.webgpu import matmul_config, matmul_variants

RNG = np.random.default_rng(5)


def _documented(parts: np.ndarray, lanes: int) -> np.ndarray:
    """The order the kernel documents, in f32: lane l adds slices l, l + lanes, ... in turn,
    then the lanes are added pairwise (l + h into l, for h = lanes/2 ... 1)."""
    batch, splits, mn = parts.shape
    sums = np.zeros((lanes, batch, mn), np.float32)
    for lane in range(lanes):
        for s in range(lane, splits, lanes):
            sums[lane] = sums[lane] + parts[:, s]
    h = lanes // 2
    while h:
        sums[:h] = sums[:h] + sums[h:2 * h]
        h //= 2
    return sums[0].reshape(-1)


def test_lanes_grow_only_for_few_sums_of_many_slices():
    assert matmul_config.sum_lanes(1 << 20, 256) == 1  # enough workgroups already
    assert matmul_config.sum_lanes(1024, 7) == 1  # too few slices to share
    assert matmul_config.sum_lanes(1024, 196) == 32  # 4 workgroups -> 128
    assert matmul_config.sum_lanes(72, 226) == 32  # each lane at least 4 slices
    assert matmul_config.sum_lanes(72, 512) == matmul_config.SUM_MOST_LANES
    assert matmul_config.sum_lanes(4096, 16) == 4  # a matmul's split K: 4 slices a lane


@pytest.mark.parametrize("batch,splits,mn", [(1, 196, 1024), (1, 226, 72), (3, 16, 333),
                                             (2, 9, 100_000), (1, 1, 70)])
def test_the_sum_is_the_documented_order(gpu, batch, splits, mn):
    k = gpu.kernels
    parts = RNG.normal(size=(batch, splits, mn)).astype(np.float32)
    lanes = matmul_config.sum_lanes(batch * mn, splits)
    src = k.empty((batch * splits * mn,), DType.F32, "test")
    k.runtime.write_buffer(src.block.buffer, 0, parts.tobytes())
    out = k.empty((batch * mn,), DType.F32, "test")
    matmul_variants.add_partials(k, src, out, batch, splits)
    got = np.frombuffer(k.runtime.read_buffer(out.block.buffer, 0, out.numel * 4), np.float32)
    np.testing.assert_array_equal(got, _documented(parts, lanes))
    np.testing.assert_allclose(got, parts.sum(axis=1).reshape(-1), rtol=1e-5, atol=1e-4)
