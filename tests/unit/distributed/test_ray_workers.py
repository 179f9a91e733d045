"""Two Ray workers on a local cluster (127.0.0.1) train as one process with the whole batch
would, through the Python API and `pyrite train mnist --workers 2`; a worker killed mid-epoch
is restarted from the last checkpoint and the run ends with the uninterrupted parameters; bad
set-ups fail at once with one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pyrite.demos.mnist.model import ModelConfig
from pyrite.demos.mnist.training import (
    TrainingConfig,
    create_artifact_dir,
    train,
    worker_setup,
)
from pyrite.distributed import fit
from pyrite.errors import ConfigError
from pyrite.record import BinFileRecorder
from pyrite.train.checkpoint_index import CheckpointIndex

ray = pytest.importorskip("ray", reason="Ray is the distributed extra: pip install "
                          "'pyrite[distributed]' (make setup installs it)")

STEPS, BATCH = 20, 32
LIMIT = STEPS * BATCH
CONFIG = {"model": {"num_classes": 10, "hidden_size": 64, "dropout": 0.0},
          "optimizer": {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-05,
                        "weight_decay": None, "grad_clipping": None},
          "num_epochs": 1, "batch_size": BATCH, "num_workers": 0, "seed": 42,
          "learning_rate": 0.001}


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """One small local Ray cluster for the module (starting one costs seconds); its address."""
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=96 * 1024 * 1024,
             log_to_driver=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "config.json"
    path.write_text(json.dumps(CONFIG))
    return path


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory, config: Path) -> Path:
    """The same 20 steps in one process, with the whole batch: its model.bin."""
    out = tmp_path_factory.mktemp("single")
    train(out, TrainingConfig.load(config), limit=LIMIT)
    return out / "model.bin"


def params(path: Path) -> list[Any]:
    model = ModelConfig(10, 64, dropout=0.0).init("numpy").load_file(path, BinFileRecorder())
    return [p.val.numpy() for p in model.params()]


def assert_same(a: Path, b: Path, rtol: float = 1e-6) -> None:
    for x, y in zip(params(a), params(b), strict=True):
        assert np.linalg.norm(x - y) <= rtol * np.linalg.norm(x), (x.shape, x, y)


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyrite.demos.mnist", "train", "mnist",
                           *args], capture_output=True, text=True, timeout=300)


def test_two_workers_through_the_command_equal_one_process(
        cluster: str, config: Path, single: Path, tmp_path: Path) -> None:
    out = command("--config", str(config), "--limit", str(LIMIT), "--workers", "2",
                  "--ray-address", cluster, "--artifacts", str(tmp_path / "w2"))
    assert out.returncode == 0, out.stderr
    one = command("--config", str(config), "--limit", str(LIMIT),
                  "--artifacts", str(tmp_path / "w0"))
    assert one.returncode == 0, one.stderr
    assert_same(tmp_path / "w0/model.bin", tmp_path / "w2/model.bin")
    assert_same(single, tmp_path / "w2/model.bin")
    # rank 0 logged each global step once, for the 32 items of the whole batch
    lines = (tmp_path / "w2/train/epoch-1/Loss.log").read_text().splitlines()
    assert len(lines) == STEPS and all(line.endswith(",32") for line in lines)
    # both ranks validated half of each batch; rank 0 logged the whole batches' metrics
    for name in ("Accuracy", "Loss"):
        two = (tmp_path / f"w2/valid/epoch-1/{name}.log").read_text().splitlines()
        alone = (tmp_path / f"w0/valid/epoch-1/{name}.log").read_text().splitlines()
        assert len(two) == len(alone) == STEPS and all(line.endswith(",32") for line in two)
        for a, b in zip(alone, two, strict=True):
            assert float(a.split(",")[0]) == pytest.approx(float(b.split(",")[0]), rel=1e-4)


def test_a_worker_killed_at_step_7_is_restarted_and_the_run_ends_as_uninterrupted(
        cluster: str, config: Path, single: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    artifacts = tmp_path / "killed"
    create_artifact_dir(artifacts)
    steps = artifacts / "train/epoch-1/Loss.log"
    starts: list[list[int]] = []
    kill_at_step_7 = _killer(artifacts, starts, published=True)

    setup = worker_setup(artifacts, TrainingConfig.load(config), limit=LIMIT,
                         checkpoint_every=7)
    record = fit(setup, 2, on_start=kill_at_step_7)
    assert len(starts) == 2, "the killed worker was not restarted"
    ModelConfig(10, 64, dropout=0.0).init("numpy").load_record(record).save_file(
        artifacts / "model", BinFileRecorder())
    assert_same(single, artifacts / "model.bin")
    reported = capsys.readouterr().err
    assert f"worker 1 (pid {starts[0][1]}) died" in reported
    assert "restarting 2 worker(s) from the last checkpoint" in reported
    log = (artifacts / "experiment.log").read_text()
    assert "epoch 1 resumes after step" in log
    # no step logged twice or skipped: the resumed run cut its log back to the checkpoint
    assert len(steps.read_text().splitlines()) == STEPS


def _killer(artifacts: Path, starts: list[list[int]], *, published: bool
            ) -> Callable[[list[int]], None]:
    """An `on_start` that kills worker 1 (SIGKILL) once, when step 7's checkpoint is published
    in the index (`published`), or as soon as its first file (the position) is written, while
    rank 0 may still be writing the rest."""
    position = artifacts / "checkpoint/position-1.json"  # written at step 7 (checkpoint_every)

    def ready() -> bool:
        if not (position.exists() and '"iteration": 7' in position.read_text()):
            return False
        # the index lists the epoch last, once all its files are written
        return not published or 1 in CheckpointIndex(position.parent, ".bin").complete()

    def on_start(pids: list[int]) -> None:
        starts.append(pids)
        if len(starts) > 1:
            return

        def watch() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if ready():
                    os.kill(pids[1], signal.SIGKILL)
                    return
                time.sleep(0.002)
        threading.Thread(target=watch, daemon=True).start()
    return on_start


@pytest.mark.slow
def test_a_worker_killed_while_the_first_checkpoint_is_written_restarts_cleanly(
        cluster: str, config: Path, single: Path, tmp_path: Path) -> None:
    """The kill lands between the checkpoint's first file and its publication: the restart
    resumes from step 7 if rank 0 finished publishing before it was stopped, else from the
    start (an incomplete checkpoint is never resumed from); either way the run ends as an
    uninterrupted one, with each step logged once."""
    artifacts = tmp_path / "racy"
    create_artifact_dir(artifacts)
    starts: list[list[int]] = []
    setup = worker_setup(artifacts, TrainingConfig.load(config), limit=LIMIT,
                         checkpoint_every=7)
    record = fit(setup, 2, on_start=_killer(artifacts, starts, published=False))
    assert len(starts) == 2, "the killed worker was not restarted"
    ModelConfig(10, 64, dropout=0.0).init("numpy").load_record(record).save_file(
        artifacts / "model", BinFileRecorder())
    assert_same(single, artifacts / "model.bin")
    steps = artifacts / "train/epoch-1/Loss.log"
    assert len(steps.read_text().splitlines()) == STEPS


def test_more_workers_than_devices_fail_at_once(cluster: str, config: Path,
                                                tmp_path: Path) -> None:
    setup = worker_setup(tmp_path, TrainingConfig.load(config), limit=LIMIT)
    with pytest.raises(ConfigError, match=r"3 workers need 3 CPUs \(1 each\), the Ray cluster "
                       r"has 2"):
        fit(setup, 3)
    with pytest.raises(ConfigError, match="2 workers need 2 GPUs, the Ray cluster has 0"):
        fit(setup, 2, device="webgpu")


def test_the_reducer_sums_in_rank_order_and_a_missing_rank_times_out(cluster: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from pyrite import TensorData
    from pyrite.distributed.reducer import RayCollective, Reducer
    from pyrite.errors import WorkerError

    reducer = ray.remote(num_cpus=0)(Reducer).remote(2)
    ranks = [RayCollective(reducer, r, 2, timeout_s=30) for r in (0, 1)]
    with ThreadPoolExecutor(2) as pool:
        sums = list(pool.map(lambda c: c.all_reduce([TensorData([1.0 + c.rank, 2.0])]), ranks))
        gathered = list(pool.map(lambda c: c.gather([TensorData([float(c.rank)])]), ranks))
    assert [s[0].to_list() for s in sums] == [[3.0, 4.0], [3.0, 4.0]]
    assert [[v.to_list() for v in g] for g in gathered[1]] == [[[0.0]], [[1.0]]]
    alone = RayCollective(reducer, 0, 2, timeout_s=1)
    with pytest.raises(WorkerError, match=r"sum #1: rank 0 waited 1 s for the other 1 rank"):
        alone.all_reduce([TensorData([1.0])])
    ray.kill(reducer)


def test_an_unreachable_ray_address_fails_in_one_line(config: Path, tmp_path: Path) -> None:
    start = time.monotonic()
    out = command("--config", str(config), "--workers", "2", "--ray-address", "127.0.0.1:9",
                  "--artifacts", str(tmp_path / "a"))
    assert out.returncode == 2
    # the command's own name leads the line (here `python -m pyrite.demos.mnist`)
    assert "train mnist: error: no Ray cluster reachable at 127.0.0.1:9" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert time.monotonic() - start < 60
