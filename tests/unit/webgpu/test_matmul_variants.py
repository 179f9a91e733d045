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
    # the longer output side, so the 64x64 tile takes it in 8 slices (256 workgroups); natively
    # with 48 KiB its twin (NATIVE_MEDIUM)
    for wg_bytes, rung in ((16384, matmul_config.MEDIUM), (49152, matmul_config.NATIVE_MEDIUM)):
        assert matmul_config.choose_split(256, 512, 1024, 1, wg_bytes) == (
            matmul_config.tile(rung), 8)
    # a reduction no longer than the output: no split (256^3, 64 workgroups of 32x32)
    assert matmul_config.choose_split(256, 256, 256)[1] == 1
    assert matmul_config.choose_split(512, 256, 1023)[1] == 1  # K < 2 x 512
    # a page's software adapter never splits
    assert matmul_config.choose_split(256, 512, 1024, software=True)[1] == 1


def test_the_ladder_takes_the_wide_tile_only_where_the_device_allows_it():
    wide = matmul_config.tile(matmul_config.NATIVE_WIDE)  # WIDE without naga's index clamps
    assert wide.workgroup_bytes > 16384  # never on WebGPU's default limits (the page)
    assert wide.checks == 2 and matmul_config.ladder(49152)[0] == wide
    assert matmul_config.choose_config(2048, 2048, 2048, 1, 16384).name == matmul_config.DEFAULT
    assert matmul_config.choose_config(2048, 2048, 2048, 1, 49152) == wide  # 128 workgroups
    assert matmul_config.choose_split(2048, 2048, 2048, 1, 49152) == (wide, 1)


def test_medium_has_its_native_twin_only_where_the_wide_tile_fits():
    twin = matmul_config.tile(matmul_config.NATIVE_MEDIUM)
    assert (twin.warp_rows, twin.prefetch) == (8, 2)
    assert twin.workgroup_bytes == CONFIGS[matmul_config.MEDIUM].workgroup_bytes == 16384
    assert matmul_config.choose_config(1024, 1024, 1024, 1, 49152) == twin
    assert matmul_config.choose_split(1024, 1024, 1024, 1, 49152) == (twin, 1)
    for limit in (16384, 32768):  # the page's adapters, lavapipe: MEDIUM as it was
        rungs = [c.name for c in matmul_config.ladder(limit)]
        assert matmul_config.MEDIUM in rungs and matmul_config.NATIVE_MEDIUM not in rungs
        assert matmul_config.choose_config(1024, 1024, 1024, 1, limit, software=False).name in (
            matmul_config.MEDIUM, matmul_config.DEFAULT)
    assert twin in matmul_config.candidates(1024, 1024, 1024, 1, 49152)
    assert twin not in matmul_config.candidates(1024, 1024, 1024, 1, 32768)


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


# one workgroup buffer (two barriers a step): constant rows with a loop and with the whole
# step written out, a flat tile, and the 128x256x32 tile where the adapter gives 48 KiB
@pytest.mark.parametrize("name", [
    "t128x128x16_8x8_u4_pp_cr_b1", "t64x64x16_4x4_u16_pp_cr_b1", "t128x128x8_8x8_b1",
    "t128x256x32_8x16_u8_pp_cr_b1",
])
def test_one_buffer_agrees_with_numpy(gpu, up, down, monkeypatch, name):
    cfg = matmul_config.tile(name)
    assert cfg.buffers == 1 and cfg.workgroup_bytes == cfg.bk * (cfg.bm + cfg.bn) * 4
    _check(gpu, up, down, monkeypatch, name)


@pytest.mark.parametrize("name,splits", [(matmul_config.DEFAULT + "_w8x4_d2", 3),
                                         ("t64x64x16_4x4_u16_pp_cr_b1", 4)])
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
    with pytest.raises(ValueError, match="_b1 without _d2"):
        matmul_config.tile(matmul_config.WIDE + "_d2_b1")
    one = matmul_config.tile("t128x256x32_8x16_u8_pp_cr_nb_b1")
    assert (one.buffers, one.checks, one.workgroup_bytes) == (1, 2, 49152)
    assert matmul_options.suffix(one) == "_b1_nb"
    assert [matmul_config.tile(matmul_config.WIDE + s).checks
            for s in ("", "_nc", "_nb", "_nl")] == [3, 0, 2, 1]
    single = matmul_config.render(one, True)
    assert "var<workgroup> As: array<array<array<array<vec4<f32>, WG_Y>, 2u>, BK>, 1u>;" in single
    assert single.count("workgroupBarrier();") == 3  # after the prologue, then two per step
    code = matmul_config.render(cfg, True)
    assert "let ty = (warp / 4u) * 8u + lane / 4u;" in code  # a 16 x 16 grid: 4 warps across
    assert "qa0 = load_a4(" in code and "k0 = k_begin + (s + 2u) * BK;" in code


# naga's run-time checks dropped (unchecked_module.py): all of them, the index clamps only (the
# ladder's NATIVE_WIDE rule, here on tiles lavapipe's 32 KiB allow), the loop counters only
@pytest.mark.parametrize("name,checks", [
    (matmul_config.MEDIUM + "_nc", 0), (matmul_config.DEFAULT + "_nb", 2),
    (matmul_config.NATIVE_MEDIUM + "_nb", 2), ("t128x128x8_8x8_pp_nl", 1),
])
def test_tiles_without_checks_agree_with_numpy(gpu, up, down, monkeypatch, name, checks):
    from pyrite.webgpu import native, unchecked_module

    made: list[int] = []
    real = unchecked_module.create

    def create(device: Any, code: str, label: str = "", checks: int = 0) -> Any:
        module = real(device, code, label, checks)
        made.append(checks if module is not None else -1)
        return module

    monkeypatch.setattr(native, "unchecked_module", type("U", (), {"create": staticmethod(create)}))
    _check(gpu, up, down, monkeypatch, name)
    assert made and set(made) == {checks}  # compiled by wgpu-native's unchecked call


def test_unchecked_modules_report_bad_wgsl_and_give_way_where_absent(monkeypatch):
    wgpu = pytest.importorskip("wgpu")
    from wgpu.backends.wgpu_native import _api

    from pyrite.webgpu import unchecked_module

    try:
        device = wgpu.gpu.request_adapter_sync().request_device_sync()
    except Exception as exc:  # no adapter here
        pytest.skip(f"no wgpu device: {exc}")
    ok = "@compute @workgroup_size(1) fn main() { var x = array<u32, 4>(); x[0] = 1u; }"
    assert unchecked_module.create(device, ok, "ok", unchecked_module.LOOP_BOUNDING) is not None
    with pytest.raises(Exception, match="expected expression"):
        unchecked_module.create(device, ok.replace("1u;", ";"), "bad")
    monkeypatch.setattr(_api, "libf", object())  # a wgpu-native without the call
    assert unchecked_module.create(device, ok) is None
