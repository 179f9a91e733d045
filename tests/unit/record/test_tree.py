"""What a record may hold, and flattening it to dotted keys and back."""

import subprocess
import sys
import textwrap

import pytest

from pyrite.data import TensorData
from pyrite.errors import RecordError
from pyrite.record import flatten_record, map_tensors, unflatten_record, validate_record


def test_a_module_record_with_metadata_is_valid():
    record = {
        "fc1": {"weight": TensorData([[1.0, 2.0]]), "bias": TensorData([0.5])},
        "epoch": 3, "lr": 1e-3, "name": "mnist", "done": False, "parent": None,
        "history": [1, 2.5, None, [TensorData([1])], {"k": "v"}], "pair": (1, 2),
    }
    assert validate_record(record) is None


@pytest.mark.parametrize(("record", "message"), [
    ({"fc": {1: 2}}, "record: 'fc' has a key of type int (1); record keys are str"),
    ({"a": {"b": b"raw"}}, "record: 'a.b' is a builtins.bytes; record leaves are TensorData"),
    ({"s": {1, 2}}, "record: 's' is a builtins.set"),
    ({"xs": [1, object()]}, "record: 'xs[1]' is a builtins.object"),
    ({"n": 2**63}, "record: 'n' = 9223372036854775808 does not fit int64"),
    ({"n": -(2**63) - 1}, "does not fit int64"),
    ({"t": {"dtype": "f32", "shape": [1], "values": [1.0]}},
     "record: 't' is a dict with exactly the keys dtype, shape and values"),
])
def test_invalid_records_are_refused_with_the_path_of_the_bad_value(record, message):
    with pytest.raises(RecordError) as err:
        validate_record(record)
    assert message in str(err.value)


def test_a_record_must_be_a_dict():
    with pytest.raises(RecordError, match="a record is a dict with str keys, got list"):
        validate_record([1, 2])


def test_int64_bounds_are_accepted():
    validate_record({"lo": -(2**63), "hi": 2**63 - 1})


def test_numpy_scalars_are_refused_with_a_hint():
    np = pytest.importorskip("numpy")
    with pytest.raises(RecordError, match=r"'step' is a numpy.int64.*int\(x\)"):
        validate_record({"step": np.int64(3)})


def test_flatten_joins_keys_with_dots_and_keeps_lists_as_leaves():
    w = TensorData([1.0])
    record = {"fc1": {"weight": w, "bias": None}, "blocks": [{"a": 1}], "epoch": 2,
              "deep": {"er": {"x": "y"}}}
    assert flatten_record(record) == {"fc1.weight": w, "fc1.bias": None, "blocks": [{"a": 1}],
                                      "epoch": 2, "deep.er.x": "y"}


def test_unflatten_inverts_flatten():
    record = {"fc1": {"weight": TensorData([1.0]), "bias": TensorData([2.0])},
              "head": {"proj": {"weight": TensorData([[3.0]])}}, "epoch": 5, "empty": {}}
    assert unflatten_record(flatten_record(record)) == record


@pytest.mark.parametrize("key", ["a.b", ""])
def test_flatten_refuses_keys_that_would_not_unflatten(key):
    with pytest.raises(RecordError, match="empty or contains '.'"):
        flatten_record({"outer": {key: 1}})


def test_unflatten_refuses_a_key_that_is_both_leaf_and_prefix():
    with pytest.raises(RecordError, match="'fc1' is a leaf"):
        unflatten_record({"fc1": 1, "fc1.weight": 2})
    with pytest.raises(RecordError, match="both a leaf and a prefix"):
        unflatten_record({"fc1.weight": 2, "fc1": 1})
    with pytest.raises(RecordError, match="empty part"):
        unflatten_record({"fc1..weight": 2})


def test_map_tensors_copies_containers_and_names_paths():
    record = {"a": {"w": TensorData([1, 2])}, "l": (TensorData([3]), "x")}
    seen = []

    def to_f64(path, data):
        seen.append(path)
        return data.convert("f64")

    out = map_tensors(record, to_f64)
    assert seen == ["a.w", "l[0]"]
    assert out == {"a": {"w": TensorData([1.0, 2.0], dtype="f64")},
                   "l": [TensorData([3.0], dtype="f64"), "x"]}
    assert record["a"]["w"].dtype.short == "i64"  # the input is untouched


def test_import_needs_neither_numpy_nor_msgpack_and_bin_and_json_work_without_them():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("numpy", "msgpack"):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        from pyrite.data import TensorData
        from pyrite.record import BinBytesRecorder, JsonGzFileRecorder, HalfPrecision
        record = {"w": TensorData([0.5, -2.0]), "n": TensorData([3])}
        for recorder in (BinBytesRecorder(HalfPrecision()), JsonGzFileRecorder()):
            back = recorder.from_bytes(recorder.to_bytes(record))
            print(back["w"].dtype, back["w"].to_list(), back["n"].dtype, back["n"].to_list())
        print("numpy" in sys.modules, "msgpack" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n") == ["f16 [0.5, -2.0] i16 [3]", "f32 [0.5, -2.0] i32 [3]",
                                       "False False", ""]
