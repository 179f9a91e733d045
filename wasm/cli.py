"""The web bundle's commands: `pyrite export-web` and `python -m pyrite.wasm {build,export-web}`.

`pyrite export-web --out DIR [--model NAME ...] [--base-url URL]` writes the bundle for any
static host (export.py) and prints its size on disk, what a first visit transfers and the
snippet to paste into a page. `add_parser(subparsers)` joins it to the `pyrite` command (entry
point group `pyrite.commands`).
"""

from __future__ import annotations

import argparse
import json
from urllib.parse import urlsplit

from pyrite.argtypes import path_arg
from pyrite.cli_errors import Parser, run_command
from pyrite.demos import models

from . import example
from .build import build, default_bundle
from .export import Export, export_web

_EXPORT_HELP = "write the web bundle for any static host, with an example page"
_EXPORT_DESCRIPTION = ("Write pyrite's web bundle (pyrite.js, the Pyodide runtime, the wheels, "
                       "the models, precompressed copies) into a folder any static host can "
                       "serve, at any path; see docs/web-embeds.md.")


def _size(n: int) -> str:
    """Bytes, exactly and in MB.

    >>> _size(14_123_456)
    '14,123,456 bytes (14.1 MB)'
    """
    return f"{n:,} bytes ({n / 1e6:.1f} MB)"


def _pyrite_js(base_url: str | None) -> str:
    if not base_url:
        return "./pyrite.js"
    return base_url if base_url.endswith("pyrite.js") else base_url.rstrip("/") + "/pyrite.js"


def report(done: Export, base_url: str | None) -> str:
    """What `export-web` prints: the sizes, then the snippet for a page."""
    src = _pyrite_js(base_url)
    where = (f"a page anywhere, the bundle being served at {src.removesuffix('pyrite.js')}"
             if base_url else f"a page in {done.out} itself (--base-url URL prints an "
                              "absolute address)")
    lines = [
        f"pyrite export-web: the web bundle is in {done.out} (models: "
        f"{', '.join(done.models) or 'none'})",
        f"  on disk:     {_size(done.disk_bytes)} in {done.files} files, the compressed "
        "copies included",
        f"  first visit: {_size(done.first_visit_gz_bytes)} from a host that serves the .gz "
        "copies,",
        *([f"               {_size(done.first_visit_br_bytes)} from one that also serves "
           "the .br copies"] if done.first_visit_br_bytes < done.first_visit_gz_bytes else
          ["               (no .br copies: pip install brotli, or pyrite[web], to make them)"]),
        f"               {_size(done.first_visit_bytes)} from one that does not "
        "(python -m http.server)",
        "  a repeat visit downloads only what changed (files are cached by content hash)",
        *(f"  left out: {reason}" for reason in done.unavailable.values()),
        *(f"  kept: your {name} (the bundle's example {name} is not written over it)"
          for name in done.kept),
        "",
        f"Paste into {where}:",
        "",
        example.snippet(src, done.models),
        "",
        "Optionally, in the page's <head>, so the browser fetches pyrite's scripts in "
        "parallel:",
        "",
        example.preload(src, done.out),
    ]
    if urlsplit(src).scheme in ("http", "https"):
        lines += ["", "From another origin the host must send CORS headers for the bundle "
                  "(pyrite serve --allow-origin ORIGIN does) and the page's Content-Security-"
                  "Policy must allow it: see docs/web-embeds.md."]
    lines += ["", CACHING]
    return "\n".join(lines)


#: the host's caching that lets a repeat visit request nothing but pyrite's small scripts and
#: the manifest (what `pyrite serve` sends: pyrite/server/bundle.py)
CACHING = ("Caching, for repeat visits that request no runtime, wheels or records: "
           "Cache-Control \"public, max-age=31536000, immutable\" for wheels/, models/, "
           "kernels/ and snapshot/ (their names carry a content hash), a day (max-age=86400) "
           "for pyodide/, \"no-cache\" for the rest; see docs/web-embeds.md.")


def _add_export_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=path_arg, required=True, metavar="DIR",
                        help="folder to write: missing, empty, or a previous export, where "
                        "only the files that export wrote are replaced (yours are kept)")
    parser.add_argument("--model", action="append", metavar="NAME", dest="models",
                        help="a demo model to ship (repeatable; default all)")
    parser.add_argument("--base-url", metavar="URL", help="where DIR will be served from, for "
                        "the printed snippet (the bundle itself uses relative URLs)")
    parser.add_argument("--pyodide", type=path_arg, metavar="DIR", help="the Pyodide runtime "
                        "to copy from (default the npm package in wasm/node_modules/pyodide)")
    parser.add_argument("--precision", default="shipped", choices=("shipped", "int8", "int4"),
                        help="the models' records: as shipped (default: f16, squeezenet f32), "
                        "or quantized int8 / int4 weights (docs/quantization.md)")
    parser.add_argument("--snapshot", action="store_true",
                        help="ship a Python memory snapshot (made under Node), restored by a "
                        "first visit instead of booting Python: faster on a fast network, "
                        "7.5 MB more to download (default: no snapshot)")
    models.add_option(parser, "--models-dir")  # --model NAME picks the models to ship


def run_export(args: argparse.Namespace) -> int:
    """Export, then print the report (a problem reaches the command's one error path: one
    line on stderr, exit status 2)."""
    models.use_option(args.models_dir)
    done = export_web(args.out, args.models, pyodide_dir=args.pyodide,
                      precision=args.precision, with_snapshot=args.snapshot)
    print(report(done, args.base_url))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `export-web` to the `pyrite` command."""
    parser = subparsers.add_parser("export-web", help=_EXPORT_HELP,
                                   description=_EXPORT_DESCRIPTION)
    _add_export_options(parser)
    parser.set_defaults(run=run_export)


def _run_build(args: argparse.Namespace) -> int:
    models.use_option(args.models_dir)
    if args.out is None:  # pyrite's own folder, where `pyrite serve` reads: replaced whole
        out = default_bundle()
        manifest = build(out, live=True)  # servers may be reading it
    else:  # a folder the user named: as export-web, only what pyrite wrote there is replaced
        out = args.out
        export_web(out)
        manifest = json.loads((out / "manifest.json").read_text())
    wheels = ", ".join(w["name"] for w in manifest["wheels"])  # type: ignore[attr-defined]
    print(f"web bundle in {out}: wheels {wheels}; models "
          f"{', '.join(manifest['models'])}")  # type: ignore[arg-type]
    for reason in manifest["unavailable"].values():  # type: ignore[attr-defined]
        print(f"  left out: {reason}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m pyrite.wasm build [--out DIR]` and `python -m pyrite.wasm export-web ...`."""
    parser = Parser(prog="python -m pyrite.wasm",
                    description="Build pyrite's web bundle for pages.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("build", help="write the bundle where `pyrite serve` reads it")
    cmd.add_argument("--out", type=path_arg, default=None,
                     help=f"bundle folder (default {default_bundle()}, replaced whole); a "
                     "folder named here is treated as export-web treats its --out")
    models.add_option(cmd)
    cmd.set_defaults(run=_run_build)
    add_parser(sub)
    return run_command(parser, argv)


__all__ = ["add_parser", "main", "report", "run_export"]
