"""The sample photos the image classification page offers: the JPEG, PNG and WebP files of a
folder (`$PYRITE_DATA/samples/` by default), listed at `/api/samples` and served at
`/samples/{file}`.

The folder is read at each listing, so photos added while the server runs show up; a missing
folder is an empty list whose `hint` says where to put photos (the page shows it).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .static import REVALIDATE, StaticFolder

#: what the page can decode and the model is meant for
SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
#: larger files are not listed (the page refuses uploads over this size too)
MAX_BYTES = 10_000_000
PREFIX = "/samples"


class Samples:
    """The sample photos of `folder`: `routes()` lists and serves them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.static = StaticFolder(folder, REVALIDATE, label="the sample photos")

    def photos(self) -> list[dict[str, object]]:
        """Each photo: `{"name", "file", "url", "bytes"}`, sorted by file name."""
        try:
            entries = sorted(self.folder.iterdir())
        except OSError:
            return []
        found: list[dict[str, object]] = []
        for path in entries:
            if path.name.startswith(".") or path.suffix.lower() not in SUFFIXES:
                continue
            if self.static.find(path.name) is None:  # not a plain file inside the folder
                continue
            size = path.stat().st_size
            if 0 < size <= MAX_BYTES:
                found.append({"name": path.stem.replace("_", " "), "file": path.name,
                              "url": f"{PREFIX}/{quote(path.name)}", "bytes": size})
        return found

    def routes(self) -> list[BaseRoute]:
        """`/api/samples` (the list) and `/samples/{file}` (a photo)."""
        return [Route("/api/samples", self.listing, methods=["GET"]),
                Route(PREFIX + "/{path:path}", self.photo, methods=["GET"])]

    async def listing(self, request: Request) -> Response:
        """`{"samples": [...], "hint": "..."}`; the hint says where photos go."""
        photos = self.photos()
        hint = (f"{len(photos)} photos from {self.folder}" if photos else
                f"no sample photos: put JPEG, PNG or WebP files in {self.folder} "
                f"($PYRITE_DATA/samples/) to offer them here")
        return JSONResponse({"samples": photos, "hint": hint},
                            headers={"Cache-Control": "no-cache"})

    async def photo(self, request: Request) -> Response:
        """One photo of the folder (only image files are served)."""
        path = request.path_params["path"]
        if PurePosixPath(path).suffix.lower() not in SUFFIXES:
            raise HTTPException(404, f"nothing at {request.url.path}: only the sample photos "
                                f"(JPEG, PNG, WebP) are served here; see /api/samples")
        return self.static.response(request, path)


__all__ = ["MAX_BYTES", "PREFIX", "SUFFIXES", "Samples"]
