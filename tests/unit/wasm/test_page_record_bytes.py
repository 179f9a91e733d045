"""page.load_model takes a record as the worker passes it, a proxy of a JavaScript Uint8Array,
and copies it in one call (`to_bytes()`), never element by element through `bytes()` (which
iterates the proxy: 174 ms for MNIST's 1 MB record under Node, most of a repeat visit's model
step)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pyrite.demos import registry
from pyrite.wasm import page


class TypedArray:
    """Stands in for Pyodide's proxy of a Uint8Array: `to_bytes()` copies it; iterating it,
    as `bytes()` would, is what the page must not do."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.copies = 0

    def to_bytes(self) -> bytes:
        self.copies += 1
        return self.data

    def __iter__(self) -> Iterator[int]:
        raise AssertionError("the typed array was read one element at a time")


def test_bytes_of_a_typed_array_are_copied_in_one_call() -> None:
    array = TypedArray(b"\x00\x01\xff")
    assert page._bytes(array) == b"\x00\x01\xff"
    assert array.copies == 1
    assert page._bytes(b"ab") == b"ab"
    assert page._bytes(memoryview(b"ab")) == b"ab"
    assert page._bytes(bytearray(b"ab")) == b"ab"


def test_anything_else_is_refused_with_one_line() -> None:
    with pytest.raises(TypeError, match=r"^expected the bytes of a file \(bytes or a "
                                        r"Uint8Array\), got list$"):
        page._bytes([1, 2, 3])


def test_a_model_loads_from_the_workers_typed_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    demo = registry.get("mnist")
    if demo.missing() is not None:
        pytest.skip(str(demo.missing()))
    # page.start sets these for the page's process: put back after the test
    for name in ("PYRITE_BACKEND", "PYRITE_AUTOTUNE"):
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(page, "_state", {"device": None})
    monkeypatch.setattr(page, "_models", {})
    monkeypatch.setattr(page, "_records", {})
    page.start("numpy")
    record = TypedArray(demo.locate().read_bytes())
    answer = page.load_model("mnist", record, {})
    assert record.copies == 1
    assert answer["params"] == 531178
    assert page._records["mnist"] == (record.data, {})
    loaded = demo.load("numpy")
    got = page.predict("mnist", demo.example)
    assert got["probabilities"] == demo.predict(loaded, demo.example)["probabilities"]
