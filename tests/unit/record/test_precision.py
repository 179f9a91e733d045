"""Precision settings and convert_record: which dtypes a record takes, and overflow."""

import dataclasses

import pytest

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import ConversionOverflow, DTypeError, RecordError
from pyrite.record import DoublePrecision, FullPrecision, HalfPrecision, convert_record
from pyrite.record.precision import precision_named


@pytest.mark.parametrize(("setting", "name", "floats", "ints"), [
    (HalfPrecision(), "half", DType.F16, DType.I16),
    (FullPrecision(), "full", DType.F32, DType.I32),
    (DoublePrecision(), "double", DType.F64, DType.I64),
])
def test_settings_name_their_dtypes(setting, name, floats, ints):
    assert (setting.name, setting.float_dtype, setting.int_dtype) == (name, floats, ints)
    assert precision_named(name) == setting


def test_settings_are_frozen_hashable_values():
    assert HalfPrecision() == HalfPrecision()
    assert HalfPrecision() != FullPrecision()
    assert len({HalfPrecision(), HalfPrecision(), FullPrecision()}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        HalfPrecision().name = "other"
    assert repr(DoublePrecision()) == "DoublePrecision()"


def test_unknown_precision_name_is_a_record_error():
    with pytest.raises(RecordError, match="m.mpk: unknown precision setting 'quarter'; "
                                          "expected one of half, full, double"):
        precision_named("quarter", source="m.mpk")


def test_apply_converts_floats_and_ints_and_leaves_bools_and_metadata():
    record = {"w": TensorData([0.5, 1.5], dtype="f64"), "steps": TensorData([3, 4], dtype="u8"),
              "mask": TensorData([True, False]), "epoch": 7, "lr": 0.25, "xs": [TensorData([2])]}
    out = HalfPrecision().apply(record)
    assert out == {"w": TensorData([0.5, 1.5], dtype="f16"),
                   "steps": TensorData([3, 4], dtype="i16"),
                   "mask": TensorData([True, False]), "epoch": 7, "lr": 0.25,
                   "xs": [TensorData([2], dtype="i16")]}


def test_convert_record_with_none_leaves_that_kind_alone():
    record = {"w": TensorData([1.0], dtype="f16"), "n": TensorData([1], dtype="i16")}
    out = convert_record(record, float_dtype="f32")
    assert out["w"].dtype is DType.F32
    assert out["n"].dtype is DType.I16
    out = convert_record(record, int_dtype=DType.I64)
    assert (out["w"].dtype, out["n"].dtype) == (DType.F16, DType.I64)


def test_convert_record_refuses_a_dtype_of_the_wrong_kind():
    with pytest.raises(DTypeError, match="convert_record: i32 is not a Float dtype"):
        convert_record({}, float_dtype="i32")
    with pytest.raises(DTypeError, match="convert_record: f32 is not a Int dtype"):
        convert_record({}, int_dtype="f32")


def test_overflow_names_the_tensor():
    record = {"fc": {"weight": TensorData([1.0, 70000.0])}}
    with pytest.raises(ConversionOverflow, match=r"'fc.weight': convert: value 70000.0 of f32 "
                                                 r"does not fit f16"):
        HalfPrecision().apply(record)
    with pytest.raises(ConversionOverflow, match=r"'steps\[0\]': .*does not fit i32"):
        FullPrecision().apply({"steps": [TensorData([2**40])]})


def test_infinities_fit_any_float_precision():
    out = HalfPrecision().apply({"w": TensorData([float("inf"), -float("inf"), 1.0])})
    assert out["w"].to_list() == [float("inf"), -float("inf"), 1.0]
