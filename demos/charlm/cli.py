"""`pyrite train charlm` and `pyrite generate charlm`: the character model as commands.

`add_train(tasks)` and `add_generate(tasks)` add `charlm` to the `train` and `generate`
commands (pyrite.demos.cli makes those); each sets `run` to the function that carries it out.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..cli import reports_config_errors

DEFAULT_ARTIFACTS = "/tmp/pyrite-charlm"


@reports_config_errors("pyrite train charlm")
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
    try:
        gen = Generation(model, args.prompt, temperature=args.temperature, top_k=args.top_k,
                         seed=args.seed, cached=not args.no_cache)
    except ValueError as exc:
        print(f"pyrite generate: {exc}", file=sys.stderr)
        return 2
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
    train.add_argument("--epochs", type=int, help="number of epochs (default 24)")
    train.add_argument("--steps-per-epoch", type=int, help="training steps per epoch (100)")
    train.add_argument("--batch-size", type=int, help="windows per step (16)")
    train.add_argument("--lr", type=float, help="the cosine schedule's first rate (2e-3)")
    train.add_argument("--seed", type=int, help="random seed (42)")
    train.add_argument("--small", action="store_true",
                       help="a tiny model on 50,000 characters (a smoke test)")
    train.add_argument("--artifacts", default=DEFAULT_ARTIFACTS,
                       help=f"artifact directory (default {DEFAULT_ARTIFACTS}): new, empty, or "
                       "one pyrite made, where only an earlier run's files are deleted")
    train.add_argument("--export", metavar="PATH", help="also save the model in half precision "
                       "at PATH (.bin) and its config beside it (.json), and report the "
                       "validation loss")
    train.add_argument("--device", default="autodiff<numpy>")
    train.add_argument("--dataset", metavar="SOURCE",
                       help="train on other text: hf:NAME[:SUBSET] (a Hugging Face dataset), a "
                            ".parquet file or folder, or FILE.db:TABLE, with a 'text' column "
                            "(default: the standard library's docstrings)")
    train.set_defaults(run=_run_train)


def add_generate(tasks: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `charlm` to `pyrite generate`'s models."""
    gen = tasks.add_parser("charlm", help="continue a prompt, character by character",
                           description="Generate text with the character-level model (the "
                           "shipped record unless --record).")
    gen.add_argument("--prompt", default="", help="text to continue (ASCII; default: none)")
    gen.add_argument("--tokens", type=int, default=200, help="characters to generate (200)")
    gen.add_argument("--temperature", type=float, default=0.8,
                     help="sampling temperature; 0 is greedy (0.8)")
    gen.add_argument("--top-k", type=int, default=20,
                     help="sample among the K likeliest characters (20)")
    gen.add_argument("--seed", type=int, default=0, help="sampling seed (0)")
    gen.add_argument("--no-cache", action="store_true",
                     help="recompute the whole window per character (no key/value cache)")
    gen.add_argument("--record", help="a .bin record (default: the shipped one); its config "
                     "is the .json beside it unless --config")
    gen.add_argument("--config", help="the record's training config JSON")
    gen.add_argument("--device", default="numpy")
    gen.set_defaults(run=_run_generate)


__all__ = ["add_generate", "add_train"]
