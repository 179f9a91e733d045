"""pyrite.interop.pytorch: .pt files read without torch, from committed fixtures.

The fixtures were made once with torch by fixtures/make_pt_fixtures.py; when torch is
importable, the tests also compare with `torch.load`.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from pyrite import nn
from pyrite.data import TensorData
from pyrite.dtype import DType
from pyrite.errors import RecordError
from pyrite.interop import pytorch as pt
from pyrite.interop.pytorch import PyTorchFileRecorder
from pyrite.module import Module

FIXTURES = Path(__file__).parent / "fixtures"
LINEAR_W = [[-0.5, -0.25, 0.0], [0.25, 0.5, 0.75]]


def _fx(name: str) -> Path:
    return FIXTURES / name


def test_linear_state_dict() -> None:
    d = pt.load(_fx("linear.pt"))
    assert list(d) == ["weight", "bias"]
    assert d["weight"] == TensorData(LINEAR_W)
    assert d["bias"] == TensorData([0.5, -1.0])


def test_checkpoint_top_key_auto_and_explicit() -> None:
    auto = pt.load(_fx("checkpoint.pt"))
    assert list(auto) == ["weight", "bias"]
    assert pt.load(_fx("checkpoint.pt"), top_key="model_state_dict") == auto
    with pytest.raises(RecordError, match=r"checkpoint\.pt.*'nope' not found.*model_state_dict"):
        pt.load(_fx("checkpoint.pt"), top_key="nope")


def test_legacy_format() -> None:
    d = pt.load(_fx("legacy.pt"))
    assert d == {"weight": TensorData(LINEAR_W), "bias": TensorData([0.5, -1.0])}


def test_strided_views() -> None:
    d = pt.load(_fx("strided.pt"))
    assert d["transposed"].to_list() == [[0.0, 4.0, 8.0], [1.0, 5.0, 9.0], [2.0, 6.0, 10.0],
                                         [3.0, 7.0, 11.0]]
    assert d["sliced"].to_list() == [[5.0, 7.0, 9.0], [10.0, 12.0, 14.0], [15.0, 17.0, 19.0]]
    assert d["tied"].to_list() == [5.0, 6.0, 7.0, 8.0]
    assert d["expanded"].to_list() == [[1.0, 2.0]] * 3
    assert d["scalar"].shape == () and d["scalar"].to_list() == 2.5
    assert d["empty"].shape == (0, 3)


def test_dtypes() -> None:
    d = pt.load(_fx("dtypes.pt"))
    assert {k: v.dtype for k, v in d.items()} == {
        "i64": DType.I64, "f16": DType.F16, "bf16": DType.F32, "f64": DType.F64,
        "i32": DType.I32, "i8": DType.I8, "u8": DType.U8, "bool": DType.BOOL}
    assert d["i64"].to_list() == [2**62, -(2**63), 7]
    assert d["f16"].to_list() == [0.5, -65504.0, 1.0]
    assert d["bf16"].to_list() == [1.5, -2.0]
    assert d["bool"].to_list() == [True, False]


def test_remap_contiguous_and_debug(capsys: pytest.CaptureFixture[str]) -> None:
    d = pt.load(_fx("sequential.pt"), remap=[(r"^layers\.", "seq.")],
                contiguous_sequential=True, debug=True)
    assert list(d) == [f"seq.{i}.{n}" for i in range(3) for n in ("weight", "bias")]
    out = capsys.readouterr().out
    assert "layers.2.weight -> seq.1.weight  [3, 3] f32" in out
    assert "layers.4.bias -> seq.2.bias  [1] f32" in out


def test_remap_collision() -> None:
    with pytest.raises(RecordError, match="both 'weight' and 'bias'"):
        pt.load(_fx("linear.pt"), remap=[(".*", "x")])


def test_contiguous_indices_nested() -> None:
    got = pt.contiguous_indices(["a.1.b.3.w", "a.1.b.7.w", "a.5.b.0.w", "a.5.c"])
    assert list(got.values()) == ["a.0.b.0.w", "a.0.b.1.w", "a.1.b.0.w", "a.1.c"]


# ---- loading into modules --------------------------------------------------------------------

class _Net(Module):
    def __init__(self) -> None:
        self.layers = [nn.LinearConfig(2, 3).init("numpy"), nn.LinearConfig(3, 3).init("numpy"),
                       nn.LinearConfig(3, 1).init("numpy")]


def test_load_into_linear_transposes_weight() -> None:
    pytest.importorskip("numpy")
    layer = nn.LinearConfig(3, 2).init("numpy")
    loaded = pt.load_into(layer, _fx("checkpoint.pt"))
    assert loaded.weight.val.to_data().to_list() == [list(r) for r in zip(*LINEAR_W, strict=True)]
    assert loaded.bias.val.to_data().to_list() == [0.5, -1.0]  # type: ignore[union-attr]


def test_load_into_sequential_renumbers() -> None:
    pytest.importorskip("numpy")
    net = pt.load_into(_Net(), _fx("sequential.pt"))
    w = net.layers[2].weight.val.to_data()
    assert w.shape == (3, 1) and w.to_list() == [[-4.0], [-3.9000000953674316],
                                                 [-3.799999952316284]]
    with pytest.raises(RecordError, match=r"missing: layers\.1\.weight.*unexpected: layers\.4"):
        pt.load_into(_Net(), _fx("sequential.pt"), contiguous_sequential=False)


def test_load_into_mismatch_lists_every_key() -> None:
    pytest.importorskip("numpy")
    layer = nn.LinearConfig(4, 2).init("numpy")
    with pytest.raises(RecordError, match=r"linear\.pt: 'weight' has shape \(2, 3\)"):
        pt.load_into(layer, _fx("linear.pt"))
    with pytest.raises(RecordError, match=r"missing: layers\.0\.weight, .*unexpected: weight, "
                                          r"bias"):
        pt.load_into(_Net(), _fx("linear.pt"))


class _EncDec(Module):
    def __init__(self) -> None:
        self.enc = nn.LinearConfig(3, 2).init("numpy")
        self.dec = nn.LinearConfig(2, 2).init("numpy")


def test_load_into_partial() -> None:
    pytest.importorskip("numpy")
    model = _EncDec()
    before = model.dec.weight.val.to_data()
    with pytest.raises(RecordError, match=r"missing: dec\.weight, dec\.bias"):
        pt.load_into(model, _fx("linear.pt"), remap=[("^", "enc.")])
    loaded = pt.load_into(model, _fx("checkpoint.pt"), remap=[("^", "enc.")], partial=True)
    assert loaded.dec.weight.val.to_data() == before  # kept
    assert loaded.enc.bias.val.to_data().to_list() == [0.5, -1.0]  # type: ignore[union-attr]
    # tensors the model lacks are ignored too
    assert pt.load_into(_EncDec(), _fx("sequential.pt"), partial=True)
    with pytest.raises(RecordError, match="has shape"):  # shapes are still checked
        pt.load_into(model, _fx("linear.pt"), remap=[("^", "dec.")], partial=True)


def test_recorder_with_load_file() -> None:
    pytest.importorskip("numpy")
    rec = PyTorchFileRecorder(top_key="state_dict", remap=((r"^", "fc."),))
    assert rec.load(_fx("legacy.pt")) == {"fc": {"weight": TensorData(LINEAR_W),
                                                 "bias": TensorData([0.5, -1.0])}}
    # the recorder keeps torch's layouts: load_into transposes Linear weights
    layer = nn.LinearConfig(3, 2).init("numpy")
    with pytest.raises(RecordError, match=r"'weight' has shape \(2, 3\) in the file, \(3, 2\)"):
        layer.load_file(_fx("linear.pt"), PyTorchFileRecorder())
    with pytest.raises(RecordError, match="does not write"):
        layer.save_file(FIXTURES / "never.pt", rec)


# ---- bad input -------------------------------------------------------------------------------

def test_malicious_pickle_refused(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RecordError, match=r"malicious\.pt: refused to load the global "
                                          r"'os\.system'"):
        pt.load(_fx("malicious.pt"))
    assert "pwned" not in capfd.readouterr().err


def test_plain_pickle_with_global_refused() -> None:
    # the GLOBAL opcode written out: pickling the live `print` names whatever replaced it (Ray,
    # once imported in the same process, installs its own `print` in builtins)
    blob = b"\x80\x02cbuiltins\nprint\n."
    with pytest.raises(RecordError, match=r"'(builtins|__builtin__)\.print'"):
        pt.loads(blob, source="p.pt")


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def _entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def test_truncated_files(tmp_path: Path) -> None:
    data = _fx("linear.pt").read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        bad = tmp_path / f"cut{cut}.pt"
        bad.write_bytes(data[:cut])
        with pytest.raises(RecordError, match=rf"cut{cut}\.pt: .*(truncated|corrupt)"):
            pt.load(bad)
    legacy = _fx("legacy.pt").read_bytes()
    for cut in (20, len(legacy) - 5):
        bad = tmp_path / f"legacy{cut}.pt"
        bad.write_bytes(legacy[:cut])
        with pytest.raises(RecordError, match=rf"legacy{cut}\.pt: .*(truncated|invalid)"):
            pt.load(bad)


def test_missing_data_pkl_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "nopkl.pt"
    bad.write_bytes(_zip({"a/version": b"3\n"}))
    with pytest.raises(RecordError, match=r"nopkl\.pt: the zip holds no data\.pkl"):
        pt.load(bad)
    with pytest.raises(RecordError, match=r"absent\.pt: no such file"):
        pt.load(tmp_path / "absent.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"hello world")
    with pytest.raises(RecordError, match=r"junk\.pt: not a PyTorch file"):
        pt.load(junk)


def test_storage_shorter_than_declared(tmp_path: Path) -> None:
    entries = _entries(_fx("linear.pt"))
    key = next(n for n in entries if "/data/" in n)
    entries[key] = entries[key][:-4]
    bad = tmp_path / "short.pt"
    bad.write_bytes(_zip(entries))
    with pytest.raises(RecordError, match=r"short\.pt: zip entry .* holds \d+ bytes, but the "
                                          r"pickle declares"):
        pt.load(bad)


def _storage_pickle(numel: int, size: tuple[int, ...], stride: tuple[int, ...]) -> bytes:
    """A data.pkl for {"w": tensor} whose storage "0" declares `numel` floats."""
    def pint(v: int) -> bytes:
        return b"\x8a" + bytes([8]) + struct.pack("<q", v)

    def ptuple(items: tuple[int, ...]) -> bytes:
        return b"(" + b"".join(pint(v) for v in items) + b"t"
    storage = (b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00"
               b"\x00\x00cpu" + pint(numel) + b"tQ")
    tensor = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + storage + pint(0) + ptuple(size)
              + ptuple(stride) + b"\x89ctorch\nSize\n)R" + b"tR")
    return b"\x80\x02}X\x01\x00\x00\x00w" + tensor + b"s."


def test_absurd_sizes_rejected_before_allocating(tmp_path: Path) -> None:
    # a tensor of 10^12 elements over a 4-element storage
    bad = tmp_path / "huge.pt"
    bad.write_bytes(_zip({"a/data.pkl": _storage_pickle(4, (10**6, 10**6), (10**6, 1)),
                          "a/data/0": b"\0" * 16}))
    with pytest.raises(RecordError, match=r"huge\.pt: a tensor of shape \(1000000, 1000000\) "
                                          r".*storage holds 4"):
        pt.load(bad)
    # expanded (stride 0) beyond what the file holds
    bad.write_bytes(_zip({"a/data.pkl": _storage_pickle(4, (10**12,), (0,)),
                          "a/data/0": b"\0" * 16}))
    with pytest.raises(RecordError, match=r"huge\.pt: a tensor of shape \(10{12},\) brings the "
                                          r"file's tensors to 40{12} bytes from storages of 16"):
        pt.load(bad)
    # a storage declaring 10^12 elements the zip does not hold
    bad.write_bytes(_zip({"a/data.pkl": _storage_pickle(10**12, (4,), (1,)),
                          "a/data/0": b"\0" * 16}))
    with pytest.raises(RecordError, match=r"huge\.pt: zip entry 'a/data/0' holds 16 bytes"):
        pt.load(bad)
    # and the hand-made pickle itself is valid
    ok = tmp_path / "ok.pt"
    ok.write_bytes(_zip({"a/data.pkl": _storage_pickle(4, (2, 2), (1, 2)),
                         "a/data/0": struct.pack("<4f", 1, 2, 3, 4)}))
    assert pt.load(ok)["w"].to_list() == [[1.0, 3.0], [2.0, 4.0]]


# ---- against torch, when it is installed -----------------------------------------------------

@pytest.mark.parametrize("name", ["linear.pt", "checkpoint.pt", "sequential.pt", "strided.pt",
                                  "dtypes.pt", "legacy.pt"])
def test_matches_torch_load(name: str) -> None:
    torch = pytest.importorskip("torch")
    ours = pt.load(_fx(name))
    theirs = torch.load(_fx(name), weights_only=True)
    if name == "checkpoint.pt":
        theirs = theirs["model_state_dict"]
    if name == "legacy.pt":
        theirs = theirs["state_dict"]
    assert list(ours) == list(theirs)
    for key, t in theirs.items():
        if t.dtype == torch.bfloat16:
            t = t.float()
        assert ours[key].shape == tuple(t.shape), key
        assert ours[key].to_list() == t.tolist(), key
