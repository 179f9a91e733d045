"""The Burn book's "Custom WGPU Kernel" in pyrite: your own op, with your own kernel.

Two ops, declared with `pyrite.extend` (docs/extending.md walks through them):

- `fused_matmul_add_relu(lhs, rhs, bias)`: relu(lhs @ rhs + bias) as one WGSL kernel, with a
  backward written with tensor ops. Its composite is what numpy (and any backend without the
  kernel) runs, and what the kernel is checked against. `fused_matmul_add_relu_tiled` is the
  same op with a kernel that tiles lhs and rhs in workgroup memory.
- `scaled_softplus(x, beta)`: log(1 + exp(beta * x)) / beta, an elementwise op with no built-in
  equivalent: one WGSL expression that Fusion fuses with its neighbours.

Then a small model whose hidden layer is the fused op trains on two noisy rings, and its record
is saved and loaded back. Only pyrite is imported, so the same file runs in a page.

    python examples/custom_kernel.py                       # webgpu (autodiff<webgpu>)
    python examples/custom_kernel.py --device "autodiff<numpy>" --steps 100
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
from pathlib import Path
from typing import Any

import pyrite
from pyrite import extend
from pyrite.activation import relu
from pyrite.distribution import Normal
from pyrite.module import Config, Module
from pyrite.nn import Linear, LinearConfig
from pyrite.nn.loss import CrossEntropyLossConfig
from pyrite.optim import AdamConfig

# ---- 1. the op: its signature and its composite ------------------------------------------------


SIGNATURE = "lhs[..., m, k], rhs[..., k, n], bias[..., m, n] -> [..., m, n]"


@extend.op(SIGNATURE)
def fused_matmul_add_relu(lhs: pyrite.Tensor, rhs: pyrite.Tensor,
                          bias: pyrite.Tensor) -> pyrite.Tensor:
    """relu(lhs @ rhs + bias): the reference every backend runs unless it has a kernel."""
    return relu(lhs @ rhs + bias)


# ---- 2. the forward kernel: one invocation per output element, a 16 x 16 tile per workgroup --
# pyrite declares the bindings (info, lhs, rhs, bias, output) and the accessors used below.
FORWARD_WGSL = """
@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, 1)
fn main(@builtin(local_invocation_index) local: u32, @builtin(workgroup_id) group: vec3<u32>) {
  // as in the book: neighbouring invocations take neighbouring columns (coalesced reads of rhs
  // and writes of output); WORKGROUP_X == WORKGROUP_Y, the tile's side
  let row = i32(group.x * WORKGROUP_X + local / WORKGROUP_X);
  let col = i32(group.y * WORKGROUP_Y + local % WORKGROUP_X);
  let batch = i32(group.z);
  let nb = output_rank - 2;  // batch dims
  let m = output_shape(nb);
  let n = output_shape(nb + 1);
  let k = lhs_shape(nb + 1);
  if (row >= m || col >= n) {
    return;
  }
  // where this batch element starts in each input (broadcast dims have stride 0)
  let l0 = lhs_offset() + pyrite_offset(batch, nb, output_shape_at, lhs_strides_at);
  let r0 = rhs_offset() + pyrite_offset(batch, nb, output_shape_at, rhs_strides_at);
  let b0 = bias_offset() + pyrite_offset(batch, nb, output_shape_at, bias_strides_at);
  // strides read once, outside the loop
  let lhs_row = l0 + row * lhs_stride(nb);
  let lhs_step = lhs_stride(nb + 1);
  let rhs_col = r0 + col * rhs_stride(nb + 1);
  let rhs_step = rhs_stride(nb);
  var sum = 0.0;
  for (var i = 0; i < k; i++) {
    sum += lhs[lhs_row + i * lhs_step] * rhs[rhs_col + i * rhs_step];
  }
  let b = bias[b0 + row * bias_stride(nb) + col * bias_stride(nb + 1)];
  output[(batch * m + row) * n + col] = max(sum + b, 0.0);
}
"""

fused_matmul_add_relu.wgsl(
    FORWARD_WGSL, workgroup_size=(16, 16),
    workgroups=lambda d: (math.ceil(d["m"] / 16), math.ceil(d["n"] / 16), d["batch"]))


# ---- 3. the backward: tensor ops on the inner backend ----------------------------------------
@fused_matmul_add_relu.backward
def fused_matmul_add_relu_backward(inputs: tuple[pyrite.Tensor, ...], output: pyrite.Tensor,
                                   grad: pyrite.Tensor) -> tuple[pyrite.Tensor, ...]:
    lhs, rhs, _ = inputs
    # relu's gradient: the output is 0 exactly where the pre-activation was <= 0
    g = grad.mask_fill(output.lower_equal_elem(0.0), 0.0)
    return g @ rhs.swap_dims(-1, -2), lhs.swap_dims(-1, -2) @ g, g


# ---- 3b. the same op with a tiled kernel: 16 x 16 tiles of lhs and rhs in workgroup memory --
TILED_WGSL = """
const TILE: i32 = 16;
var<workgroup> lhs_tile: array<array<f32, 16>, 16>;
var<workgroup> rhs_tile: array<array<f32, 16>, 16>;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let tx = i32(lid.x);
  let ty = i32(lid.y);
  let row = i32(wid.y) * TILE + ty;
  let col = i32(wid.x) * TILE + tx;
  let batch = i32(wid.z);
  let nb = output_rank - 2;
  let m = output_shape(nb);
  let n = output_shape(nb + 1);
  let k = lhs_shape(nb + 1);
  let l0 = lhs_offset() + pyrite_offset(batch, nb, output_shape_at, lhs_strides_at);
  let r0 = rhs_offset() + pyrite_offset(batch, nb, output_shape_at, rhs_strides_at);
  let lhs_row = l0 + row * lhs_stride(nb);
  let lhs_step = lhs_stride(nb + 1);
  let rhs_col = r0 + col * rhs_stride(nb + 1);
  let rhs_step = rhs_stride(nb);
  var sum = 0.0;
  // every invocation reaches each barrier: no early return before the loop ends
  for (var t = 0; t < k; t += TILE) {
    var a = 0.0;
    if (row < m && t + tx < k) {
      a = lhs[lhs_row + (t + tx) * lhs_step];
    }
    var b = 0.0;
    if (t + ty < k && col < n) {
      b = rhs[rhs_col + (t + ty) * rhs_step];
    }
    lhs_tile[ty][tx] = a;
    rhs_tile[ty][tx] = b;
    workgroupBarrier();
    for (var i = 0; i < TILE; i++) {
      sum += lhs_tile[ty][i] * rhs_tile[i][tx];
    }
    workgroupBarrier();
  }
  if (row < m && col < n) {
    let b0 = bias_offset() + pyrite_offset(batch, nb, output_shape_at, bias_strides_at);
    let bias_value = bias[b0 + row * bias_stride(nb) + col * bias_stride(nb + 1)];
    output[(batch * m + row) * n + col] = max(sum + bias_value, 0.0);
  }
}
"""

#: the same signature, composite and backward under another name, with the tiled kernel
fused_matmul_add_relu_tiled = extend.op(SIGNATURE, name="fused_matmul_add_relu_tiled")(
    fused_matmul_add_relu.composite)
fused_matmul_add_relu_tiled.wgsl(
    TILED_WGSL, workgroup_size=(16, 16),
    workgroups=lambda d: (math.ceil(d["n"] / 16), math.ceil(d["m"] / 16), d["batch"]))
fused_matmul_add_relu_tiled.backward(fused_matmul_add_relu_backward)


# ---- 4. an elementwise op: one expression, fused like a built-in ------------------------------
def _softplus_backward(x: Any, beta: Any, out: Any, grad: Any) -> tuple[Any, Any]:
    slope = (x * beta).sigmoid()  # d/dx; d/dbeta = (x * sigmoid(beta x) - out) / beta
    return grad * slope, grad * (x * slope - out) / beta


@extend.elementwise("((max({a} * {b}, 0.0) + log(1.0 + exp(-abs({a} * {b})))) / {b})",
                    backward=_softplus_backward)
def scaled_softplus(x: pyrite.Tensor, beta: pyrite.Tensor | float) -> pyrite.Tensor:
    """log(1 + exp(beta x)) / beta, written to stay finite for large |beta x|."""
    z = x * beta
    return (relu(z) + (-z.abs()).exp().log1p()) / beta


# ---- 5. a model that uses the op -------------------------------------------------------------
class RingNetConfig(Config):
    """Two inputs -> hidden (the fused op) -> scaled softplus -> two logits."""

    d_hidden: int = 32

    def init(self, device: Any = None) -> RingNet:
        return RingNet(LinearConfig(2, self.d_hidden).init(device),
                       LinearConfig(self.d_hidden, 2).init(device))


class RingNet(Module):
    def __init__(self, hidden: Linear, output: Linear) -> None:
        self.hidden = hidden
        self.output = output

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        bias = self.hidden.bias
        assert bias is not None
        h = fused_matmul_add_relu(x, self.hidden.weight.val, bias.val)
        return self.output.forward(scaled_softplus(h, 2.0))


def rings(n: int, seed: int, device: Any) -> tuple[pyrite.Tensor, pyrite.Tensor]:
    """n points on two noisy rings (radius 1: class 0, radius 2: class 1)."""
    rows = random.Random(seed)
    points, labels = [], []
    for i in range(n):
        label = i % 2
        angle = rows.uniform(0.0, 2.0 * math.pi)
        radius = 1.0 + label + rows.gauss(0.0, 0.15)
        points.append([radius * math.cos(angle), radius * math.sin(angle)])
        labels.append(label)
    return (pyrite.tensor(points, device=device),
            pyrite.tensor(labels, device=device, dtype="i32"))


def train(device: str = "autodiff<webgpu>", steps: int = 60,
          seed: int = 0) -> tuple[list[float], float, RingNet]:
    """Train RingNet on the rings; the losses, the accuracy in percent, the model."""
    ad = pyrite.device(device)
    ad.seed(seed)
    model = RingNetConfig().init(ad)
    optim = AdamConfig().init()
    loss_fn = CrossEntropyLossConfig().init()
    x, y = rings(256, seed, ad)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model.forward(x), y)
        losses.append(float(loss))
        model = optim.step(2e-2, model, loss.backward())
    x, y = rings(256, seed, ad.inner)  # type: ignore[attr-defined]  # the same points
    predicted = model.valid().forward(x).argmax(1).reshape((y.shape[0],))
    right = float((predicted == y).int().sum())
    return losses, 100.0 * right / y.shape[0], model


def check(device: str = "autodiff<webgpu>", seed: int = 0) -> dict[str, float]:
    """Largest differences between each op and its composite: outputs and gradients."""
    ad = pyrite.device(device)
    ad.seed(seed)
    found: dict[str, float] = {}

    def diff(a: pyrite.Tensor, b: pyrite.Tensor) -> float:
        return float((a - b).abs().max())

    # sizes past one 16 x 16 tile, with ragged edges
    lhs = pyrite.random((2, 21, 37), Normal(0.0, 1.0), device=ad).require_grad()
    rhs = pyrite.random((37, 19), Normal(0.0, 1.0), device=ad).require_grad()
    bias = pyrite.random((19,), Normal(0.0, 1.0), device=ad).require_grad()
    weight = pyrite.random((2, 21, 19), Normal(0.0, 1.0), device=ad)
    for label, op in (("fused", fused_matmul_add_relu), ("tiled", fused_matmul_add_relu_tiled)):
        out = op(lhs, rhs, bias)
        ref = op.reference(lhs, rhs, bias)
        found[f"{label} forward"] = diff(out, ref)
        grads, ref_grads = (out * weight).sum().backward(), (ref * weight).sum().backward()
        for name, t in (("lhs", lhs), ("rhs", rhs), ("bias", bias)):
            found[f"{label} grad {name}"] = diff(t.grad(grads), t.grad(ref_grads))  # type: ignore[arg-type]

    x = (pyrite.random((4, 6), Normal(0.0, 3.0), device=ad) * 1.0).require_grad()
    out, ref = scaled_softplus(x, 2.0), scaled_softplus.reference(x, 2.0)
    found["softplus forward"] = diff(out, ref)
    grads, ref_grads = (out * out).sum().backward(), (ref * ref).sum().backward()
    found["softplus grad"] = diff(x.grad(grads), x.grad(ref_grads))  # type: ignore[arg-type]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="autodiff<webgpu>")
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    for name, value in check(args.device).items():
        print(f"{name:<20} max |kernel - composite| = {value:.2e}")
    losses, accuracy, model = train(args.device, args.steps)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} in {args.steps} steps, "
          f"accuracy {accuracy:.1f} %")
    with tempfile.TemporaryDirectory() as tmp:
        path = model.save_file(Path(tmp) / "ringnet")
        loaded = RingNetConfig().init(args.device).load_file(path)
        x, _ = rings(8, 1, args.device)
        same = float((loaded.forward(x) - model.forward(x)).abs().max())
        print(f"record {path.name}: loaded model's outputs differ by {same:.1e}")


if __name__ == "__main__":
    main()
