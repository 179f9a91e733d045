"""pyrite's exceptions: each is a PyriteError and the matching builtin (`except ValueError`
still works)."""


class PyriteError(Exception):
    """Base class of every error pyrite raises on purpose."""


class ShapeError(PyriteError, ValueError):
    """Shapes do not fit together (broadcasting, matmul, cat, reshape, ...)."""


class DimError(PyriteError, IndexError):
    """A dimension or index is out of range."""


class KindError(PyriteError, TypeError):
    """An op was called on a tensor kind (Float/Int/Bool) it does not support."""


class DTypeError(PyriteError, TypeError):
    """A dtype is unknown or unsupported here."""


class ConversionOverflow(PyriteError, OverflowError):
    """A value does not fit the target dtype of a conversion."""


class DeviceError(PyriteError, ValueError):
    """Tensors on different devices met in one op."""


class RecordError(PyriteError, ValueError):
    """A record cannot be saved, read or applied: wrong format, corrupt file, keys or shapes."""


class RecordWarning(UserWarning):
    """A record loaded, but holds something suspicious (NaN or infinite weights)."""


class ConfigError(PyriteError, ValueError):
    """A config cannot be built, saved or read: a bad option, a missing field, malformed JSON."""


class DeviceMemoryError(PyriteError, MemoryError):
    """A device allocation failed or exceeds a device limit."""


class BackendUnavailable(PyriteError, RuntimeError):
    """A backend cannot be used here (missing package, no adapter)."""


class GradError(PyriteError, RuntimeError):
    """Autodiff was used in a way that cannot work (backward on a tensor without a graph, ...)."""


class DatasetError(PyriteError, ValueError):
    """A dataset's input is wrong: a corrupt or missing file, a bad index range, a bad option."""


class DownloadError(PyriteError, RuntimeError):
    """A file could not be downloaded from any of its mirrors (no network, bad checksum, ...)."""


class KernelError(PyriteError, ValueError):
    """A user op's kernel (pyrite.extend) cannot run as declared: it does not compile, or its
    bindings, workgroup size or grid are wrong."""


def op_error(cls: type[PyriteError], op: str, message: str) -> PyriteError:
    """Build an error whose text starts with the op's name: `matmul: inner sizes differ ...`."""
    return cls(f"{op}: {message}")


class DeviceLostError(PyriteError, RuntimeError):
    """The GPU device was lost (driver reset, device destroyed, a failed submit or readback):
    its tensors are gone; build a new backend and reload what was saved."""


class WorkerError(PyriteError, RuntimeError):
    """A training worker of `pyrite.distributed` died, or a collective waited past its timeout
    for the other ranks: names the rank, what was waited for and how long."""


class OnnxError(PyriteError, ValueError):
    """An ONNX file pyrite cannot read or run: names the file, and the node where one is at
    fault (its name, op type and opset)."""


class QuantizationError(PyriteError, ValueError):
    """A quantization scheme, params or quantized record that cannot be used as given."""
