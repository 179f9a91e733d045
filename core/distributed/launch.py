"""`fit(setup, workers=N)`: data-parallel training on Ray workers, restarted after failures.

The driver connects to a Ray cluster (`address`, or a local one it starts and stops), checks
that the cluster has a device for every worker, starts one `TrainWorker` actor per rank (a CPU
worker: `cpus_per_worker` CPUs and as many BLAS threads; a GPU worker: one GPU, used as
`webgpu:<its GPU index>`) and a `Reducer`, and runs the setup's Learner on each. When a worker
dies (its actor killed, its process killed, its machine gone) or a collective times out, the
driver says so, stops every worker and starts them again; they resume from the newest
checkpoint rank 0 wrote (the Learner's `checkpoint_every` bounds what is redone), on the same
data order, so the run ends as an uninterrupted one would. After `max_restarts` restarts it
gives up with WorkerError.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, PyriteError, WorkerError
from .reducer import Reducer
from .worker import Setup, TrainWorker

log = logging.getLogger("pyrite.distributed")

#: how long a collective waits for the other ranks before the run is restarted
DEFAULT_TIMEOUT_S = 120.0
_START_TIMEOUT_S = 120.0  # for the workers to build their devices


def _report(message: str) -> None:
    print(f"pyrite.distributed: {message}", file=sys.stderr, flush=True)
    log.warning("%s", message)


def _check_address(address: str) -> None:
    """Fail in seconds, not minutes, when nothing listens at a Ray cluster's address."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--ray-address {address!r}: expected HOST:PORT of a Ray head node "
                          f"(`ray start --head` prints it), or 'auto'")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"no Ray cluster reachable at {address} ({exc.strerror or exc}); "
                          f"start one with `ray start --head --node-ip-address {host}` or "
                          f"leave out --ray-address for a local one") from None


def _connect(address: str | None, cpus: int) -> bool:
    """Connect to Ray; True when this call started a local cluster (stopped at the end)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("pyrite.distributed needs Ray: pip install 'pyrite[distributed]'"
                          ) from None
    if ray.is_initialized():
        return False
    if address is not None:
        _check_address(address)
        ray.init(address=address, log_to_driver=True)
        return False
    # a local cluster: this machine's CPUs, no dashboard, a small object store
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=True,
             object_store_memory=256 * 1024 * 1024)
    return True


def _check_resources(workers: int, gpu: bool, cpus_per_worker: int) -> None:
    import ray

    have = ray.cluster_resources()  # type: ignore[no-untyped-call]  # Ray leaves it untyped
    need, kind = (workers, "GPU") if gpu else (workers * cpus_per_worker, "CPU")
    found = int(have.get(kind, 0))
    if need > found:
        per = "" if gpu else f" ({cpus_per_worker} each)"
        raise ConfigError(f"{workers} workers need {need} {kind}s{per}, the Ray cluster has "
                          f"{found}; lower --workers or add nodes (`ray start "
                          f"--address HEAD`)")


def fit(setup: Setup, workers: int, *, device: str = "numpy", address: str | None = None,
        cpus_per_worker: int = 1, max_restarts: int = 3,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_start: Callable[[list[int]], None] | None = None) -> Any:
    """Train `setup`'s Learner data-parallel on `workers` Ray workers; rank 0's final model
    record (load it with `model.load_record`).

    `device`: "numpy" (CPU workers) or "webgpu" (one GPU each). `on_start(pids)` is called
    with the workers' process ids after each (re)start (a monitor, or a test killing one).
    """
    if workers < 1:
        raise ConfigError(f"pyrite.distributed.fit: workers must be >= 1, got {workers}")
    if device not in ("numpy", "webgpu"):
        raise ConfigError(f"pyrite.distributed.fit: device {device!r}: workers own a 'numpy' "
                          f"(CPU) or 'webgpu' (one GPU each) device")
    gpu = device == "webgpu"
    # a local cluster gets this machine's CPUs, so asking for more workers than it has fails
    started = _connect(address, os.cpu_count() or 1)
    try:
        _check_resources(workers, gpu, cpus_per_worker)
        restarts = 0
        while True:
            try:
                return _attempt(setup, workers, gpu, cpus_per_worker, timeout_s, on_start,
                                resume_latest=restarts > 0)
            except WorkerError as exc:
                if restarts >= max_restarts:
                    raise WorkerError(f"{exc}; gave up after {restarts} restart(s)") from None
                restarts += 1
                _report(f"{exc}; restarting {workers} worker(s) from the last checkpoint "
                        f"(restart {restarts} of at most {max_restarts})")
    finally:
        if started:
            import ray
            ray.shutdown()


def _attempt(setup: Setup, workers: int, gpu: bool, cpus_per_worker: int, timeout_s: float,
             on_start: Callable[[list[int]], None] | None, *, resume_latest: bool) -> Any:
    import ray

    reducer: Any = ray.remote(num_cpus=0)(Reducer).remote(workers)
    threads = str(cpus_per_worker)
    env = {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
           "MKL_NUM_THREADS": threads}
    actor: Any = ray.remote(TrainWorker).options(
        num_cpus=0 if gpu else cpus_per_worker, num_gpus=1 if gpu else 0,
        max_restarts=0, runtime_env={"env_vars": env})
    handles: list[Any] = [actor.remote(rank, workers, "webgpu" if gpu else "numpy")
               for rank in range(workers)]
    try:
        pids = _start(handles)
        if on_start is not None:
            on_start(pids)
        refs = [h.train.remote(setup, reducer, resume_latest=resume_latest,
                               timeout_s=timeout_s) for h in handles]
        return _wait(refs, pids)[0]
    finally:
        for h in [*handles, reducer]:
            ray.kill(h)


def _start(handles: list[Any]) -> list[int]:
    import ray

    try:
        return list(ray.get([h.start.remote() for h in handles], timeout=_START_TIMEOUT_S))
    except ray.exceptions.GetTimeoutError:
        raise ConfigError(f"workers did not start within {_START_TIMEOUT_S:g} s; the cluster "
                          f"may lack the resources they ask for (`ray status` shows them)"
                          ) from None
    except ray.exceptions.RayTaskError as exc:
        raise ConfigError(f"a worker could not start: {_cause(exc)}") from None


def _cause(exc: Any) -> str:
    cause = getattr(exc, "cause", None)
    return str(cause) if cause is not None else str(exc).strip().splitlines()[-1]


def _wait(refs: list[Any], pids: list[int]) -> list[Any]:
    """Every worker's result; WorkerError when one died or timed out waiting for the others."""
    import ray

    results: dict[int, Any] = {}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        rank = refs.index(done[0])
        try:
            results[rank] = ray.get(done[0])
        except ray.exceptions.RayActorError:
            raise WorkerError(f"worker {rank} (pid {pids[rank]}) died") from None
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, WorkerError):
                raise WorkerError(f"worker {rank}: {cause}") from None
            if isinstance(cause, PyriteError):  # a bad set-up: its own one-line message
                raise cause from None
            raise  # the setup's or the model's own bug: no restart repeats it away
    return [results[r] for r in range(len(refs))]
