"""ONNX models in pyrite: run one as a module, or generate readable Python from it.

- `load(path, device)` returns an `OnnxModel`, a `Module` that runs the graph on any backend,
  its float initializers as trainable params.
- `import_onnx(path, out_dir)` (the `pyrite import-onnx` command) writes a Python module whose
  layers are pyrite's nn layers, plus its weights as a pyrite record.

Parsing a `.onnx` file needs the `onnx` package; running a loaded or generated model does not.
"""

from .graph import Graph, Node, ValueInfo
from .reader import parse, read
from .registry import check, problems, supported
from .runtime import OnnxModel, load

__all__ = ["Graph", "Node", "OnnxModel", "ValueInfo", "check", "load", "parse", "problems",
           "read", "supported"]
