"""The `pyrite` command. Subcommands come from small provider modules, each exposing
`add_parser(subparsers)`; providers whose optional dependencies are missing are skipped."""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that add subcommands (their `add_parser(subparsers)` registers them).
PROVIDERS = ["pyrite.train.guide_cli", "pyrite.server.cli"]


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
    for name in PROVIDERS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
