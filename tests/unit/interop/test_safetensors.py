"""pyrite.interop.safetensors: pure-Python read/write, checked against the safetensors package."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from pyrite import nn
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import RecordError
from pyrite.interop import safetensors as st
from pyrite.interop.safetensors import SafetensorsFileRecorder
from pyrite.module import Module
from pyrite.record import HalfPrecision

SAMPLES = {
    DType.F64: [[1.5, -2.25], [1e300, 0.0]],
    DType.F32: [[1.5, -2.25, 3.0]],
    DType.F16: [0.5, -65504.0, 1.0],
    DType.I64: [2**62, -(2**63), 0],
    DType.I32: [[1, -2], [3, 2**31 - 1]],
    DType.I16: [-(2**15), 7],
    DType.I8: [-128, 127, 0],
    DType.U8: [0, 255, 9],
    DType.BOOL: [True, False, True],
}


def _all_dtypes() -> dict[str, TensorData]:
    out = {f"t_{dt.short}": TensorData(v, dtype=dt) for dt, v in SAMPLES.items()}
    out["scalar"] = TensorData(3.0)
    out["empty"] = TensorData.raw(b"", (0, 4), DType.F32)
    return out


def _raw_file(header: object, buffer: bytes = b"", *, length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(text) if length is None else length
    return struct.pack("<Q", n) + text + buffer


# ---- round trips ---------------------------------------------------------------------------

def test_round_trip_every_dtype(tmp_path: Path) -> None:
    tensors = _all_dtypes()
    path = st.save(tensors, tmp_path / "all.safetensors")
    loaded = st.load(path)
    assert list(loaded) == list(tensors)
    assert loaded == tensors
    assert st.loads(st.dumps(tensors)) == tensors


def test_header_is_aligned_and_tensors_aligned() -> None:
    blob = st.dumps(_all_dtypes())
    (n,) = struct.unpack("<Q", blob[:8])
    assert n % 8 == 0
    header = json.loads(blob[8:8 + n])
    for info in header.values():
        itemsize = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "I16": 2}.get(
            info["dtype"], 1)
        assert info["data_offsets"][0] % itemsize == 0


def test_metadata_round_trip(tmp_path: Path) -> None:
    meta = {"format": "pt", "note": "ünïcode"}
    path = st.save({"w": TensorData([1.0])}, tmp_path / "m.safetensors", metadata=meta)
    assert st.metadata(path) == meta
    assert st.loads_metadata(path.read_bytes()) == meta
    assert st.metadata(st.save({"w": TensorData([1.0])}, tmp_path / "n.safetensors")) == {}


def test_tensor_values_are_accepted() -> None:
    import pyrite
    t = pyrite.tensor([[1.0, 2.0]], device="numpy")
    assert st.loads(st.dumps({"t": t}))["t"] == t.to_data()


def test_bf16_is_read_as_f32() -> None:
    # bf16 bits of 1.0 (0x3F80), -2.0 (0xC000), 0.15625 (0x3E20)
    raw = struct.pack("<3H", 0x3F80, 0xC000, 0x3E20)
    blob = _raw_file({"b": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}, raw)
    out = st.loads(blob)["b"]
    assert out.dtype is DType.F32
    assert out.to_list() == [1.0, -2.0, 0.15625]


# ---- against the safetensors package -------------------------------------------------------

def test_files_from_the_safetensors_package(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    stnp = pytest.importorskip("safetensors.numpy")
    arrays = {dt.short: np.array(v, dtype=dt.np_name) for dt, v in SAMPLES.items()}
    arrays["big"] = np.arange(1000, dtype=np.float32).reshape(10, 100)
    path = tmp_path / "theirs.safetensors"
    stnp.save_file(arrays, str(path), metadata={"format": "np"})
    loaded = st.load(path)
    assert set(loaded) == set(arrays)
    for name, arr in arrays.items():
        assert loaded[name] == TensorData(arr), name
    assert st.metadata(path) == {"format": "np"}


def test_package_reads_pyrite_files(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    stnp = pytest.importorskip("safetensors.numpy")
    from safetensors import safe_open
    tensors = _all_dtypes()
    path = st.save(tensors, tmp_path / "ours.safetensors", metadata={"k": "v"})
    loaded = stnp.load_file(str(path))
    assert set(loaded) == set(tensors)
    for name, data in tensors.items():
        np.testing.assert_array_equal(loaded[name], data.to_numpy())
        assert loaded[name].dtype == np.dtype(data.dtype.np_name)
    with safe_open(str(path), framework="numpy") as f:
        assert f.metadata() == {"k": "v"}
    assert stnp.load(st.dumps(tensors))["t_f16"].tolist() == SAMPLES[DType.F16]


def test_bf16_agrees_with_the_package() -> None:
    np = pytest.importorskip("numpy")
    safetensors = pytest.importorskip("safetensors")
    values = np.array([1.0, -2.0, 0.15625, 3.5], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    blob = _raw_file({"b": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}, bf16)
    # the package accepts the file and sees the same bf16 tensor
    [(name, info)] = safetensors.deserialize(blob)
    assert (name, info["dtype"], info["shape"], bytes(info["data"])) == \
        ("b", "BF16", [4], bf16)
    assert st.loads(blob)["b"].to_list() == values.tolist()


# ---- bad input -----------------------------------------------------------------------------

GOOD = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}


@pytest.mark.parametrize(("blob", "message"), [
    (b"", "shorter than the 8-byte header length"),
    (b"\x01\x00\x00", "shorter than the 8-byte header length"),
    (_raw_file(b"{}", length=1000), "header length 1000 is larger than the rest of the file"),
    (_raw_file(b"{not json"), "not valid JSON"),
    (_raw_file(b"\xff\xfe{}"), "not UTF-8"),
    (_raw_file(b"[1, 2]"), "expected an object"),
    (_raw_file(GOOD, b"\0" * 4), "lie outside the 4-byte data buffer"),
    (_raw_file({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
     "needs 12 bytes, but data_offsets [0, 8] hold 8"),
    (_raw_file({"w": {"dtype": "F32", "shape": [10**6, 10**6], "data_offsets": [0, 8]}},
               b"\0" * 8), "shape (1000000, 1000000) of F32 needs 4000000000000 bytes"),
    (_raw_file({"w": {"dtype": "F32", "shape": [10**12], "data_offsets": [0, 4 * 10**12]}},
               b"\0" * 8), "lie outside the 8-byte data buffer"),
    (_raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
     "tensors 'a' and 'b' overlap"),
    (_raw_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
     "bytes [0, 4] of the data buffer belong to no tensor"),
    (_raw_file(GOOD, b"\0" * 12), "bytes [8, 12] belong to no tensor"),
    (_raw_file(b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
               b'"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', b"\0" * 8),
     "names 'w' twice"),
    (_raw_file({"w": {"dtype": "U32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
     "tensor 'w' has dtype 'U32', which pyrite does not read"),
    (_raw_file({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
     "shape [-1] is not a list of sizes"),
    (_raw_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\0" * 4),
     "data_offsets [4, 0] is not [begin, end]"),
    (_raw_file({"w": [1, 2]}), "tensor 'w': expected an object"),
    (_raw_file({"__metadata__": {"a": 1}}), "'__metadata__' must map str to str"),
])
def test_bad_input_gives_clear_error(tmp_path: Path, blob: bytes, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(RecordError, match=str(path).replace("\\", "\\\\") + ": .*") as err:
        st.load(path)
    assert message in str(err.value)
    with pytest.raises(RecordError) as err:
        st.loads(blob, source="mem")
    assert str(err.value).startswith("mem: ") and message in str(err.value)


def test_truncated_file(tmp_path: Path) -> None:
    blob = st.dumps(_all_dtypes())
    path = tmp_path / "cut.safetensors"
    for cut in (4, 20, len(blob) - 1):
        path.write_bytes(blob[:cut])
        with pytest.raises(RecordError, match="cut.safetensors: "):
            st.load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="nope.safetensors: no such file"):
        st.load(tmp_path / "nope.safetensors")


def test_bad_values_to_save(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="only TensorData and Tensor"):
        st.dumps({"w": [1.0, 2.0]})  # type: ignore[dict-item]
    with pytest.raises(RecordError, match="metadata maps str to str"):
        st.dumps({"w": TensorData([1.0])}, metadata={"n": 1})  # type: ignore[dict-item]
    with pytest.raises(RecordError, match="not allowed"):
        st.dumps({"__metadata__": TensorData([1.0])})
    path = tmp_path / "keep.safetensors"
    path.write_bytes(b"old")
    with pytest.raises(RecordError):
        st.save({"w": "x"}, path)  # type: ignore[dict-item]
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.safetensors"]


# ---- modules -------------------------------------------------------------------------------

def _params(module: Module) -> dict[str, TensorData]:
    return {path: p.val.to_data() for path, p in module.named_params()}


def test_module_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    from pyrite.demos.mnist import ModelConfig
    model = ModelConfig(10, 512).init("numpy")
    path = model.save_file(tmp_path / "mnist.safetensors")
    assert path.name == "mnist.safetensors"
    names = set(st.load(path))
    assert names == {p for p, _ in model.named_params()}
    assert "conv1.weight" in names or any("." in n for n in names)
    fresh = ModelConfig(10, 512).init("numpy")
    loaded = fresh.load_file(path)
    assert _params(loaded) == _params(model)
    # the ids come back too, as with every other recorder
    assert [p.id for p in loaded.params()] == [p.id for p in model.params()]


def test_module_loads_foreign_file(tmp_path: Path) -> None:
    layer = nn.LinearConfig(3, 2).init("numpy")
    weights = {"weight": TensorData([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
               "bias": TensorData([0.5, -0.5])}
    path = st.save(weights, tmp_path / "lin.safetensors")
    loaded = layer.load_file(path)
    assert _params(loaded) == weights


def test_module_wrong_shape_lists_mismatches(tmp_path: Path) -> None:
    layer = nn.LinearConfig(3, 2).init("numpy")
    path = st.save({"weight": TensorData([[1.0, 2.0]]), "extra": TensorData([1.0])},
                   tmp_path / "bad.safetensors")
    with pytest.raises(RecordError) as err:
        layer.load_file(path)
    text = str(err.value)
    assert str(path) in text
    assert "'weight' has shape (1, 2) in the file, (3, 2) in the model" in text
    assert "missing: bias" in text and "unexpected: extra" in text


def test_recorder_metadata_and_precision(tmp_path: Path) -> None:
    rec = SafetensorsFileRecorder(HalfPrecision())
    record = {"fc": {"weight": TensorData([1.5, 2.0])}, "epoch": 3, "note": None,
              "lr": [0.1, 0.2]}
    path = rec.save(record, tmp_path / "ckpt", item_type="Thing")
    assert path.name == "ckpt.safetensors"
    loaded, meta = SafetensorsFileRecorder().load_with_metadata(path, item_type="Thing")
    assert loaded == {"fc": {"weight": TensorData([1.5, 2.0], dtype="f16")}, "epoch": 3,
                      "note": None, "lr": [0.1, 0.2]}
    assert (meta.format, meta.precision, meta.item_type) == ("safetensors", HalfPrecision(),
                                                            "Thing")
    with pytest.raises(RecordError, match="expected a record of 'Other'"):
        SafetensorsFileRecorder().load(path, item_type="Other")
    # other tools see the tensors only
    assert list(st.load(path)) == ["fc.weight"]


def test_imports_without_numpy() -> None:
    script = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] == 'numpy':
            raise ModuleNotFoundError('blocked', name=name)
sys.meta_path.insert(0, Block())
from pyrite.data import TensorData
from pyrite.interop import safetensors as st
t = {"a": TensorData([1.0, 2.0]), "b": TensorData([1, 2], dtype="i16")}
assert st.loads(st.dumps(t)) == t
assert not [m for m in sys.modules if m.split('.')[0] == 'numpy']
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
