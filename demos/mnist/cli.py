"""`pyrite train mnist` and `pyrite infer mnist`: the guide as commands.

`add_train(tasks)` and `add_infer(tasks)` add `mnist` to the `train` and `infer` commands
(pyrite.demos.cli makes those); each sets `run` to the function that carries it out.
`python -m pyrite.demos.mnist ...` runs them too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from pyrite.dataset.download import data_root

from ..cli import reports_config_errors

DEFAULT_ARTIFACTS = "/tmp/pyrite-guide"
DASHBOARD_LINGER_S = 2.0  # without a terminal: how long pages get to receive the run's end


def _start_dashboard(args: argparse.Namespace) -> Any:
    from pyrite.server.dashboard import DashboardServer

    server = DashboardServer(args.dashboard_host, args.dashboard_port)
    print(f"Live dashboard: {server.live_url}", flush=True)
    return server


def _close_dashboard(server: Any, linger_s: float | None) -> None:
    """Keep the dashboard up after training as a user expects: on a terminal until Enter (the
    page keeps its charts either way), elsewhere until connected pages have the end, at most
    `linger_s` (default DASHBOARD_LINGER_S) seconds; never reads stdin when it is no TTY."""
    try:
        if linger_s is None and sys.stdin is not None and sys.stdin.isatty():
            input(f"Dashboard still at {server.live_url}; press Enter to stop it. ")
        else:
            server.wait_for_pages(DASHBOARD_LINGER_S if linger_s is None else linger_s)
    except (KeyboardInterrupt, EOFError):
        pass
    finally:
        server.stop()


@reports_config_errors("pyrite train mnist")
def _run_train(args: argparse.Namespace) -> int:
    from pyrite.errors import ConfigError
    from pyrite.record import BinFileRecorder
    from pyrite.train.artifacts import check_artifact_dir

    from .inference import evaluate
    from .predict import CONFIG
    from .training import ARTIFACT_FILES, TrainingConfig, export_record, train
    # before anything starts: a folder holding files pyrite did not write is refused
    check_artifact_dir(args.artifacts, ARTIFACT_FILES, what="--artifacts")
    config = TrainingConfig.load(args.config or CONFIG)
    if args.epochs is not None:
        config = config.with_num_epochs(args.epochs)
    if args.lr is not None:
        config = config.with_learning_rate(args.lr)
    if args.seed is not None:
        config = config.with_seed(args.seed)
    if args.workers is not None and args.dashboard:
        raise ConfigError("--dashboard with --workers is not supported yet: the workers' "
                          "metrics reach the driver as rank 0's output only")
    dashboard = _start_dashboard(args) if args.dashboard else None
    renderers = [] if dashboard is None else [dashboard.renderer()]
    try:
        model = train(args.artifacts, config, args.device, resume=args.resume,
                      limit=args.limit, renderers=renderers,
                      checkpoint_every=args.checkpoint_every, workers=args.workers,
                      ray_address=args.ray_address)
    except BaseException:
        if dashboard is not None:  # the page has the error; nobody waits for it
            dashboard.stop()
        raise
    print(f"Trained model: {Path(args.artifacts) / 'model.bin'}")
    if args.export:
        path = export_record(model.valid(), args.export)
        # measured on the exported record, loaded as inference loads it, on the inference side
        # of the device it was trained on
        accuracy = evaluate(model.valid().load_file(path, BinFileRecorder()))
        print(f"Exported {path} (half precision): {accuracy:.2f} % on the 10,000 test images")
    if dashboard is not None:
        _close_dashboard(dashboard, args.dashboard_linger)
    return 0


def _run_infer(args: argparse.Namespace) -> int:
    from .inference import evaluate, infer, load_model
    artifacts = args.artifacts
    if artifacts is None and Path(DEFAULT_ARTIFACTS, "model.bin").exists():
        artifacts = DEFAULT_ARTIFACTS
    if args.all:
        start = time.perf_counter()
        accuracy = evaluate(load_model(artifacts, args.device, record=args.record), args.device)
        took = time.perf_counter() - start
        print(f"Accuracy {accuracy:.2f} % on the 10,000 test images "
              f"({args.device}, {took:.1f} s, {10_000 / took:.0f} images/s)")
        return 0
    infer(args.index, artifacts, args.device, record=args.record)
    return 0


def add_train(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `mnist` to `pyrite train`'s models."""
    data = f"MNIST files are read from {data_root(None) / 'mnist'} (set PYRITE_DATA to change)"
    train = tasks.add_parser("mnist", help="Burn's guide CNN on MNIST",
                             description=f"Train the Burn guide's MNIST model. {data}.")
    train.add_argument("--epochs", type=int, help="number of epochs (config: 10)")
    train.add_argument("--lr", type=float, help="Adam learning rate (config's by default)")
    train.add_argument("--seed", type=int, help="random seed (config: 42)")
    train.add_argument("--artifacts", default=DEFAULT_ARTIFACTS,
                       help=f"artifact directory (default {DEFAULT_ARTIFACTS}): new, empty, or "
                       "one pyrite made, where only an earlier run's files are deleted")
    train.add_argument("--config", help="TrainingConfig JSON file (default: the committed "
                       "demos/mnist/config.json)")
    train.add_argument("--export", metavar="PATH", help="also save the trained model in half "
                       "precision (.bin) at PATH, as the shipped record, and report its accuracy")
    train.add_argument("--resume", type=int, metavar="EPOCH",
                       help="continue from the checkpoint of EPOCH in the artifact directory")
    train.add_argument("--device", default=os.environ.get("PYRITE_TRAIN_DEVICE",
                                                          "autodiff<numpy>"),
                       help="the training device (default autodiff<numpy>); several, "
                       "comma-separated (webgpu:0,webgpu:1), train data-parallel in this "
                       "process")
    train.add_argument("--limit", type=int, metavar="N",
                       help="train and validate on the first N digits of each split only")
    train.add_argument("--checkpoint-every", type=int, metavar="STEPS",
                       help="also checkpoint every STEPS steps inside an epoch (default: at "
                       "each epoch's end; 100 with --workers)")
    scale = train.add_argument_group("several workers (pyrite[distributed], docs/distributed.md)")
    scale.add_argument("--workers", type=int, metavar="N",
                       help="train data-parallel on N Ray workers: CPU workers on numpy, or one "
                       "GPU each with --device webgpu; a worker that dies is restarted from the "
                       "last checkpoint")
    scale.add_argument("--ray-address", metavar="ADDR",
                       help="HOST:PORT of a running Ray cluster (`ray start --head`); default: "
                       "start a local one for the run")
    live = train.add_argument_group("live dashboard")
    live.add_argument("--dashboard", action="store_true",
                      help="serve a live dashboard of the run in the browser (its URL is "
                      "printed); needs pyrite[server]")
    live.add_argument("--dashboard-host", default="127.0.0.1",
                      help="address the dashboard listens on (default 127.0.0.1)")
    live.add_argument("--dashboard-port", type=int, default=0, metavar="PORT",
                      help="its port (default 0: a free one)")
    live.add_argument("--dashboard-linger", type=float, metavar="SECONDS",
                      help="after training, keep the dashboard up until a page has seen the "
                      "end, at most SECONDS (default: until Enter on a terminal, else "
                      f"{DASHBOARD_LINGER_S:g} s)")
    train.set_defaults(run=_run_train)


def add_infer(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `mnist` to `pyrite infer`'s models."""
    infer = tasks.add_parser("mnist", help="classify an MNIST test digit",
                             description="Classify one MNIST test digit: the artifact "
                             "directory's model if trained, else the shipped record.")
    infer.add_argument("--index", type=int, default=42, help="test image index (0..9999)")
    infer.add_argument("--artifacts", help=f"artifact directory (default {DEFAULT_ARTIFACTS} "
                       f"when it holds a model, else the shipped record)")
    infer.add_argument("--record", metavar="FILE", help="a model record to use instead: one "
                       "downloaded from the training page (/train), CNN or MLP, detected")
    infer.add_argument("--all", action="store_true",
                       help="classify the whole test set and print the accuracy")
    infer.add_argument("--device", default="numpy")
    infer.set_defaults(run=_run_infer)


def main(argv: list[str] | None = None) -> int:
    """`python -m pyrite.demos.mnist train mnist ...`: the `pyrite` command's demo part."""
    from ..cli import add_parser

    parser = argparse.ArgumentParser(prog="python -m pyrite.demos.mnist")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.run(args))
