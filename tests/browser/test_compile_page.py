"""`pyrite.compile` in a real page (Chromium, SwiftShader WebGPU, Pyodide): the MNIST guide CNN
with dropout and Adam trains 20 steps eagerly and compiled on the page's device with the same
seeds, and the losses and final parameters agree; the replays went through the runtime's one
JavaScript call per step."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from . import harness

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

STEPS = 20

CODE = """
import json, random
import pyrite, pyrite.webgpu
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.optim import AdamConfig

dev = pyrite.device("autodiff<webgpu>")
rows = random.Random(0)
batches = []
for _ in range(3):
    pixels = [[[rows.gauss(0.0, 1.0) for _ in range(28)] for _ in range(28)] for _ in range(8)]
    labels = [rows.randrange(10) for _ in range(8)]
    batches.append(MnistBatch(pyrite.tensor(pixels, device=dev),
                              pyrite.tensor(labels, device=dev, dtype="i32")))

def train(compiled):
    dev.seed(0)
    model = ModelConfig(10, 64).init(dev)
    dev.seed(7)
    optim = AdamConfig().init()
    def step(model, batch, lr):
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss
    run = pyrite.compile(step, enabled=compiled)
    losses = []
    for i in range(STEPS):
        model, loss = run(model, batches[i % 3], 1e-3 * (1 + i % 4))
        losses.append(loss.into_scalar())
    params = [p.val.reshape([-1]).to_list()[:50] for p in model.params()]
    return losses, params, run

eager = train(False)
compiled = train(True)
json.dumps({"eager": eager[:2], "compiled": compiled[:2],
            "replays": compiled[2].replays, "captures": compiled[2].captures,
            "fallbacks": compiled[2].fallbacks})
"""


@pytest.fixture(scope="module")
def session() -> Iterator[harness.PageSession]:
    page_session = harness.PageSession("webgpu")
    yield page_session
    page_session.close()


def run(session: harness.PageSession, code: str) -> Any:
    return session.evaluate("(code) => window.pyriteModule.run(code)", code)


def test_replay_equals_eager_in_the_page(session: harness.PageSession) -> None:
    import json
    got = json.loads(run(session, CODE.replace("STEPS", str(STEPS))))
    assert got["fallbacks"] == 0
    assert got["replays"] >= STEPS - 4, got
    eager_losses, eager_params = got["eager"]
    losses, params = got["compiled"]
    assert losses == pytest.approx(eager_losses, rel=1e-6)
    for a, b in zip(params, eager_params, strict=True):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-7)
