"""The zip format of `torch.save` (since torch 1.6): `data.pkl` plus one entry per storage."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from ...record.limits import inflate_limit, too_large
from .storage import _err, _is_size, _Storage
from .unpickler import _storage_type, _unpickle

# ---- the zip format --------------------------------------------------------------------------

def is_zip(data: bytes) -> bool:
    """Whether `data` looks like a zip archive (zipfile's own test, which raises on some
    damaged archives instead of saying no)."""
    try:
        return zipfile.is_zipfile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return False


def _read_zip(data: bytes, source: str) -> Any:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError,
            zipfile.LargeZipFile, UnicodeDecodeError) as err:
        raise _err(source, f"not a valid PyTorch zip file ({err}): the file is truncated or "
                           f"corrupt") from err
    with archive:
        entries = {info.filename: info for info in archive.infolist()}
        pkl = [name for name in entries if name == "data.pkl" or name.endswith("/data.pkl")]
        if not pkl:
            raise _err(source, "the zip holds no data.pkl: not a PyTorch file")
        prefix = min(pkl, key=len)[:-len("data.pkl")]
        allowed = inflate_limit(len(data))
        inflated = [0]

        def read(name: str, limit: int | None = None) -> bytes:
            info = entries.get(name)
            if info is None:
                raise _err(source, f"the zip has no entry {name!r}: the file is truncated or "
                                   f"corrupt")
            if limit is not None and info.file_size != limit:
                raise _err(source, f"zip entry {name!r} holds {info.file_size} bytes, but the "
                                   f"pickle declares {limit}: the file is corrupt")
            if info.compress_type == 0 and info.file_size > len(data):
                raise _err(source, f"zip entry {name!r} declares {info.file_size} bytes, more "
                                   f"than the file can hold")
            # all entries together inflate at most as much as the file's size allows; zipfile
            # stops each entry at its declared size, so the sum bounds what is allocated
            inflated[0] += info.file_size
            if inflated[0] > allowed:
                raise too_large(source, "the zip", len(data), allowed)
            try:
                return archive.read(info)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, zipfile.LargeZipFile,
                    NotImplementedError, RuntimeError) as err:  # RuntimeError: encrypted
                raise _err(source, f"cannot read zip entry {name!r} ({err}): the file is "
                                   f"truncated or corrupt") from err

        big = False
        if prefix + "byteorder" in entries:
            order = read(prefix + "byteorder").decode("ascii", "replace").strip()
            if order not in ("little", "big"):
                raise _err(source, f"unknown byteorder {order!r}")
            big = order == "big"
        cache: dict[str, _Storage] = {}

        def storage(pid: tuple[Any, ...]) -> _Storage:
            if len(pid) < 5 or not isinstance(pid[2], str) or not _is_size(pid[4]):
                raise _err(source, f"invalid storage id {pid!r}")
            kind = _storage_type(pid[1], source)
            key, numel = pid[2], int(pid[4])
            if key not in cache:
                raw = read(f"{prefix}data/{key}", numel * kind.itemsize)
                cache[key] = _Storage(kind, numel, raw)
            return cache[key]

        return _unpickle(read(prefix + "data.pkl"), source, storage, big)

