"""Where SqueezeNet's files are: the ONNX model and its labels in the models folder
(`$PYRITE_MODELS/squeezenet1.1/`, see pyrite.demos.models), and the pyrite record built from
the ONNX file (kept in pyrite's cache, by the ONNX file's sha256).

Host-side only: building the record needs the `onnx` package; a page gets the record's and the
labels' bytes from the web bundle instead.
"""

from __future__ import annotations

from pathlib import Path

from ..models import PathLike, imported_record, model_file

FOLDER = "squeezenet1.1"
ONNX = "squeezenet1.1.onnx"
LABELS = "synset.txt"
WHAT = f"SqueezeNet 1.1 ({ONNX}) and its ImageNet labels ({LABELS})"
#: the generated module (`squeezenet.py`) and its record: what `import_onnx` is called with
NAME = "squeezenet"
CLASS_NAME = "SqueezeNet"
#: the committed module the record loads into (its hash is part of the record's cache key)
MODULE = Path(__file__).with_name(f"{NAME}.py")
#: full precision: the probabilities stay within 1e-6 of onnxruntime's (half: about 1e-3)
PRECISION = "full"


def onnx_path(root: PathLike | None = None) -> Path:
    """`<models folder>/squeezenet1.1/squeezenet1.1.onnx`, or ModelMissing saying where."""
    return model_file(FOLDER, ONNX, WHAT, root)


def labels_path(root: PathLike | None = None) -> Path:
    """`<models folder>/squeezenet1.1/synset.txt`, or ModelMissing saying where."""
    return model_file(FOLDER, LABELS, WHAT, root)


def record_path(root: PathLike | None = None) -> Path:
    """The pyrite record of the ONNX file, built on first use (see models.imported_record)."""
    return imported_record(onnx_path(root), name=NAME, class_name=CLASS_NAME,
                           precision=PRECISION, module=MODULE)


__all__ = ["CLASS_NAME", "FOLDER", "LABELS", "MODULE", "NAME", "ONNX", "PRECISION", "WHAT",
           "labels_path", "onnx_path", "record_path"]
