"""pyrite.webgpu: the WebGPU backend (see DESIGN.md). Importing it registers the "webgpu"
device and requests no adapter; `WebGpu()` asks for one on first use."""

from ..errors import DeviceMemoryError
from .backend import WebGpu
from .info import adapters
from .memory import PoolStats
from .registration import create, register
from .stats import stats

register()

__all__ = ["DeviceMemoryError", "PoolStats", "WebGpu", "adapters", "create", "register", "stats"]
