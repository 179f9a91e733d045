"""What a user is told: a WGSL compile error names the op and shows their line, shape and binding
mistakes are caught before dispatch with the op's name, a backward's wrong shapes are refused."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

import pyrite
from pyrite import extend
from pyrite.errors import GradError, KindError, ShapeError
from pyrite.extend import KernelError

_names = itertools.count()


def _scale_op(name: str) -> extend.CustomOp:
    @extend.op("x[..., n] -> [..., n]", name=name)
    def scale(x: pyrite.Tensor, *, factor: float = 2.0) -> pyrite.Tensor:
        return x * factor
    return scale


GOOD = """
@compute @workgroup_size(WORKGROUP_X)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = pyrite_flat(gid, nwg, WORKGROUP_X);
  if (i >= output_numel()) { return; }
  output[i] = x[x_offset() + pyrite_offset(i, x_rank, output_shape_at, x_strides_at)]
              * attr_factor();
}
"""


def test_a_kernel_with_an_attribute_reads_strided_inputs(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    gpu = device_named("webgpu-unfused")
    op = _scale_op(f"scale_{next(_names)}").wgsl(GOOD, workgroup_size=(64,))
    x = pyrite.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=gpu)
    got = op(x.swap_dims(0, 1), factor=0.5).numpy()  # a transposed view, read through strides
    np.testing.assert_allclose(got, np.arange(12).reshape(3, 4).T * 0.5)


def test_a_compile_error_names_the_op_and_shows_the_line(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    gpu = device_named("webgpu-unfused")
    name = f"broken_{next(_names)}"
    source = GOOD.replace("if (i >= output_numel()) { return; }",
                          "let oops = undefined_thing + 1;")
    op = _scale_op(name).wgsl(source, workgroup_size=(64,))
    with pytest.raises(KernelError) as caught:
        op(pyrite.tensor([1.0, 2.0], device=gpu))
    message = str(caught.value)
    assert message.startswith(f"{name}: the WGSL kernel did not compile: line 5 of its source, "
                              f"`let oops = undefined_thing + 1;`"), message
    assert "undefined_thing" in message.split("`: ", 1)[1], message


def test_shape_mistakes_are_caught_before_dispatch_with_the_op_name() -> None:
    @extend.op("lhs[m, k], rhs[k, n] -> [m, n]", name=f"mm_{next(_names)}")
    def mm(lhs: pyrite.Tensor, rhs: pyrite.Tensor) -> pyrite.Tensor:
        return lhs @ rhs
    with pytest.raises(ShapeError, match=rf"^{mm.name}: dim 'k' is 3 in lhs \(2, 3\) and 4 in "
                                         rf"rhs \(4, 5\)"):
        mm(pyrite.zeros((2, 3)), pyrite.zeros((4, 5)))
    with pytest.raises(ShapeError, match=rf"^{mm.name}: takes 2 tensors \(lhs, rhs\), got 1"):
        mm(pyrite.zeros((2, 3)))
    with pytest.raises(ShapeError, match=rf"^{mm.name}: lhs has shape \(1, 2, 3\), 2 dims"):
        mm(pyrite.zeros((1, 2, 3)), pyrite.zeros((3, 5)))
    with pytest.raises(KindError, match=rf"^{mm.name}: rhs is a tensor of kind Int"):
        mm(pyrite.zeros((2, 3)), pyrite.zeros((3, 5), dtype="i64"))


def test_binding_and_workgroup_mistakes_are_refused_when_declared() -> None:
    op = _scale_op(f"bind_{next(_names)}")
    with pytest.raises(KernelError, match=rf"^{op.name}: the WGSL source declares its own binding "
                                          r"at line 2; pyrite declares"):
        op.wgsl("\n@group(0) @binding(1) var<storage, read> x: array<f32>;\n" + GOOD)
    with pytest.raises(KernelError, match=rf"^{op.name}: the WGSL source has no entry point"):
        op.wgsl("fn helper() {}")
    with pytest.raises(KernelError, match=rf"^{op.name}: workgroup_size \(32, 32\) is outside"):
        op.wgsl(GOOD, workgroup_size=(32, 32))


def test_a_grid_outside_the_limits_is_refused_before_dispatch(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    gpu = device_named("webgpu-unfused")
    op = _scale_op(f"grid_{next(_names)}").wgsl(GOOD, workgroup_size=(64,),
                                                workgroups=lambda d: (10**9, 1, 1))
    with pytest.raises(KernelError, match=rf"^{op.name}: workgroups\(dims\) gave \(1000000000, "):
        op(pyrite.tensor([1.0], device=gpu))


def test_a_backward_with_wrong_shapes_is_refused_with_the_shapes() -> None:
    @extend.op("a[n], b[n] -> [n]", name=f"prod_{next(_names)}")
    def prod(a: pyrite.Tensor, b: pyrite.Tensor) -> pyrite.Tensor:
        return a * b

    @prod.backward
    def _(inputs: tuple[pyrite.Tensor, ...], output: pyrite.Tensor,
          grad: pyrite.Tensor) -> tuple[pyrite.Tensor, ...]:
        a, b = inputs
        return grad * b, (grad * a).sum()
    ad = pyrite.device("autodiff<numpy>")
    a = pyrite.tensor([1.0, 2.0, 3.0], device=ad).require_grad()
    b = pyrite.tensor([4.0, 5.0, 6.0], device=ad).require_grad()
    with pytest.raises(ShapeError, match=rf"^{prod.name} backward: the gradient of b has shape "
                                         r"\(1,\), b has shape \(3,\)"):
        prod(a, b).sum().backward()

    @prod.backward
    def _one(inputs: tuple[pyrite.Tensor, ...], output: pyrite.Tensor,
             grad: pyrite.Tensor) -> pyrite.Tensor:
        return grad
    with pytest.raises(GradError, match=r"returned Tensor gradients for the 2 inputs"):
        prod(a, b).sum().backward()
