"""`pyrite.onnx`: the short name of `pyrite.interop.onnx` (load, import, check ONNX models)."""

from .interop.onnx import (
                           Graph,
                           Node,
                           OnnxModel,
                           ValueInfo,
                           check,
                           load,
                           parse,
                           problems,
                           read,
                           supported,
)

__all__ = ["Graph", "Node", "OnnxModel", "ValueInfo", "check", "load", "parse", "problems",
           "read", "supported"]
