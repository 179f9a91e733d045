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

from pyrite.argtypes import (
    COUNT,
    EPOCHS,
    LEARNING_RATE,
    PORT,
    SECONDS,
    SEED,
    Range,
    device_arg,
    device_help,
    devices_arg,
    folder_arg,
    path_arg,
)
from pyrite.dataset.download import data_root

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


TEST_INDEX = Range(0, 9_999, integer=True)  # the MNIST test set's 10,000 images
LATEST = "latest"  # `--resume latest`: the newest complete checkpoint


def resume_arg(text: str) -> int | str:
    """`--resume`'s argparse `type=`: an epoch number, or `latest`."""
    if text.strip().lower() == LATEST:
        return LATEST
    try:
        return int(EPOCHS.arg(text))
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{err} or 'latest'") from None


def _resolve_resume(artifacts: Path, resume: int | str | None) -> int | None:
    """The epoch to resume from: `latest` becomes the newest complete checkpoint's epoch in
    `artifacts` (a run killed while checkpointing leaves its last epoch incomplete), said on
    stdout; a missing one is an error that says how to start afresh."""
    if resume != LATEST:
        return resume if isinstance(resume, int) else None
    from pyrite.errors import ConfigError
    from pyrite.record import BinFileRecorder
    from pyrite.train.checkpoint_index import CheckpointIndex

    folder = artifacts / "checkpoint"
    newest = CheckpointIndex(folder, BinFileRecorder.extension).newest()
    if newest is None:
        raise ConfigError(f"--resume latest: {folder} holds no complete checkpoint; train "
                          f"without --resume to start from the beginning")
    print(f"Resuming from epoch {newest}, the newest complete checkpoint in {folder}",
          flush=True)
    return newest


def _run_train(args: argparse.Namespace) -> int:
    from pyrite.errors import ConfigError
    from pyrite.record import BinFileRecorder
    from pyrite.train.artifacts import check_artifact_dir

    from .inference import evaluate
    from .predict import CONFIG
    from .training import ARTIFACT_FILES, TrainingConfig, export_record, train
    # before anything starts: a folder holding files pyrite did not write is refused
    check_artifact_dir(args.artifacts, ARTIFACT_FILES, what="--artifacts")
    resume = _resolve_resume(Path(args.artifacts), args.resume)
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
        model = train(args.artifacts, config, args.device, resume=resume,
                      limit=args.limit, renderers=renderers, dataset=args.dataset,
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
    from pyrite.errors import ConfigError

    from .inference import evaluate, infer, load_model
    artifacts = args.artifacts
    if artifacts is not None and args.record is None and not all(
            (artifacts / name).is_file() for name in ("model.bin", "config.json")):
        raise ConfigError(f"--artifacts {artifacts} holds no trained model (model.bin and "
                          f"config.json); train one with `pyrite train mnist --artifacts "
                          f"{artifacts}`, or leave --artifacts out for the shipped model")
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
    train.add_argument("--epochs", type=EPOCHS.arg, help=f"number of epochs, "
                       f"{EPOCHS.describe()} (default: the config's, 10)")
    train.add_argument("--lr", type=LEARNING_RATE.arg, help=f"Adam learning rate, "
                       f"{LEARNING_RATE.describe()} (default: the config's, 0.001)")
    train.add_argument("--seed", type=SEED.arg, help=f"random seed, {SEED.describe()} "
                       "(default: the config's, 42)")
    train.add_argument("--artifacts", default=DEFAULT_ARTIFACTS, type=path_arg,
                       help=f"artifact directory (default {DEFAULT_ARTIFACTS}): new, empty, or "
                       "one pyrite made, where only an earlier run's files are deleted")
    train.add_argument("--config", type=path_arg, help="TrainingConfig JSON file (default: "
                       "the committed demos/mnist/config.json)")
    train.add_argument("--export", metavar="PATH", type=path_arg, help="also save the trained "
                       "model in half precision (.bin) at PATH, as the shipped record, and "
                       "report its accuracy (default: no export)")
    train.add_argument("--resume", type=resume_arg, metavar="EPOCH",
                       help="continue from the checkpoint of EPOCH in the artifact directory, "
                       "or from the newest complete one with `--resume latest` (default: "
                       "start afresh)")
    default_device = os.environ.get("PYRITE_TRAIN_DEVICE", "autodiff<numpy>")
    train.add_argument("--device", default=default_device, type=devices_arg,
                       help=device_help(default_device, "device to train on (an autodiff "
                                        "one; PYRITE_TRAIN_DEVICE sets the default); several, "
                                        "comma-separated (webgpu:0,webgpu:1), train "
                                        "data-parallel in this process"))
    train.add_argument("--limit", type=COUNT.arg, metavar="N",
                       help="train and validate on the first N digits of each split only "
                       "(default: all of them)")
    train.add_argument("--dataset", metavar="SOURCE",
                       help="train on other digits: hf:NAME[:SUBSET] (a Hugging Face dataset), "
                            "a .parquet file or folder, FILE.db:TABLE or a .pyds pack; the rows "
                            "need an 'image' (28x28) and a 'label' (0-9) column (default: MNIST)")
    train.add_argument("--checkpoint-every", type=COUNT.arg, metavar="STEPS",
                       help="also checkpoint every STEPS steps inside an epoch (default: at "
                       "each epoch's end; 100 with --workers)")
    scale = train.add_argument_group("several workers (pyrite[distributed], docs/distributed.md)")
    scale.add_argument("--workers", type=COUNT.arg, metavar="N",
                       help="train data-parallel on N Ray workers: CPU workers on numpy, or one "
                       "GPU each with --device webgpu; a worker that dies is restarted from the "
                       "last checkpoint (default: no workers, this process trains)")
    scale.add_argument("--ray-address", metavar="ADDR",
                       help="HOST:PORT of a running Ray cluster (`ray start --head`); default: "
                       "start a local one for the run")
    live = train.add_argument_group("live dashboard")
    live.add_argument("--dashboard", action="store_true",
                      help="serve a live dashboard of the run in the browser (its URL is "
                      "printed); needs pyrite[server]")
    live.add_argument("--dashboard-host", default="127.0.0.1",
                      help="address the dashboard listens on (default 127.0.0.1)")
    live.add_argument("--dashboard-port", type=PORT.arg, default=0, metavar="PORT",
                      help="its port, 0..65535 (default 0: a free one)")
    live.add_argument("--dashboard-linger", type=SECONDS.arg, metavar="SECONDS",
                      help="after training, keep the dashboard up until a page has seen the "
                      "end, at most SECONDS (default: until Enter on a terminal, else "
                      f"{DASHBOARD_LINGER_S:g} s)")
    train.set_defaults(run=_run_train)


def add_infer(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `mnist` to `pyrite infer`'s models."""
    infer = tasks.add_parser("mnist", help="classify an MNIST test digit",
                             description="Classify one MNIST test digit: the artifact "
                             "directory's model if trained, else the shipped record.")
    infer.add_argument("--index", type=TEST_INDEX.arg, default=42,
                       help="test image index, 0..9999 (default 42)")
    infer.add_argument("--artifacts", type=folder_arg, help=f"an existing artifact directory "
                       f"(default {DEFAULT_ARTIFACTS} when it holds a model, else the shipped "
                       f"record)")
    infer.add_argument("--record", metavar="FILE", type=path_arg, help="a model record to use "
                       "instead: one downloaded from the training page (/train), CNN or MLP, "
                       "detected (default none)")
    infer.add_argument("--all", action="store_true",
                       help="classify the whole test set and print the accuracy")
    infer.add_argument("--device", default="numpy", type=device_arg,
                       help=device_help("numpy"))
    infer.set_defaults(run=_run_infer)


def main(argv: list[str] | None = None) -> int:
    """`python -m pyrite.demos.mnist train mnist ...`: the `pyrite` command's demo part."""
    from pyrite.cli_errors import Parser, run_command

    from ..cli import add_parser

    parser = Parser(prog="python -m pyrite.demos.mnist")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run_command(parser, argv)
