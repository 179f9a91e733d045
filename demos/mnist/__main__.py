"""`python -m pyrite.demos.mnist train mnist` / `... infer mnist --index 42`."""

import sys

from .cli import main

sys.exit(main())
