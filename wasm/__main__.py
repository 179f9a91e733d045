"""`python -m pyrite.wasm build [--out DIR]` and `python -m pyrite.wasm export-web --out DIR
[--model NAME ...] [--base-url URL]`: build the web bundle (see build.py and cli.py)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
