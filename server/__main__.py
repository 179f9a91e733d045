"""`python -m pyrite.server [options]`: the same as `pyrite serve [options]`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
