"""pyrite.server: the Starlette app behind `pyrite serve` (see docs/server.md).

Serves the demo pages, the web bundle (pyrite.js, worker.js, wheels, model records), the
Pyodide runtime and a JSON API that runs the demo models natively. Needs starlette and
uvicorn (`pip install pyrite[server]`); `import pyrite` never imports this package.
"""

from .app import create_app
from .errors import ServeSetupError
from .run import serve

__all__ = ["ServeSetupError", "create_app", "serve"]
