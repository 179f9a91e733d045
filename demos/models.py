"""Model files that users provide (pretrained weights pyrite does not ship) and the pyrite
records built from them.

A demo whose model is not shipped with pyrite reads it from the *models folder*: the `root`
given (the commands' `--models DIR`), else `$PYRITE_MODELS`, else `models` in pyrite's cache
folder (`~/.cache/pyrite/models`); one sub-folder per model (`squeezenet1.1/`). A file that is
not there raises `ModelMissing`, whose message says where to put it.

`imported_record(onnx, ...)` turns an ONNX file into a pyrite binary record with the ONNX
importer (`pyrite import-onnx`'s `import_onnx`) once, and keeps it in `records/` of pyrite's
cache folder, named by the ONNX file's sha256 (and the generated module's) and the record's
precision: the native commands, the server's API and the web bundle all load that one file,
and a changed ONNX file or module gets a new record. Records are written atomically (built in
a temporary folder beside the cache, renamed into place), so two processes building at once
both end with a whole record.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from pyrite import config
from pyrite.errors import PyriteError

PathLike = str | os.PathLike[str]
_CHUNK = 1 << 20
_hashes: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> sha256, per process


class ModelMissing(PyriteError, FileNotFoundError):
    """A demo's model file is not in the models folder (the message says where to put it),
    or its record cannot be built here."""


def models_root(root: PathLike | None = None) -> Path:
    """The models folder: `root` when given, else PYRITE_MODELS (read at each call), else
    `models` in pyrite's cache folder."""
    if root is not None:
        return Path(root).expanduser()
    given = config.models_dir()
    if given:
        return Path(given).expanduser()
    return Path(config.cache_dir()) / "models"


def where(root: PathLike | None = None) -> str:
    """How the models folder was chosen, for messages.

    >>> where("/srv/models")
    '/srv/models'
    """
    folder = models_root(root)
    if root is not None:
        return str(folder)
    if config.models_dir():
        return f"{folder} (PYRITE_MODELS)"
    return f"{folder} (PYRITE_MODELS is unset: pyrite's cache folder)"


def model_file(folder: str, name: str, what: str, root: PathLike | None = None) -> Path:
    """`<models folder>/<folder>/<name>`, or ModelMissing saying where to put `what` (the
    whole model's description, such as "SqueezeNet 1.1's ONNX file and its labels")."""
    path = models_root(root) / folder / name
    if not path.is_file():
        raise ModelMissing(f"{path} is missing: put {what} in {models_root(root) / folder}/ "
                           f"(models folder: {where(root)}; set PYRITE_MODELS or pass "
                           f"--models DIR to use another)")
    return path


def add_option(parser: argparse.ArgumentParser, flag: str = "--models") -> None:
    """Add `--models DIR` (the models folder; `args.models_dir`) to a command."""
    parser.add_argument(flag, metavar="DIR", dest="models_dir", help="the folder holding "
                        "model files pyrite does not ship, one sub-folder per model (default "
                        "$PYRITE_MODELS, else ~/.cache/pyrite/models)")


def use_option(value: PathLike | None) -> None:
    """A command's `--models DIR` for the rest of the process (and the processes it starts):
    sets PYRITE_MODELS, which every lookup reads."""
    if value:
        os.environ["PYRITE_MODELS"] = str(Path(value).expanduser().resolve())


def sha256_file(path: Path) -> str:
    """The file's sha256 (hex), remembered per (path, size, mtime) for this process."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    known = _hashes.get(key)
    if known is None:
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        known = _hashes[key] = digest.hexdigest()
    return known


def record_cache() -> Path:
    """Where records built from users' model files are kept: `records` in pyrite's cache."""
    return Path(config.cache_dir()) / "records"


def imported_record(onnx: Path, *, name: str, class_name: str, precision: str = "full",
                    module: Path | None = None, cache: Path | None = None) -> Path:
    """The pyrite record of ONNX file `onnx` as `import_onnx(onnx, ..., name=name,
    class_name=class_name, precision=precision)` writes it, built on first use and kept in
    `cache` (default `record_cache()`) as `<name>.<sha256 of onnx, 16 digits>.<precision>.bin`;
    given the generated `module` it loads into, `<name>.<onnx>.<module, 8 digits>.<precision>.bin`
    (a regenerated module whose params changed gets a new record).

    ModelMissing when it cannot be built here (the `onnx` package is missing, say).
    """
    from pyrite.errors import OnnxError
    from pyrite.interop.onnx.codegen import import_onnx

    folder = cache or record_cache()
    key = sha256_file(onnx)[:16] + (f".{sha256_file(module)[:8]}" if module else "")
    target = folder / f"{name}.{key}.{precision}.bin"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
    try:
        result = import_onnx(onnx, stage, name=name, class_name=class_name, recorder="bin",
                             precision=precision)
        os.replace(result.record_path, target)
    except OnnxError as exc:
        raise ModelMissing(f"cannot build the {name} record from {onnx}: {exc}") from exc
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target


__all__ = ["ModelMissing", "add_option", "imported_record", "model_file", "models_root",
           "record_cache", "sha256_file", "use_option", "where"]
