"""Where downloaded datasets live, and fetching a file from mirrors with a checksum.

Owns the data folder rule (`root=` argument, else `$PYRITE_DATA`, else `~/.cache/pyrite`),
checksum verification and atomic downloads. It knows nothing of any dataset's format.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from .. import config
from ..errors import DatasetError, DownloadError

# seconds without progress before a mirror is given up on
TIMEOUT_S = 30.0
_CHUNK = 1 << 20


def data_root(root: str | PathLike[str] | None = None) -> Path:
    """The folder holding pyrite's datasets, one sub-folder per dataset (`<root>/mnist/`).

    `root` wins when given; else the `PYRITE_DATA` environment variable (read at each call, so
    tests and notebooks can change it); else `~/.cache/pyrite`.
    """
    if root is not None:
        return Path(root).expanduser()
    env = config.data_dir()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pyrite"


def sha256_file(path: Path) -> str:
    """The SHA-256 of the file at `path`, as lowercase hex."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: Path, sha256: str) -> None:
    """Raise `DatasetError` naming `path` unless its SHA-256 is `sha256`."""
    actual = sha256_file(path)
    if actual != sha256:
        raise DatasetError(
            f"checksum mismatch: {path} has sha256 {actual}, expected {sha256}. The file is "
            "corrupt or a different version: delete it to download it again, or replace it"
        )


def download_file(
    urls: Sequence[str], dest: Path, sha256: str, *, timeout: float = TIMEOUT_S
) -> str:
    """Download the first of `urls` that answers with the right checksum to `dest`.

    The data goes to a temporary file next to `dest` and is renamed into place only once its
    SHA-256 matches, so `dest` never holds a partial or wrong file. Mirrors are tried in order;
    a failure (network error, HTTP error, timeout, wrong checksum) moves on to the next.
    Returns the URL used. Raises `DownloadError` listing every URL and why it failed.
    """
    # imported here: urllib.request pulls in http, ssl and email (~30 ms) that most runs never use
    import urllib.error
    import urllib.request

    dest.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for url in urls:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            h = hashlib.sha256()
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                while chunk := resp.read(_CHUNK):
                    h.update(chunk)
                    out.write(chunk)
            if h.hexdigest() != sha256:
                failures.append(f"{url} (sha256 {h.hexdigest()}, expected {sha256})")
                continue
            os.replace(tmp, dest)
            return url
        except (urllib.error.URLError, OSError, ValueError) as e:
            # URLError and socket timeouts are OSErrors; ValueError is a malformed URL
            reason = getattr(e, "reason", None) or e
            failures.append(f"{url} ({type(e).__name__}: {reason})")
        finally:
            tmp.unlink(missing_ok=True)
    raise DownloadError(f"download of {dest.name} failed; tried: " + "; ".join(failures))
