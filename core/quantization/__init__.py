"""pyrite.quantization: schemes, calibration, the quantized tensor kind, the Quantizer.

See docs/quantization.md. Integer kernels live with the other kernels: `numpy_kernels.py`
here for the numpy backend, `pyrite.webgpu.quantized` for WebGPU.
"""

from .calibration import Calibration, MinMaxCalibration, Observer, PercentileCalibration
from .kernels import IntKernels, int_kernels, register_int_kernels
from .matmul import quantized_matmul
from .scheme import (
    CalibrationRange,
    Granularity,
    QuantizationMode,
    QuantizationParameters,
    QuantizationScheme,
    QuantizationType,
)
from .tensor import QuantizedTensor, dequantize, quantize, quantize_dynamic

__all__ = [
    "Calibration",
    "CalibrationRange",
    "Granularity",
    "IntKernels",
    "MinMaxCalibration",
    "Observer",
    "PercentileCalibration",
    "QuantizationMode",
    "QuantizationParameters",
    "QuantizationScheme",
    "QuantizationType",
    "QuantizedTensor",
    "dequantize",
    "int_kernels",
    "quantize",
    "quantize_dynamic",
    "quantized_matmul",
    "register_int_kernels",
]
