"""Capture and replay: a step captured once and replayed as a fixed program (`pyrite.compile`).

    step = pyrite.compile(step)          # or @pyrite.compile
    for batch in loader:
        model, loss = step(model, batch)  # captured, checked, then replayed

`traced.py`: host numbers carried as formulas; `tree.py`: arguments and results as leaves and a
structure; `function.py`: signatures, the program cache, fallbacks; the device's own engine
(`pyrite.webgpu.capture`) records and replays. See `docs/compile.md`. On a device with nothing
to replay (numpy) the function is called as it is.

This package imports nothing at import time (the tensor front end imports `traced`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])


@overload
def compile(fn: F, *, cache_size: int = 8, enabled: bool | None = None,  # noqa: A001
            warn: bool = True, inference: bool = False) -> F: ...


@overload
def compile(fn: None = None, *, cache_size: int = 8,  # noqa: A001
            enabled: bool | None = None, warn: bool = True,
            inference: bool = False) -> Callable[[F], F]: ...


def compile(fn: Callable[..., Any] | None = None, *, cache_size: int = 8,  # noqa: A001
            enabled: bool | None = None, warn: bool = True, inference: bool = False) -> Any:
    """`fn` captured once per signature (tensor shapes, dtypes and layouts, the structure of
    modules and optimizers, every argument that is not a tensor or a float) and replayed.

    `cache_size`: programs kept (least recently used dropped). `enabled`: False runs `fn`
    eagerly always; None follows PYRITE_COMPILE (on by default). `warn`: False logs why a
    step runs eagerly (logger "pyrite.compile") instead of warning. `inference`: True for a
    forward pass a caller may differentiate: a call given a tensor autodiff tracks runs
    eagerly, so its result keeps its graph (a replay's results are detached). Usable as
    `@compile`, `@compile(cache_size=4)` and on a method (`def forward(self, x)`). The result
    is a `CompiledFunction` (typed as `fn`, which it can stand for): its `captures`,
    `replays`, `fallbacks` and `clear()` are its own.
    """
    from .function import CompiledFunction
    if fn is None:
        return lambda f: CompiledFunction(f, cache_size=cache_size, enabled=enabled, warn=warn,
                                          inference=inference)
    return CompiledFunction(fn, cache_size=cache_size, enabled=enabled, warn=warn,
                            inference=inference)


def replays_on(device: Any) -> bool:
    """Whether compiled functions replay on `device` (a backend or a name): compiling is on
    (PYRITE_COMPILE) and the device has a capture engine (webgpu, natively or in a page)."""
    from .. import config
    from ..device import device as resolve
    from .function import engine_layer
    return config.compile_enabled() and engine_layer(resolve(device)) is not None


def stats() -> dict[str, object]:
    """The process's capture counters: captures, replays, fallbacks and why."""
    from .counters import STATS
    return STATS.as_dict()


def __getattr__(name: str) -> Any:
    if name in ("CompiledFunction", "CompileWarning"):
        from . import function
        return getattr(function, name)
    raise AttributeError(f"module 'pyrite.capture' has no attribute {name!r}")


__all__ = ["CompileWarning", "CompiledFunction", "compile", "replays_on", "stats"]
