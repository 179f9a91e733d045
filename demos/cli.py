"""The demos' commands on `pyrite`: `train MODEL` and `infer MODEL`, each model with its own
options (`pyrite infer mnist --index 42`, `pyrite infer squeezenet PHOTO`).

`add_parser(subparsers)` is the `pyrite.commands` entry point (see pyrite/cli.py); each demo's
cli module adds its model to the two commands. Their errors reach the `pyrite` command's one
error path (pyrite/cli_errors.py): one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `train` and `infer` to the `pyrite` command."""
    from .charlm import cli as charlm
    from .image_classification import cli as classification
    from .mnist import cli as mnist

    train = subparsers.add_parser("train", help="train a demo model (mnist, charlm)",
                                  description="Train a demo model.")
    models = train.add_subparsers(dest="task", required=True, metavar="MODEL")
    mnist.add_train(models)
    charlm.add_train(models)

    infer = subparsers.add_parser("infer", help="predict with a demo model (mnist, squeezenet)",
                                  description="Predict with a demo model; "
                                  "`pyrite infer MODEL --help` for its options.")
    models = infer.add_subparsers(dest="task", required=True, metavar="MODEL")
    mnist.add_infer(models)
    classification.add_infer(models)

    generate = subparsers.add_parser("generate", help="generate text with a demo model (charlm)",
                                     description="Generate text with a demo model; "
                                     "`pyrite generate MODEL --help` for its options.")
    models = generate.add_subparsers(dest="task", required=True, metavar="MODEL")
    charlm.add_generate(models)

    from . import quantize
    quantize.add_parser(subparsers)


__all__ = ["add_parser"]
