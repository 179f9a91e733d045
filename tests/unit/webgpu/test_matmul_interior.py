"""The tiled matmul's interior and clamped tiles and hoisted indices (`matmul_options.py`'s
`_in`, `_cl`, `_ha`, `_hs`): against numpy through the backend on shapes each allows (batched,
broadcast, transposed, a view whose rows are not whole vec4s, split K, a fused epilogue), and
the rule that keeps them off every shape they do not fit (`matmul_config.for_shape`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pyrite.dtype import DType
from pyrite.webgpu import linalg, matmul_config
from pyrite.webgpu.codegen import scalar_bits
from pyrite.webgpu.fused import INPUT, SCALAR, STEP, DenseEpilogue, Program, Step
from pyrite.webgpu.matmul_config import CONFIGS, TileConfig

RNG = np.random.default_rng(21)
NATIVE = 49152  # a device that gives WIDE's 48 KiB (the native ladder's rule)


class _Forced:
    """An autotuner stand-in whose matmul always answers one variant."""

    def __init__(self, cfg: TileConfig, splits: int = 1) -> None:
        self.cfg, self.splits = cfg, splits

    def matmul(self, m: int, n: int, inner: int, batch: int, aligned: bool, run: Any,
               **_: Any) -> tuple[TileConfig, bool, int]:
        return self.cfg, aligned, self.splits


def _launched(monkeypatch: pytest.MonkeyPatch) -> list[TileConfig]:
    """The configs the backend launches from now on (a spy on `matmul_config.for_shape`, which
    every tiled launch passes)."""
    seen: list[TileConfig] = []
    real = matmul_config.for_shape

    def spy(cfg: TileConfig, *args: Any) -> TileConfig:
        seen.append(real(cfg, *args))
        return seen[-1]

    monkeypatch.setattr(matmul_config, "for_shape", spy)
    return seen


def _force(gpu: Any, monkeypatch: pytest.MonkeyPatch, name: str, splits: int = 1) -> TileConfig:
    cfg = matmul_config.tile(name)
    if cfg.workgroup_bytes > gpu.kernels.runtime.limits.max_compute_workgroup_storage_size:
        pytest.skip(f"the adapter gives less than {cfg.workgroup_bytes} bytes of workgroup memory")
    monkeypatch.setitem(gpu.kernels.__dict__, "autotune", _Forced(cfg, splits))
    return cfg


# interior shapes of each tile (enough work for the tiled kernel): one tile, a batch of several
# with B broadcast, A broadcast
def _interior_shapes(cfg: TileConfig) -> list[tuple[int, int, int, int, int]]:
    bm, bn, bk = cfg.bm, cfg.bn, cfg.bk
    return [(1, 1, bm, 8 * bk, bn), (3, 1, 2 * bm, 5 * bk, bn), (1, 2, bm, 3 * bk, 2 * bn)]


@pytest.mark.parametrize("name", [
    matmul_config.DEFAULT + "_in", matmul_config.DEFAULT + "_in_ha",
    matmul_config.MEDIUM + "_in_ha_hs", matmul_config.NATIVE_MEDIUM + "_in_ha_hs_nb",
    matmul_config.DEFAULT + "_hs", "t128x64x16_8x4_pp_in_ha",
])
def test_interior_tiles_agree_with_numpy(gpu, up, down, monkeypatch, name):
    cfg = _force(gpu, monkeypatch, name)
    seen = _launched(monkeypatch)
    for ba, bb, m, k, n in _interior_shapes(cfg):
        a = RNG.normal(size=(ba, m, k)).astype(np.float32)
        b = RNG.normal(size=(bb, k, n)).astype(np.float32)
        want = a @ b
        np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), want, rtol=1e-4, atol=1e-4,
                                   err_msg=name)
        # each operand stored transposed, read in place
        at = gpu.permute(up(a.transpose(0, 2, 1).copy()), (0, 2, 1))
        bt = gpu.permute(up(b.transpose(0, 2, 1).copy()), (0, 2, 1))
        np.testing.assert_allclose(down(gpu.matmul(at, bt)), want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} transposed")
        # rows of A one element longer than K: not whole vec4s, the scalar variant
        wide = RNG.normal(size=(ba, m, k + 1)).astype(np.float32)
        sliced = gpu.slice(up(wide), ((0, ba, 1), (0, m, 1), (0, k, 1)))
        np.testing.assert_allclose(down(gpu.matmul(sliced, up(b))), wide[..., :k] @ b,
                                   rtol=1e-4, atol=1e-4, err_msg=f"{name} scalar")
    assert len(seen) == 9 and all(c == cfg for c in seen)  # as forced: every shape fits


@pytest.mark.parametrize("name,splits", [(matmul_config.DEFAULT + "_in_ha_hs", 3),
                                         (matmul_config.MEDIUM + "_in", 2)])
def test_interior_tiles_with_split_k_agree_with_numpy(gpu, up, down, monkeypatch, name, splits):
    cfg = _force(gpu, monkeypatch, name, splits)
    seen = _launched(monkeypatch)
    m, n, k = cfg.bm, 2 * cfg.bn, 1024
    a = RNG.normal(size=(2, m, k)).astype(np.float32)
    b = RNG.normal(size=(2, k, n)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)
    assert seen == [cfg]


@pytest.mark.parametrize("name", [matmul_config.DEFAULT + "_in_ha_hs",
                                  matmul_config.MEDIUM + "_in"])
def test_an_epilogue_is_stored_without_guards_on_an_interior_tile(gpu, up, down, monkeypatch,
                                                                  name):
    cfg = _force(gpu, monkeypatch, name)
    seen = _launched(monkeypatch)
    a = RNG.normal(size=(cfg.bm, 8 * cfg.bk)).astype(np.float32)
    b = RNG.normal(size=(8 * cfg.bk, cfg.bn)).astype(np.float32)
    program = Program((Step("binary", "mul", DType.F32, ((INPUT, 0), (SCALAR, 0))),
                       Step("binary", "sub", DType.F32, ((STEP, 0), (SCALAR, 1))),
                       Step("unary", "relu", DType.F32, ((STEP, 1),))),
                      (DType.F32,), (DType.F32, DType.F32))
    words = [cfg.bm, cfg.bn, scalar_bits(2.0, DType.F32), scalar_bits(0.5, DType.F32)]
    out = linalg.matmul_epilogue(gpu.kernels, up(a), up(b),
                                 DenseEpilogue(program, 0, 2, 2, (), words))
    assert out is not None
    np.testing.assert_allclose(down(out), np.maximum((a @ b) * 2 - 0.5, 0), rtol=1e-4,
                               atol=1e-4)
    assert seen == [cfg]


# clamped loads: M and N ragged, K whole K steps (each operand transposed too, split K)
@pytest.mark.parametrize("name,splits", [(matmul_config.DEFAULT + "_cl", 1),
                                         (matmul_config.NATIVE_MEDIUM + "_cl_nb", 1),
                                         ("t128x64x16_8x4_pp_cr_cl_hs", 1),
                                         (matmul_config.DEFAULT + "_cl", 3)])
def test_clamped_tiles_agree_with_numpy(gpu, up, down, monkeypatch, name, splits):
    cfg = _force(gpu, monkeypatch, name, splits)
    seen = _launched(monkeypatch)
    for ba, bb, m, k, n in ((1, 1, 70, 128, 45), (3, 1, 130, 1024 if splits > 1 else 96, 132),
                            (1, 2, 37, 128, 260)):
        a = RNG.normal(size=(ba, m, k)).astype(np.float32)
        b = RNG.normal(size=(bb, k, n)).astype(np.float32)
        want = a @ b
        np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), want, rtol=1e-4, atol=1e-4,
                                   err_msg=name)
        at = gpu.permute(up(a.transpose(0, 2, 1).copy()), (0, 2, 1))
        bt = gpu.permute(up(b.transpose(0, 2, 1).copy()), (0, 2, 1))
        np.testing.assert_allclose(down(gpu.matmul(at, bt)), want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} transposed")
    assert len(seen) == 6 and all(c == cfg for c in seen)


def test_an_epilogue_after_clamped_loads_skips_the_rows_past_the_edge(gpu, up, down,
                                                                      monkeypatch):
    cfg = _force(gpu, monkeypatch, matmul_config.DEFAULT + "_cl")
    seen = _launched(monkeypatch)
    m, k, n = 130, 128, 45
    a = RNG.normal(size=(m, k)).astype(np.float32)
    b = RNG.normal(size=(k, n)).astype(np.float32)
    program = Program((Step("binary", "add", DType.F32, ((INPUT, 0), (SCALAR, 0))),),
                      (DType.F32,), (DType.F32,))
    out = linalg.matmul_epilogue(gpu.kernels, up(a), up(b), DenseEpilogue(
        program, 0, 0, 2, (), [m, n, scalar_bits(1.5, DType.F32)]))
    assert out is not None
    np.testing.assert_allclose(down(out), a @ b + 1.5, rtol=1e-4, atol=1e-4)
    assert seen == [cfg]


# ragged in M, in N, in K, and a batch of them: never an interior tile, even forced
@pytest.mark.parametrize("m,k,n", [(130, 64, 128), (128, 64, 132), (128, 60, 128),
                                   (70, 333, 45)])
def test_an_interior_tile_forced_on_a_ragged_shape_runs_guarded(gpu, up, down, monkeypatch,
                                                                m, k, n):
    _force(gpu, monkeypatch, matmul_config.DEFAULT + "_in_ha_hs")
    seen = _launched(monkeypatch)
    a = RNG.normal(size=(2, m, k)).astype(np.float32)
    b = RNG.normal(size=(2, k, n)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)
    # K whole steps: clamped loads; else guarded (the store indices stay hoisted)
    form = "_cl_hs" if k % 8 == 0 else "_hs"
    assert [c.name for c in seen] == [matmul_config.DEFAULT + form]


def test_for_shape_never_gives_a_ragged_shape_an_interior_tile(monkeypatch):
    ragged = [(4095, 4096, 4096), (4096, 4000, 4096), (4096, 4096, 4100), (1000, 1000, 1000),
              (129, 256, 64), (1, 4096, 4096)]
    for cfg in CONFIGS.values():
        forced = matmul_config.tile(cfg.name + "_in") if not cfg.subgroup else cfg
        for m, n, k in ragged:
            if m % cfg.bm == 0 and n % cfg.bn == 0 and k % cfg.bk == 0:
                continue
            for limit in (16384, 32768, NATIVE):
                for c in (cfg, forced):
                    got = matmul_config.for_shape(c, m, n, k, limit)
                    assert not got.interior, (c.name, m)
                    assert not got.clamped or k % cfg.bk == 0, (c.name, k)
    wide = matmul_config.tile(matmul_config.NATIVE_WIDE)
    twin = matmul_config.for_shape(wide, 4096, 4096, 4096, NATIVE)
    assert twin.interior and twin.checks == wide.checks
    assert twin.name == matmul_config.WIDE + "_in_nb"
    assert twin.cache_key(True) != wide.cache_key(True)
    assert matmul_config.for_shape(twin, 4096, 4096, 4100, NATIVE) == wide
    # the page's and lavapipe's limits: the tile as chosen (a forced `_in` kept where it fits)
    medium = CONFIGS[matmul_config.MEDIUM]
    for limit in (16384, 32768):
        assert matmul_config.for_shape(medium, 1024, 1024, 1024, limit) is medium
    forced = matmul_config.tile(matmul_config.MEDIUM + "_in")
    assert matmul_config.for_shape(forced, 1024, 1024, 1024, 16384) is forced
    # ragged M, K whole steps: clamped (a forced `_in` anywhere; natively WIDE)
    assert matmul_config.for_shape(forced, 1000, 1024, 1024, 16384).clamped
    clamped = matmul_config.for_shape(wide, 4000, 4096, 4096, NATIVE)
    assert clamped.clamped and not clamped.interior
    assert clamped.name == matmul_config.WIDE + "_cl_nb"
    assert matmul_config.for_shape(wide, 4000, 4096, 4100, NATIVE) == wide  # K ragged
    assert matmul_config.for_shape(medium, 1000, 1024, 1024, 32768) is medium  # not native
    # natively only WIDE's twins (MEDIUM's gained nothing at 1024), only as the switches say
    twin = matmul_config.tile(matmul_config.NATIVE_MEDIUM)
    assert matmul_config.for_shape(twin, 1024, 1024, 1024, NATIVE) is twin
    monkeypatch.setattr(matmul_config, "NATIVE_CLAMPED", False)
    assert matmul_config.for_shape(wide, 4000, 4096, 4096, NATIVE) == wide
    assert matmul_config.for_shape(wide, 4096, 4096, 4096, NATIVE).interior
    monkeypatch.setattr(matmul_config, "NATIVE_INTERIOR", False)
    assert matmul_config.for_shape(wide, 4096, 4096, 4096, NATIVE) == wide


def test_interior_option_names_and_bad_combinations():
    from pyrite.webgpu import matmul_options

    cfg = matmul_config.tile(matmul_config.WIDE + "_hs_ha_nb_in")
    assert (cfg.interior, cfg.hoist, cfg.hoist_stores, cfg.checks) == (True, True, True, 2)
    assert matmul_options.suffix(cfg) == "_in_ha_hs_nb"
    assert cfg.as_dict()["interior"] is True
    guarded = matmul_options.with_interior(cfg, False)
    assert (guarded.name, guarded.hoist, guarded.hoist_stores) == (
        matmul_config.WIDE + "_hs_nb", False, True)
    with pytest.raises(ValueError, match="_ha.*need"):
        matmul_config.tile(matmul_config.WIDE + "_ha")
    with pytest.raises(ValueError, match="not both"):
        matmul_config.tile(matmul_config.WIDE + "_in_cl")
    clamped = matmul_config.render(matmul_config.tile(matmul_config.WIDE + "_cl"), True)
    assert "min(row, p.m - 1u)" in clamped and "min(col, p.n - 4u)" in clamped
    assert "if (row < p.m && col < p.n)" in clamped  # the stores keep their guard
    with pytest.raises(ValueError, match="constant-row"):
        matmul_config.tile("t128x128x8_8x8_u4_pp_hs")
    with pytest.raises(ValueError, match="keeps its guards"):
        matmul_config.render(matmul_config.tile(matmul_config.MEDIUM + "_in"), True,
                             io="fn load_a4() {}")
    code = matmul_config.render(cfg, True)
    loads = code.split("fn main")[0]
    assert "if (" not in loads and "load_a4i(ia0 + da)" in code  # no bound compares
    assert "As[buf][sa0k + 1u][sa0g][sa0t][sa0e] = pa0.y;" in code
    plain = matmul_config.render(CONFIGS[matmul_config.WIDE], True)
    assert "if (row < p.m && col < p.k)" in plain
