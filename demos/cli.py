"""The demos' commands on `pyrite`: `train MODEL` and `infer MODEL`, each model with its own
options (`pyrite infer mnist --index 42`, `pyrite infer squeezenet PHOTO`).

`add_parser(subparsers)` is the `pyrite.commands` entry point (see pyrite/cli.py); each demo's
cli module adds its model to the two commands.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

Run = Callable[[argparse.Namespace], int]


def reports_config_errors(command: str) -> Callable[[Run], Run]:
    """A command's `run` whose ConfigError (a bad option, config or --artifacts folder) or
    DatasetError (a --dataset that cannot be read) is one
    line on stderr, `<command>: <what is wrong>`, and exit status 2 instead of a traceback."""
    def wrap(run: Run) -> Run:
        def checked(args: argparse.Namespace) -> int:
            from pyrite.errors import ConfigError, DatasetError
            try:
                return run(args)
            except (ConfigError, DatasetError) as exc:
                print(f"{command}: {exc}", file=sys.stderr)
                return 2
        return checked
    return wrap


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `train` and `infer` to the `pyrite` command."""
    from .charlm import cli as charlm
    from .image_classification import cli as classification
    from .mnist import cli as mnist

    train = subparsers.add_parser("train", help="train a demo model (mnist)",
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


__all__ = ["add_parser", "reports_config_errors"]
