"""The `pyrite` command. Besides `info`, subcommands come from installed packages that declare
an `add_parser(subparsers)` function under the `pyrite.commands` entry point group (the MNIST
guide's `train`/`infer` live in pyrite.demos, which core never imports by name)."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points

from .argtypes import device_arg, device_names
from .cli_errors import DEBUG_FLAG, DEBUG_HELP, Parser, run_command


def _info(args: argparse.Namespace) -> int:
    from . import info
    argv = [args.what] + sum((["--backend", b] for b in args.backend or []), [])
    return info.main(argv + (["-v"] if args.verbose else []))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="pyrite", description="pyrite: deep learning for Python, on CPU, GPU "
                    "and in the browser. A mistake is one line on stderr and exit status 2.")
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP + "; allowed anywhere "
                        "on the command line")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="backends, adapters and op coverage",
                          description="What this installation can do: its devices (with "
                          "their adapters) or, per device, which of Burn's tensor ops run.")
    info.add_argument("what", nargs="?", choices=["backends", "ops"], default="backends",
                      help="backends: the devices and their status; ops: op coverage per "
                      "device (default backends)")
    info.add_argument("--backend", action="append", type=device_arg, metavar="DEVICE",
                      help=f"limit the report to this device (repeatable; devices here: "
                      f"{', '.join(device_names())}, or autodiff<NAME>; default all)")
    info.add_argument("-v", "--verbose", action="store_true",
                      help="list every op of each device, not only the missing ones")
    info.set_defaults(run=_info)
    for ep in sorted(entry_points(group="pyrite.commands"), key=lambda e: e.name):
        try:
            add_parser = ep.load()
        except ImportError as exc:  # a provider whose optional dependencies are missing
            print(f"pyrite: commands of {ep.value} unavailable: {exc}", file=sys.stderr)
            continue
        add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `pyrite` command: every error is one line and exit status 2 (see cli_errors)."""
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
