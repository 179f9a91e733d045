"""fusion<webgpu> elementwise decisions: how many kernels a chain becomes, broadcasting inside
a kernel, which intermediates are written, ints and bools, plan and pipeline cache hits, and
in-place outputs; values against the numpy backend (fixtures `fdev` and `fx` in conftest.py).
"""

from __future__ import annotations

import math
import weakref

import numpy as np
import pytest

import pyrite
from pyrite.webgpu import fusion


# ---- one kernel for a chain ---------------------------------------------------------------------
def _long_chain(x: pyrite.Tensor) -> pyrite.Tensor:
    """20 unary / binary ops (scalars and a reversed-operand one among them)."""
    y = x * 0.5 + 0.25                          # 2
    y = y.sin() * y.cos()                       # 3
    y = (y - 0.1).abs().sqrt()                  # 3
    y = y.exp() / (y + 1.5)                     # 3
    y = y.tanh().sigmoid()                      # 2
    y = (y * x).neg() + x                       # 3
    y = y.clamp(-1.0, 1.0)                      # 2
    y = 2.0 - y.recip().abs().log1p()           # 4 (the rsub records a fill and a sub)
    return y


def test_long_chain_is_one_kernel(fdev, fx) -> None:
    a = fx.f32((16, 24))
    (x,) = fx.on(fdev, a)
    with fusion.inspect() as seen:
        got = _long_chain(x).numpy()
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert len(g["ops"]) >= 20 and g["inputs"] == 1 and g["outputs"] == 1, g
    assert g["shape"] == (16, 24) and g["vec4"]
    fx.close(got, fx.reference(_long_chain, a))


def _gelu(x: pyrite.Tensor) -> pyrite.Tensor:
    """Burn's GELU."""
    return x * ((x / math.sqrt(2.0)).erf() + 1.0) / 2.0


@pytest.mark.parametrize(("shape", "vec4"), [((4, 8), True), ((3, 5), False)])
def test_gelu_is_one_kernel_vec4_when_size_allows(fdev, shape, vec4, fx) -> None:
    a = fx.f32(shape, -4.0, 4.0)
    (x,) = fx.on(fdev, a)
    with fusion.inspect() as seen:
        got = _gelu(x).numpy()
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert g["vec4"] is vec4, g
    assert "unary:erf" in g["ops"] and g["outputs"] == 1 and g["inputs"] == 1, g
    fx.close(got, fx.reference(_gelu, a))


def _diamond(a: pyrite.Tensor) -> pyrite.Tensor:
    y = a * 2.0
    return y + y.exp()


def test_diamond_is_one_kernel_computing_the_shared_node_once(fdev, fx) -> None:
    a_np = fx.f32((8, 8))
    (a,) = fx.on(fdev, a_np)
    with fusion.inspect() as seen:
        got = _diamond(a).numpy()
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert g["ops"] == ["binary:mul", "unary:exp", "binary:add"], g  # y computed once
    assert g["outputs"] == 1
    fx.close(got, fx.reference(_diamond, a_np))


# ---- broadcasting -------------------------------------------------------------------------------
def _broadcast_mid(col: pyrite.Tensor, m: pyrite.Tensor) -> pyrite.Tensor:
    return (col * 3.0).exp() + m  # (4, 1) op'd, then added to (4, 6)


def _expand_pending(col: pyrite.Tensor, m: pyrite.Tensor) -> pyrite.Tensor:
    return (col * 3.0).exp().expand([4, 6]) * m - 1.0  # an expand of a pending result


@pytest.mark.parametrize("fn", [_broadcast_mid, _expand_pending], ids=["binary", "expand"])
def test_broadcast_in_the_middle_is_one_kernel(fdev, fn, fx) -> None:
    c_np, m_np = fx.f32((4, 1)), fx.f32((4, 6))
    col, m = fx.on(fdev, c_np, m_np)
    with fusion.inspect() as seen:
        got = fn(col, m).numpy()
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert g["shape"] == (4, 6) and g["inputs"] == 2 and g["outputs"] == 1, g
    assert not g["vec4"]  # the (4, 1) input is read strided
    fx.close(got, fx.reference(fn, c_np, m_np))


def test_kept_broadcast_intermediate_gets_its_own_kernel(fdev, fx) -> None:
    c_np, m_np = fx.f32((4, 1)), fx.f32((4, 6))
    col, m = fx.on(fdev, c_np, m_np)
    with fusion.inspect() as seen:
        small = (col * 3.0).exp()  # kept: (4, 1)
        big = small + m
        got_big, got_small = big.numpy(), small.numpy()
    # one kernel per shape: the (4, 6) one recomputes the (4, 1) values as it reads col
    assert sorted(g["shape"] for g in seen.groups) == [(4, 1), (4, 6)], seen.groups
    assert fx.kinds(seen) == ["elementwise", "elementwise"]
    fx.close(got_small, np.exp(c_np * np.float32(3.0)))
    fx.close(got_big, fx.reference(_broadcast_mid, c_np, m_np))


@pytest.mark.parametrize(("rows", "vec4"), [((1, 3), False), ((2, 4), True)],
                         ids=["offset6", "offset12"])
def test_contiguous_slice_input_vec4_only_at_an_aligned_offset(fdev, rows, vec4, fx) -> None:
    a = fx.f32((4, 6))
    (x,) = fx.on(fdev, a)
    lo, hi = rows
    with fusion.inspect() as seen:
        got = (x[lo:hi] * 2.0 + 1.0).numpy()  # a flat view at offset 6 * lo
    assert fx.kinds(seen) == ["elementwise"] and seen.groups[0]["vec4"] is vec4, seen.groups
    fx.close(got, a[lo:hi] * np.float32(2.0) + np.float32(1.0))


def test_strided_views_as_inputs(fdev, fx) -> None:
    def fn(x: pyrite.Tensor) -> pyrite.Tensor:
        return x.transpose().exp() - x.flip([1]).transpose() * x[1:3, 2:5].sum_dim(1).sum()

    a = fx.f32((4, 6))
    (x,) = fx.on(fdev, a)
    got = fn(x).numpy()
    fx.close(got, fx.reference(fn, a))


# ---- what is written ----------------------------------------------------------------------------
def test_kept_intermediate_is_materialised_by_the_same_kernel(fdev, fx) -> None:
    a_np = fx.f32((4, 8))
    (a,) = fx.on(fdev, a_np)
    with fusion.inspect() as seen:
        y = a * 2.0 + 1.0  # the user keeps y
        z = (y.exp() - y) / 3.0
        got_z = z.numpy()
        assert y.into_primitive().node is None  # written by z's flush
        got_y = y.numpy()  # no further kernel
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    assert seen.groups[0]["outputs"] == 2
    want_y = a_np * np.float32(2.0) + np.float32(1.0)
    fx.close(got_y, want_y)
    fx.close(got_z, (np.exp(want_y) - want_y) / np.float32(3.0))


def test_dropped_intermediate_is_not_written(fdev, fx) -> None:
    def fn(a: pyrite.Tensor) -> pyrite.Tensor:
        y = a * 2.0 + 1.0
        return (y.exp() - y) / 3.0

    a_np = fx.f32((4, 8))
    (a,) = fx.on(fdev, a_np)
    with fusion.inspect() as seen:
        got = fn(a).numpy()
    assert fx.kinds(seen) == ["elementwise"] and seen.groups[0]["outputs"] == 1, seen.groups
    fx.close(got, fx.reference(fn, a_np))


# ---- int and bool -------------------------------------------------------------------------------
def _mixed(x: pyrite.Tensor) -> tuple[pyrite.Tensor, pyrite.Tensor, pyrite.Tensor]:
    i = (x * 4.0).int()                          # float -> int (truncates)
    j = (i * 3 + 7) % 5                          # int ops with scalars
    m = (x > 0.5).bool_and(j >= 2)               # float and int comparisons, bool and
    m = m.bool_or((i == -3).bool_not())          # bool or / not
    k = j.float() * 0.5                          # int -> float
    y = x.mask_where(m, k)                       # where, a tensor value
    y = y.mask_fill(m.bool_xor(x < -1.0), -1.0)  # where, a scalar value
    b = m.int() + i - j.bool().int()             # bool -> int, int -> bool
    return y, m, b


def test_int_and_bool_in_the_chain(fdev, fx) -> None:
    a = fx.f32((6, 8), -3.0, 3.0)
    (x,) = fx.on(fdev, a)
    with fusion.inspect() as seen:
        y, m, b = _mixed(x)
        got = (y.numpy(), m.numpy(), b.numpy())
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    assert seen.groups[0]["outputs"] == 3, seen.groups[0]
    for g, w in zip(got, fx.reference(_mixed, a), strict=True):
        fx.close(g, w)
    assert got[1].any() and not got[1].all()  # the mask is not trivial


# ---- caches -------------------------------------------------------------------------------------
def _scaled(x: pyrite.Tensor, s: float) -> pyrite.Tensor:
    return (x * s + 1.0).tanh() * s


def test_scalar_values_and_batch_sizes_reuse_the_kernel(fdev, fx) -> None:
    a = fx.f32((4, 8))
    (x,) = fx.on(fdev, a)
    _scaled(x, 2.0).numpy()  # compiles (or finds) the kernel
    before = fx.stats(fdev)
    got = _scaled(x, -0.75).numpy()
    d = fx.delta(fdev, before)
    assert d["pipeline_misses"] == 0 and d["pipeline_hits"] == 1, d
    assert d["plan_misses"] == 0 and d["plan_hits"] == 1, d
    fx.close(got, fx.reference(lambda t: _scaled(t, -0.75), a))

    # shapes are run-time data: other batch sizes (every size a multiple of 4: vec4 each time)
    before = fx.stats(fdev)
    for batch in (1, 12, 33):
        b = fx.f32((batch, 8))
        (xb,) = fx.on(fdev, b)
        with fusion.inspect() as seen:
            got = _scaled(xb, 0.5).numpy()
        assert seen.groups[0]["vec4"]
        fx.close(got, fx.reference(lambda t: _scaled(t, 0.5), b))
    d = fx.delta(fdev, before)
    assert d["pipeline_misses"] == 0 and d["pipeline_hits"] == 3, d
    assert d["plan_misses"] == 0 and d["plan_hits"] == 3, d

    # the scalar (non-vec4) layout: one compile at most, then reuse across batch sizes
    _scaled(pyrite.tensor(fx.f32((3, 5)), device=fdev), 1.0).numpy()
    before = fx.stats(fdev)
    c = fx.f32((7, 5))
    got = _scaled(pyrite.tensor(c, device=fdev), 3.0).numpy()
    d = fx.delta(fdev, before)
    assert d["pipeline_misses"] == 0 and d["pipeline_hits"] == 1, d
    fx.close(got, fx.reference(lambda t: _scaled(t, 3.0), c))


def test_same_stream_twice_is_a_plan_hit(fdev, fx) -> None:
    def step(x: pyrite.Tensor) -> pyrite.Tensor:
        return ((x - 1.0) * 0.5).sigmoid() + x.abs()

    a1, a2 = fx.f32((5, 6)), fx.f32((5, 6))
    x1, x2 = fx.on(fdev, a1, a2)
    step(x1).numpy()
    before = fx.stats(fdev)
    got = step(x2).numpy()
    d = fx.delta(fdev, before)
    assert d["flushes"] == 1 and d["plan_hits"] == 1 and d["plan_misses"] == 0, d
    fx.close(got, fx.reference(step, a2))


# ---- in place -----------------------------------------------------------------------------------
def test_dead_input_buffer_is_reused_in_place(fdev, fx) -> None:
    a_np = fx.f32((8, 8))
    (a,) = fx.on(fdev, a_np)
    x = a * 2.0
    x.numpy()  # x is in memory now
    del a
    block = weakref.ref(x.into_primitive().value.block)  # a weak one: it must not count
    y = x + 1.0
    del x  # nothing but the stream sees x
    before = fx.stats(fdev)
    with fusion.inspect() as seen:
        got = y.numpy()
    assert fx.kinds(seen) == ["elementwise"] and seen.groups[0]["inplace"] == 1, seen.groups
    assert fx.delta(fdev, before)["inplace"] >= 1
    assert y.into_primitive().value.block is block()  # y lives in x's old buffer
    fx.close(got, a_np * np.float32(2.0) + np.float32(1.0))


@pytest.mark.parametrize("keep", ["tensor", "clone", "reshape", "slice"])
def test_never_in_place_when_the_user_sees_the_input(fdev, keep, fx) -> None:
    a_np = fx.f32((4, 6))
    (a,) = fx.on(fdev, a_np)
    x = a * 2.0
    x.numpy()
    old = a_np * np.float32(2.0)
    del a
    views = {
        "tensor": (lambda t: t, lambda o: o),
        "clone": (lambda t: t.clone(), lambda o: o),
        "reshape": (lambda t: t.reshape([3, 8]), lambda o: o.reshape(3, 8)),
        "slice": (lambda t: t[0:2], lambda o: o[0:2]),
    }
    make, expect = views[keep]
    kept = make(x)
    y = x + 1.0
    if keep != "tensor":
        del x  # only the clone / view is left
    before = fx.stats(fdev)
    with fusion.inspect() as seen:
        got = y.numpy()
    assert fx.kinds(seen) == ["elementwise"] and seen.groups[0]["inplace"] == 0, seen.groups
    assert fx.delta(fdev, before)["inplace"] == 0
    fx.close(got, old + np.float32(1.0))
    fx.close(kept.numpy(), expect(old))  # the input the user sees is intact


def test_rebinding_in_a_loop_updates_in_place(fdev, fx) -> None:
    a = fx.f32((16, 16))
    x, want = pyrite.tensor(a, device=fdev), a.copy()
    before = fx.stats(fdev)
    for _ in range(4):
        x = x * 0.5 + 1.0  # the old x dies as the new one is bound
        x.numpy()
        want = want * np.float32(0.5) + np.float32(1.0)
    assert fx.delta(fdev, before)["inplace"] == 4  # the upload too: nothing else held it
    fx.close(x.numpy(), want)


def test_in_place_output_next_to_a_fresh_one_reads_before_it_writes(fdev, fx) -> None:
    a_np = fx.f32((8, 8))
    (a,) = fx.on(fdev, a_np)
    x = a * 1.0
    x.numpy()
    del a
    y = x.exp()        # kept: written over x
    z = (y + x) * 3.0  # kept: reads x at the element y overwrites
    del x
    with fusion.inspect() as seen:
        got_z, got_y = z.numpy(), y.numpy()
    assert fx.kinds(seen) == ["elementwise"], seen.groups
    g = seen.groups[0]
    assert g["outputs"] == 2 and g["inplace"] == 1 and g["inputs"] == 1, g
    fx.close(got_y, np.exp(a_np))
    fx.close(got_z, (np.exp(a_np) + a_np) * np.float32(3.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [lambda t: t > 0.0, lambda t: (t * 3.0).int()],
                         ids=["bool", "int"])
def test_never_in_place_into_another_storage_type(fdev, fn, fx) -> None:
    a_np = fx.f32((8, 8))
    (a,) = fx.on(fdev, a_np)
    x = a * 1.0
    x.numpy()
    del a
    y = fn(x)
    del x
    with fusion.inspect() as seen:
        got = y.numpy()
    assert fx.kinds(seen) == ["elementwise"] and seen.groups[0]["inplace"] == 0, seen.groups
    fx.close(got, fx.reference(fn, a_np))
