"""Autotune (`webgpu/autotune.py`): choosing and caching on a fake clock, the store (round trip,
invalidation, corrupt files, atomic writes), the modes, and tuned kernels giving the untuned
results on the real adapter. No test writes the user's cache: stores are in memory or under
tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from pyrite import config
from pyrite.backend.module_ops import ModuleOps
from pyrite.backend.reduce import REDUCTIONS
from pyrite.dtype import DType
from pyrite.errors import ConfigError
from pyrite.webgpu import matmul_config
from pyrite.webgpu.autotune import MIN_WORK, Autotuner, FileStore, TuneStore, bucket
from pyrite.webgpu.recorder import RecordingRuntime
from pyrite.webgpu.runtime import AdapterInfo, Limits

ADAPTER = AdapterInfo(0, "Acme 9000", "acme", "Vulkan", "DiscreteGPU", "acme driver 1.0")
LIMITS = Limits(max_buffer_size=1 << 28, max_storage_buffer_binding_size=1 << 27,
                max_storage_buffers_per_shader_stage=8, max_compute_workgroups_per_dimension=65535,
                max_compute_invocations_per_workgroup=256, max_compute_workgroup_storage_size=16384)
RNG = np.random.default_rng(5)


class FakeRuntime:
    """Runs nothing; a candidate's run costs `cost[name]` seconds of a fake clock at the next
    sync."""

    def __init__(self, cost: dict[str, float], adapter: AdapterInfo = ADAPTER) -> None:
        self.adapter, self.limits, self.cost = adapter, LIMITS, cost
        self.now = self.pending = 0.0
        self.runs: list[str] = []

    def run(self, name: str) -> None:
        self.runs.append(name)
        self.pending += self.cost[name]

    def sync(self) -> None:
        self.now, self.pending = self.now + self.pending, 0.0


def _tuner(rt: FakeRuntime, store: TuneStore | None = None, mode: str = "on",
           budget_s: float = 100.0) -> Autotuner:
    return Autotuner(rt, mode=mode, store=store or TuneStore(),  # type: ignore[arg-type]
                     budget_s=budget_s, clock=lambda: rt.now)  # (a fake runtime)


def _pick(tuner: Autotuner, rt: FakeRuntime, sizes: tuple[int, ...] = (100, 1000)) -> str:
    return tuner.pick("fam", sizes, DType.F32, lambda: list(rt.cost), rt.run)


# ---- choosing ---------------------------------------------------------------------------------
def test_bucket_rounds_each_size_up_to_a_power_of_two() -> None:
    assert bucket((1, 2, 3, 100, 1024, 1025, 0)) == (1, 2, 4, 128, 1024, 2048, 0)


def test_the_fastest_candidate_is_chosen_and_kept_per_bucket() -> None:
    rt = FakeRuntime({"heuristic": 3e-3, "fast": 1e-3, "slow": 9e-3})
    tuner = _tuner(rt)
    assert _pick(tuner, rt) == "fast"
    assert {"heuristic", "fast", "slow"} <= set(rt.runs) and tuner.stats.tuned == 1
    timed = len(rt.runs)
    assert _pick(tuner, rt, (128, 1000)) == "fast"  # same bucket (128, 1024): nothing timed
    assert len(rt.runs) == timed and tuner.stats.tuned == 1
    assert tuner.choices() == {"fam/f32/128x1024": "fast"}
    assert tuner.timings()["fam/f32/128x1024"]["fast"] == pytest.approx(1.0)  # milliseconds
    _pick(tuner, rt, (129, 1000))  # another bucket: timed again
    assert tuner.stats.tuned == 2


def test_a_tie_keeps_the_heuristic() -> None:
    rt = FakeRuntime({"heuristic": 1e-3, "other": 1e-3})
    assert _pick(_tuner(rt), rt) == "heuristic"


def test_the_budget_bounds_tuning_and_the_heuristic_is_always_timed() -> None:
    rt = FakeRuntime({name: 1.0 for name in "abcdefgh"})
    tuner = _tuner(rt, budget_s=0.5)
    assert _pick(tuner, rt) == "a"
    assert set(rt.runs) == {"a"} and tuner.stats.timed == 1


def test_a_new_tuner_finds_the_choice_in_the_store_and_times_nothing() -> None:
    store = TuneStore()
    rt = FakeRuntime({"heuristic": 3e-3, "fast": 1e-3})
    _pick(_tuner(rt, store), rt)
    rt.runs.clear()
    again = _tuner(rt, store)
    assert _pick(again, rt) == "fast" and rt.runs == []
    assert again.stats.stored == 1 and again.stats.tuned == 0
    cached = _tuner(rt, store, mode="cached")  # PYRITE_AUTOTUNE=cached: stored choices only
    assert _pick(cached, rt) == "fast" and _pick(cached, rt, (5000, 2)) == "heuristic"
    assert rt.runs == []


def test_a_stored_choice_that_is_no_longer_a_candidate_is_timed_again() -> None:
    store = TuneStore()
    rt = FakeRuntime({"heuristic": 3e-3, "gone": 1e-3})
    _pick(_tuner(rt, store), rt)
    rt.cost = {"heuristic": 3e-3, "new": 2e-3}
    assert _pick(_tuner(rt, store), rt) == "new"


def test_off_uses_the_heuristics_times_nothing_and_reads_no_store(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYRITE_AUTOTUNE", "off")
    monkeypatch.setenv("PYRITE_AUTOTUNE_CACHE", str(tmp_path / "autotune.json"))
    rt = FakeRuntime({"heuristic": 3e-3, "fast": 1e-3})
    tuner = Autotuner(rt)  # type: ignore[arg-type]  # a fake runtime
    assert tuner.mode == "off"
    assert _pick(tuner, rt) == "heuristic"
    assert tuner.matmul(256, 256, 256, 1, True, lambda cfg, vec4, splits: rt.run("x")) == (
        matmul_config.choose_config(256, 256, 256, 1, 16384), True, 1)
    # with autotune off, a 1024-class product splits K where the caller can add the partials
    big = matmul_config.CONFIGS[matmul_config.DEFAULT]
    assert tuner.matmul(1024, 1024, 1024, 1, True, lambda cfg, vec4, splits: rt.run("x"),
                        split=True) == (big, True, 4)
    assert tuner.workgroup("reduce", (1024, 1024), DType.F32, 32, lambda: rt.run("x")) == 32
    assert rt.runs == [] and tuner.stats.timed == 0 and tuner.choices() == {}
    assert not isinstance(tuner.store, FileStore) and not (tmp_path / "autotune.json").exists()


def test_settings_are_read_in_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PYRITE_AUTOTUNE", raising=False)
    assert config.autotune_mode() == "on"
    monkeypatch.setenv("PYRITE_AUTOTUNE", "sometimes")
    with pytest.raises(ConfigError, match="on, cached or off"):
        config.autotune_mode()
    monkeypatch.delenv("PYRITE_AUTOTUNE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert FileStore().path == tmp_path / "pyrite" / "autotune.json"
    monkeypatch.setenv("PYRITE_AUTOTUNE_CACHE", str(tmp_path / "elsewhere.json"))
    assert FileStore().path == tmp_path / "elsewhere.json"


def test_the_recording_runtime_is_never_timed() -> None:
    assert Autotuner(RecordingRuntime(), mode="on").mode == "off"


def test_matmul_candidates_start_with_the_heuristic_and_fit_the_device() -> None:
    for m, n, k in ((64, 64, 64), (8, 4096, 4096), (1000, 1000, 1000)):
        found = matmul_config.candidates(m, n, k, 1, 16384)
        assert found[0] == matmul_config.choose_config(m, n, k, 1, 16384)
        assert len(set(found)) == len(found)
        assert all(c.workgroup_bytes <= 16384 for c in found)


# ---- the store --------------------------------------------------------------------------------
ENTRY = {"choice": "fast", "ms": {"heuristic": 3.0, "fast": 1.0}, "sizes": [100, 1000]}


def test_the_store_round_trips_through_its_text_and_a_file(tmp_path: Path) -> None:
    memory = TuneStore()
    memory.put(ADAPTER, "fam/f32/128x1024", ENTRY)
    assert TuneStore(memory.text).get(ADAPTER, "fam/f32/128x1024") == ENTRY
    path = tmp_path / "sub" / "autotune.json"
    FileStore(path).put(ADAPTER, "fam/f32/128x1024", ENTRY)
    assert FileStore(path).get(ADAPTER, "fam/f32/128x1024") == ENTRY
    doc = json.loads(path.read_text())
    assert doc["pyrite"] == FileStore(path).version
    assert doc["adapters"][next(iter(doc["adapters"]))]["adapter"] == {
        "name": "Acme 9000", "vendor": "acme", "backend": "Vulkan", "type": "DiscreteGPU",
        "driver": "acme driver 1.0"}


def test_a_put_keeps_what_another_process_wrote(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    ours, theirs = FileStore(path), FileStore(path)
    assert ours.get(ADAPTER, "a") is None
    theirs.put(ADAPTER, "b", ENTRY)
    ours.put(ADAPTER, "a", ENTRY)
    assert FileStore(path).get(ADAPTER, "a") == FileStore(path).get(ADAPTER, "b") == ENTRY


def test_another_version_adapter_or_driver_invalidates(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    FileStore(path, version="0.0.1").put(ADAPTER, "k", ENTRY)
    assert FileStore(path).get(ADAPTER, "k") is None  # another pyrite
    FileStore(path).put(ADAPTER, "k", ENTRY)
    assert json.loads(path.read_text())["pyrite"] != "0.0.1"
    other_driver = AdapterInfo(0, "Acme 9000", "acme", "Vulkan", "DiscreteGPU", "acme driver 2.0")
    other_gpu = AdapterInfo(1, "Acme 500", "acme", "Vulkan", "IntegratedGPU", "acme driver 1.0")
    assert FileStore(path).get(other_driver, "k") is None
    assert FileStore(path).get(other_gpu, "k") is None
    FileStore(path).put(other_gpu, "k", {"choice": "other"})
    assert FileStore(path).get(ADAPTER, "k") == ENTRY  # each adapter keeps its own choices
    reindexed = AdapterInfo(3, "Acme 9000", "acme", "Vulkan", "DiscreteGPU", "acme driver 1.0")
    assert FileStore(path).get(reindexed, "k") == ENTRY


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"format": 1, "pyrite": "0.1.0"}',
                                  '{"format": 1, "pyrite": "0.1.0", "adapters": {"x": {}}}'])
def test_a_corrupt_file_is_ignored_with_a_warning_and_rewritten(tmp_path: Path,
                                                                text: str) -> None:
    path = tmp_path / "autotune.json"
    path.write_text(text.replace("0.1.0", FileStore(path).version))
    store = FileStore(path)
    with pytest.warns(RuntimeWarning, match="is ignored"):
        assert store.get(ADAPTER, "k") is None
    store.put(ADAPTER, "k", ENTRY)
    assert FileStore(path).get(ADAPTER, "k") == ENTRY


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "autotune.json"
    FileStore(path).put(ADAPTER, "k", ENTRY)
    before = path.read_bytes()

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    store = FileStore(path)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        store.put(ADAPTER, "k2", ENTRY)
    assert path.read_bytes() == before  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["autotune.json"]  # no temporary left
    assert store.get(ADAPTER, "k2") == ENTRY  # kept for this process


# ---- tuned kernels on the adapter: the same results as untuned --------------------------------
@pytest.fixture
def tuned(gpu, monkeypatch):
    """Give the session backend a fresh autotuner with an in-memory store."""

    def make(mode: str = "on", store: TuneStore | None = None,
             budget_s: float = 0.5) -> Autotuner:
        tuner = Autotuner(gpu.kernels.runtime, mode=mode, store=store or TuneStore(),
                          budget_s=budget_s)
        monkeypatch.setitem(gpu.kernels.__dict__, "autotune", tuner)
        return tuner

    return make


def test_tuned_matmul_equals_untuned_and_is_cached(gpu, up, down, tuned):
    a = RNG.normal(size=(64, 72)).astype(np.float32)
    b = RNG.normal(size=(72, 64)).astype(np.float32)
    tuned(mode="off")
    plain = down(gpu.matmul(up(a), up(b)))
    tuner = tuned()
    got = down(gpu.matmul(up(a), up(b)))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    # every tile sums k in the same order, with the same fma chain: equal to the bit
    np.testing.assert_array_equal(got, plain)
    assert tuner.stats.tuned == 1 and list(tuner.choices()) == ["matmul/f32/64x64x128x1"]
    timed = tuner.stats.timed
    down(gpu.matmul(up(b.T.copy()), up(a.T.copy())))  # (64, 72) @ (72, 64): the same bucket
    assert tuner.stats.timed == timed


@pytest.mark.parametrize("choice", ["t64x64x8_8x4_u8", "t32x32x16_4x4_u16/scalar"])
def test_a_stored_matmul_choice_runs_and_agrees(gpu, up, down, tuned, choice):
    store = TuneStore()
    store.put(gpu.kernels.runtime.adapter, "matmul/f32/64x128x128x2", {"choice": choice})
    tuner = tuned(store=store)
    a = RNG.normal(size=(2, 48, 68)).astype(np.float32)
    b = RNG.normal(size=(2, 68, 96)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)
    assert tuner.choices() == {"matmul/f32/64x128x128x2": choice} and tuner.stats.timed == 0


def test_tuned_reductions_equal_numpy(gpu, up, down, tuned):
    tuner = tuned()
    x = RNG.uniform(-1, 1, (48, 1500)).astype(np.float32)
    assert x.size >= MIN_WORK
    for name in ("sum", "max", "argmax"):
        got = down(gpu.reduce(REDUCTIONS[name], up(x), 1))
        want = getattr(np, name)(x, axis=1, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4, err_msg=name)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(down(gpu.softmax(up(x), 1)), e / e.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    assert set(tuner.choices()) == {"reduce/f32/64x2048", "argreduce/f32/64x2048",
                                    "softmax/f32/64x2048"}
    timed = tuner.stats.timed
    y = RNG.uniform(-1, 1, (60, 1100)).astype(np.float32)  # the same bucket: nothing timed
    np.testing.assert_allclose(down(gpu.reduce(REDUCTIONS["sum"], up(y), 1)),
                               y.sum(1, keepdims=True), rtol=1e-5, atol=1e-4)
    assert tuner.stats.timed == timed


def test_tuned_conv2d_and_weight_grad_equal_the_reference(gpu, ref, up, down, tuned):
    tuner = tuned()
    x = RNG.normal(size=(2, 8, 20, 20)).astype(np.float32)
    w = RNG.normal(size=(8, 8, 3, 3)).astype(np.float32)
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    want = ref.to_data(ModuleOps.conv2d(ref, x, w, None, *args)).to_numpy()
    np.testing.assert_allclose(down(gpu.conv2d(up(x), up(w), None, *args)), want,
                               rtol=1e-4, atol=1e-4)
    g = RNG.normal(size=want.shape).astype(np.float32)
    want_dw = ref.to_data(ModuleOps.conv2d_weight_grad(ref, x, g, w.shape, *args)).to_numpy()
    got_dw = down(gpu.conv2d_weight_grad(up(x), up(g), w.shape, *args))
    np.testing.assert_allclose(got_dw, want_dw, rtol=1e-4, atol=1e-3)
    # the kernel (direct or an implicit GEMM tile) is timed; a direct kernel's workgroup size
    # with it, when the direct kernel is among the candidates timed within the budget
    families = {key.split("/")[0] for key in tuner.choices()}
    assert {"conv2d_kernel", "conv2d_weight_grad_kernel"} <= families
    assert families <= {"conv2d_kernel", "conv2d", "conv2d_weight_grad_kernel",
                        "conv2d_weight_grad"}
