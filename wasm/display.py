"""What `<pyrite-script>` shows: `display()` and `image()` for the Python in a page.

The element runs its code with `begin()` ... `end()` around it; everything the code prints and
every `display(obj)` in between becomes one output, in order, as JSON-able dicts the element
renders:

- `{"type": "text", "text": ...}`: printed text, and objects without a richer form (`str()`);
- `{"type": "table", "rows": [[...]], "caption": ...}`: a tensor of rank 0, 1 or 2;
  larger ranks are shown as text (the tensor's own printout);
- `{"type": "image", "width", "height", "rgba": [...]}`: `image(tensor)`, a (H, W) grey,
  (H, W, 3) RGB or (H, W, 4) RGBA tensor; floats are read as 0..1, ints as 0..255.

The scripts of a page share one namespace (`namespace()`), as consecutive cells of a notebook
do, with `display` and `image` in it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import pyrite
from pyrite import Tensor

_outputs: list[dict[str, Any]] = []
_namespace: dict[str, Any] = {}
_MAX_TABLE = 10_000  # cells; a larger tensor is shown as its printout


@dataclass(frozen=True)
class Image:
    """A tensor to show as an image (see `image`)."""

    tensor: Tensor


def image(tensor: Tensor) -> Image:
    """Mark a tensor to be displayed as an image: (H, W), (H, W, 3) or (H, W, 4).

    >>> image(pyrite.zeros((2, 3))).tensor.shape
    (2, 3)
    """
    if tensor.ndim not in (2, 3) or (tensor.ndim == 3 and tensor.shape[2] not in (1, 3, 4)):
        raise ValueError(f"image: a tensor of shape (H, W), (H, W, 3) or (H, W, 4) is needed, "
                         f"got {tensor.shape}; permute a (C, H, W) tensor with "
                         f".permute([1, 2, 0])")
    return Image(tensor)


class _Capture:
    """sys.stdout while a script runs: printed text goes to the outputs, in order."""

    def write(self, text: str) -> int:
        if _outputs and _outputs[-1]["type"] == "text" and _outputs[-1].get("printed"):
            _outputs[-1]["text"] += text
        else:
            _outputs.append({"type": "text", "text": text, "printed": True})
        return len(text)

    def flush(self) -> None:
        pass


_saved: list[Any] = []


def begin() -> None:
    """Start collecting a script's outputs (printed text included)."""
    _outputs.clear()
    _saved.append(sys.stdout)
    sys.stdout = _Capture()


def end() -> list[dict[str, Any]]:
    """Stop collecting; the outputs, in order."""
    if _saved:
        sys.stdout = _saved.pop()
    out = [{k: v for k, v in o.items() if k != "printed"} for o in _outputs]
    _outputs.clear()
    return out


def namespace() -> dict[str, Any]:
    """The globals the page's scripts share (with `display` and `image`)."""
    if not _namespace:
        _namespace.update({"__name__": "__main__", "display": display, "image": image,
                           "pyrite": pyrite})
    return _namespace


def display(*objects: object) -> None:
    """Show each object in the running script's element (text, a table or an image)."""
    for obj in objects:
        _outputs.append(render(obj))


def show(value: object) -> None:
    """The value of a script's last expression, shown as `display` would (None shows
    nothing, as in a notebook)."""
    if value is not None:
        display(value)


def render(obj: object) -> dict[str, Any]:
    """The output dict of one object (see the module's docstring).

    >>> render(pyrite.tensor([[1, 2], [3, 4]]))["rows"]
    [[1, 2], [3, 4]]
    >>> render("hi")
    {'type': 'text', 'text': 'hi'}
    """
    if isinstance(obj, Image):
        return _image(obj.tensor)
    if isinstance(obj, Tensor) and obj.ndim <= 2 and obj.numel() <= _MAX_TABLE:
        values = obj.to_list()
        rows = [[values]] if obj.ndim == 0 else [values] if obj.ndim == 1 else values
        caption = f"Tensor {obj.shape} {obj.dtype} on {obj.device.name}"
        return {"type": "table", "rows": rows, "caption": caption}
    return {"type": "text", "text": str(obj)}


def _image(t: Tensor) -> dict[str, Any]:
    height, width = t.shape[0], t.shape[1]
    channels = 1 if t.ndim == 2 else t.shape[2]
    scaled = (t.float() * 255.0) if t.kind is pyrite.Float else t.float()
    values = scaled.clamp(0.0, 255.0).round().reshape([-1]).to_list()
    rgba: list[int] = []
    for i in range(height * width):
        px = [int(v) for v in values[i * channels:(i + 1) * channels]]
        if channels == 1:
            rgba += [px[0], px[0], px[0], 255]
        elif channels == 3:
            rgba += [*px, 255]
        else:
            rgba += px
    return {"type": "image", "width": width, "height": height, "rgba": rgba}


__all__ = ["Image", "begin", "display", "end", "image", "namespace", "render", "show"]
