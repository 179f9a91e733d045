"""check_record_fits: one message listing every way a record does not fit the model."""

import sys

import numpy as np
import pytest

from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import RecordError
from pyrite.record import check_record_fits


def zeros(*shape):
    size = 1
    for s in shape:
        size *= s
    return TensorData.raw(bytes(4 * size), shape, DType.F32)


def test_a_fitting_record_passes():
    record = {"fc1.weight": zeros(4, 3), "fc1.bias": zeros(4), "epoch": 3}
    assert check_record_fits(record, {"fc1.weight": (4, 3), "fc1.bias": [4]}) is None


def test_the_full_message():
    record = {"fc1.weight": zeros(128, 784), "fc1.bias": zeros(128), "conv2.weight": zeros(8, 1),
              "head.weight": zeros(10, 128)}
    expected = {"fc1.weight": (64, 784), "fc1.bias": (128,), "conv2.weight": (8, 1),
                "conv2.bias": (8,)}
    with pytest.raises(RecordError) as err:
        check_record_fits(record, expected, source="mnist.mpk")
    assert str(err.value) == ("mnist.mpk: 'fc1.weight' has shape (128, 784) in the file, "
                              "(64, 784) in the model; missing: conv2.bias; "
                              "unexpected: head.weight")


def test_nested_records_are_flattened_and_metadata_is_not_unexpected():
    record = {"fc1": {"weight": zeros(2, 2)}, "epoch": 3, "notes": {"by": "me"}}
    check_record_fits(record, {"fc1.weight": (2, 2)})
    with pytest.raises(RecordError) as err:
        check_record_fits(record, {"fc1.weight": (2, 3), "fc1.bias": (2,)})
    assert str(err.value) == ("record: 'fc1.weight' has shape (2, 2) in the file, (2, 3) in the "
                              "model; missing: fc1.bias")


def test_a_non_tensor_where_a_tensor_is_expected():
    with pytest.raises(RecordError) as err:
        check_record_fits({"scale": 0.5}, {"scale": (1,)}, source="m.bin")
    assert str(err.value) == "m.bin: 'scale' is a float in the file, a tensor of shape (1,) in " \
                             "the model"


def test_only_unexpected():
    with pytest.raises(RecordError) as err:
        check_record_fits({"a": zeros(1), "b": zeros(1)}, {})
    assert str(err.value) == "record: unexpected: a, b"


def test_long_lists_are_cut_with_a_count():
    expected = {f"layer{i}.weight": (1,) for i in range(25)}
    with pytest.raises(RecordError) as err:
        check_record_fits({}, expected)
    names = ", ".join(f"layer{i}.weight" for i in range(10))
    assert str(err.value) == f"record: missing: {names}, ... and 15 more"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nonfinite_bits_agrees_with_numpy(dtype: str) -> None:
    from pyrite.record.fits import nonfinite_bits

    rng = np.random.default_rng(3)
    info = np.finfo(dtype)
    finite = np.concatenate([rng.standard_normal(997).astype(dtype),
                             np.array([0.0, -0.0, info.max, -info.max, info.tiny,
                                       info.smallest_subnormal], dtype)])
    rng.shuffle(finite)
    assert not nonfinite_bits(finite.tobytes(), finite.itemsize)
    assert not nonfinite_bits(b"", finite.itemsize)
    for bad in (np.nan, np.inf, -np.inf, -np.nan):
        for at in (0, 500, len(finite) - 1):
            spoiled = finite.copy()
            spoiled[at] = bad
            assert nonfinite_bits(spoiled.tobytes(), spoiled.itemsize), (bad, at)


@pytest.fixture
def numpy_unknown():
    """fits' memo of whether numpy imports, forgotten before and after the test."""
    from pyrite.record import fits

    fits.numpy_for_checks.cache_clear()
    yield
    fits.numpy_for_checks.cache_clear()


def test_nonfinite_values_are_found_without_numpy(monkeypatch: pytest.MonkeyPatch,
                                                  numpy_unknown: None) -> None:
    import struct

    from pyrite.errors import RecordWarning
    from pyrite.record.fits import warn_nonfinite

    monkeypatch.setitem(sys.modules, "numpy", None)  # as in a page: `import numpy` fails
    good = TensorData.raw(struct.pack("<3e", 1.0, -2.0, 0.5), (3,), DType.F16)
    bad = TensorData.raw(struct.pack("<2f", 1.0, float("inf")), (2,), DType.F32)
    assert warn_nonfinite({"a": good}) == []
    with pytest.warns(RecordWarning, match="1 tensor"):
        assert warn_nonfinite({"a": good, "b": {"c": bad}}) == ["b.c"]


class _NoNumpy:
    """A meta path finder that says numpy is not there, counting the searches for it."""

    def __init__(self) -> None:
        self.searches = 0

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "numpy":
            self.searches += 1
            raise ModuleNotFoundError("No module named 'numpy'", name="numpy")


def test_a_missing_numpy_is_searched_for_once(monkeypatch: pytest.MonkeyPatch,
                                              numpy_unknown: None) -> None:
    # in a page each failed `import numpy` searched the whole path again: once per tensor of a
    # record (8 searches, 12-30 ms, in the MNIST load after a restore)
    from pyrite.record.fits import warn_nonfinite

    finder = _NoNumpy()
    monkeypatch.delitem(sys.modules, "numpy")
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    record = {f"w{i}": TensorData.raw(bytes(8), (2,), DType.F32) for i in range(8)}
    assert warn_nonfinite(record) == []
    assert warn_nonfinite(record) == []
    assert finder.searches == 1
