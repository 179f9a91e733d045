"""The tiled matmul's variants (`webgpu/matmul_variants.py`, `matmul_config.py`): subgroup twins,
ping-pong and constant-row twins, split K and the options (`matmul_options.py`), each against
numpy through the backend's matmul on ragged shapes, every operand layout and aligned or not;
the device check that gates the subgroup twins; the heuristic's split and ladder."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from pyrite.webgpu import matmul_config, matmul_variants
from pyrite.webgpu.matmul_config import CONFIGS, TileConfig

RNG = np.random.default_rng(11)


class _Forced:
    """An autotuner stand-in whose matmul always answers one variant."""

    def __init__(self, cfg: TileConfig, splits: int) -> None:
        self.cfg, self.splits = cfg, splits

    def matmul(self, m: int, n: int, inner: int, batch: int, aligned: bool, run: Any,
               **_: Any) -> tuple[TileConfig, bool, int]:
        return self.cfg, aligned, self.splits


def _check(gpu, up, down, monkeypatch, name: str, splits: int = 1) -> None:
    cfg = matmul_config.tile(name)
    if cfg.workgroup_bytes > gpu.kernels.runtime.limits.max_compute_workgroup_storage_size:
        pytest.skip(f"the adapter gives less than {cfg.workgroup_bytes} bytes of workgroup memory")
    monkeypatch.setitem(gpu.kernels.__dict__, "autotune", _Forced(cfg, splits))
    # ragged (M, N, K not multiples of anything), aligned, batched with a broadcast operand,
    # and each operand stored transposed (read in place)
    for batch, m, k, n in ((1, 70, 333, 45), (2, 64, 520, 96), (3, 37, 129, 130)):
        a = RNG.normal(size=(batch, m, k)).astype(np.float32)
        b = RNG.normal(size=(1, k, n)).astype(np.float32)
        want = a @ b
        got = down(gpu.matmul(up(a), up(b)))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{name}/k{splits}")
        at = gpu.permute(up(a.transpose(0, 2, 1).copy()), (0, 2, 1))
        bt = gpu.permute(up(b.transpose(0, 2, 1).copy()), (0, 2, 1))
        np.testing.assert_allclose(down(gpu.matmul(at, bt)), want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name}/k{splits} transposed")


@pytest.mark.parametrize("name", ["t128x128x8_8x8_u8_pp", "t64x64x16_4x4_u16_pp",
                                  "t128x128x8_8x8_pp"])
def test_pingpong_twins_agree_with_numpy(gpu, up, down, monkeypatch, name):
    assert CONFIGS[name].pingpong
    _check(gpu, up, down, monkeypatch, name)


# the ladder's tiles (the whole K step written out: MEDIUM; loops of 4 k-rows: DEFAULT; of 8: WIDE)
# and a loop of one k-row; 128x64 has more B loads per thread than A loads
@pytest.mark.parametrize("name", [matmul_config.WIDE, matmul_config.DEFAULT,
                                  matmul_config.MEDIUM, "t128x128x8_8x8_pp_cr",
                                  "t128x64x16_8x4_pp_cr"])
def test_constant_row_twins_agree_with_numpy(gpu, up, down, monkeypatch, name):
    cfg = CONFIGS[name]
    assert cfg.const_rows and cfg.pingpong
    _check(gpu, up, down, monkeypatch, name)


def test_constant_row_tiles_index_workgroup_memory_by_constants():
    # the reason for the form: every inner-loop read of the tiles is `[buffer][k][group][ty|tx]`
    # with constants but the thread's row or column (naga clamps each run-time index)
    code = matmul_config.render(CONFIGS[matmul_config.MEDIUM], True)
    reads = re.findall(r"= ([AB]s\[[^;]*\]);", code)
    assert reads and all(re.fullmatch(r"[AB]s\[[01]u\]\[\d+u\]\[\d+u\]\[(ty|tx)\]", r)
                         for r in reads)
    flat = matmul_config.render(CONFIGS["t64x64x16_4x4_u16_pp"], True)
    assert "As[ai + " in flat and "As[ai + " not in code
    with pytest.raises(ValueError, match="exclude each other"):
        TileConfig("x", 64, 64, 16, 4, 4, 16, subgroup=True, const_rows=True)


@pytest.mark.parametrize("name", ["t64x64x8_8x4_u8_sg", "t128x64x8_8x8_u8_sg",
                                  "t128x128x16_8x8_u4_sg"])
def test_subgroup_twins_agree_with_numpy(gpu, up, down, monkeypatch, name):
    if not matmul_variants.subgroups_usable(gpu.kernels):
        pytest.skip("the adapter has no usable subgroup feature")
    _check(gpu, up, down, monkeypatch, name)


@pytest.mark.parametrize("name,splits", [(matmul_config.DEFAULT, 4), ("t32x32x16_4x4_u16", 3),
                                         ("t64x64x16_4x4_u16_pp", 9)])
def test_split_k_agrees_with_numpy(gpu, up, down, monkeypatch, name, splits):
    # 9 slices of at least 64: slices past the end of K add zeros
    _check(gpu, up, down, monkeypatch, name, splits)


def test_subgroup_twins_are_offered_only_after_the_device_check(gpu, monkeypatch):
    k = gpu.kernels
    usable = matmul_variants.subgroups_usable(k)
    assert usable == ("subgroup" in k.runtime.features)  # lavapipe and GPUs pass the check
    names = [c.name for c in matmul_config.candidates(500, 500, 500, 1, subgroup=True)]
    twins = [name for name in names if name.endswith("_sg")]
    assert twins and all(names.index(name[:-3]) < names.index(name) for name in twins)
    assert not any(c.subgroup for c in matmul_config.candidates(500, 500, 500, 1))
    # a device whose lanes do not form the template's quads: no twin is ever a candidate
    monkeypatch.setattr(matmul_variants, "_USABLE", {})
    monkeypatch.setattr(matmul_variants, "_agrees", lambda k, name: False)
    assert not matmul_variants.subgroups_usable(k)


def test_the_heuristic_splits_k_only_where_the_split_fills_the_gpu():
    big = CONFIGS[matmul_config.DEFAULT]  # the largest tile within WebGPU's default 16 KiB
    assert matmul_config.choose_split(1024, 1024, 1024) == (big, 4)
    assert matmul_config.choose_split(256, 4096, 1024) == (big, 4)
    for m, n, k in ((2048, 2048, 2048), (1000, 1000, 1000), (512, 512, 512), (1024, 1024, 256)):
        cfg, splits = matmul_config.choose_split(m, n, k)
        assert splits == 1 and cfg == matmul_config.choose_config(m, n, k)
    count, length = matmul_config.split_k(big, 1024, 1024, 1000)
    assert length % matmul_config.SPLIT_ALIGN == 0 and count * length >= 1000
    assert (count - 1) * length < 1000  # no slice wholly past K


def test_a_long_reduction_the_tiles_cannot_fill_is_split_on_a_smaller_rung():
    # MNIST's 1024 -> 512 layer at batch 256: 128 workgroups of the smallest tile; K is twice
    # the longer output side, so the 64x64 tile takes it in 8 slices (256 workgroups)
    medium = CONFIGS[matmul_config.MEDIUM]
    for wg_bytes in (16384, 49152):
        assert matmul_config.choose_split(256, 512, 1024, 1, wg_bytes) == (medium, 8)
    # a reduction no longer than the output: no split (256^3, 64 workgroups of 32x32)
    assert matmul_config.choose_split(256, 256, 256)[1] == 1
    assert matmul_config.choose_split(512, 256, 1023)[1] == 1  # K < 2 x 512
    # a page's software adapter never splits
    assert matmul_config.choose_split(256, 512, 1024, software=True)[1] == 1


def test_the_ladder_takes_the_wide_tile_only_where_the_device_allows_it():
    wide = CONFIGS[matmul_config.WIDE]
    assert wide.workgroup_bytes > 16384  # never on WebGPU's default limits (the page)
    assert matmul_config.choose_config(2048, 2048, 2048, 1, 16384).name == matmul_config.DEFAULT
    assert matmul_config.choose_config(2048, 2048, 2048, 1, 49152) == wide  # 128 workgroups
    assert matmul_config.choose_config(1024, 1024, 1024, 1, 49152).name == matmul_config.MEDIUM
    assert matmul_config.choose_split(2048, 2048, 2048, 1, 49152) == (wide, 1)


# the options on tiles the default limits allow (lavapipe has 32 KiB): warp blocks of both
# shapes, prefetch distance 2 on a loop and on a whole step written out, on a flat ping-pong
# tile, and with split K
@pytest.mark.parametrize("name", [
    matmul_config.DEFAULT + "_w8x4", matmul_config.DEFAULT + "_w4x8",
    matmul_config.DEFAULT + "_d2", matmul_config.MEDIUM + "_w8x4_d2",
    "t128x64x16_8x4_pp_w4x8_d2",
])
def test_options_agree_with_numpy(gpu, up, down, monkeypatch, name):
    _check(gpu, up, down, monkeypatch, name)


@pytest.mark.parametrize("name,splits", [(matmul_config.DEFAULT + "_w8x4_d2", 3)])
def test_options_with_split_k_agree_with_numpy(gpu, up, down, monkeypatch, name, splits):
    _check(gpu, up, down, monkeypatch, name, splits)


def test_option_names_round_trip_and_bad_ones_are_refused():
    from pyrite.webgpu import matmul_options

    cfg = matmul_config.tile(matmul_config.WIDE + "_d2_w8x4")
    assert (cfg.warp_rows, cfg.prefetch) == (8, 2)
    assert matmul_options.suffix(cfg) == "_w8x4_d2"
    assert matmul_config.tile(matmul_config.WIDE) is CONFIGS[matmul_config.WIDE]
    assert cfg.cache_key(True) != CONFIGS[matmul_config.WIDE].cache_key(True)
    with pytest.raises(ValueError, match="R \\* C = 32"):
        matmul_config.tile(matmul_config.WIDE + "_w4x4")
    with pytest.raises(ValueError, match="unknown matmul tile"):
        matmul_config.tile("t1x1_w8x4")
    with pytest.raises(ValueError, match="thread grid"):
        matmul_config.tile("t32x32x16_4x4_u16_w2x16")  # an 8 x 8 grid
    with pytest.raises(ValueError, match="ping-pong"):
        matmul_config.tile("t32x32x16_4x4_u16_d2")
    with pytest.raises(ValueError, match="lanes along a grid row"):
        matmul_config.tile("t64x64x16_4x4_u16_sg_w8x4")
    code = matmul_config.render(cfg, True)
    assert "let ty = (warp / 4u) * 8u + lane / 4u;" in code  # a 16 x 16 grid: 4 warps across
    assert "qa0 = load_a4(" in code and "k0 = k_begin + (s + 2u) * BK;" in code
