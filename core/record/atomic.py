"""Atomic file writes: a record file is either the old one or the complete new one, never half.

The bytes go to a temporary file in the target's directory (same file system, so the rename is
atomic), are flushed and fsynced, and the temporary file is renamed over the target with
`os.replace`. On any exception, the temporary file is removed and the target is untouched.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

# fsync is refused by some file systems (and by Pyodide's in-memory one); the rename is still
# atomic there, so these errors are not fatal. Any other fsync error (EIO) is.
_FSYNC_UNSUPPORTED = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> Path:
    """Call `write(file)` on a temporary file, then rename it onto `path`; return `path`.

    The temporary file is `.{name}.{random}.tmp` beside the target and is created with mode
    0o666 less the umask, like any new file. Existing targets are replaced, not appended to.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "hello.txt"
    >>> atomic_write(target, lambda f: f.write(b"hi")).read_bytes()
    b'hi'
    """
    target = Path(path)
    tmp, fd = _create_temp(target)
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            _fsync(file.fileno())
        os.replace(tmp, target)
    except BaseException:
        # BaseException: a KeyboardInterrupt mid-write must not leave a stray temporary file
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return target


def _create_temp(target: Path) -> tuple[Path, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:  # pragma: no cover - a 32-bit random collision
            continue


def _fsync(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in _FSYNC_UNSUPPORTED:
            raise


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable on POSIX. Best effort: Windows cannot open a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
