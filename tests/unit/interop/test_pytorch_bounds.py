"""Hostile `.pt` files: shared references that fan out, deep nesting, zip bombs, expanded views.

Each is refused with one RecordError naming the file, quickly and without allocating more than
the file's size allows (pyrite.record.limits).
"""

from __future__ import annotations

import io
import pickle
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from pyrite.errors import RecordError
from pyrite.interop import pytorch as pt
from pyrite.record.limits import MAX_DEPTH, inflate_limit


def _fan_out(levels: int) -> bytes:
    """A pickle of [a, a] where a = [b, b] ... `levels` deep: 2^levels paths, ~10 bytes a level."""
    node: list[object] = []
    for _ in range(levels):
        node = [node, node]
    return pickle.dumps({"w": node}, protocol=2)


def _nested(depth: int) -> bytes:
    """A pickle of a list nested `depth` deep, written by hand (pickle.dumps would recurse)."""
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


def test_shared_references_fanning_out_are_refused_at_once() -> None:
    data = _fan_out(40)
    assert len(data) < 500
    start = time.monotonic()
    with pytest.raises(RecordError, match=r"fan\.pt: the pickled object's containers are reached "
                                          r"along more than \d+ paths"):
        pt.loads(data, source="fan.pt")
    assert time.monotonic() - start < 2.0


def test_honest_sharing_still_loads() -> None:
    # the same list under two names (a tied weight's container) is two visits, not refused
    shared: list[object] = [[]] * 100
    with pytest.raises(RecordError, match=r"no tensors found; the file's top-level keys are "
                                          r"\['a', 'b'\]"):  # walked to the end, not refused
        pt.loads(pickle.dumps({"a": shared, "b": shared}, protocol=2))


def test_many_top_level_keys_are_summarised() -> None:
    with pytest.raises(RecordError) as err:
        pt.loads(pickle.dumps({f"k{i}": i for i in range(100_000)}, protocol=2))
    assert len(str(err.value)) < 300 and "and 99990 more" in str(err.value)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_nesting_is_refused_without_recursion_error(depth: int) -> None:
    with pytest.raises(RecordError, match=r"deep\.pt: the pickled object nests containers more "
                                          r"than 64 deep"):
        pt.loads(_nested(depth), source="deep.pt")


def test_nesting_within_the_limit_loads() -> None:
    assert pt.loads(_nested(MAX_DEPTH - 1)) == {}


def _zip(entries: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def _storage_pickle(numel: int) -> bytes:
    """A data.pkl for {"w": tensor of `numel` floats over storage "0"}."""
    def pint(v: int) -> bytes:
        return b"\x8a\x08" + struct.pack("<q", v)
    storage = (b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00"
               b"\x00\x00cpu" + pint(numel) + b"tQ")
    return (b"\x80\x02}X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n(" + storage
            + pint(0) + b"(" + pint(numel) + b"t(" + pint(1) + b"t\x89ctorch\nSize\n)RtRs.")


def test_zip_bomb_is_refused_before_inflating() -> None:
    numel = 16 << 20  # 64 MiB of zeros deflate to ~65 KB
    data = _zip({"a/data.pkl": _storage_pickle(numel), "a/data/0": bytes(4 * numel)},
                zipfile.ZIP_DEFLATED)
    assert 4 * numel > inflate_limit(len(data))
    tracemalloc.start()
    try:
        with pytest.raises(RecordError, match=r"bomb\.pt: the zip decompresses to more than "
                                              r"\d+ bytes .*decompression bomb"):
            pt.loads(data, source="bomb.pt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(data) + (1 << 20)


def test_compressed_zip_within_the_limit_loads() -> None:
    data = _zip({"a/data.pkl": _storage_pickle(1000), "a/data/0": bytes(4000)},
                zipfile.ZIP_DEFLATED)
    assert pt.loads(data)["w"].shape == (1000,)


def test_many_views_of_one_storage_are_bounded() -> None:
    # a thousand full views of a 1 MiB storage would be 1 GiB of tensors from a 1 MiB file
    numel = 1 << 18
    one = _storage_pickle(numel)
    body = one[3:-2]  # "X..w" + tensor, between "}" and "s."
    views = b"".join(b"X" + struct.pack("<I", len(str(i))) + str(i).encode()
                     + body[body.index(b"c"):] + b"s" for i in range(1000))
    data = _zip({"a/data.pkl": b"\x80\x02}" + views + b".", "a/data/0": bytes(4 * numel)})
    with pytest.raises(RecordError, match=r"views\.pt: a tensor of shape \(262144,\) brings the "
                                          r"file's tensors to"):
        pt.loads(data, source="views.pt")


def test_legacy_format_walk_is_bounded(tmp_path: Path) -> None:
    legacy = (tmp_path / "x.pt")
    head = pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + pickle.dumps(1001, protocol=2)
    legacy.write_bytes(head + pickle.dumps({}, protocol=2) + _fan_out(40)
                       + pickle.dumps([], protocol=2))
    with pytest.raises(RecordError, match=r"x\.pt: the pickled object's containers are reached"):
        pt.load(legacy)


def test_a_huge_memo_index_allocates_nothing() -> None:
    # LONG_BINPUT 174417761: CPython's C unpickler would size its memo array to 1.4 GB
    data = b"\x80\x02}r" + struct.pack("<I", 174_417_761) + b"."
    tracemalloc.start()
    try:
        with pytest.raises(RecordError, match=r"memo\.pt: no tensors found"):
            pt.loads(data, source="memo.pt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_int_or_bool_tensors_never_load_into_float_params() -> None:
    from pyrite import nn
    from pyrite.data import TensorData
    from pyrite.interop.pytorch.loader import _load_tensors
    layer = nn.LinearConfig(2, 2).init("numpy")
    bad = {"weight": TensorData([[1, 2], [3, 4]]), "bias": TensorData([True, False])}
    with pytest.raises(RecordError, match=r"w\.pt: 'weight' holds i64 \(int\) values in the "
                                          r"file, float in the model; 'bias' holds bool"):
        _load_tensors(layer, bad, partial=False, contiguous=False, transpose=True,
                      source="w.pt")
