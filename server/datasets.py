"""The datasets pages train on: MNIST's four gzip'd IDX files from the data folder
(`$PYRITE_DATA/mnist/`), served at `/data/mnist/{file}` for the training page (`/train`),
which parses them in the page with pyrite's own IDX reader; and the dataset packs a user puts
in `$PYRITE_DATA/packs/` (`pyrite dataset pack ... --out $PYRITE_DATA/packs/NAME.pyds`),
served at `/data/packs/NAME.pyds` for the training page's "your own data".

Only those names are served (revalidated by ETag; the page checks each MNIST file against its
SHA-256 too, as MnistDataset does natively, and a pack's chunks against their CRC-32). A
missing file is a 404 that says where to put it.
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
PACKS = "/data/packs"
#: the files a page may fetch
MNIST_FILES = tuple(sorted(name for pair in FILES.values() for name in pair))


class Datasets:
    """MNIST's files in `folder` (the data folder's `mnist/`): `routes()` serves them."""

    def __init__(self, folder: Path, packs: Path | None = None) -> None:
        self.folder = folder
        self.static = StaticFolder(folder, REVALIDATE, label="the MNIST files")
        self.packs = packs if packs is not None else folder.parent / "packs"
        self.pack_files = StaticFolder(self.packs, REVALIDATE, label="the dataset packs")

    def routes(self) -> list[BaseRoute]:
        return [Route(PREFIX + "/{name}", self.mnist, methods=["GET"]),
                Route(PACKS + "/{name}", self.pack, methods=["GET"])]

    async def pack(self, request: Request) -> Response:
        """A dataset pack from the data folder's packs/."""
        name = request.path_params["name"]
        if not name.endswith(".pyds") or "/" in name or name.startswith("."):
            raise HTTPException(404, f"nothing at {request.url.path}: {PACKS}/ serves dataset "
                                "packs (NAME.pyds) only")
        if self.pack_files.find(name) is None:
            raise HTTPException(404, f"{name} is not in {self.packs}: write it there with "
                                f"`pyrite dataset pack SOURCE --out {self.packs / name}`")
        return self.pack_files.response(request, name)

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


__all__ = ["MNIST_FILES", "PACKS", "PREFIX", "Datasets"]
