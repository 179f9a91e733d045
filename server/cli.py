"""`pyrite serve`: the demos, the web bundle, Pyodide and the prediction API on one port.

`add_parser(subparsers)` joins it to the `pyrite` command (entry point group
`pyrite.commands`); `python -m pyrite.server [options]` runs the same thing.
Without `--web DIR` the web bundle is built at startup into $PYRITE_WEB_DIR
(default ~/.cache/pyrite/web) by `pyrite.wasm.build.build`, with the Pyodide runtime of
`--pyodide DIR`; `--allow-origin ORIGIN` lets pages of that origin load the bundle; `--models DIR`
is where demo models that pyrite does not ship are read from (default $PYRITE_MODELS).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pyrite.argtypes import PORT, Range, device_arg, device_help, path_arg
from pyrite.cli_errors import Parser, run_command
from pyrite.demos import models, registry

from . import bundle, folders
from .app import create_app
from .batching import QUEUE_SIZE
from .body import DEFAULT_MAX_BODY
from .cors import Cors
from .errors import ServeSetupError
from .run import serve

_DESCRIPTION = ("Serve pyrite's demo pages, the web bundle, the Pyodide runtime and a JSON API "
                "that runs the demo models natively (see docs/server.md).")
LOG_LEVELS = ["critical", "error", "warning", "info", "debug", "trace"]
BODY = Range(1024, 1 << 30, integer=True)
QUEUE = Range(1, 10_000, integer=True)


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on "
                        "(default 127.0.0.1: this machine only; 0.0.0.0: every interface)")
    parser.add_argument("--port", type=PORT.arg, default=8000,
                        help="port, 0..65535 (default 8000; 0 picks a free one, printed at "
                        "startup)")
    parser.add_argument("--web", type=path_arg, metavar="DIR", help="serve this built web bundle "
                        f"(default: build one into {bundle.default_dir()}, set by "
                        "PYRITE_WEB_DIR)")
    parser.add_argument("--pyodide", type=path_arg, metavar="DIR", help="the Pyodide runtime the "
                        f"bundle is built from (default {folders.default_pyodide_dir()}, from "
                        "`make setup`; not with --web: a built bundle carries its own)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        dest="allow_origins", help="let pages of this origin (such as "
                        "http://127.0.0.1:8123, or * for any) load the web bundle: CORS "
                        "headers on its files (repeatable; default none)")
    parser.add_argument("--pyodide-packages", metavar="DIR_OR_URL", help="a full Pyodide "
                        "distribution's packages (numpy, ...): a folder to serve at "
                        "/pyodide-packages/, or a URL pages load them from")
    models.add_option(parser)
    parser.add_argument("--api-device", default="numpy", type=device_arg, metavar="DEVICE",
                        help=device_help("numpy", "device that /api/predict runs models on"))
    parser.add_argument("--max-body", type=BODY.arg, default=DEFAULT_MAX_BODY, metavar="BYTES",
                        help=f"largest request body accepted, {BODY.describe()} (default "
                        f"{DEFAULT_MAX_BODY})")
    parser.add_argument("--queue-size", type=QUEUE.arg, default=QUEUE_SIZE, metavar="N",
                        help=f"predictions that may wait or run at once, {QUEUE.describe()}; "
                        f"more are answered 503 with Retry-After (default {QUEUE_SIZE})")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info",
                        help="uvicorn's log level (default info)")


def _web_dir(args: argparse.Namespace) -> Path:
    if args.web is not None:
        if args.pyodide is not None:
            raise ServeSetupError("--pyodide DIR is what a bundle is built from, and a bundle "
                                  "given with --web carries its own pyodide/: give one of them")
        return Path(args.web)
    pyodide = folders.check_pyodide_dir(args.pyodide or folders.default_pyodide_dir())
    where = bundle.default_dir()
    print(f"pyrite serve: building the web bundle in {where}", flush=True)
    for name in registry.names():
        reason = registry.get(name).missing()
        if reason is not None:  # its page says so too
            print(f"pyrite serve: without the {name} model: {reason}", flush=True)
    # the builder replaces an older bundle there atomically
    return bundle.build(where, pyodide_dir=pyodide)


def run(args: argparse.Namespace) -> int:
    """Build or check what is served, then serve it until stopped."""
    models.use_option(args.models_dir)
    pages = folders.demo_pages(registry.names())
    origins = Cors(args.allow_origins).origins  # checked before a bundle is built
    app = create_app(_web_dir(args), pyodide_packages=args.pyodide_packages,
                     api_device=args.api_device, max_body=args.max_body,
                     demo_pages=pages, allow_origins=origins, queue_size=args.queue_size)
    return serve(app, args.host, args.port, pages=sorted(pages), log_level=args.log_level)


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `serve` to the `pyrite` command."""
    parser = subparsers.add_parser("serve", help="serve the demos, the web bundle and the API",
                                   description=_DESCRIPTION)
    _add_options(parser)
    parser.set_defaults(run=run)


def main(argv: list[str] | None = None) -> int:
    """`python -m pyrite.server [options]`: the same as `pyrite serve [options]`."""
    parser = Parser(prog="python -m pyrite.server", description=_DESCRIPTION)
    _add_options(parser)
    parser.set_defaults(run=run)
    return run_command(parser, argv)


__all__ = ["add_parser", "main", "run"]
