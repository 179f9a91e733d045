"""How tensors print, as Burn prints them: the data (floats as Rust's `{:?}` writes them: the
shortest decimal that reads back to the stored value, `1e-8` style for tiny and huge ones),
then shape, device, backend, kind and dtype; `PrintOptions` (precision, threshold, edge_items)
and the `check_closeness` report."""

from __future__ import annotations

import pytest

from pyrite import (
    PrintOptions,
    arange,
    check_closeness,
    from_floats,
    full,
    set_print_options,
    tensor,
)
from pyrite.display import get_print_options

from .helpers import F16, F64, make, need


@pytest.fixture(autouse=True)
def _restore_print_options():
    saved = get_print_options()
    yield
    set_print_options(saved)


def _data(t) -> str:
    """The data part of a tensor's display (or of a display already rendered)."""
    text = t if isinstance(t, str) else repr(t)
    return text[text.index("data:\n") + 6:text.index(",\n  shape:")]


def test_display_like_burn(backend):
    t = full((2, 3), 0.123456789, device=backend)
    assert repr(t) == (
        "Tensor {\n"
        "  data:\n"
        "[[0.12345679, 0.12345679, 0.12345679],\n"
        " [0.12345679, 0.12345679, 0.12345679]],\n"
        "  shape:  [2, 3],\n"
        f"  device:  {backend.name},\n"
        f"  backend:  '{backend.name}',\n"
        "  kind:  'Float',\n"
        "  dtype:  'f32',\n"
        "}")
    assert str(t) == repr(t)


def test_precision_in_format_spec(backend):
    t = full((2, 3), 0.123456789, device=backend)
    assert _data(f"{t:.2}") == "[[0.12, 0.12, 0.12],\n [0.12, 0.12, 0.12]]"
    assert _data(format(t, ".4f")) == "[[0.1235, 0.1235, 0.1235],\n [0.1235, 0.1235, 0.1235]]"


def test_int_and_bool_display(backend):
    assert _data(tensor([[1, -2], [3, 4]], device=backend)) == "[[1, -2],\n [3, 4]]"
    assert _data(tensor([True, False], device=backend)) == "[true, false]"
    t = tensor([1, 2], device=backend)
    assert "kind:  'Int'" in repr(t)
    assert f"dtype:  '{backend.int_dtype}'" in repr(t)
    assert "kind:  'Bool'" in repr(tensor([True], device=backend))


def test_float_formatting(backend):
    need(backend, F64)
    t = tensor([1.0, 10.0, -2.5, 0.1, 1e-8, 1.5e20, 123456789.0], device=backend, dtype=F64)
    assert _data(t) == "[1.0, 10.0, -2.5, 0.1, 1e-8, 1.5e20, 123456789.0]"


def test_f32_formatting(backend):
    t = tensor([0.1, 1.0 / 3.0, 123456789.0], device=backend)  # the shortest f32 round trip
    assert _data(t) == "[0.1, 0.33333334, 123456790.0]"
    t = tensor([float("nan"), float("inf"), -float("inf"), -0.0], device=backend)
    assert _data(t) == "[NaN, inf, -inf, -0.0]"


def test_f16_display(backend):
    # the shortest decimal that reads back as the same f16 (numpy prints these alike)
    t = make(backend, [0.1, 65504.0], F16)
    assert _data(t) == "[0.1, 65500.0]"
    assert "dtype:  'f16'" in repr(t)


def test_three_dims(backend):
    t = arange(0, 8, device=backend).reshape([2, 2, 2])
    assert _data(t) == "[[[0, 1],\n  [2, 3]],\n [[4, 5],\n  [6, 7]]]"


def test_print_options_precision(backend):
    set_print_options(PrintOptions(precision=3))
    assert _data(tensor([1.0, 2.0 / 3.0], device=backend)) == "[1.000, 0.667]"
    set_print_options(precision=None)
    assert _data(tensor([1.0, 2.0 / 3.0], device=backend)) == "[1.0, 0.6666667]"


def test_print_options_threshold_and_edge_items(backend):
    set_print_options(PrintOptions(threshold=10, edge_items=2))
    assert _data(arange(0, 11, device=backend)) == "[0, 1, ..., 9, 10]"
    assert _data(arange(0, 10, device=backend)) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
    t = arange(0, 30, device=backend).reshape([5, 6])
    assert _data(t) == ("[[0, 1, ..., 4, 5],\n [6, 7, ..., 10, 11],\n ...,\n"
                        " [18, 19, ..., 22, 23],\n [24, 25, ..., 28, 29]]")


def test_default_threshold_summarises_large_tensors(backend):
    assert _data(arange(0, 2000, device=backend)) == "[0, 1, 2, ..., 1997, 1998, 1999]"
    assert "..." not in _data(arange(0, 1000, device=backend))


def test_check_closeness_report(backend, capsys):
    # the example of Burn's book
    a = from_floats([1.0, 2.0, 3.0, 4.0, 5.0, 6.001, 7.002, 8.003, 9.004, 10.1], device=backend)
    b = from_floats([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.001, 8.002, 9.003, 10.004], device=backend)
    report = check_closeness(a, b)
    assert capsys.readouterr().out.strip() == report
    lines = report.splitlines()
    tags = {lines[i].split()[1]: lines[i + 1].split()[0] for i in range(1, len(lines), 2)}
    assert tags["1e-01"] == "[PASS]"  # every difference is below 0.1
    assert tags["1e-02"] == "[WARN]"  # 9 of 10 (10.1 vs 10.004 is not)
    assert tags["1e-04"] == "[FAIL]"  # half of them differ by about 1e-3
    assert "(10/10)" in lines[2] and "(9/10)" in lines[4] and "(5/10)" in lines[8]


def test_check_closeness_identical_passes_everywhere(backend):
    a = tensor([[0.5, 1.5]], device=backend)
    report = check_closeness(a, a, echo=False)
    assert report.count("[PASS]") == 7
    assert "[FAIL]" not in report


def test_check_closeness_shape_mismatch(backend):
    with pytest.raises(ValueError, match="check_closeness: shapes differ"):
        check_closeness(tensor([1.0], device=backend), tensor([1.0, 2.0], device=backend))
