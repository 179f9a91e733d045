"""pyrite: a browser-first deep learning framework — one tensor API over numpy, WebGPU and
Pyodide, with Burn's ideas (backend decorators, modules, records, a Learner).

Importing pyrite needs only the standard library: numpy is imported when the numpy backend is
first used, wgpu when the webgpu backend is.
"""

from typing import TYPE_CHECKING

from . import activation, consuming
from .backend import REGISTRY, Backend, Op
from .backend.autodiff import Autodiff, Gradients
from .backend.numpy import NumpyBackend
from .capture import compile
from .creation import (
    arange,
    arange_step,
    cartesian_grid,
    cat,
    diag_mask,
    empty,
    eye,
    from_floats,
    from_ints,
    full,
    int_random,
    one_hot,
    ones,
    random,
    seed,
    stack,
    tensor,
    tril_mask,
    triu_mask,
    zeros,
)
from .data import TensorData
from .device import (
    backend_names,
    device,
    register_backend,
    register_decorator,
    register_indexed_backend,
)
from .display import PrintOptions, check_closeness, set_print_options
from .distribution import Bernoulli, Default, Distribution, Normal, Uniform
from .dtype import Bool, DType, Float, Int, Kind
from .errors import (
    BackendUnavailable,
    ConversionOverflow,
    DeviceError,
    DimError,
    DTypeError,
    GradError,
    KindError,
    PyriteError,
    ShapeError,
)
from .tensor import Tensor, from_data

__version__ = "0.1.0"

register_backend("numpy", NumpyBackend)
register_indexed_backend("numpy", lambda index: NumpyBackend(name=f"numpy:{index}"))
register_decorator("autodiff", Autodiff)


if TYPE_CHECKING:
    from . import onnx as onnx


def __getattr__(name: str) -> object:
    """`pyrite.onnx` is imported on first use (it loads the module machinery)."""
    if name == "onnx":
        import importlib
        return importlib.import_module(".onnx", __name__)
    raise AttributeError(f"module 'pyrite' has no attribute {name!r}")

__all__ = [
    "compile",
    "REGISTRY", "Autodiff", "Backend", "BackendUnavailable", "Bernoulli", "Bool",
    "ConversionOverflow", "DType", "DTypeError", "Default", "DeviceError", "DimError",
    "Distribution", "Float", "GradError", "Gradients", "Int", "Kind", "KindError", "Normal",
    "NumpyBackend", "Op", "PrintOptions", "PyriteError", "ShapeError", "Tensor", "TensorData",
    "Uniform", "activation", "arange", "arange_step", "backend_names", "cartesian_grid", "cat",
    "consuming",
    "check_closeness", "device", "diag_mask", "empty", "eye", "from_data", "from_floats",
    "from_ints", "full", "int_random", "one_hot", "ones", "random", "register_backend",
    "register_decorator", "register_indexed_backend", "seed", "set_print_options", "stack",
    "tensor", "tril_mask",
    "triu_mask", "zeros",
]
