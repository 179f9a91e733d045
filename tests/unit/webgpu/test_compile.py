"""`pyrite.compile` on webgpu (lavapipe here): a replayed step equals the eager step, random
streams, learning rates and Adam's step count included; what cannot be captured falls back by
name; signatures, records and memory behave."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.backend.autodiff import Autodiff
from pyrite.capture import CompileWarning
from pyrite.demos.mnist import MnistBatch, ModelConfig
from pyrite.errors import DimError
from pyrite.nn import Dropout
from pyrite.optim import AdamConfig
from pyrite.optim.scheduler import CosineAnnealingLrSchedulerConfig
from pyrite.webgpu import WebGpu
from pyrite.webgpu.fusion import Fusion

BATCH = 16


def _device(seed: int = 7) -> pyrite.Backend:
    """A fresh fused stack with its own pool and generator (so runs compare exactly)."""
    return Autodiff(Fusion(WebGpu(seed=seed)))


def _batches(device: pyrite.Backend, sizes: tuple[int, ...] = (BATCH,) * 3) -> list[MnistBatch]:
    rng = np.random.default_rng(0)
    return [MnistBatch(pyrite.tensor(rng.normal(size=(n, 28, 28)).astype(np.float32),
                                     device=device),
                       pyrite.tensor(rng.integers(0, 10, n).astype(np.int32), device=device))
            for n in sizes]


def _model(device: pyrite.Backend, dropout: float = 0.5) -> object:
    pyrite.seed(0)
    model = ModelConfig(10, 64, dropout=dropout).init("autodiff<numpy>")
    return model.fork(device)  # type: ignore[attr-defined]


def _params(model: object) -> list[np.ndarray]:
    return [p.val.numpy() for p in model.params()]  # type: ignore[attr-defined]


def _train(compiled: bool, steps: int, *, sizes: tuple[int, ...] = (BATCH,) * 3,
           lrs: list[float] | None = None) -> tuple[list[float], object, object]:
    device = _device()
    gpu_model = _model(device)
    optim = AdamConfig().init()
    batches = _batches(device, sizes)

    def step(model: object, batch: MnistBatch, lr: float) -> tuple[object, pyrite.Tensor]:
        out = model.train_step(batch)  # type: ignore[attr-defined]
        return optim.step(lr, model, out.grads), out.item.loss

    run = pyrite.compile(step) if compiled else step
    losses = []
    for i in range(steps):
        lr = lrs[i] if lrs else 1e-3
        gpu_model, loss = run(gpu_model, batches[i % len(batches)], lr)
        losses.append(float(loss.into_scalar()))
    return losses, gpu_model, run


def test_replay_equals_eager_with_dropout_adam_and_a_schedule() -> None:
    schedule = CosineAnnealingLrSchedulerConfig(1e-3, 20).init()
    lrs = [schedule.step() for _ in range(20)]
    eager_losses, eager_model, _ = _train(False, 20, lrs=lrs)
    losses, model, run = _train(True, 20, lrs=lrs)
    assert run.replays >= 15, (run.captures, run.replays, run.fallbacks)
    assert run.fallbacks == 0
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for a, b in zip(_params(model), _params(eager_model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_frozen_rate_would_show() -> None:
    """The same run with another schedule gives other parameters: the rate is not baked in."""
    _, model_a, run = _train(True, 8, lrs=[1e-3] * 8)
    _, model_b, _ = _train(True, 8, lrs=[1e-3] * 4 + [5e-3] * 4)
    assert run.replays >= 3
    assert any(not np.allclose(a, b) for a, b in zip(_params(model_a), _params(model_b),
                                                     strict=True))


def test_dropout_masks_change_on_replay_and_follow_the_seed() -> None:
    def masks(compiled: bool) -> list[np.ndarray]:
        device = Autodiff(Fusion(WebGpu(seed=11)))
        x = pyrite.ones((64,), device=device)
        drop = Dropout(0.5)
        fn = pyrite.compile(drop.forward) if compiled else drop.forward
        return [fn(x).numpy() for _ in range(6)]
    eager, replayed = masks(False), masks(True)
    for a, b in zip(eager, replayed, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(replayed[4], replayed[5])


def test_the_user_level_step_replays() -> None:
    device = _device()
    model = _model(device)
    optim = AdamConfig().init()
    lr = 1e-3
    batches = _batches(device)

    @pyrite.compile
    def step(model, batch):  # noqa: ANN001, ANN202 - the form users write
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss

    losses = []
    for i in range(6):
        model, loss = step(model, batches[i % 3])
        losses.append(loss.into_scalar())
    eager, _, _ = _train(False, 6)
    np.testing.assert_allclose(losses, eager, rtol=1e-6)
    assert step.replays == 3 and step.captures == 3


def test_a_readback_in_the_middle_falls_back_by_name() -> None:
    device = Fusion(WebGpu(seed=1))
    x = pyrite.tensor(np.arange(6, dtype=np.float32), device=device)

    def step(x: pyrite.Tensor) -> pyrite.Tensor:
        total = (x * 2).sum().into_scalar()
        return x + total

    run = pyrite.compile(step)
    with pytest.warns(CompileWarning, match=r"into_scalar at .*test_compile.py"):
        first = run(x)
    for _ in range(3):
        np.testing.assert_allclose(run(x).numpy(), step(x).numpy())
    np.testing.assert_allclose(first.numpy(), np.arange(6) + 30)
    assert run.fallbacks == 1 and run.replays == 0


def test_a_smaller_last_batch_captures_a_second_program() -> None:
    _, _, run = _train(True, 12, sizes=(BATCH, BATCH, 5))
    eager, _, _ = _train(False, 12, sizes=(BATCH, BATCH, 5))
    losses, _, _ = _train(True, 12, sizes=(BATCH, BATCH, 5))
    np.testing.assert_allclose(losses, eager, rtol=1e-6)
    assert len(run._programs) == 2 and run.replays > 0


def test_loading_a_record_is_seen_by_the_next_replay() -> None:
    device = _device()
    model = _model(device, dropout=0.0).valid()  # type: ignore[attr-defined]
    images = _batches(device)[0].images.inner()
    forward = pyrite.compile(lambda m, x: m(x))
    for _ in range(3):
        forward(model, images)
    other = ModelConfig(10, 64, dropout=0.0).init("numpy")
    loaded = model.load_record(other.into_record())
    got = forward(loaded, images).numpy()
    assert forward.replays >= 1
    np.testing.assert_allclose(got, other(images.to_device("numpy")).numpy(), rtol=1e-4,
                               atol=1e-5)


def test_a_new_optimizer_is_a_new_signature() -> None:
    device = _device()
    model = _model(device)
    batches = _batches(device)

    def step(model, batch, optim):  # noqa: ANN001, ANN202
        out = model.train_step(batch)
        return optim.step(1e-3, model, out.grads)

    run = pyrite.compile(step)
    first = AdamConfig().init()
    for i in range(4):
        model = run(model, batches[i % 3], first)
    second = AdamConfig(beta_1=0.5).init()
    run(model, batches[0], second)
    assert run.replays == 1 and len(run._pending) + len(run._programs) >= 2


def test_the_arena_is_no_larger_than_eager_peak() -> None:
    def peak(compiled: bool) -> int:
        raw = WebGpu(seed=3)
        device = Autodiff(Fusion(raw))
        model = _model(device)
        optim = AdamConfig().init()
        batches = _batches(device)

        def step(model, batch):  # noqa: ANN001, ANN202
            out = model.train_step(batch)
            return optim.step(1e-3, model, out.grads), out.item.loss
        run = pyrite.compile(step) if compiled else step
        for i in range(8):
            model, loss = run(model, batches[i % 3])
            loss.into_scalar()
        return raw.memory_stats().peak_bytes
    eager, compiled = peak(False), peak(True)
    assert compiled <= eager * 1.05, (compiled, eager)


def test_off_runs_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYRITE_COMPILE", "off")
    _, _, run = _train(True, 4)
    assert run.captures == 0 and run.replays == 0


def test_numpy_has_nothing_to_replay() -> None:
    run = pyrite.compile(lambda x: x * 2)
    x = pyrite.tensor([1.0, 2.0], device="numpy")
    for _ in range(3):
        np.testing.assert_allclose(run(x).numpy(), [2.0, 4.0])
    assert run.captures == 0


def test_index_bounds_are_checked_at_the_next_readback() -> None:
    device = Fusion(WebGpu())
    x = pyrite.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    bad = pyrite.tensor(np.array([[0, 4]], dtype=np.int32), device=device)
    out = x.gather(1, bad)  # no readback yet
    with pytest.raises(DimError, match="gather: index 4 is out of range for dim 1 of size 4"):
        out.numpy()
    with pytest.raises(DimError, match="gather: index 4 is out of range"):
        x.to_device("numpy").gather(1, bad.to_device("numpy"))
    good = pyrite.tensor(np.array([[3, 0]], dtype=np.int32), device=device)
    np.testing.assert_array_equal(x.gather(1, good).numpy(), [[3.0, 0.0]])


def test_charlm_training_and_generation_replay_as_eager() -> None:
    from pyrite.demos.charlm import corpus
    from pyrite.demos.charlm.generate import generate
    from pyrite.demos.charlm.model import ModelConfig as LmConfig

    vocab = corpus.vocabulary(corpus.corpus(20_000))
    ids = [vocab.index(c) for c in corpus.corpus(20_000)[:17 * 8]]
    rows = [ids[i * 17:(i + 1) * 17] for i in range(8)]

    def train(compiled: bool) -> tuple[list[float], object]:
        device = _device()
        pyrite.seed(0)
        model = LmConfig(vocab, d_model=32, n_heads=2, n_layers=1, d_ff=64,
                         context=16).init("autodiff<numpy>").fork(device)
        optim = AdamConfig().init()
        batches = [model.tokens(rows[i:i + 4]) for i in (0, 4)]

        def step(model, batch):  # noqa: ANN001, ANN202
            out = model.train_step(batch)
            return optim.step(2e-3, model, out.grads), out.item.loss
        run = pyrite.compile(step, enabled=compiled)
        losses = []
        for i in range(5):
            model, loss = run(model, batches[i % 2])
            losses.append(loss.into_scalar())
        assert not compiled or run.replays == 2
        return losses, model.valid()  # type: ignore[attr-defined]

    eager_losses, eager_model = train(False)
    losses, model = train(True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    text = generate(eager_model, "def ", 12, temperature=0, compiled=False, cached=False)
    assert generate(model, "def ", 12, temperature=0, compiled=True) == text


def test_the_learner_replays_its_steps_and_trains_as_eagerly(tmp_path) -> None:  # noqa: ANN001
    from pyrite.dataset import DataLoader, InMemDataset
    from pyrite.train import LearnerBuilder, Loss, NoRenderer

    rng = np.random.default_rng(5)
    items = [(rng.normal(size=(28, 28)).astype(np.float32), int(rng.integers(0, 10)))
             for _ in range(80)]

    def fit(compiled: bool) -> tuple[object, object]:
        device = _device()
        model = _model(device)

        def batch(rows: list, on: pyrite.Backend = device) -> MnistBatch:  # noqa: ANN001
            return MnistBatch(pyrite.tensor(np.stack([r[0] for r in rows]), device=on),
                              pyrite.tensor(np.array([r[1] for r in rows], np.int32),
                                            device=on))
        train = DataLoader(InMemDataset(items[:64]), batch, batch_size=16, shuffle=True, seed=3)
        valid = DataLoader(InMemDataset(items[64:]), lambda rows: batch(rows, device.inner),
                           batch_size=8)
        learner = (LearnerBuilder(tmp_path / str(compiled)).metric_train_numeric(Loss())
                   .metric_valid_numeric(Loss()).renderer(NoRenderer()).num_epochs(3)
                   .compile(compiled).build(model, AdamConfig().init(), 1e-3))
        return learner.fit(train, valid), learner

    before = pyrite.capture.stats()["replays"]
    compiled_model, learner = fit(True)
    replays = pyrite.capture.stats()["replays"] - before
    eager_model, _ = fit(False)
    assert replays >= 8  # 4 train steps and 2 valid steps an epoch, replayed from the third
    for a, b in zip(_params(compiled_model), _params(eager_model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_module_setting_changed_in_place_is_a_new_signature() -> None:
    device = _device()
    x = pyrite.ones((64,), device=device)
    drop = Dropout(0.5)
    run = pyrite.compile(lambda m, x: m(x))
    for _ in range(3):
        run(drop, x)
    drop.prob = 0.0  # no dropout now: the replay must not use the captured probability
    np.testing.assert_array_equal(run(drop, x).numpy(), np.ones(64))
