"""The `pyrite` command. Besides `info`, subcommands come from installed packages that declare
an `add_parser(subparsers)` function under the `pyrite.commands` entry point group (the MNIST
guide's `train`/`infer` live in pyrite.demos, which core never imports by name)."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points


def _info(args: argparse.Namespace) -> int:
    from . import info
    argv = [args.what] + sum((["--backend", b] for b in args.backend or []), [])
    return info.main(argv + (["-v"] if args.verbose else []))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyrite", description="pyrite: deep learning "
                                     "for Python, on CPU, GPU and in the browser")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="backends, adapters and op coverage")
    info.add_argument("what", nargs="?", choices=["backends", "ops"], default="backends")
    info.add_argument("--backend", action="append", help="limit `ops` to these devices")
    info.add_argument("-v", "--verbose", action="store_true")
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
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
