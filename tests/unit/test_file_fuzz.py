"""Fuzzing every recorder and importer with corrupted files (a fixed seed, so failures repeat).

Each format starts from one valid file and loads thousands of mutants of it: bits flipped, bytes
overwritten, the file cut short, bytes inserted, deleted or repeated. For each mutant:

- only pyrite's own errors may escape (no IndexError, UnicodeDecodeError, RecursionError ...);
- the memory it allocates (tracemalloc's peak) stays within what the file's size allows;
- it is never accepted as something other than what was saved, unless the format cannot tell:
  those are counted per named cause and asserted to be the only ones (safetensors and `.pt`
  have no checksum of their tensors, ONNX none of anything).

ONNX mutants also go through the whole `import_onnx` (check, trace, code generation).

A few seconds by default; `PYRITE_SLOW=1` runs the slow variant, 20 times as many mutants.
"""

from __future__ import annotations

import random
import struct
import tracemalloc
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pyrite.data import TensorData
from pyrite.errors import PyriteError
from pyrite.interop import pytorch as pt
from pyrite.interop import safetensors as st
from pyrite.interop.safetensors import SafetensorsFileRecorder
from pyrite.record import (
    BinBytesRecorder,
    BinGzFileRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
)
from pyrite.record.limits import inflate_limit

RECORD = {"fc": {"weight": TensorData([[0.25, -0.5, 1.0], [1.5, 2.0, -3.0]]),
                 "bias": TensorData([0.1, 0.2]), "mask": TensorData([True, False])},
          "steps": TensorData([3, 4], dtype="i64"), "epoch": 3, "note": "ok", "lr": 0.5,
          "ids": [1, None, "x"]}
SEED = 20261126
MUTANTS = 400  # per format; x20 under PYRITE_SLOW=1


def _mutate(blob: bytes, rng: random.Random) -> bytes:
    """One corruption of `blob`; some are bursts of several."""
    out = bytearray(blob)
    for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 6)):
        if not out:
            break
        kind = rng.randrange(6)
        i = rng.randrange(len(out))
        if kind == 0:
            out[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[i] = rng.randrange(256)
        elif kind == 2:
            del out[i:]
        elif kind == 3:
            out[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 4:
            del out[i:i + rng.randint(1, 8)]
        else:
            j = rng.randrange(len(out))
            out[i:i] = out[j:j + rng.randint(1, 32)]
    return bytes(out)


@dataclass
class Outcome:
    refused: int = 0
    same: int = 0  # accepted, and equal to what was saved (a change the format does not carry)
    silent: Counter[str] = field(default_factory=Counter)  # accepted but different, by cause
    escaped: list[str] = field(default_factory=list)  # non-pyrite exceptions
    over_memory: list[tuple[int, int]] = field(default_factory=list)  # (size, peak)
    peak_ratio: float = 0.0


def _fuzz(blob: bytes, load: Callable[[bytes], object], expected: object,
          cause: Callable[[bytes, object], str | None], bound: Callable[[int], int],
          count: int, seed: int) -> Outcome:
    """Load `count` mutants of `blob`; `cause(mutant, loaded)` names why the format could not
    detect a mutant that loaded differently (None: it should have)."""
    rng = random.Random(seed)
    out = Outcome()
    tracemalloc.start()
    try:
        for _ in range(count):
            bad = _mutate(blob, rng)
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            try:
                got = load(bad)
            except PyriteError:
                out.refused += 1
                got = None
            except Exception as exc:  # noqa: BLE001 - what the test is looking for
                out.escaped.append(f"{type(exc).__name__}: {exc}"[:200])
                got = None
            peak = tracemalloc.get_traced_memory()[1] - base
            out.peak_ratio = max(out.peak_ratio, peak / max(len(bad), 1))
            if peak > bound(len(bad)):
                out.over_memory.append((len(bad), peak))
            if got is None:
                continue
            if got == expected:
                out.same += 1
            else:
                out.silent[cause(bad, got) or "UNEXPLAINED"] += 1
    finally:
        tracemalloc.stop()
    return out


def _plain_bound(size: int) -> int:
    return 64 * size + (1 << 20)


def _gzip_bound(size: int) -> int:
    return 2 * inflate_limit(size) + _plain_bound(size)  # the output, and its joined copy


def _never(bad: bytes, got: object) -> str | None:
    return None


def _record_loader(recorder: object) -> Callable[[bytes], object]:
    return lambda data: recorder.from_bytes(data)  # type: ignore[attr-defined]


RECORDERS = {
    "mpk": (NamedMpkFileRecorder(), _plain_bound),
    "mpk.gz": (NamedMpkGzFileRecorder(), _gzip_bound),
    "json": (PrettyJsonFileRecorder(), _plain_bound),
    "json.gz": (JsonGzFileRecorder(), _gzip_bound),
    "bin": (BinBytesRecorder(), _plain_bound),
    "bin.gz": (BinGzFileRecorder(), _gzip_bound),
}


def _check(out: Outcome, allowed: set[str]) -> None:
    assert out.escaped == [], out.escaped[:5]
    assert out.over_memory == [], out.over_memory[:5]
    assert set(out.silent) <= allowed, out.silent
    assert out.refused > 0


def _run_recorder(name: str, count: int) -> Outcome:
    recorder, bound = RECORDERS[name]
    blob = recorder.to_bytes(RECORD)  # type: ignore[attr-defined]
    expected = recorder.from_bytes(blob)  # type: ignore[attr-defined]
    return _fuzz(blob, _record_loader(recorder), expected, _never, bound, count,
                 SEED + sum(name.encode()))


@pytest.mark.parametrize("name", list(RECORDERS))
def test_pyrite_recorders_accept_no_corrupt_file(name: str) -> None:
    _check(_run_recorder(name, MUTANTS), set())


# ---- importers: safetensors, PyTorch (zip and legacy) -----------------------------------------

def _safetensors_blob() -> tuple[bytes, int]:
    blob = SafetensorsFileRecorder().to_bytes(RECORD)
    (n,) = struct.unpack_from("<Q", blob)
    return blob, 8 + n


def _data_only(start: int, original: bytes) -> Callable[[bytes, object], str | None]:
    """A mutant that differs from `original` only at or after `start`, same length: the tensor
    bytes, which a format without a checksum cannot check."""
    def cause(bad: bytes, got: object) -> str | None:
        if len(bad) == len(original) and bad[:start] == original[:start]:
            return "tensor bytes (no checksum in the format)"
        return None
    return cause


def _safetensors_cause(original: bytes, start: int) -> Callable[[bytes, object], str | None]:
    data = _data_only(start, original)

    def cause(bad: bytes, got: object) -> str | None:
        return data(bad, got) or _header_text(bad, got, original)
    return cause


def _header_text(bad: bytes, got: object, original: bytes) -> str | None:
    # a header that still parses, with other names or metadata strings: safetensors has no
    # checksum over its header either
    if isinstance(got, dict):
        return "header text: names, metadata (no checksum in the format)"
    return None


def _pt_fixture(name: str) -> bytes:
    return (Path(__file__).parent / "interop" / "fixtures" / name).read_bytes()


def _legacy_cause(bad: bytes, got: object) -> str | None:
    return "legacy .pt pickle or storage bytes (the format has no checksum)"


def _importer_cases() -> dict[str, tuple[bytes, Callable[[bytes], object],
                                         Callable[[bytes, object], str | None],
                                         set[str]]]:
    sblob, start = _safetensors_blob()
    legacy = _pt_fixture("legacy.pt")
    plain = st.dumps({"w": TensorData([1.0, 2.0, 3.0])})
    return {
        "safetensors": (sblob, lambda d: SafetensorsFileRecorder().from_bytes(d),
                        _safetensors_cause(sblob, start),
                        {"tensor bytes (no checksum in the format)",
                         "header text: names, metadata (no checksum in the format)"}),
        "safetensors-plain": (plain, lambda d: st.loads(d),
                              _safetensors_cause(plain, len(plain) - 12),
                              {"tensor bytes (no checksum in the format)",
                               "header text: names, metadata (no checksum in the format)"}),
        "pt-zip": (_pt_fixture("linear.pt"), lambda d: pt.loads(d), _never, set()),
        "pt-legacy": (legacy, lambda d: pt.loads(d), _legacy_cause,
                      {"legacy .pt pickle or storage bytes (the format has no checksum)"}),
    }


def _run_importer(name: str, count: int) -> Outcome:
    blob, load, cause, _ = _importer_cases()[name]
    return _fuzz(blob, load, load(blob), cause, _plain_bound, count, SEED + sum(name.encode()))


@pytest.mark.parametrize("name", ["safetensors", "safetensors-plain", "pt-zip", "pt-legacy"])
def test_importers_raise_only_pyrite_errors_within_memory(name: str) -> None:
    _check(_run_importer(name, MUTANTS), _importer_cases()[name][3])


# ---- ONNX ----------------------------------------------------------------------------------------

def _onnx_blob() -> bytes:
    onnx = pytest.importorskip("onnx")
    h, T = onnx.helper, onnx.TensorProto
    w = h.make_tensor("w", T.FLOAT, [1, 1, 3, 3], [0.1 * i for i in range(9)])
    g = h.make_graph([h.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], name="conv"),
                      h.make_node("Relu", ["c"], ["y"], name="relu")], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 5, 5])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=[w])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return bytes(m.SerializeToString())


def _onnx_load(data: bytes) -> object:
    from pyrite.interop.onnx.reader import parse
    from pyrite.interop.onnx.registry import problems
    graph = parse(data, source="m.onnx")
    problems(graph)  # what `import-onnx --check` runs on it
    return (graph.opset, [(n.op_type, n.inputs, n.outputs, n.name, n.attrs) for n in graph.nodes],
            [(v.name, v.elem_type, v.shape) for v in graph.inputs + graph.outputs],
            graph.initializers, graph.name, graph.doc, graph.metadata)


def _onnx_cause(bad: bytes, got: object) -> str | None:
    return "ONNX protobuf fields: names, attributes, weights (the format has no checksum)"


def _run_onnx(count: int) -> Outcome:
    blob = _onnx_blob()
    return _fuzz(blob, _onnx_load, _onnx_load(blob), _onnx_cause, _plain_bound, count, SEED)


def test_onnx_reader_raises_only_pyrite_errors_within_memory() -> None:
    _check(_run_onnx(MUTANTS), {_onnx_cause(b"", None) or ""})


def _import_escapes(count: int, seed: int, folder: Path) -> tuple[int, list[str]]:
    """Mutants through the whole `import_onnx` (read, check, trace, generate, write): the
    number written, and the non-pyrite exceptions."""
    from pyrite.interop.onnx.codegen import import_onnx
    blob, rng = _onnx_blob(), random.Random(seed)
    written, escaped = 0, []
    for _ in range(count):
        path = folder / "m.onnx"
        path.write_bytes(_mutate(blob, rng))
        try:
            import_onnx(path, folder / "out")
            written += 1
        except PyriteError:
            pass
        except Exception as exc:  # noqa: BLE001 - what the test is looking for
            escaped.append(f"{type(exc).__name__}: {exc}"[:200])
    return written, escaped


def test_onnx_import_of_mutants_raises_only_pyrite_errors(tmp_path: Path) -> None:
    written, escaped = _import_escapes(MUTANTS // 2, SEED, tmp_path)
    assert escaped == []
    assert written > 0  # some mutants (a changed weight or name) still import


# ---- the long run ----------------------------------------------------------------------------

@pytest.mark.slow
def test_long_fuzz_run_of_every_format(tmp_path: Path) -> None:
    count = 20 * MUTANTS
    for name in RECORDERS:
        _check(_run_recorder(name, count), set())
    for name, case in _importer_cases().items():
        _check(_run_importer(name, count), case[3])
    _check(_run_onnx(count), {_onnx_cause(b"", None) or ""})
    assert _import_escapes(count, SEED, tmp_path)[1] == []
