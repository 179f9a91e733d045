"""The datasets pages train on: MNIST's four gzip'd IDX files from the data folder
(`$PYRITE_DATA/mnist/`), served at `/data/mnist/{file}` for the training page (`/train`),
which parses them in the page with pyrite's own IDX reader.

Only those four names are served (revalidated by ETag; the page checks each against its
SHA-256 too, as MnistDataset does natively). A missing file is a 404 that says where to put
it.
"""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from pyrite.dataset.mnist import FILES

from .static import REVALIDATE, StaticFolder

PREFIX = "/data/mnist"
#: the files a page may fetch
MNIST_FILES = tuple(sorted(name for pair in FILES.values() for name in pair))


class Datasets:
    """MNIST's files in `folder` (the data folder's `mnist/`): `routes()` serves them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.static = StaticFolder(folder, REVALIDATE, label="the MNIST files")

    def routes(self) -> list[BaseRoute]:
        return [Route(PREFIX + "/{name}", self.mnist, methods=["GET"])]

    async def mnist(self, request: Request) -> Response:
        """One of MNIST's four files."""
        name = request.path_params["name"]
        if name not in MNIST_FILES:
            raise HTTPException(404, f"nothing at {request.url.path}: {PREFIX}/ serves "
                                f"MNIST's files only: {', '.join(MNIST_FILES)}")
        if self.static.find(name) is None:
            raise HTTPException(404, f"{name} is not in {self.folder}: put MNIST's four .gz "
                                f"files there (or set PYRITE_DATA to a folder whose mnist/ "
                                f"holds them) and reload")
        return self.static.response(request, name)


__all__ = ["MNIST_FILES", "PREFIX", "Datasets"]
