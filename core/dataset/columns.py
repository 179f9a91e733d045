"""Decoding special columns of columnar sources: encoded images and audio, class labels.

Hugging Face datasets (and Parquet files written from them) store an image as a struct
`{"bytes": <the PNG/JPEG file>, "path": <its name>}` and audio the same way; pyrite turns them
into what its batchers take: an `Image` (RGB, HWC uint8 bytes; `to_numpy()` for an array) and
`Audio` (float32 samples and a sampling rate). The decoding runs in `get`, so a threaded
`DataLoader` decodes in parallel. Decoders come from the source's schema (`decoders_for`), or
the user names them (`image_columns=`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import DatasetError
from .image import Image, decode_image, decode_image_bytes

if TYPE_CHECKING:
    import numpy as np

Decoder = Callable[[Any], Any]


@dataclass(frozen=True, repr=False)
class Audio:
    """Decoded audio: `samples` float32 in [-1, 1], shape (frames,) for mono or
    (frames, channels), and its `sampling_rate` in Hz."""

    samples: np.ndarray
    sampling_rate: int

    def __repr__(self) -> str:
        return f"Audio(frames={self.samples.shape[0]}, sampling_rate={self.sampling_rate})"


def _encoded(value: Any, column: str, kind: str) -> tuple[bytes | None, str | None]:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), None
    if isinstance(value, str):
        return None, value
    if isinstance(value, Mapping) and ("bytes" in value or "path" in value):
        data, path = value.get("bytes"), value.get("path")
        return (bytes(data) if data is not None else None), path
    raise DatasetError(
        f"column {column!r}: expected an encoded {kind} (bytes, a path, or a struct with "
        f"'bytes' and 'path'), got {type(value).__name__}; pass columns to decode only for "
        f"{kind} columns"
    )


def image_decoder(column: str) -> Decoder:
    """A decoder for a column of encoded images: bytes, a file path, or {"bytes", "path"}."""

    def decode(value: Any) -> Image | None:
        if value is None or isinstance(value, Image):
            return value
        data, path = _encoded(value, column, "image")
        if data is not None:
            return decode_image_bytes(data, f"column {column!r} ({path or 'bytes'})")
        assert path is not None
        return decode_image(path)

    return decode


def audio_decoder(column: str) -> Decoder:
    """A decoder for a column of encoded audio. WAV (PCM 8/16/24/32-bit) is read with the
    standard library; other formats need `soundfile` (`pip install soundfile`). A struct that
    already holds samples (`{"array": [...], "sampling_rate": n}`) is taken as it is."""

    def decode(value: Any) -> Audio | None:
        import numpy as np

        if value is None or isinstance(value, Audio):
            return value
        if isinstance(value, Mapping) and value.get("array") is not None:
            return Audio(np.asarray(value["array"], dtype=np.float32),
                         int(value["sampling_rate"]))
        data, path = _encoded(value, column, "audio")
        if data is None:
            assert path is not None
            with open(path, "rb") as f:
                data = f.read()
        return decode_audio_bytes(data, f"column {column!r} ({path or 'bytes'})")

    return decode


def decode_audio_bytes(data: bytes, source: object = "audio bytes") -> Audio:
    """Decode an audio file held in memory (WAV natively; other formats through soundfile)."""
    import numpy as np

    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        import wave

        try:
            with wave.open(io.BytesIO(data)) as w:
                width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
                frames = w.readframes(w.getnframes())
        except (wave.Error, EOFError) as e:
            raise DatasetError(f"cannot decode the WAV audio of {source}: {e}") from e
        if width == 1:
            samples = (np.frombuffer(frames, np.uint8).astype(np.float32) - 128.0) / 128.0
        elif width == 3:
            raw = np.frombuffer(frames, np.uint8).reshape(-1, 3)
            ints = (raw[:, 0].astype(np.int32) | (raw[:, 1].astype(np.int32) << 8)
                    | (raw[:, 2].astype(np.int8).astype(np.int32) << 16))
            samples = ints.astype(np.float32) / float(1 << 23)
        elif width in (2, 4):
            dtype = np.int16 if width == 2 else np.int32
            samples = np.frombuffer(frames, dtype).astype(np.float32) / float(1 << (8 * width - 1))
        else:
            raise DatasetError(f"{source}: WAV with {width}-byte samples is not supported")
        if channels > 1:
            samples = samples.reshape(-1, channels)
        return Audio(samples, rate)
    try:
        import soundfile  # type: ignore[import-not-found]
    except ImportError as e:
        raise DatasetError(
            f"{source} is not WAV; decoding other audio formats needs soundfile "
            "(pip install soundfile)"
        ) from e
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32")
    except Exception as e:  # noqa: BLE001 - soundfile raises its own RuntimeError subclasses
        raise DatasetError(f"cannot decode the audio of {source}: {e}") from e
    return Audio(samples, int(rate))


def decoders_for_features(features: Mapping[str, Any]) -> dict[str, Decoder]:
    """Decoders for the columns of a Hugging Face `Features` mapping: Image and Audio columns
    (top-level ones; nested ones are left as their stored structs)."""
    decoders: dict[str, Decoder] = {}
    for name, feature in features.items():
        kind = type(feature).__name__
        if kind == "Image":
            decoders[name] = image_decoder(name)
        elif kind == "Audio":
            decoders[name] = audio_decoder(name)
    return decoders


def decoders_for_schema(metadata: Mapping[bytes, bytes] | None) -> dict[str, Decoder]:
    """Decoders from an Arrow schema's metadata: Parquet files written by `datasets` record
    their features under b"huggingface" as JSON, so their image/audio columns decode too."""
    if not metadata or b"huggingface" not in metadata:
        return {}
    import json

    try:
        info = json.loads(metadata[b"huggingface"])
        features = info.get("info", {}).get("features", {})
    except (ValueError, AttributeError):
        return {}
    decoders: dict[str, Decoder] = {}
    if not isinstance(features, dict):
        return decoders
    for name, feature in features.items():
        kind = feature.get("_type") if isinstance(feature, dict) else None
        if kind == "Image":
            decoders[name] = image_decoder(name)
        elif kind == "Audio":
            decoders[name] = audio_decoder(name)
    return decoders


def apply(row: dict[str, Any], decoders: Mapping[str, Decoder]) -> dict[str, Any]:
    """`row` with each decoded column replaced (in place; returns it)."""
    for name, decode in decoders.items():
        if name in row:
            row[name] = decode(row[name])
    return row
