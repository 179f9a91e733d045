"""Custom ops through the stack: the composite's derivative when an op with a kernel has no
backward, a backward that launches another op's kernel, attributes, an elementwise op in a
matmul's epilogue, and re-declaring in a page or notebook."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import pyrite
from pyrite import extend
from pyrite.backend.autodiff import Autodiff
from pyrite.webgpu import custom as webgpu_custom
from pyrite.webgpu import fusion

SCALE = """
@compute @workgroup_size(WORKGROUP_X)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = pyrite_flat(gid, nwg, WORKGROUP_X);
  if (i >= output_numel()) { return; }
  output[i] = x[x_offset() + pyrite_offset(i, x_rank, output_shape_at, x_strides_at)]
              * attr_factor();
}
"""


def _scale(name: str) -> extend.CustomOp:
    @extend.op("x[..., n] -> [..., n]", name=name)
    def scale(x: pyrite.Tensor, *, factor: float = 2.0) -> pyrite.Tensor:
        return x * factor
    return scale.wgsl(SCALE, workgroup_size=(64,))


@pytest.mark.parametrize("name", ["numpy", "webgpu", "webgpu-unfused"])
def test_without_a_backward_the_gradient_is_the_composites(
        name: str, device_named: Callable[[str], pyrite.Backend]) -> None:
    op = _scale("scale_no_backward")
    ad = Autodiff(device_named(name))
    x = pyrite.tensor([[1.0, -2.0, 3.0]], device=ad).require_grad()
    before = webgpu_custom.LAUNCHES.get(op.name, 0)
    y = op(x, factor=3.0)
    grads = (y * y).sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), 18.0 * np.array([[1.0, -2.0, 3.0]]))
    launched = webgpu_custom.LAUNCHES.get(op.name, 0) - before
    assert launched == (0 if name == "numpy" else 1)  # the forward; backward is the composite


def test_a_backward_may_launch_another_kernel(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    double = _scale("double_kernel")

    @extend.op("x[..., n] -> [..., n]", name="quadruple")
    def quadruple(x: pyrite.Tensor) -> pyrite.Tensor:
        return x * 4.0

    @quadruple.backward
    def _(inputs: tuple[pyrite.Tensor, ...], output: pyrite.Tensor,
          grad: pyrite.Tensor) -> tuple[pyrite.Tensor]:
        return (double(double(grad)),)
    ad = Autodiff(device_named("webgpu"))
    x = pyrite.tensor([1.0, 2.0], device=ad).require_grad()
    before = webgpu_custom.LAUNCHES.get("double_kernel", 0)
    grads = quadruple(x).sum().backward()
    np.testing.assert_allclose(x.grad(grads).numpy(), [4.0, 4.0])
    assert webgpu_custom.LAUNCHES["double_kernel"] - before == 2


def test_attributes_have_defaults_and_are_checked() -> None:
    op = _scale("scale_attrs")
    x = pyrite.tensor([1.0, 2.0])
    assert op(x).to_list() == [2.0, 4.0]
    assert op(x, factor=0.5).to_list() == [0.5, 1.0]
    with pytest.raises(TypeError, match=r"^scale_attrs: no attribute \['scale'\]; it takes "
                                        r"\['factor'\]"):
        op(x, scale=1.0)
    with pytest.raises(TypeError, match=r"^scale_attrs: attribute factor='2' is not a number"):
        op(x, factor="2")  # type: ignore[arg-type]


def test_an_elementwise_op_joins_a_matmul_epilogue(
        device_named: Callable[[str], pyrite.Backend]) -> None:
    @extend.elementwise("({x} * {x} + 1.0)", name="square_plus_one")
    def square_plus_one(x: pyrite.Tensor) -> pyrite.Tensor:
        return x * x + 1.0
    dev = device_named("webgpu")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    x, w = pyrite.tensor(a, device=dev), pyrite.tensor(b, device=dev)
    with fusion.inspect() as seen:
        got = square_plus_one(x @ w).numpy()
    assert seen.kernels == 1, seen.groups
    np.testing.assert_allclose(got, (a @ b) ** 2 + 1)


def test_declaring_again_replaces_but_a_builtin_name_is_refused() -> None:
    first = _scale("scale_again")
    second = _scale("scale_again")
    assert pyrite.backend.registry.CUSTOM["scale_again"] is second is not first
    with pytest.raises(ValueError, match=r"^op 'exp' is a built-in op already"):
        _scale("exp")
    with pytest.raises(ValueError, match=r"^op 'relu' is a built-in op; give yours another"):
        extend.elementwise("max({x}, 0.0)", name="relu")(lambda x: x)
