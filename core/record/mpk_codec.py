"""Named MessagePack records ("named-mpk"), through the `msgpack` package (imported when used).

The file is plain MessagePack: the envelope is a map with string keys, so any MessagePack reader
in any language can open it. A tensor is the map `{"dtype": "f32", "shape": [2, 3],
"bytes": <bin>}` with the TensorData bytes (little-endian) as they are. Records hold no bytes
leaves, so a map whose "bytes" is binary is always a tensor.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..data import TensorData
from ..errors import RecordError
from .codec import Codec, tensor_dtype, tensor_shape
from .tree import RecordValue

_TENSOR_KEYS = frozenset({"dtype", "shape", "bytes"})


def _msgpack() -> Any:
    try:
        import msgpack  # type: ignore[import-untyped]  # msgpack ships no type information
    except ImportError as err:
        raise ModuleNotFoundError("the named MessagePack recorders need msgpack: pip install "
                                  "msgpack (or use BinFileRecorder, which needs nothing)") from err
    return msgpack


def _default(value: object) -> object:
    if isinstance(value, TensorData):
        return {"dtype": value.dtype.short, "shape": list(value.shape), "bytes": value.bytes}
    raise TypeError(f"named-mpk: cannot encode {type(value).__name__}")  # validated before


class MpkCodec(Codec):
    """The format described in the module docstring."""

    name: ClassVar[str] = "named-mpk"
    version: ClassVar[int] = 1
    description: ClassVar[str] = "a pyrite named MessagePack record"
    data_name: ClassVar[str] = "MessagePack data"

    def encode(self, envelope: dict[str, RecordValue]) -> bytes:
        packed: bytes = _msgpack().packb(envelope, default=_default, use_bin_type=True)
        return packed

    def decode(self, data: bytes, *, source: str) -> object:
        self.expect(data, source=source)
        msgpack = _msgpack()
        try:
            raw = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except msgpack.ExtraData as err:
            raise RecordError(f"{source}: expected {self.description}, found "
                              f"{len(err.extra)} stray bytes after it") from err
        except (ValueError, TypeError, RecursionError) as err:
            # msgpack says "Unpack failed: incomplete input" for a truncated file
            raise RecordError(f"{source}: expected {self.description}, found truncated or "
                              f"corrupt MessagePack data ({err})") from err
        if isinstance(raw, dict):  # paths in errors start inside the record: 'fc1.weight'
            return {k: _tensors(v, "" if k == "item" else k, source) for k, v in raw.items()}
        return raw


def _tensors(value: object, path: str, source: str) -> object:
    """Replace tensor maps by TensorData, checking each against its dtype and shape."""
    if isinstance(value, dict):
        if set(value) == _TENSOR_KEYS and isinstance(value["bytes"], bytes):
            return _tensor(value, path, source)
        return {k: _tensors(v, f"{path}.{k}" if path else k, source) for k, v in value.items()}
    if isinstance(value, list):
        return [_tensors(v, f"{path}[{i}]", source) for i, v in enumerate(value)]
    return value


def _tensor(node: dict[str, Any], path: str, source: str) -> TensorData:
    dt = tensor_dtype(node["dtype"], path, source)
    shape = tensor_shape(node["shape"], path, source)
    data = TensorData.raw(node["bytes"], shape, dt)
    if len(data.bytes) != data.num_elements * dt.itemsize:
        raise RecordError(f"{source}: tensor {path!r} holds {len(data.bytes)} bytes, but shape "
                          f"{shape} of {dt} needs {data.num_elements * dt.itemsize}: "
                          f"the file is corrupt")
    return data


MPK = MpkCodec()
