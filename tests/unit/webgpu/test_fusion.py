"""fusion<webgpu>: the fusion DECISIONS (how many kernels a flush launches, what they write, in
place or not, vec4 or not, which caches hit) as well as the values, against the numpy backend.

`fusion.inspect()` records every kernel a flush launches; the backend's `stats` count plan and
pipeline cache hits and in-place outputs. Each test starts from an empty stream (the `fdev`
fixture flushes what an earlier test left) and compares counters as deltas, since the device
(and its caches) is shared by the whole session.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite import config
from pyrite.dtype import DType
from pyrite.errors import BackendUnavailable
from pyrite.module import Module
from pyrite.nn import CrossEntropyLossConfig, LinearConfig
from pyrite.optim import AdamConfig, GradientsParams
from pyrite.webgpu import fusion
from pyrite.webgpu.fusion import MAX_STREAM, Fusion

RNG = np.random.default_rng(7)
RTOL, ATOL = 1e-5, 1e-6


# ---- fixtures and helpers -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def _fused() -> Any:
    try:
        return pyrite.device("fusion<webgpu>")
    except BackendUnavailable as exc:
        if "webgpu" in config.required_backends():
            pytest.fail(f"webgpu is required (PYRITE_REQUIRE) but unavailable: {exc}")
        pytest.skip(f"fusion<webgpu> unavailable: {exc}")


@pytest.fixture
def fdev(_fused: Any) -> Any:
    """The shared fusion<webgpu> device, with nothing pending from an earlier test."""
    assert isinstance(_fused, Fusion) and not isinstance(_fused.inner, Fusion)
    _fused.sync()
    return _fused


def _f32(shape: tuple[int, ...], lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def _on(device: Any, *arrays: np.ndarray) -> list[pyrite.Tensor]:
    return [pyrite.tensor(a, device=device) for a in arrays]


def _reference(fn: Callable[..., Any], *arrays: np.ndarray) -> Any:
    """fn on the numpy backend, as numpy arrays (a tuple for a tuple)."""
    out = fn(*_on("numpy", *arrays))
    return tuple(t.numpy() for t in out) if isinstance(out, tuple) else out.numpy()


def _close(got: np.ndarray, want: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> None:
    # same kind of values (the numpy backend's ints are i64, webgpu's i32)
    assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (got.dtype, want.dtype)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _stats(dev: Any) -> dict[str, int]:
    return dict(dev.stats.as_dict())


def _delta(dev: Any, before: dict[str, int]) -> dict[str, int]:
    now = dev.stats.as_dict()
    return {k: now[k] - before[k] for k in now}


def _kinds(seen: fusion.Inspection) -> list[str]:
    return [g["kind"] for g in seen.groups]


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


def test_long_chain_is_one_kernel(fdev) -> None:
    a = _f32((16, 24))
    (x,) = _on(fdev, a)
    with fusion.inspect() as seen:
        got = _long_chain(x).numpy()
    assert _kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert len(g["ops"]) >= 20 and g["inputs"] == 1 and g["outputs"] == 1, g
    assert g["shape"] == (16, 24) and g["vec4"]
    _close(got, _reference(_long_chain, a))


def _gelu(x: pyrite.Tensor) -> pyrite.Tensor:
    """Burn's GELU."""
    return x * ((x / math.sqrt(2.0)).erf() + 1.0) / 2.0


@pytest.mark.parametrize(("shape", "vec4"), [((4, 8), True), ((3, 5), False)])
def test_gelu_is_one_kernel_vec4_when_size_allows(fdev, shape, vec4) -> None:
    a = _f32(shape, -4.0, 4.0)
    (x,) = _on(fdev, a)
    with fusion.inspect() as seen:
        got = _gelu(x).numpy()
    assert _kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert g["vec4"] is vec4, g
    assert "unary:erf" in g["ops"] and g["outputs"] == 1 and g["inputs"] == 1, g
    _close(got, _reference(_gelu, a))


def _diamond(a: pyrite.Tensor) -> pyrite.Tensor:
    y = a * 2.0
    return y + y.exp()


def test_diamond_is_one_kernel_computing_the_shared_node_once(fdev) -> None:
    a_np = _f32((8, 8))
    (a,) = _on(fdev, a_np)
    with fusion.inspect() as seen:
        got = _diamond(a).numpy()
    assert _kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert g["ops"] == ["binary:mul", "unary:exp", "binary:add"], g  # y computed once
    assert g["outputs"] == 1
    _close(got, _reference(_diamond, a_np))


# ---- broadcasting -------------------------------------------------------------------------------
def _broadcast_mid(col: pyrite.Tensor, m: pyrite.Tensor) -> pyrite.Tensor:
    return (col * 3.0).exp() + m  # (4, 1) op'd, then added to (4, 6)


def _expand_pending(col: pyrite.Tensor, m: pyrite.Tensor) -> pyrite.Tensor:
    return (col * 3.0).exp().expand([4, 6]) * m - 1.0  # an expand of a pending result


@pytest.mark.parametrize("fn", [_broadcast_mid, _expand_pending], ids=["binary", "expand"])
def test_broadcast_in_the_middle_is_one_kernel(fdev, fn) -> None:
    c_np, m_np = _f32((4, 1)), _f32((4, 6))
    col, m = _on(fdev, c_np, m_np)
    with fusion.inspect() as seen:
        got = fn(col, m).numpy()
    assert _kinds(seen) == ["elementwise"], seen.groups
    (g,) = seen.groups
    assert g["shape"] == (4, 6) and g["inputs"] == 2 and g["outputs"] == 1, g
    assert not g["vec4"]  # the (4, 1) input is read strided
    _close(got, _reference(fn, c_np, m_np))


def test_kept_broadcast_intermediate_gets_its_own_kernel(fdev) -> None:
    c_np, m_np = _f32((4, 1)), _f32((4, 6))
    col, m = _on(fdev, c_np, m_np)
    with fusion.inspect() as seen:
        small = (col * 3.0).exp()  # kept: (4, 1)
        big = small + m
        got_big, got_small = big.numpy(), small.numpy()
    # one kernel per shape: the (4, 6) one recomputes the (4, 1) values as it reads col
    assert sorted(g["shape"] for g in seen.groups) == [(4, 1), (4, 6)], seen.groups
    assert _kinds(seen) == ["elementwise", "elementwise"]
    _close(got_small, np.exp(c_np * np.float32(3.0)))
    _close(got_big, _reference(_broadcast_mid, c_np, m_np))


@pytest.mark.parametrize(("rows", "vec4"), [((1, 3), False), ((2, 4), True)],
                         ids=["offset6", "offset12"])
def test_contiguous_slice_input_vec4_only_at_an_aligned_offset(fdev, rows, vec4) -> None:
    a = _f32((4, 6))
    (x,) = _on(fdev, a)
    lo, hi = rows
    with fusion.inspect() as seen:
        got = (x[lo:hi] * 2.0 + 1.0).numpy()  # a flat view at offset 6 * lo
    assert _kinds(seen) == ["elementwise"] and seen.groups[0]["vec4"] is vec4, seen.groups
    _close(got, a[lo:hi] * np.float32(2.0) + np.float32(1.0))


def test_strided_views_as_inputs(fdev) -> None:
    def fn(x: pyrite.Tensor) -> pyrite.Tensor:
        return x.transpose().exp() - x.flip([1]).transpose() * x[1:3, 2:5].sum_dim(1).sum()

    a = _f32((4, 6))
    (x,) = _on(fdev, a)
    got = fn(x).numpy()
    _close(got, _reference(fn, a))


# ---- what is written ----------------------------------------------------------------------------
def test_kept_intermediate_is_materialised_by_the_same_kernel(fdev) -> None:
    a_np = _f32((4, 8))
    (a,) = _on(fdev, a_np)
    with fusion.inspect() as seen:
        y = a * 2.0 + 1.0  # the user keeps y
        z = (y.exp() - y) / 3.0
        got_z = z.numpy()
        assert y.into_primitive().node is None  # written by z's flush
        got_y = y.numpy()  # no further kernel
    assert _kinds(seen) == ["elementwise"], seen.groups
    assert seen.groups[0]["outputs"] == 2
    want_y = a_np * np.float32(2.0) + np.float32(1.0)
    _close(got_y, want_y)
    _close(got_z, (np.exp(want_y) - want_y) / np.float32(3.0))


def test_dropped_intermediate_is_not_written(fdev) -> None:
    def fn(a: pyrite.Tensor) -> pyrite.Tensor:
        y = a * 2.0 + 1.0
        return (y.exp() - y) / 3.0

    a_np = _f32((4, 8))
    (a,) = _on(fdev, a_np)
    with fusion.inspect() as seen:
        got = fn(a).numpy()
    assert _kinds(seen) == ["elementwise"] and seen.groups[0]["outputs"] == 1, seen.groups
    _close(got, _reference(fn, a_np))


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


def test_int_and_bool_in_the_chain(fdev) -> None:
    a = _f32((6, 8), -3.0, 3.0)
    (x,) = _on(fdev, a)
    with fusion.inspect() as seen:
        y, m, b = _mixed(x)
        got = (y.numpy(), m.numpy(), b.numpy())
    assert _kinds(seen) == ["elementwise"], seen.groups
    assert seen.groups[0]["outputs"] == 3, seen.groups[0]
    for g, w in zip(got, _reference(_mixed, a), strict=True):
        _close(g, w)
    assert got[1].any() and not got[1].all()  # the mask is not trivial


# ---- caches -------------------------------------------------------------------------------------
def _scaled(x: pyrite.Tensor, s: float) -> pyrite.Tensor:
    return (x * s + 1.0).tanh() * s


def test_scalar_values_and_batch_sizes_reuse_the_kernel(fdev) -> None:
    a = _f32((4, 8))
    (x,) = _on(fdev, a)
    _scaled(x, 2.0).numpy()  # compiles (or finds) the kernel
    before = _stats(fdev)
    got = _scaled(x, -0.75).numpy()
    d = _delta(fdev, before)
    assert d["pipeline_misses"] == 0 and d["pipeline_hits"] == 1, d
    assert d["plan_misses"] == 0 and d["plan_hits"] == 1, d
    _close(got, _reference(lambda t: _scaled(t, -0.75), a))

    # shapes are run-time data: other batch sizes (every size a multiple of 4: vec4 each time)
    before = _stats(fdev)
    for batch in (1, 12, 33):
        b = _f32((batch, 8))
        (xb,) = _on(fdev, b)
        with fusion.inspect() as seen:
            got = _scaled(xb, 0.5).numpy()
        assert seen.groups[0]["vec4"]
        _close(got, _reference(lambda t: _scaled(t, 0.5), b))
    d = _delta(fdev, before)
    assert d["pipeline_misses"] == 0 and d["pipeline_hits"] == 3, d
    assert d["plan_misses"] == 0 and d["plan_hits"] == 3, d

    # the scalar (non-vec4) layout: one compile at most, then reuse across batch sizes
    _scaled(pyrite.tensor(_f32((3, 5)), device=fdev), 1.0).numpy()
    before = _stats(fdev)
    c = _f32((7, 5))
    got = _scaled(pyrite.tensor(c, device=fdev), 3.0).numpy()
    d = _delta(fdev, before)
    assert d["pipeline_misses"] == 0 and d["pipeline_hits"] == 1, d
    _close(got, _reference(lambda t: _scaled(t, 3.0), c))


def test_same_stream_twice_is_a_plan_hit(fdev) -> None:
    def step(x: pyrite.Tensor) -> pyrite.Tensor:
        return ((x - 1.0) * 0.5).sigmoid() + x.abs()

    a1, a2 = _f32((5, 6)), _f32((5, 6))
    x1, x2 = _on(fdev, a1, a2)
    step(x1).numpy()
    before = _stats(fdev)
    got = step(x2).numpy()
    d = _delta(fdev, before)
    assert d["flushes"] == 1 and d["plan_hits"] == 1 and d["plan_misses"] == 0, d
    _close(got, _reference(step, a2))


# ---- in place -----------------------------------------------------------------------------------
def test_dead_input_buffer_is_reused_in_place(fdev) -> None:
    a_np = _f32((8, 8))
    (a,) = _on(fdev, a_np)
    x = a * 2.0
    x.numpy()  # x is in memory now
    del a
    block = weakref.ref(x.into_primitive().value.block)  # a weak one: it must not count
    y = x + 1.0
    del x  # nothing but the stream sees x
    before = _stats(fdev)
    with fusion.inspect() as seen:
        got = y.numpy()
    assert _kinds(seen) == ["elementwise"] and seen.groups[0]["inplace"] == 1, seen.groups
    assert _delta(fdev, before)["inplace"] >= 1
    assert y.into_primitive().value.block is block()  # y lives in x's old buffer
    _close(got, a_np * np.float32(2.0) + np.float32(1.0))


@pytest.mark.parametrize("keep", ["tensor", "clone", "reshape", "slice"])
def test_never_in_place_when_the_user_sees_the_input(fdev, keep) -> None:
    a_np = _f32((4, 6))
    (a,) = _on(fdev, a_np)
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
    before = _stats(fdev)
    with fusion.inspect() as seen:
        got = y.numpy()
    assert _kinds(seen) == ["elementwise"] and seen.groups[0]["inplace"] == 0, seen.groups
    assert _delta(fdev, before)["inplace"] == 0
    _close(got, old + np.float32(1.0))
    _close(kept.numpy(), expect(old))  # the input the user sees is intact


def test_rebinding_in_a_loop_updates_in_place(fdev) -> None:
    a = _f32((16, 16))
    x, want = pyrite.tensor(a, device=fdev), a.copy()
    before = _stats(fdev)
    for _ in range(4):
        x = x * 0.5 + 1.0  # the old x dies as the new one is bound
        x.numpy()
        want = want * np.float32(0.5) + np.float32(1.0)
    assert _delta(fdev, before)["inplace"] == 4  # the upload too: nothing else held it
    _close(x.numpy(), want)


def test_in_place_output_next_to_a_fresh_one_reads_before_it_writes(fdev) -> None:
    a_np = _f32((8, 8))
    (a,) = _on(fdev, a_np)
    x = a * 1.0
    x.numpy()
    del a
    y = x.exp()        # kept: written over x
    z = (y + x) * 3.0  # kept: reads x at the element y overwrites
    del x
    with fusion.inspect() as seen:
        got_z, got_y = z.numpy(), y.numpy()
    assert _kinds(seen) == ["elementwise"], seen.groups
    g = seen.groups[0]
    assert g["outputs"] == 2 and g["inplace"] == 1 and g["inputs"] == 1, g
    _close(got_y, np.exp(a_np))
    _close(got_z, (np.exp(a_np) + a_np) * np.float32(3.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [lambda t: t > 0.0, lambda t: (t * 3.0).int()],
                         ids=["bool", "int"])
def test_never_in_place_into_another_storage_type(fdev, fn) -> None:
    a_np = _f32((8, 8))
    (a,) = _on(fdev, a_np)
    x = a * 1.0
    x.numpy()
    del a
    y = fn(x)
    del x
    with fusion.inspect() as seen:
        got = y.numpy()
    assert _kinds(seen) == ["elementwise"] and seen.groups[0]["inplace"] == 0, seen.groups
    _close(got, _reference(fn, a_np))


# ---- reductions and matmul ----------------------------------------------------------------------
def test_reduction_absorbs_its_producer(fdev) -> None:
    a = _f32((5, 7))
    (x,) = _on(fdev, a)
    with fusion.inspect() as seen:
        got = (x * x).sum_dim(1).numpy()
    assert _kinds(seen) == ["fused_reduce"], seen.groups  # x * x is never written
    assert seen.groups[0]["ops"] == ["binary:mul"]
    _close(got, _reference(lambda t: (t * t).sum_dim(1), a))


@pytest.mark.parametrize("fn", [
    lambda t: (t * t).sum_dim(0),                    # along a strided dim
    lambda t: (t - 5.0).max_dim(1),                  # all negative: the identity is -inf
    lambda t: (t + 5.0).min_dim(0),
    lambda t: (t > 0.0).int().sum_dim(1),            # bool -> int, an int accumulator
    lambda t: (t * 0.5).prod_dim(1),
], ids=["sum0", "max", "min0", "count", "prod"])
def test_fused_reductions(fdev, fn) -> None:
    a = _f32((6, 9))
    (x,) = _on(fdev, a)
    with fusion.inspect() as seen:
        got = fn(x).numpy()
    assert _kinds(seen) == ["fused_reduce"], seen.groups
    _close(got, _reference(fn, a))


def test_fused_reduction_with_a_broadcast_input(fdev) -> None:
    def fn(x: pyrite.Tensor, col: pyrite.Tensor) -> pyrite.Tensor:
        return (x * col).exp().sum_dim(1)

    a, c = _f32((5, 300)), _f32((5, 1))  # longer than one workgroup
    x, col = _on(fdev, a, c)
    with fusion.inspect() as seen:
        got = fn(x, col).numpy()
    assert _kinds(seen) == ["fused_reduce"] and seen.groups[0]["inputs"] == 2, seen.groups
    _close(got, _reference(fn, a, c), rtol=1e-5, atol=1e-5)


def _softmax(x: pyrite.Tensor) -> pyrite.Tensor:
    e = (x - x.max_dim(1)).exp()
    return e / e.sum_dim(1)


def test_softmax_from_primitives(fdev) -> None:
    a = _f32((6, 10), -5.0, 5.0)
    (x,) = _on(fdev, a)
    with fusion.inspect() as seen:
        got = _softmax(x).numpy()
    # max; sum of exp(x - max) computed as it reads; exp(x - max) / sum: e is never written
    assert _kinds(seen) == ["reduce", "fused_reduce", "elementwise"], seen.groups
    assert seen.groups[2]["outputs"] == 1
    _close(got, _reference(_softmax, a))
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)


def _dense_relu(x: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
    return (x @ w + b).clamp_min(0.0)


@pytest.mark.parametrize("m, k, n, tol", [(8, 6, 5, 1e-5), (96, 128, 80, 1e-4)],
                         ids=["naive kernel", "tiled kernel"])
def test_matmul_bias_relu(fdev, m, k, n, tol) -> None:
    """The bias add and relu run as the product's epilogue: one kernel, nothing else written.
    The larger product takes the tiled template, whose bind group then carries the epilogue's
    own bindings too."""
    xa, wa, ba = _f32((m, k)), _f32((k, n)), _f32((n,))
    x, w, b = _on(fdev, xa, wa, ba)
    with fusion.inspect() as seen:
        got = _dense_relu(x, w, b).numpy()
    assert _kinds(seen) == ["matmul+epilogue"], seen.groups
    _close(got, _reference(_dense_relu, xa, wa, ba), rtol=tol, atol=tol)


def test_linear_layer_bias_and_relu_run_as_the_products_epilogue(fdev) -> None:
    # nn.Linear off autodiff adds its bias through pyrite.consuming (binary_consuming): once
    # forwarded, it flushed the product alone and ran the raw add, then a relu kernel; the
    # MNIST model's inference took 10 kernels instead of 6
    layer = LinearConfig(96, 80).init(fdev)
    (xa,) = (_f32((64, 96)),)
    (x,) = _on(fdev, xa)
    with fusion.inspect() as seen:
        got = pyrite.activation.relu(layer(x)).numpy()
    assert _kinds(seen) == ["matmul+epilogue"], seen.groups
    w, b = layer.weight.val.numpy(), layer.bias.val.numpy()  # type: ignore[union-attr]
    _close(got, np.maximum(xa @ w + b, 0), rtol=1e-4, atol=1e-4)
    # and the plain-op fallbacks of consuming: a scalar operand, a unary
    (y,) = _on(fdev, _f32((5, 3)))
    with fusion.inspect() as seen:
        got = pyrite.consuming.relu(pyrite.consuming.mul(y * 1.0, 2.0)).numpy()
    assert _kinds(seen) == ["elementwise"], seen.groups
    _close(got, np.maximum(y.numpy() * 2.0, 0))


def test_the_mnist_models_inference_fuses_every_epilogue(fdev) -> None:
    # the guide model off autodiff (webgpu_mnist.py's and compile.py's inference): conv2's
    # ReLU, both biases and linear1's ReLU run in the stores of the conv and the products;
    # with the bias add flushed apart, this took 4 more kernels than the raw backend saves
    from pyrite.demos.mnist import ModelConfig

    model = ModelConfig(10, 32).init(fdev)
    images = _f32((3, 28, 28), 0.0, 1.0)
    (x,) = _on(fdev, images)
    with fusion.inspect() as seen:
        got = model.forward(x).numpy()
    assert _kinds(seen) == ["conv2d", "conv2d+epilogue", "matmul+epilogue",
                            "matmul+epilogue"], seen.groups
    want = model.to_device("numpy").forward(pyrite.tensor(images, device="numpy")).numpy()
    _close(got, want, rtol=1e-4, atol=1e-4)


def test_a_split_k_product_runs_its_epilogue_in_the_sum(fdev) -> None:
    # few output tiles and a long K: the product is split in K slices, so the epilogue runs in
    # the kernel that adds the slices (before, the naive kernel ran such a product whole)
    xa, wa, ba = _f32((16, 2048)), _f32((2048, 12)), _f32((12,))
    x, w, b = _on(fdev, xa, wa, ba)
    with fusion.inspect() as seen:
        got = _dense_relu(x, w, b).numpy()
    assert _kinds(seen) == ["matmul+epilogue"], seen.groups
    assert any(key.kernel == "matmul_split_sum" and key.params  # the epilogue's key
               for key, _ in fdev.inner.kernels._sources), "no split sum took the epilogue"
    _close(got, _reference(_dense_relu, xa, wa, ba), rtol=1e-4, atol=1e-3)


# ---- autodiff and the optimizer -----------------------------------------------------------------
class _Mlp(Module):
    def __init__(self, device: Any) -> None:
        self.first = LinearConfig(6, 16).init(device)
        self.second = LinearConfig(16, 4).init(device)

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return self.second(pyrite.activation.relu(self.first(x)))


def _params(model: Module) -> dict[str, np.ndarray]:
    return {path: p.val.numpy() for path, p in model.named_params()}


def test_mlp_gradients_and_adam_match_autodiff_numpy(fdev) -> None:
    pyrite.seed(3, device="numpy")
    start = _Mlp("autodiff<numpy>").into_record()
    xs, ys = _f32((12, 6)), RNG.integers(0, 4, 12).astype(np.int32)
    loss_fn = CrossEntropyLossConfig().init()
    lr = 1e-2
    runs = {}
    for name in ("autodiff<numpy>", "autodiff<fusion<webgpu>>"):
        dev = pyrite.device(name)
        model = _Mlp(dev).load_record(start)
        optim = AdamConfig().init()
        x, y = pyrite.tensor(xs, device=dev), pyrite.tensor(ys, device=dev)
        grads_seen, losses, inplace = [], [], []
        for _ in range(2):
            loss = loss_fn(model(x), y)
            losses.append(float(loss.numpy()[0]))
            grads = GradientsParams.from_grads(loss.backward(), model)
            grads_seen.append({path: grads.get(p.id).numpy()
                               for path, p in model.named_params()})
            del loss
            before = fdev.stats.inplace
            model = optim.step(lr, model, grads)
            del grads
            params = _params(model)  # flushes the update
            inplace.append(fdev.stats.inplace - before)
        runs[name] = (losses, grads_seen, params, inplace)
    np_losses, np_grads, np_params, _ = runs["autodiff<numpy>"]
    f_losses, f_grads, f_params, f_inplace = runs["autodiff<fusion<webgpu>>"]
    np.testing.assert_allclose(f_losses, np_losses, rtol=1e-5)
    for step, (want, got) in enumerate(zip(np_grads, f_grads, strict=True)):
        for path in want:
            _close(got[path], want[path], rtol=1e-5, atol=1e-6)
            assert np.abs(want[path]).max() > 0, (step, path)
    for path, want in np_params.items():
        # Adam moves each weight by about lr a step; the backends agree far closer
        _close(f_params[path], want, rtol=1e-5, atol=lr * 1e-3)
    assert all(n >= 1 for n in f_inplace), f_inplace  # the updates reuse dead buffers


# ---- f16 inside an f32 kernel ----------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda t: t.cast("f16").cast("f32") * 2.0,
    lambda t: t.cast("f16").cast("f32").sum_dim(1),
], ids=["elementwise", "fused_reduce"])
def test_f16_intermediate_between_f32_buffers(fdev, fn) -> None:
    """Every buffer is f32, a step in between is f16: the kernel still needs `enable f16;`."""
    if not fdev.supports(DType.F16):
        pytest.skip("the adapter has no f16")
    a = _f32((4, 8))
    (x,) = _on(fdev, a)
    got = fn(x).numpy()
    _close(got, _reference(fn, a), rtol=1e-5, atol=1e-5)


def test_inspect_counts_flushes(fdev) -> None:
    (x,) = _on(fdev, _f32((4, 4)))
    with fusion.inspect() as seen:
        (x * 2.0).numpy()
        (x + 1.0).sum_dim(0).numpy()
    assert seen.kernels == 2
    assert seen.flushes == 2, seen  # `Inspection.flushes` is declared but never counted


# ---- stream length, debug output, errors --------------------------------------------------------
def _long_stream(x: pyrite.Tensor) -> pyrite.Tensor:
    y = x
    for _ in range(MAX_STREAM):  # 2 * MAX_STREAM nodes
        y = y * 0.99 + 0.01
    return y


def test_stream_longer_than_max_flushes_by_itself(fdev) -> None:
    a = _f32((4, 8))
    (x,) = _on(fdev, a)
    before = _stats(fdev)
    y = _long_stream(x)
    assert _delta(fdev, before)["flushes"] >= 1  # before any readback
    got = y.numpy()
    _close(got, _reference(_long_stream, a))


def test_debug_wgsl_prints_each_new_kernel_with_its_key(gpu, monkeypatch, capsys) -> None:
    dev = Fusion(gpu)  # a fresh Fusion; the op mix below is used nowhere else
    monkeypatch.setenv("PYRITE_DEBUG", "wgsl")

    def odd(x: pyrite.Tensor) -> pyrite.Tensor:
        return ((x.sin() * 3.25).cos() - x.floor()).abs().sqrt().log1p()

    a = _f32((4, 4))
    capsys.readouterr()
    got = odd(pyrite.tensor(a, device=dev)).numpy()
    err = capsys.readouterr().err
    assert "// pyrite wgsl KernelKey(kernel='fused'" in err, err[:2000]
    assert "@compute" in err and "sin(" in err and "cos(" in err, err[:2000]
    _close(got, _reference(odd, a))
    odd(pyrite.tensor(a, device=dev)).numpy()
    assert "// pyrite wgsl" not in capsys.readouterr().err  # compiled once, printed once


def test_fusion_needs_a_webgpu_inner_backend() -> None:
    with pytest.raises(BackendUnavailable, match=r"fusion<webgpu>"):
        Fusion(pyrite.device("numpy"))
    with pytest.raises(BackendUnavailable, match=r"fusion<numpy>.*fusion<webgpu>"):
        pyrite.device("fusion<numpy>")


def test_kernels_never_bind_more_buffers_than_webgpu_allows(fdev) -> None:
    # WebGPU guarantees 8 storage buffers per kernel: a sum of 40 tensors and 31 held results
    # of one shape are split into kernels that each bind at most that many
    arrays = [_f32((3, 4)) for _ in range(40)]
    xs = _on(fdev, *arrays)
    with fusion.inspect() as seen:
        total = xs[0]
        for x in xs[1:]:
            total = total + x
        got = total.numpy()
    np.testing.assert_allclose(got, np.sum(arrays, axis=0), rtol=1e-5)
    assert all(g["inputs"] + g["outputs"] + 1 <= fusion.MAX_BINDINGS for g in seen.groups)
    with fusion.inspect() as seen:
        held = [x * 2.0 + 1.0 for x in xs[:31]]
        fdev.sync()
    for h, a in zip(held, arrays[:31], strict=True):
        np.testing.assert_allclose(h.numpy(), a * 2 + 1, rtol=1e-6)
    assert all(g["inputs"] + g["outputs"] + 1 <= fusion.MAX_BINDINGS for g in seen.groups)
    with fusion.inspect() as seen:
        s = sum(xs[1:12], xs[0]).sum_dim(1).numpy()
    np.testing.assert_allclose(s, np.sum(arrays[:12], axis=0).sum(1, keepdims=True), rtol=1e-5)
    assert all(g["inputs"] + g["outputs"] + 1 <= fusion.MAX_BINDINGS for g in seen.groups)


def test_a_result_too_large_for_one_buffer_fails_where_it_is_asked_for(fdev) -> None:
    # the error comes from the op, not from a later flush that would carry it to other work
    from pyrite.errors import DeviceMemoryError

    limit = fdev.inner.kernels.runtime.limits.max_allocation
    with pytest.raises(DeviceMemoryError, match="smaller batch"):
        pyrite.zeros((limit // 4 + 1,), device=fdev)
    (x,) = _on(fdev, _f32((2, 2)))
    np.testing.assert_allclose((x + 1.0).numpy(), x.numpy() + 1.0)


def test_conv_activation_relu_is_one_kernel(fdev) -> None:
    # nn.Conv2d(activation="relu") (conv2d_relu): recorded, so the ReLU is the conv's
    # epilogue; forwarded to the inner backend it flushed and ran a conv and a relu kernel
    from pyrite.nn import functional

    xa, wa, ba = _f32((1, 4, 9, 7)), _f32((6, 4, 3, 3)), _f32((6,))
    x, w, b = _on(fdev, xa, wa, ba)
    xn, wn, bn = (pyrite.tensor(a, device="numpy") for a in (xa, wa, ba))
    with fusion.inspect() as seen:
        got = functional.conv2d(x, w, b, padding=1, activation="relu").numpy()
    assert _kinds(seen) == ["conv2d+epilogue"], seen.groups
    want = functional.conv2d(xn, wn, bn, padding=1, activation="relu").numpy()
    _close(got, want, rtol=1e-4, atol=1e-5)


def test_two_convs_of_one_shape_each_take_their_epilogue(fdev) -> None:
    # a fire module's two expand convs (1x1 and 3x3 of one input, one output shape), each with
    # its ReLU: the two ReLUs grouped by shape made one two-output kernel, and neither conv
    # could take its ReLU as epilogue; now each result of a conv is a group of its own
    from pyrite.nn import functional

    xa, w1a, w3a = _f32((1, 4, 6, 6)), _f32((5, 4, 1, 1)), _f32((5, 4, 3, 3))
    x, w1, w3 = _on(fdev, xa, w1a, w3a)
    xn, w1n, w3n = (pyrite.tensor(a, device="numpy") for a in (xa, w1a, w3a))

    def fire(x: pyrite.Tensor, w1: pyrite.Tensor, w3: pyrite.Tensor) -> pyrite.Tensor:
        e1 = functional.conv2d(x, w1, activation="relu")
        e3 = functional.conv2d(x, w3, padding=1, activation="relu")
        return pyrite.cat([e1, e3], 1)

    with fusion.inspect() as seen:
        got = fire(x, w1, w3).numpy()
    assert _kinds(seen) == ["conv2d+epilogue", "conv2d+epilogue"], seen.groups
    _close(got, fire(xn, w1n, w3n).numpy(), rtol=1e-4, atol=1e-5)


def test_conv_with_an_epilogue_is_one_kernel(fdev) -> None:
    # conv2d -> scale, shift, relu: one kernel; values as on numpy (padding, stride, groups)
    from pyrite import activation
    from pyrite.nn import functional

    xa, wa, ba = _f32((2, 4, 9, 7)), _f32((6, 2, 3, 3)), _f32((6,))
    x, w, b = _on(fdev, xa, wa, ba)
    xn, wn, bn = (pyrite.tensor(a, device="numpy") for a in (xa, wa, ba))

    def net(x: pyrite.Tensor, w: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
        y = functional.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)
        return activation.relu(y * 2.0 - 0.5)

    with fusion.inspect() as seen:
        got = net(x, w, b).numpy()
    assert _kinds(seen) == ["conv2d+epilogue"], seen.groups
    _close(got, net(xn, wn, bn).numpy(), rtol=1e-4, atol=1e-5)
    # the conv output held by the program: written as it is, the epilogue runs on its own
    with fusion.inspect() as seen:
        y = functional.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)
        z = activation.relu(y).numpy()
    assert "conv2d" in _kinds(seen)
    _close(z, np.maximum(y.numpy(), 0))
