"""`python -m pyrite.wasm build [--out DIR]`: build the web bundle (see build.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import build, default_bundle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyrite.wasm",
                                     description="Build pyrite's web bundle for pages.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("build", help="write pyrite.js, the wheels, records and manifest")
    cmd.add_argument("--out", type=Path, default=None,
                     help=f"bundle folder (default {default_bundle()})")
    args = parser.parse_args(argv)
    out = args.out or default_bundle()
    manifest = build(out)
    wheels = ", ".join(w["name"] for w in manifest["wheels"])  # type: ignore[attr-defined]
    print(f"web bundle in {out}: wheels {wheels}; models "
          f"{', '.join(manifest['models'])}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
