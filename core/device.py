"""Devices: names resolve to backend instances, one per name, built on first use.

A device in pyrite is a backend instance (`numpy`, `webgpu`, `autodiff<numpy>`, ...). Backends
register a factory under a name; `device("autodiff<numpy>")` builds the decorator stack.
A backend that can have several devices in one process also registers an indexed factory:
`numpy:0`, `numpy:1` are separate numpy devices (for data-parallel tests on any machine),
`webgpu:1` is the WebGPU device on adapter 1 of `pyrite info backends`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import config
from .backend.base import Backend
from .errors import BackendUnavailable

_FACTORIES: dict[str, Callable[[], Backend]] = {}
_DECORATORS: dict[str, Callable[[Backend], Backend]] = {}
_INDEXED: dict[str, Callable[[int], Backend]] = {}
_INSTANCES: dict[str, Backend] = {}


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make `device(name)` build a backend with `factory` (called once, on first use)."""
    _FACTORIES[name] = factory


def register_indexed_backend(name: str, factory: Callable[[int], Backend]) -> None:
    """Make `device("name:N")` build a backend with `factory(N)`; its name must be "name:N"."""
    _INDEXED[name] = factory


#: pyrite's own backends outside core, by module path: found even where no installed metadata
#: declares them (pyrite run from a source tree on PYTHONPATH, and that run's Ray workers)
_BUILTIN = {"webgpu": "pyrite.webgpu:create"}


def backend_entry_points(name: str | None = None) -> list[Any]:
    """The `pyrite.backends` entry points of installed packages (only `name`'s when given),
    plus pyrite's own backends that no installed metadata declares."""
    from importlib.metadata import EntryPoint, entry_points
    found = list(entry_points(group="pyrite.backends") if name is None
                 else entry_points(group="pyrite.backends", name=name))
    declared = {ep.name for ep in found}
    for builtin, value in _BUILTIN.items():
        if builtin not in declared and name in (None, builtin):
            found.append(EntryPoint(builtin, value, "pyrite.backends"))
    return found


def _indexed(name: str) -> Backend | None:
    """The device `base:N` from its indexed factory, None when `name` is not of that form."""
    base, sep, index = name.rpartition(":")
    if not sep or not index.isdigit():
        return None
    if base not in _INDEXED:
        for ep in backend_entry_points(base):
            ep.load()  # importing the backend's package registers its indexed factory (webgpu)
    factory = _INDEXED.get(base)
    if factory is None:
        return None
    return factory(int(index))


def register_decorator(name: str, wrap: Callable[[Backend], Backend]) -> None:
    """Make `device("name<inner>")` wrap the inner device with `wrap`."""
    _DECORATORS[name] = wrap


def _discover() -> None:
    """Add backends that installed packages declare under the `pyrite.backends` entry point
    group (how pyrite.webgpu joins without core importing it)."""
    for ep in backend_entry_points():
        if ep.name not in _FACTORIES:
            _FACTORIES[ep.name] = _lazy(ep)


def _lazy(ep: object) -> Callable[[], Backend]:
    def build() -> Backend:
        factory = ep.load()  # type: ignore[attr-defined]
        return factory()  # type: ignore[no-any-return]
    return build


def decorator_names() -> list[str]:
    """Names of the registered decorators (`autodiff`, and `fusion` once pyrite.webgpu is
    imported)."""
    return sorted(_DECORATORS)


def indexed_names() -> list[str]:
    """Names of the backends that have several devices, `name:N` (`numpy`, and `webgpu` once
    pyrite.webgpu is imported)."""
    return sorted(_INDEXED)


def backend_names() -> list[str]:
    """Names of the base backends: registered ones and those installed packages declare."""
    _discover()
    return sorted(_FACTORIES)


def device(spec: str | Backend | None = None) -> Backend:
    """Resolve a device: a Backend passes through, a name is built once, None is the default.

    >>> device("numpy").name
    'numpy'
    >>> device("autodiff<numpy>").name
    'autodiff<numpy>'
    """
    if isinstance(spec, Backend):
        return spec
    name = config.backend_name() if spec is None else spec.strip()
    found = _INSTANCES.get(name)
    if found is not None:
        return found
    if "<" in name and name.endswith(">"):
        outer, inner = name[:-1].split("<", 1)
        wrap = _DECORATORS.get(outer)
        if wrap is None:
            device(inner)  # building a backend may register decorators (pyrite.webgpu does)
            wrap = _DECORATORS.get(outer)
        if wrap is None:
            raise BackendUnavailable(f"device: unknown decorator {outer!r} in {name!r}; "
                                     f"known: {', '.join(sorted(_DECORATORS))}")
        built = wrap(device(inner))
    elif (indexed := _indexed(name)) is not None:
        built = indexed
    else:
        factory = _FACTORIES.get(name)
        if factory is None:
            _discover()
            factory = _FACTORIES.get(name)
        if factory is None:
            raise BackendUnavailable(f"device: unknown device {name!r}; known: "
                                     f"{', '.join(backend_names())} "
                                     f"(decorate as 'autodiff<numpy>'; several devices of one "
                                     f"backend as 'numpy:0', 'webgpu:1')")
        built = factory()
    _INSTANCES[name] = built
    return built
