"""pyrite.extend in a real page (Chromium, SwiftShader WebGPU, Pyodide): examples/custom_kernel.py
runs there unchanged: its ops equal their composites (outputs and gradients), the WGSL kernel is
launched on the page's device, the model trains (eagerly, and compiled with the same losses),
and a compile error names the op and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import harness

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

EXAMPLE = Path(__file__).parents[2] / "examples" / "custom_kernel.py"

BROKEN = """
@compute @workgroup_size(WORKGROUP_X)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = i32(gid.x);
  if (i >= output_numel()) { return; }
  output[i] = x[i] * undefined_thing;
}
"""

CODE = """
import json, sys, types
import pyrite, pyrite.webgpu
from pyrite.webgpu import custom
module = sys.modules["custom_kernel_example"] = types.ModuleType("custom_kernel_example")
exec(compile(SOURCE, "custom_kernel.py", "exec"), module.__dict__)  # dataclasses need the module
ex = module.__dict__
found = ex["check"]("autodiff<webgpu>")
losses, accuracy, _ = ex["train"]("autodiff<webgpu>", 25)
broken = ex["extend"].op("x[n] -> [n]", name="broken_in_page")(lambda x: x * 2.0)
broken.wgsl(BROKEN, workgroup_size=(64,))
try:
    broken(pyrite.tensor([1.0, 2.0], device="webgpu"))  # refused before it is dispatched
    error = None
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"


def steps(enabled):
    dev = pyrite.device("autodiff<webgpu>")
    dev.seed(3)
    model = ex["RingNetConfig"](8).init(dev)
    optim = ex["AdamConfig"]().init()
    x, y = ex["rings"](32, 0, dev)
    loss_fn = ex["CrossEntropyLossConfig"]().init()
    def step(model, lr):
        loss = loss_fn(model.forward(x), y)
        return optim.step(lr, model, loss.backward()), loss
    run = pyrite.compile(step, enabled=enabled)
    out = []
    for _ in range(6):
        model, loss = run(model, 2e-2)
        out.append(loss.into_scalar())
    return out, run.replays

json.dumps({"check": found, "losses": losses, "accuracy": accuracy, "error": error,
            "launches": custom.LAUNCHES.get("fused_matmul_add_relu", 0),
            "eager": steps(False), "compiled": steps(True)})
"""


@pytest.fixture(scope="module")
def session() -> Iterator[harness.PageSession]:
    page_session = harness.PageSession("webgpu")
    yield page_session
    page_session.close()


def run(session: harness.PageSession, code: str) -> Any:
    return session.evaluate("(code) => window.pyriteModule.run(code)", code)


def test_the_example_runs_in_the_page(session: harness.PageSession) -> None:
    code = f"SOURCE = {EXAMPLE.read_text()!r}\nBROKEN = {BROKEN!r}\n" + CODE
    got = json.loads(run(session, code))
    for what, value in got["check"].items():
        assert value <= 1e-5, (what, value)
    assert got["launches"] >= 3  # check's forward, and training's forward passes
    assert got["losses"][-1] < 0.5 * got["losses"][0], got["losses"]
    assert got["accuracy"] >= 90.0
    (eager, _), (compiled, replays) = got["eager"], got["compiled"]
    assert replays >= 3
    assert compiled == pytest.approx(eager, rel=1e-6)
    error = got["error"]
    assert error is not None and error.startswith(
        "KernelError: broken_in_page: the WGSL kernel did not compile: line 6 of its source, "
        "`output[i] = x[i] * undefined_thing;`"), error
