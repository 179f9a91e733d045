"""Module: discovery from attributes, visit/map, devices, records, files and display."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pyrite
from pyrite import ones, tensor, zeros
from pyrite.errors import RecordError
from pyrite.module import PARAM_IDS_KEY, Module, Param
from pyrite.record import BinFileRecorder, HalfPrecision, NamedMpkGzFileRecorder

AD = "autodiff<numpy>"


class Affine(Module):
    def __init__(self, n: int, device: str | None = None) -> None:
        self.size = n
        self.scale = Param(ones((n,), device=device))
        self.shift = Param(zeros((n,), device=device))

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return x * self.scale.val + self.shift.val


class Stack(Module):
    def __init__(self, device: str | None = None) -> None:
        self.first = Affine(3, device)
        self.layers = [Affine(3, device), Affine(3, device)]
        self.table = tensor([1.0, 2.0, 3.0], device=device)  # a constant
        self.frozen = Param(ones((2, 2), device=device), require_grad=False)
        self.name = "stack"

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        x = self.first(x)
        for layer in self.layers:
            x = layer(x)
        return x * self.table


def test_params_are_found_in_attribute_order_with_dotted_paths() -> None:
    m = Stack()
    assert [p for p, _ in m.named_params()] == [
        "first.scale", "first.shift", "layers.0.scale", "layers.0.shift", "layers.1.scale",
        "layers.1.shift", "frozen"]
    assert m.num_params() == 6 * 3 + 4
    assert [name for name, _ in m.children()] == ["first", "layers.0", "layers.1"]


def test_constants_and_settings_are_not_params() -> None:
    m = Stack()
    assert "table" not in dict(m.named_params())
    assert m.settings() == {"name": "stack"}
    record = m.into_record()
    assert "table" not in record and "name" not in record


def test_call_runs_forward_and_module_without_forward_says_so() -> None:
    assert Affine(2)(tensor([2.0, 3.0])).to_list() == [2.0, 3.0]
    with pytest.raises(NotImplementedError, match="define forward"):
        Module()(1)


def test_visit_sees_every_param_with_its_path() -> None:
    seen: list[tuple[str, tuple[int, ...]]] = []
    Stack().visit(lambda path, p: seen.append((path, p.shape)))
    assert seen[0] == ("first.scale", (3,)) and seen[-1] == ("frozen", (2, 2))


def test_map_returns_a_new_module_keeping_ids_and_leaves_the_original() -> None:
    m = Stack()
    doubled = m.map(lambda path, p: p.with_val(p.val * 2.0))
    assert doubled is not m and doubled.layers is not m.layers
    assert doubled.first.scale.val.to_list() == [2.0, 2.0, 2.0]
    assert m.first.scale.val.to_list() == [1.0, 1.0, 1.0]
    assert [p.id for p in doubled.params()] == [p.id for p in m.params()]
    assert doubled.frozen.require_grad is False
    assert doubled.table is m.table and doubled.name == "stack"


def test_map_must_return_params() -> None:
    with pytest.raises(TypeError, match="'first.scale'.*must return a Param"):
        Stack().map(lambda path, p: p.val)  # type: ignore[arg-type, return-value]


def test_params_on_autodiff_get_gradients_frozen_ones_do_not() -> None:
    m = Stack(AD)
    loss = (m(ones((3,), device=AD)) + m.frozen.val.sum()).sum()
    grads = loss.backward()
    assert m.first.scale.grad(grads).to_list() == [1.0, 2.0, 3.0]
    assert m.frozen.grad(grads) is None
    assert not m.frozen.val.is_require_grad()


def test_devices_to_device_fork_and_valid() -> None:
    m = Stack(AD)
    assert [d.name for d in m.devices()] == [AD]
    moved = m.to_device("numpy")
    assert [d.name for d in moved.devices()] == ["numpy"]
    assert moved.table.device.name == "numpy"
    assert [p.id for p in moved.params()] == [p.id for p in m.params()]
    same = m.to_device(AD)
    assert same.first.scale.val is m.first.scale.val  # already there: the same leaves
    forked = m.fork(AD)
    assert forked.first.scale.val is not m.first.scale.val
    grads = forked(ones((3,), device=AD)).sum().backward()
    assert forked.first.scale.grad(grads) is not None
    assert m.first.scale.grad(grads) is None  # the fork's graph never reaches the original
    valid = m.valid()
    assert [d.name for d in valid.devices()] == ["numpy"]
    assert valid.first.scale.require_grad is True
    assert not valid.first.scale.val.is_require_grad()


def test_no_grad_freezes_every_param() -> None:
    m = Stack(AD).no_grad()
    assert all(not p.require_grad for p in m.params())
    assert not any(p.val.is_require_grad() for p in m.params())


def test_record_nests_params_and_ids() -> None:
    m = Stack()
    record = m.into_record()
    assert set(record) == {"first", "layers", "frozen", PARAM_IDS_KEY}
    assert set(record["layers"]) == {"0", "1"}
    assert record["layers"]["1"]["shift"].shape == (3,)
    assert record[PARAM_IDS_KEY]["first"]["scale"] == m.first.scale.id


def test_load_record_restores_values_and_ids_and_keeps_flags() -> None:
    a, b = Stack(), Stack(AD)
    a = a.map(lambda path, p: p.with_val(p.val + 1.0))
    loaded = b.load_record(a.into_record())
    assert loaded.first.scale.val.to_list() == [2.0, 2.0, 2.0]
    assert [p.id for p in loaded.params()] == [p.id for p in a.params()]
    assert loaded.first.scale.val.device.name == AD
    assert loaded.first.scale.val.is_require_grad()
    assert loaded.frozen.require_grad is False


def test_load_record_without_ids_keeps_the_module_ids() -> None:
    m = Affine(2)
    record = {"scale": pyrite.TensorData([5.0, 6.0]), "shift": pyrite.TensorData([0.0, 1.0])}
    loaded = m.load_record(record)
    assert loaded.scale.id == m.scale.id and loaded.scale.val.to_list() == [5.0, 6.0]


def test_load_record_converts_dtypes_to_the_params() -> None:
    m = Affine(2)
    record = {"scale": pyrite.TensorData([5.0, 6.0], dtype="f16"),
              "shift": pyrite.TensorData([0.0, 1.0], dtype="f64")}
    loaded = m.load_record(record)
    assert loaded.scale.dtype is pyrite.DType.F32 and loaded.shift.dtype is pyrite.DType.F32


def test_mismatched_record_lists_every_problem() -> None:
    m = Stack()
    record = m.into_record()
    record["first"]["scale"] = pyrite.TensorData([1.0, 2.0])
    del record["layers"]["1"]["shift"]
    record["extra"] = {"w": pyrite.TensorData([1.0])}
    with pytest.raises(RecordError) as err:
        m.load_record(record)
    text = str(err.value)
    assert "'first.scale' has shape (2,) in the file, (3,) in the model" in text
    assert "missing: layers.1.shift" in text
    assert "unexpected: extra.w" in text
    assert m.first.scale.val.to_list() == [1.0, 1.0, 1.0]  # nothing applied


def test_save_and_load_file_round_trip(tmp_path: Path) -> None:
    m = Stack().map(lambda path, p: p.with_val(p.val * 3.0))
    path = m.save_file(tmp_path / "model")
    assert path.name == "model.mpk"
    loaded = Stack(AD).load_file(tmp_path / "model")
    assert loaded.layers[1].scale.val.to_list() == [3.0, 3.0, 3.0]
    assert loaded.first.scale.id == m.first.scale.id
    on_numpy = Stack(AD).load_file(tmp_path / "model", device="numpy")
    assert [d.name for d in on_numpy.devices()] == ["numpy"]


@pytest.mark.parametrize("recorder", [BinFileRecorder(HalfPrecision()), NamedMpkGzFileRecorder()])
def test_save_and_load_with_other_recorders(tmp_path: Path, recorder: object) -> None:
    m = Affine(3).map(lambda path, p: p.with_val(p.val * 0.5))
    path = m.save_file(tmp_path / "affine", recorder)  # type: ignore[arg-type]
    loaded = Affine(3).load_file(path, recorder)  # type: ignore[arg-type]
    assert loaded.scale.val.to_list() == [0.5, 0.5, 0.5]
    assert loaded.scale.dtype is pyrite.DType.F32


def test_load_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no such file"):
        Affine(2).load_file(tmp_path / "missing")
    Affine(3).save_file(tmp_path / "three")
    with pytest.raises(RecordError, match=r"three\.mpk: 'scale' has shape \(3,\)"):
        Affine(2).load_file(tmp_path / "three")


def test_display_shows_tree_settings_and_counts() -> None:
    text = repr(Stack())
    assert text.splitlines()[0] == "Stack {"
    assert "  first: Affine {size: 3, params: 6}" in text
    assert "  layers: [" in text and "    1: Affine {size: 3, params: 6}" in text
    assert "  frozen: Param {shape: [2, 2]}" in text
    assert "  name: stack" in text
    assert text.splitlines()[-2:] == ["  params: 22", "}"]


def test_tuple_of_modules_stays_a_tuple() -> None:
    class Pair(Module):
        def __init__(self) -> None:
            self.parts = (Affine(1), Affine(1))
    p = Pair().map(lambda path, q: q)
    assert isinstance(p.parts, tuple) and len(p.params()) == 4


def test_numpy_arrays_as_params_are_refused() -> None:
    with pytest.raises(TypeError, match="expects a Tensor"):
        Param(np.zeros(3))  # type: ignore[arg-type]
