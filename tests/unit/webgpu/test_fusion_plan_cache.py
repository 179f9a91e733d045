"""fusion<webgpu>'s caches of a repeated eager step: the stream's plan (keyed by its structure)
and the conv records memoised by description (`fusion_memo.py`). A repeat is a plan hit; a
different graph (shape pattern, op, epilogue, dtype, conv parameters, a strided view) never
reuses the plan or record of another, and its values match the numpy backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyrite
import pyrite.nn.functional as F
from pyrite.webgpu import fusion, fusion_memo


def _conv_step(x: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor, padding: int = 0,
               stride: int = 1, act: str = "relu") -> pyrite.Tensor:
    y = F.conv2d(x, w, b, stride=stride, padding=padding)
    return pyrite.activation.relu(y) if act == "relu" else (y * 0.5).tanh()


@pytest.fixture(autouse=True)
def _fresh_plans(fdev: Any) -> None:
    """The shared device starts each test with no stream plans (other tests record the same
    streams, and these count misses)."""
    fdev._plans.clear()


def _run(fdev: Any, fx: Any, fn: Any, *arrays: np.ndarray) -> tuple[dict[str, int], Any]:
    before = fx.stats(fdev)
    with fusion.inspect() as seen:
        got = fn(*fx.on(fdev, *arrays)).numpy()
    fx.close(got, fx.reference(fn, *arrays), rtol=1e-4, atol=1e-4)
    return fx.delta(fdev, before), seen


def test_a_repeated_conv_step_is_a_plan_hit_with_its_epilogue(fdev, fx) -> None:
    x, w, b = fx.f32((2, 3, 9, 9)), fx.f32((4, 3, 3, 3)), fx.f32((4,))
    _run(fdev, fx, _conv_step, x, w, b)
    d, seen = _run(fdev, fx, _conv_step, fx.f32((2, 3, 9, 9)), w, b)
    assert d["plan_misses"] == 0 and d["plan_hits"] == 1, d
    assert fx.kinds(seen) == ["conv2d+epilogue"], seen.groups


def test_conv_parameters_and_shapes_never_reuse_another_record(fdev, fx) -> None:
    w, b = fx.f32((4, 3, 3, 3)), fx.f32((4,))
    x = fx.f32((2, 3, 9, 9))
    _run(fdev, fx, _conv_step, x, w, b)
    # other padding, other stride: other ops, so other plans (and other output shapes)
    for kwargs in ({"padding": 1}, {"stride": 2}):
        d, _ = _run(fdev, fx, lambda *t, kw=kwargs: _conv_step(*t, **kw), x, w, b)
        assert d["plan_misses"] == 1, (kwargs, d)
    # another input size: the same plan (shapes are run-time data), the record's shape its own
    d, seen = _run(fdev, fx, _conv_step, fx.f32((3, 3, 12, 7)), w, b)
    assert d["plan_misses"] == 0 and seen.groups[0]["shape"] == (3, 4, 10, 5), (d, seen.groups)
    op1, shape1 = fusion_memo.conv_record((2, 3, 9, 9), (4, 3, 3, 3), (1, 1),
                                          ((0, 0), (0, 0)), (1, 1), 1, True)
    op2, shape2 = fusion_memo.conv_record((2, 3, 9, 9), (4, 3, 3, 3), (1, 1),
                                          ((1, 1), (1, 1)), (1, 1), 1, True)
    assert shape1 == (2, 4, 7, 7) and shape2 == (2, 4, 9, 9)
    assert op1.name != op2.name and op1 != op2
    # lists (not a key) give the same answer, uncached
    op3, shape3 = fusion_memo.conv_record((2, 3, 9, 9), (4, 3, 3, 3), [1, 1],
                                          [[1, 1], [1, 1]], [1, 1], 1, True)
    assert (op3, shape3) == (op2, shape2) and op3.name == op2.name


def test_another_epilogue_is_another_plan(fdev, fx) -> None:
    x, w, b = fx.f32((2, 3, 9, 9)), fx.f32((4, 3, 3, 3)), fx.f32((4,))
    _run(fdev, fx, _conv_step, x, w, b)
    d, seen = _run(fdev, fx, lambda *t: _conv_step(*t, act="tanh"), x, w, b)
    assert d["plan_misses"] == 1, d
    assert fx.kinds(seen) == ["conv2d+epilogue"], seen.groups
    assert seen.groups[0]["ops"] == ["binary:mul", "unary:tanh"], seen.groups


def test_shape_pattern_op_and_dtype_changes_miss_the_plan(fdev, fx) -> None:
    def same(a: pyrite.Tensor, c: pyrite.Tensor) -> pyrite.Tensor:
        return pyrite.activation.relu(a + c) * 2.0

    def other_op(a: pyrite.Tensor, c: pyrite.Tensor) -> pyrite.Tensor:
        return pyrite.activation.relu(a - c) * 2.0

    a, c = fx.f32((4, 6)), fx.f32((4, 6))
    _run(fdev, fx, same, a, c)
    d, _ = _run(fdev, fx, same, fx.f32((3, 5)), fx.f32((3, 5)))  # same pattern, other size
    assert d["plan_misses"] == 0 and d["plan_hits"] == 1, d
    d, _ = _run(fdev, fx, same, a, fx.f32((1, 6)))  # a broadcast operand: its strides are data
    assert d["plan_misses"] == 0, d
    d, _ = _run(fdev, fx, other_op, a, c)
    assert d["plan_misses"] == 1, d
    ints = fx.rng.integers(-5, 5, (4, 6)).astype(np.int32)
    d, _ = _run(fdev, fx, lambda p, q: (p + q).clamp_min(0) * 2, ints, ints)  # the same ops on ints
    assert d["plan_misses"] == 1, d


def test_a_strided_view_reuses_the_plan_with_its_own_strides(fdev, fx) -> None:
    def linear(x: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
        return pyrite.activation.relu(x @ w + b)

    x, w, b = fx.f32((8, 16)), fx.f32((16, 12)), fx.f32((12,))
    _run(fdev, fx, linear, x, w, b)
    # the weight as a transposed view (another layout to the product, the same stream)
    wt = np.ascontiguousarray(w.T)
    d, seen = _run(fdev, fx, lambda p, q, r: linear(p, q.transpose(), r), x, wt, b)
    assert fx.kinds(seen) == ["matmul+epilogue"], seen.groups
    # a column slice of the input: strided rows, offset 0; and a slice starting inside
    big = fx.f32((8, 20))
    _run(fdev, fx, lambda p, q, r: linear(p[:, 2:18], q, r), big, w, b)
    _run(fdev, fx, lambda p, q, r: linear(p[1:], q, r), fx.f32((9, 16)), w, b)


def test_results_of_other_shapes_are_another_plan(fdev, fx) -> None:
    """Two results of one shape are one kernel; of two shapes, two: another plan."""
    def both(p: pyrite.Tensor, q: pyrite.Tensor) -> tuple[pyrite.Tensor, pyrite.Tensor]:
        return p * 2.0 + 1.0, (q - 1.0).abs()

    for shapes, kernels, misses in ((((4, 6), (4, 6)), 1, None), (((4, 6), (4, 6)), 1, 0),
                                    (((4, 6), (3, 6)), 2, 1)):
        arrays = [fx.f32(s) for s in shapes]
        before = fx.stats(fdev)
        with fusion.inspect() as seen:
            y1, y2 = both(*fx.on(fdev, *arrays))
            got = (y1.numpy(), y2.numpy())
        d = fx.delta(fdev, before)
        assert seen.kernels == kernels, seen.groups
        if misses is not None:
            assert d["plan_misses"] == misses, (shapes, d)
        for g, want in zip(got, fx.reference(both, *arrays), strict=True):
            fx.close(g, want)
