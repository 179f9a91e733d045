"""Named MessagePack records ("named-mpk"), through the `msgpack` package (imported when used).

The file is plain MessagePack: the envelope is a map with string keys, so any MessagePack reader
in any language can open it. A tensor is the map `{"dtype": "f32", "shape": [2, 3],
"bytes": <bin>}` with the TensorData bytes (little-endian) as they are. Records hold no bytes
leaves, so a map whose "bytes" is binary is always a tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ..data import TensorData
from ..errors import RecordError
from .checksum import CHECKSUM_KEY, checksum_text, verify_checksum
from .codec import Codec, decoded_tensors, tensor_dtype, tensor_shape
from .limits import check_depth
from .metadata import check_version
from .tree import RecordValue

_TENSOR_KEYS = frozenset({"dtype", "shape", "bytes"})
_HEAD_CHUNK = 1 << 16  # the first piece of a file fed to the metadata's Unpacker


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
    version: ClassVar[int] = 2
    checksum_since: ClassVar[int | None] = 2
    description: ClassVar[str] = "a pyrite named MessagePack record"
    data_name: ClassVar[str] = "MessagePack data"

    def encode(self, envelope: dict[str, RecordValue]) -> bytes:
        # written piece by piece, so the record's bytes are packed once and checksummed as is
        pack = _packer()
        meta = envelope["metadata"]
        assert isinstance(meta, dict)
        item = pack(envelope["item"])
        meta = {**meta, CHECKSUM_KEY: checksum_text(pack(meta), item)}
        return b"".join([b"\x82", pack("metadata"), pack(meta), pack("item"), item])

    def decode(self, data: bytes, *, source: str) -> object:
        # Peak memory: the file's bytes plus the record decoded from them (about 2x the file).
        # The small head (metadata) goes through a streaming Unpacker fed piece by piece; the
        # item is unpacked straight from a view of `data` and checksummed from that view, so
        # neither is copied whole (a fed Unpacker and a slice each held another copy: 4x).
        self.expect(data, source=source)
        msgpack = _msgpack()
        view = memoryview(data)
        head = msgpack.Unpacker(raw=False, strict_map_key=True,
                                max_buffer_size=max(len(data), 1))
        fed = 0

        def step(read: Callable[[], Any]) -> Any:
            nonlocal fed
            while True:
                try:
                    return read()
                except msgpack.OutOfData:
                    if fed >= len(data):
                        raise ValueError("Unpack failed: incomplete input") from None
                    size = max(_HEAD_CHUNK, fed)  # doubling: a large metadata takes few feeds
                    head.feed(view[fed:fed + size])
                    fed += size
        try:
            step(head.read_map_header)  # 2 entries: `expect` checked the head
            meta_key, meta, item_key = step(head.unpack), step(head.unpack), step(head.unpack)
            start = head.tell()
            item = msgpack.unpackb(view[start:], raw=False, strict_map_key=True)
        except msgpack.ExtraData as extra:
            raise RecordError(f"{source}: expected {self.description}, found "
                              f"{len(extra.extra)} stray bytes after it") from None
        except (msgpack.UnpackException, ValueError, TypeError, RecursionError) as err:
            # msgpack says "Unpack failed: incomplete input" for a truncated file
            raise RecordError(f"{source}: expected {self.description}, found truncated or "
                              f"corrupt MessagePack data ({type(err).__name__} {err})") from err
        check_depth(meta, source=source, what="the metadata")
        check_depth(item, source=source)
        if isinstance(meta, dict):
            check_version(meta.get("format_version"), meta.get("pyrite_version"), self, source)
        pack = _packer()
        verify_checksum(meta, lambda rest: [pack(rest), view[start:]], source=source,
                        description=self.description)
        # paths in errors start inside the record: 'fc1.weight'
        return {meta_key: _tensors(meta, str(meta_key), source),
                item_key: _tensors(item, "", source)}


def _packer() -> Callable[[object], bytes]:
    msgpack = _msgpack()

    def pack(value: object) -> bytes:
        packed: bytes = msgpack.packb(value, default=_default, use_bin_type=True)
        return packed
    return pack


def _tensors(value: object, path: str, source: str) -> object:
    """Replace tensor maps by TensorData, checking each against its dtype and shape."""
    return decoded_tensors(value, path, lambda node, at: _tensor(node, at, source) if set(
        node) == _TENSOR_KEYS and isinstance(node["bytes"], bytes) else None)


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
