"""Printing a module as a tree with each layer's settings and parameter counts (Burn's format).

A module without submodules prints on one line, `Linear {d_input: 1024, d_output: 512, bias:
true, params: 524800}` (just `Relu` when it has neither settings nor params); a module with
submodules prints a block, one child per line, ending with its total `params: N`.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from ..tensor import Tensor
from .param import Param

if TYPE_CHECKING:
    from .base import Module

INDENT = "  "


def format_value(value: Any) -> str:
    """A setting as Burn prints it: `[3, 3]`, `true`, `0.5`, enum names."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, Param):
        return f"Param {{shape: {format_value(value.shape)}}}"
    if isinstance(value, Tensor):
        return f"Tensor {{shape: {format_value(value.shape)}}}"
    return str(value)


def _has_children(module: Module) -> bool:
    return next(module.children(), None) is not None


def render(module: Module, depth: int = 0) -> str:
    """The module's tree; `depth` indents nested blocks."""
    name = type(module).__name__
    count = module.num_params()
    if not _has_children(module):
        items = [f"{k}: {format_value(v)}" for k, v in module.settings().items()]
        if count:
            items.append(f"params: {count}")
        return f"{name} {{{', '.join(items)}}}" if items else name
    pad = INDENT * (depth + 1)
    lines = [f"{name} {{"]
    from .base import Module, _is_child_list
    settings = module.settings()
    for attr, value in module._attrs():
        if isinstance(value, Module):
            lines.append(f"{pad}{attr}: {render(value, depth + 1)}")
        elif isinstance(value, Param):
            lines.append(f"{pad}{attr}: {format_value(value)}")
        elif _is_child_list(value):
            lines.append(f"{pad}{attr}: [")
            for i, item in enumerate(value):
                shown = render(item, depth + 2) if isinstance(item, Module) \
                    else format_value(item)
                lines.append(f"{pad}{INDENT}{i}: {shown}")
            lines.append(f"{pad}]")
        elif attr in settings:
            lines.append(f"{pad}{attr}: {format_value(value)}")
    lines.append(f"{pad}params: {count}")
    lines.append(INDENT * depth + "}")
    return "\n".join(lines)
