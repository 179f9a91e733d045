"""`pyrite train charlm` and `pyrite generate charlm`: the character model as commands.

`add_train(tasks)` and `add_generate(tasks)` add `charlm` to the `train` and `generate`
commands (pyrite.demos.cli makes those); each sets `run` to the function that carries it out.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pyrite.argtypes import (
    COUNT,
    EPOCHS,
    LEARNING_RATE,
    SEED,
    Range,
    device_arg,
    device_help,
    devices_arg,
    path_arg,
)

DEFAULT_ARTIFACTS = "/tmp/pyrite-charlm"
TOKENS = Range(1, 1_000_000, integer=True)
TEMPERATURE = Range(0, 100)


def _run_train(args: argparse.Namespace) -> int:
    from pyrite.record import BinFileRecorder
    from pyrite.train.artifacts import check_artifact_dir

    from .training import ARTIFACT_FILES, default_config, export_record, train, validation_loss

    # before anything starts: a folder holding files pyrite did not write is refused
    check_artifact_dir(args.artifacts, ARTIFACT_FILES, what="--artifacts")
    changes: dict[str, object] = {}
    for name in ("epochs", "steps_per_epoch", "batch_size", "lr", "seed"):
        value = getattr(args, name)
        if value is not None:
            field = {"epochs": "num_epochs", "lr": "learning_rate"}.get(name, name)
            changes[field] = value
    config = default_config(args.dataset or "", **changes)
    if args.small:
        config = config.replace(model=config.model.replace(d_model=32, n_heads=2, n_layers=1,
                                                           d_ff=64, context=16),
                                corpus_size=50_000, valid_windows=16)
    start = time.perf_counter()
    model = train(args.artifacts, config, args.device)
    took = time.perf_counter() - start
    print(f"Trained model: {Path(args.artifacts) / 'model.bin'} ({took:.0f} s)")
    if args.export:
        path = export_record(model.valid(), args.export)
        config_path = Path(args.export).with_suffix(".json")
        config.save(config_path)
        half = model.valid().load_file(path, BinFileRecorder())
        loss = validation_loss(half, config)
        print(f"Exported {path} (half precision) and {config_path}: validation loss "
              f"{loss:.4f} nats/char")
    return 0


def _run_generate(args: argparse.Namespace) -> int:
    from .generate import CONFIG, SHIPPED, Generation, load

    record = Path(args.record) if args.record else SHIPPED
    config = Path(args.config) if args.config else (
        record.with_suffix(".json") if args.record else CONFIG)
    model = load(args.device, record, config)
    start = time.perf_counter()
    gen = Generation(model, args.prompt, temperature=args.temperature, top_k=args.top_k,
                     seed=args.seed, cached=not args.no_cache)
    sys.stdout.write(args.prompt)
    for char in gen.stream(args.tokens):
        sys.stdout.write(char)
        sys.stdout.flush()
    took = time.perf_counter() - start
    print(flush=True)
    print(f"[{args.tokens} characters in {took:.2f} s, {args.tokens / took:.0f} tokens/s, "
          f"{model.devices()[0].name}]", file=sys.stderr)
    return 0


def add_train(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `charlm` to `pyrite train`'s models."""
    train = tasks.add_parser("charlm", help="a character-level transformer on the standard "
                             "library's docstrings", description="Train the character-level "
                             "language model (docs/charlm.md).")
    train.add_argument("--epochs", type=EPOCHS.arg, help=f"number of epochs, "
                       f"{EPOCHS.describe()} (default 24)")
    train.add_argument("--steps-per-epoch", type=COUNT.arg, help="training steps per epoch, "
                       ">= 1 (default 100)")
    train.add_argument("--batch-size", type=COUNT.arg, help="windows per step, >= 1 "
                       "(default 16)")
    train.add_argument("--lr", type=LEARNING_RATE.arg, help=f"the cosine schedule's first "
                       f"rate, {LEARNING_RATE.describe()} (default 2e-3)")
    train.add_argument("--seed", type=SEED.arg, help=f"random seed, {SEED.describe()} "
                       "(default 42)")
    train.add_argument("--small", action="store_true",
                       help="a tiny model on 50,000 characters (a smoke test)")
    train.add_argument("--artifacts", default=DEFAULT_ARTIFACTS, type=path_arg,
                       help=f"artifact directory (default {DEFAULT_ARTIFACTS}): new, empty, or "
                       "one pyrite made, where only an earlier run's files are deleted")
    train.add_argument("--export", metavar="PATH", type=path_arg, help="also save the model "
                       "in half precision at PATH (.bin) and its config beside it (.json), and "
                       "report the validation loss (default: no export)")
    train.add_argument("--device", default="autodiff<numpy>", type=devices_arg,
                       help=device_help("autodiff<numpy>", "device to train on (an autodiff "
                                        "one); several, comma-separated (webgpu:0,webgpu:1), "
                                        "train data-parallel in this process"))
    train.add_argument("--dataset", metavar="SOURCE",
                       help="train on other text: hf:NAME[:SUBSET] (a Hugging Face dataset), a "
                            ".parquet file or folder, FILE.db:TABLE or a .pyds pack, with a "
                            "'text' column (default: the standard library's docstrings)")
    train.set_defaults(run=_run_train)


def add_generate(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `charlm` to `pyrite generate`'s models."""
    gen = tasks.add_parser("charlm", help="continue a prompt, character by character",
                           description="Generate text with the character-level model (the "
                           "shipped record unless --record).")
    gen.add_argument("--prompt", default="", help="text to continue (ASCII; default: none)")
    gen.add_argument("--tokens", type=TOKENS.arg, default=200, help=f"characters to "
                     f"generate, {TOKENS.describe()} (default 200)")
    gen.add_argument("--temperature", type=TEMPERATURE.arg, default=0.8,
                     help=f"sampling temperature, {TEMPERATURE.describe()}; 0 is greedy "
                     "(default 0.8)")
    gen.add_argument("--top-k", type=COUNT.arg, default=20, metavar="K",
                     help="sample among the K likeliest characters, K >= 1 (default 20)")
    gen.add_argument("--seed", type=SEED.arg, default=0, help=f"sampling seed, "
                     f"{SEED.describe()} (default 0)")
    gen.add_argument("--no-cache", action="store_true",
                     help="recompute the whole window per character (no key/value cache)")
    gen.add_argument("--record", type=path_arg, help="a .bin record (default: the shipped "
                     "one); its config is the .json beside it unless --config")
    gen.add_argument("--config", type=path_arg, help="the record's training config JSON "
                     "(default: beside the record)")
    gen.add_argument("--device", default="numpy", type=device_arg, help=device_help("numpy"))
    gen.set_defaults(run=_run_generate)


__all__ = ["add_generate", "add_train"]
